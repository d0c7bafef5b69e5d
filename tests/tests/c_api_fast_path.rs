//! The C API's fast paths (issue 18): by id, by a literal through the header's macros (a
//! per-call-site id), by names computed at run time (the per-thread content cache), and NVTX.
//!
//! - 8 threads × 10⁶ pairs of each C path, nested under one region per thread: the summary
//!   has every region, the metadata no C API error and no drop; one call site inlined with two
//!   literals (sharing the site's static) keeps both names apart.
//! - No allocation per pair after a thread's first record: the C program interposes
//!   `malloc` & co. and counts the calling thread's calls over 10⁵ pairs of each path.
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
/// as written.
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
        .filter(|l| l.contains("\tcall "))
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
    for (export, checked) in [
        ("metron_region_begin", "region_begin_checked"),
        ("metron_region_end", "region_end_checked"),
        ("metron_region_begin_id", "region_begin_id_checked"),
        ("metron_region_end_id", "region_end_id_checked"),
    ] {
        let calls = calls_of(export);
        assert!(
            calls.iter().any(|c| c.contains(checked)),
            "{export} falls back to {checked}: {calls:?}"
        );
        for call in &calls {
            // Its checked path (under catch_unwind); the TLS descriptor (`call *(%rax)`); the
            // content cache (compares and loads, documented in fast_path.rs); and Rust's
            // abort-on-unwind guard of an `extern "C"` function (reached only if a callee
            // unwound: none can; it aborts rather than unwind into C).
            let ok = call.contains(checked)
                || call.ends_with("*(%rax)")
                || call.contains("lookup_by_content")
                || call.contains("panic_cannot_unwind");
            assert!(
                ok,
                "{export} calls {call}: a fast path may call only its checked path, the TLS \
                 descriptor and the content cache ({calls:?})"
            );
        }
    }
}
