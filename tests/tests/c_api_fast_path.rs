//! The C API's fast paths: by id, by a literal through the header's macros (a
//! per-call-site id), by names computed at run time (the per-thread content cache), and NVTX.
//!
//! - 8 threads × 10⁶ pairs of each C path, nested under one region per thread: the summary
//!   has every region, the metadata no C API error and no drop; one call site inlined with two
//!   literals (sharing the site's static) keeps both names apart.
//! - No allocation per pair after a thread's first record: the C program interposes
//!   `malloc` & co. and counts the calling thread's calls over 10⁵ pairs of each path.
//! - The header's inline path (`METRON_REGION_BEGIN_ID`, `METRON_REGION_BEGIN` with a
//!   literal): its struct layout against the library's (`metron_fast_layout`), another ABI
//!   version refused, every misuse left to the library with the library's status, nothing
//!   recorded while collection is stopped or the thread paused, a forked child's calls
//!   succeed and record nothing, no call into the library per
//!   pair after the warm-up (the exports wrapped with `--wrap`), and the 8-thread run through
//!   `libmetron.a`.
//! - Nothing on a fast path can unwind into C: the exports' fast paths run outside
//!   `catch_unwind` (see `user-api/src/fast_path.rs`), so the built library is checked: every
//!   call they make goes to the checked path (which catches panics), to the TLS descriptor
//!   resolver, or to the record buffer's cold path reached through the checked path only.

mod c_api_support;
use c_api_support::*;
use std::process::Command;

#[test]
fn eight_threads_times_a_million_pairs_of_each_path_are_all_in_the_summary() {
    let dir = temp_dir("fast-path-threads");
    let exe = compile(&program("fast_path.c"), &dir, &["-O2"]);
    let pairs: u64 = 1_000_000;
    let out = run_in(
        &exe,
        &dir,
        &["threads", &pairs.to_string()],
        &[("METRON_BUFFER_POLICY", "lossless")],
    );
    assert_success(&out, "fast_path.c threads");
    let summary = read_json(&dir.join("run"), "summary.json");
    let regions = region_counts(&summary["merged"]);
    let threads = 8;
    assert_eq!(regions.get("outer"), Some(&threads), "{regions:?}");
    assert_eq!(
        regions.get("outer/by_id"),
        Some(&(threads * pairs)),
        "{regions:?}"
    );
    assert_eq!(
        regions.get("outer/by_literal"),
        Some(&(threads * pairs)),
        "{regions:?}"
    );
    for k in 0..4 {
        assert_eq!(
            regions.get(&format!("outer/computed-{k}")),
            Some(&(threads * pairs / 4)),
            "{regions:?}"
        );
    }
    // One call site inlined with two literals: each name keeps its own regions.
    for site in ["site_a", "site_b"] {
        assert_eq!(
            regions.get(&format!("outer/{site}")),
            Some(&(threads * 1000)),
            "{regions:?}"
        );
    }
    let metadata = read_json(&dir.join("run"), "metadata.json");
    assert_eq!(metadata["records"]["dropped"], 0, "{}", metadata["records"]);
    assert_eq!(
        metadata["records"]["written"],
        2 * (threads + 3 * threads * pairs + 2 * threads * 1000),
        "{}",
        metadata["records"]
    );
    let errors = &metadata["c_api"]["errors"];
    assert!(
        errors.is_null()
            || errors
                .as_object()
                .is_some_and(|e| e.values().all(|v| v == 0)),
        "no C API error: {errors}"
    );
}

#[test]
fn no_allocation_per_pair_after_the_first_record() {
    let dir = temp_dir("fast-path-allocs");
    let exe = compile(&program("fast_path.c"), &dir, &["-O2"]);
    // A buffer large enough for every record: no segment hand-over (the buffer's cold path,
    // shared with Rust) in the window, as in hot_path_allocations.rs.
    let out = run_in(
        &exe,
        &dir,
        &["allocs", "100000"],
        &[("METRON_BUFFER_SIZE", "64M")],
    );
    assert_success(&out, "fast_path.c allocs");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("allocations: "))
        .unwrap_or_else(|| panic!("no allocation line: {text}"));
    assert_eq!(
        line, "allocations: 0 0 0 0",
        "allocations of the calling thread during 10^5 pairs by id, literal, computed name, \
         name"
    );
}

