//! `libmetron.so`'s thread-local block stays small enough that glibc gives it static TLS when
//! it is `dlopen`ed (as NVTX's injection does): the NVTX and C fast paths then reach their
//! per-thread state with a 2-instruction TLS descriptor resolution instead of the 17 of glibc's
//! dynamic resolver (`user-api/src/thread_block.rs`, `docs/src/performance.md`).
mod c_api_support;

use c_api_support::*;
use object::read::elf::ProgramHeader;
use std::process::Command;

/// glibc's spare static TLS for `dlopen`ed libraries (`glibc.rtld.optional_static_tls`, 512
/// bytes by default), less room for alignment and for another library that got there first.
const BUDGET: u64 = 480;

#[test]
fn the_thread_local_block_fits_the_spare_static_tls() {
    let lib = artifacts().lib();
    let data = std::fs::read(&lib).expect("read libmetron.so");
    let file = object::File::parse(&*data).expect("parse libmetron.so");
    let object::File::Elf64(elf) = &file else {
        panic!("libmetron.so is not a 64-bit ELF file");
    };
    let endian = elf.endian();
    let tls = elf
        .elf_program_headers()
        .iter()
        .find(|p| p.p_type(endian) == object::elf::PT_TLS)
        .map(|p| p.p_memsz(endian))
        .expect("a PT_TLS segment");
    assert!(
        tls <= BUDGET,
        "libmetron.so's thread-local block is {tls} bytes, over the {BUDGET} that keep it in \
         glibc's spare static TLS when it is dlopen'ed: keep large per-thread state on the \
         heap (user-api/src/thread_block.rs) or box it (list them with \
         `readelf -sW libmetron.so | awk '$4==\"TLS\"' | sort -k3 -n`)"
    );
}

#[test]
fn a_dlopened_libmetron_gets_static_tls() {
    let dir = temp_dir("static-tls");
    let exe = dir.join("static_tls");
    let out = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg(program("static_tls.c"))
        .arg("-o")
        .arg(&exe)
        .args(["-ldl", "-lpthread"])
        .output()
        .expect("run the C compiler");
    assert_success(&out, "compiling static_tls.c");
    let lib = artifacts().lib().display().to_string();
    let out = run_in(&exe, &dir, &[&lib], &[]);
    assert_success(&out, "static_tls");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("static_tls=1"),
        "glibc gave the dlopen'ed libmetron.so dynamic TLS: {stdout}"
    );
}

/// The per-thread states moved to the heap must outlive Metron's thread-local destructors: a
/// pthread key destructor runs after them and may still call Metron (the header's inline path
/// keeps the state's address in the program's own thread-local). Run under valgrind's memcheck
/// when it is installed: no read or write of freed memory.
#[test]
fn calls_from_a_threads_last_moments_touch_no_freed_state() {
    let dir = temp_dir("late-calls");
    let exe = compile(&program("late_calls.c"), &dir, &["-O1"]);
    let out = run_in(&exe, &dir, &[], &[]);
    assert_success(&out, "late_calls");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("ok_in_body=256"),
        "every call in the threads' bodies succeeds: {stdout}"
    );
    if Command::new("valgrind").arg("--version").output().is_err() {
        eprintln!("SKIPPED the valgrind half: valgrind is not installed");
        return;
    }
    let out = Command::new("valgrind")
        .args(["--tool=memcheck", "--error-exitcode=99", "--leak-check=no"])
        .arg(&exe)
        .env("METRON_OUTPUT_PATH", dir.join("run-valgrind"))
        .env("METRON_TRACE", "false")
        .output()
        .expect("run valgrind");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.contains("ERROR SUMMARY: 0 errors"),
        "memcheck found errors:\n{stderr}"
    );
}

/// Thread churn: a thread's state (about 19 KB for the C API) is freed once the thread is
/// gone, so 3,000 more short threads grow the heap by far less than 3,000 states (what Metron
/// keeps per thread for its outputs, under a kilobyte, remains).
#[test]
fn each_threads_state_is_freed_after_the_thread() {
    let dir = temp_dir("thread-churn");
    let exe = compile(&program("thread_churn.c"), &dir, &["-O1"]);
    let out = run_in(&exe, &dir, &[], &[]);
    assert_success(&out, "thread_churn");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let heap = |key: &str| -> u64 {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in {stdout}"))
    };
    let growth = heap("heap_after_4000=").saturating_sub(heap("heap_after_1000="));
    let per_thread = growth / 3000;
    eprintln!("heap growth per thread: {per_thread} bytes");
    assert!(
        per_thread < 4096,
        "the heap grew by {per_thread} bytes per thread over 3,000 threads: per-thread states \
         (about 19 KB each) are not freed"
    );
    let summary = read_json(&dir.join("run"), "summary.json");
    let regions = region_counts(&summary["merged"]);
    assert_eq!(regions.get("churn"), Some(&4000), "{regions:?}");
    assert_eq!(regions.get("churn-literal"), Some(&4000), "{regions:?}");
}