/// The symbol at `address` in the shared library (`nm`).
fn symbol_at(address: u64) -> String {
    let out = Command::new("nm")
        .args(["-C"])
        .arg(artifacts().lib())
        .output()
        .expect("nm (binutils) runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| u64::from_str_radix(l.split(' ').next().unwrap_or(""), 16) == Ok(address))
        .map(|l| l.splitn(3, ' ').nth(2).unwrap_or_default().to_string())
        .unwrap_or_default()
}

/// What the GOT entry at `slot` points to (its `R_X86_64_RELATIVE` relocation), as a symbol.
fn got_target(slot: u64) -> String {
    let out = Command::new("readelf")
        .args(["-rW"])
        .arg(artifacts().lib())
        .output()
        .expect("readelf (binutils) runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| u64::from_str_radix(l.split(' ').next().unwrap_or(""), 16) == Ok(slot))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|addend| u64::from_str_radix(addend, 16).ok())
        .map(symbol_at)
        .unwrap_or_default()
}

/// The `call` targets in the disassembly of `function` in the shared library: direct calls
/// by name, calls through the GOT by the symbol the entry points to, calls through a register
/// as written; and tail calls (a `jmp` to the start of another function).
fn calls_of(function: &str) -> Vec<String> {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn", "-C"])
        .arg(format!("--disassemble={function}"))
        .arg(artifacts().lib())
        .output()
        .expect("objdump (binutils) runs");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("<{function}>:")),
        "{function} is in the library"
    );
    text.lines()
        .filter(|l| {
            l.contains("\tcall ")
                || (l.contains("\tjmp ") && l.ends_with('>') && !l.contains("+0x"))
        })
        .map(|l| {
            let slot = l
                .split("# ")
                .nth(1)
                .and_then(|c| c.split(' ').next())
                .and_then(|a| u64::from_str_radix(a, 16).ok());
            match slot {
                Some(slot) if l.contains("(%rip)") => got_target(slot),
                _ => l.split('\t').next_back().unwrap_or_default().to_string(),
            }
        })
        .collect()
}

#[test]
fn the_fast_paths_call_nothing_that_could_unwind_into_c() {
    // The word-at-a-time string functions behind the name lookups (`c_words`): loads,
    // compares and arithmetic only.
    let words = ["hash_fast_after_eight", "is_fast_after_eight"];
    for function in words {
        let calls = calls_of(&format!("metron::c_words::{function}"));
        assert!(calls.is_empty(), "{function} calls nothing: {calls:?}");
    }
    for (export, checked, long) in [
        (
            "metron_region_begin",
            "region_begin_checked",
            Some("region_begin_long"),
        ),
        (
            "metron_region_end",
            "region_end_checked",
            Some("region_end_long"),
        ),
        ("metron_region_begin_id", "region_begin_id_checked", None),
        ("metron_region_end_id", "region_end_id_checked", None),
    ] {
        let calls = calls_of(export);
        assert!(
            calls.iter().any(|c| c.contains(checked)),
            "{export} falls back to {checked}: {calls:?}"
        );
        // A name of eight bytes or more takes the export's out-of-line general fast path,
        // which falls back to the same checked path.
        let mut functions = vec![(export.to_string(), calls)];
        if let Some(long) = long {
            let name = format!("metron::exports_regions::{long}");
            let calls = calls_of(&name);
            assert!(
                calls.iter().any(|c| c.contains(checked)),
                "{long} falls back to {checked}: {calls:?}"
            );
            functions.push((name, calls));
        }
        for (function, calls) in &functions {
            for call in calls {
                // Its checked path (under catch_unwind); its long path (checked the same way
                // here); the TLS descriptor (`call *(%rax)`); the string words (call nothing,
                // above); Rust's abort-on-unwind guard of an `extern "C"` function (reached
                // only if a callee unwound: none can; it aborts rather than unwind into C);
                // and, in the long path (a Rust function, whose unwinding would reach that
                // guard), the resumption of an unwind after dropping its state borrow.
                let ok = call.contains(checked)
                    || long.is_some_and(|l| call.contains(l))
                    || call.ends_with("*(%rax)")
                    || words.iter().any(|w| call.contains(w))
                    || call.contains("panic_cannot_unwind")
                    || (*function != export && call.contains("_Unwind_Resume"));
                assert!(
                    ok,
                    "{function} calls {call}: a fast path may call only its checked path, its \
                     long path, the TLS descriptor and the string words ({calls:?})"
                );
            }
        }
    }
}

/// Compiles `source` against the static library (`libmetron.a`), as a program that links it
/// into its executable does.
fn compile_static(source: &std::path::Path, dir: &std::path::Path) -> std::path::PathBuf {
    let a = artifacts();
    let exe = dir.join("static");
    let out = Command::new("cc")
        .args([
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-O2",
            "-g",
        ])
        .arg("-D_DEFAULT_SOURCE")
        .arg("-I")
        .arg(&a.include)
        .arg(source)
        .arg("-o")
        .arg(&exe)
        .arg(a.dir.join("libmetron.a"))
        .args(["-lstdc++", "-lpthread", "-ldl", "-lm", "-lrt"])
        .output()
        .expect("run the C compiler");
    assert!(
        out.status.success(),
        "compiling {} with libmetron.a failed:\n{}",
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

#[test]
fn the_inline_paths_struct_is_the_librarys_and_another_version_is_refused() {
    let dir = temp_dir("inline-layout");
    let exe = compile(&program("inline_path.c"), &dir, &[]);
    let out = run_in(&exe, &dir, &["layout"], &[]);
    assert_success(&out, "inline_path.c layout");
    assert!(String::from_utf8_lossy(&out.stdout).contains("layout ok"));
}

#[test]
fn the_inline_path_leaves_every_misuse_and_every_stop_to_the_library() {
    let dir = temp_dir("inline-misuse");
    let exe = compile(&program("inline_path.c"), &dir, &[]);
    let out = run_in(&exe, &dir, &["misuse"], &[]);
    assert_success(&out, "inline_path.c misuse");
    let summary = read_json(&dir.join("run"), "summary.json");
    let regions = region_counts(&summary["merged"]);
    assert_eq!(regions.get("a"), Some(&1), "{regions:?}");
    assert_eq!(regions.get("a/b"), Some(&2), "{regions:?}");
    assert_eq!(regions.get("straddle"), Some(&1), "{regions:?}");
    assert_eq!(regions.get("ok"), Some(&1000), "{regions:?}");
    assert!(
        !regions
            .keys()
            .any(|k| k.contains("stopped") || k.contains("paused")),
        "nothing recorded while stopped or paused: {regions:?}"
    );
    let metadata = read_json(&dir.join("run"), "metadata.json");
    // a, b twice, straddle, 1000 ok: begin and end each.
    assert_eq!(metadata["records"]["written"], 2 * (1 + 2 + 1 + 1000));
    assert_eq!(metadata["records"]["dropped"], 0);
    let errors = &metadata["c_api"]["errors"];
    assert_eq!(errors["invalid_argument"], 4, "{errors}");
    assert_eq!(errors["mismatched_end"], 1, "{errors}");
    assert_eq!(errors["no_open_region"], 3, "{errors}");
    assert_eq!(errors["too_deep"], 0, "{errors}");
}

#[test]
fn the_inline_path_refuses_the_257th_open_region_as_the_library_does() {
    let dir = temp_dir("inline-deep");
    let exe = compile(&program("inline_path.c"), &dir, &[]);
    let out = run_in(&exe, &dir, &["deep"], &[]);
    assert_success(&out, "inline_path.c deep");
    // The summary's tree is 256 deep (past serde_json's nesting limit): the metadata says it.
    let metadata = read_json(&dir.join("run"), "metadata.json");
    assert_eq!(metadata["records"]["written"], 2 * 256);
    let errors = &metadata["c_api"]["errors"];
    assert_eq!(errors["too_deep"], 2, "{errors}");
    assert_eq!(errors["no_open_region"], 1, "{errors}");
}

#[test]
fn a_forked_child_calls_the_inline_macros_safely_and_records_nothing() {
    let dir = temp_dir("inline-fork");
    let exe = compile(&program("inline_path.c"), &dir, &[]);
    let out = run_in(&exe, &dir, &["fork"], &[]);
    assert_success(&out, "inline_path.c fork");
    assert!(String::from_utf8_lossy(&out.stdout).contains("fork ok"));
    let summary = read_json(&dir.join("run"), "summary.json");
    let regions = region_counts(&summary["merged"]);
    assert_eq!(
        regions,
        counts(&[("parent", 11)]),
        "the child recorded nothing"
    );
    let metadata = read_json(&dir.join("run"), "metadata.json");
    assert_eq!(metadata["records"]["written"], 22);
}

#[test]
fn after_the_warm_up_no_pair_calls_into_the_library() {
    let dir = temp_dir("inline-calls");
    let exe = compile(
        &program("inline_path.c"),
        &dir,
        &[
            "-DCOUNT_CALLS",
            "-Wl,--wrap=metron_region_begin_id,--wrap=metron_region_end_id",
        ],
    );
    // One segment holds every record: no hand-over at the watermark (which calls).
    let out = run_in(&exe, &dir, &["calls"], &[("METRON_BUFFER_SIZE", "64M")]);
    assert_success(&out, "inline_path.c calls");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("library calls: warm-up 1, then 0"),
        "the first begin sets the thread up, no later call does: {text}"
    );
    let summary = read_json(&dir.join("run"), "summary.json");
    let regions = region_counts(&summary["merged"]);
    assert_eq!(regions.get("counted"), Some(&100_010), "{regions:?}");
    assert_eq!(
        regions.get("counted/literal"),
        Some(&100_010),
        "{regions:?}"
    );
}

#[test]
fn the_static_library_takes_the_inline_path_with_eight_threads() {
    let dir = temp_dir("inline-static");
    let exe = compile_static(&program("fast_path.c"), &dir);
    let pairs: u64 = 100_000;
    let out = run_in(
        &exe,
        &dir,
        &["threads", &pairs.to_string()],
        &[("METRON_BUFFER_POLICY", "lossless")],
    );
    assert_success(&out, "fast_path.c threads (libmetron.a)");
    let summary = read_json(&dir.join("run"), "summary.json");
    let regions = region_counts(&summary["merged"]);
    let threads = 8;
    assert_eq!(regions.get("outer"), Some(&threads), "{regions:?}");
    for name in ["by_id", "by_literal"] {
        assert_eq!(
            regions.get(&format!("outer/{name}")),
            Some(&(threads * pairs)),
            "{regions:?}"
        );
    }
    let metadata = read_json(&dir.join("run"), "metadata.json");
    assert_eq!(metadata["records"]["dropped"], 0, "{}", metadata["records"]);
}
