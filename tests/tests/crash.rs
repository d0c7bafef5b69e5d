//! Crashes write the run: summary, metadata and trace with the crash site, regions still open
//! ended at the crash (`open_at_crash`), and the process still dies by its signal (or the
//! program's own handler still runs).

mod c_api_support;
mod nvtx_support;
use c_api_support::*;
use metron_tests::{scenario, Scenario};
use serde_json::Value;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

fn crash_exe() -> &'static PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| compile(&program("crash.c"), &temp_dir("crash-exe"), &[]))
}

/// The line of `crash.c` that stores through NULL.
fn crash_line() -> usize {
    let text = std::fs::read_to_string(program("crash.c")).unwrap();
    1 + text
        .lines()
        .position(|l| l.contains("/* the crash line */"))
        .expect("the crash line is marked")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The process died by `signal`, as it would have without Metron.
fn assert_died_by(status: std::process::ExitStatus, signal: i32, stderr: &str) {
    assert_eq!(
        status.signal(),
        Some(signal),
        "dies by signal {signal} as without Metron: {status:?}\n{stderr}"
    );
}

/// Checks what every crashed C run must hold; returns its metadata.
fn assert_complete_crashed_run(run: &Path, out: &Output, signal: &str) -> Value {
    assert_complete_crashed_run_under(run, out, signal, "")
}

/// [`assert_complete_crashed_run`] with the region paths under `root` (`metron run` adds the
/// whole-program region, named after the program).
fn assert_complete_crashed_run_under(run: &Path, out: &Output, signal: &str, root: &str) -> Value {
    let summary = read_json(run, "summary.json");
    let regions = region_counts(&summary["merged"]);
    let get = |path: &str| regions.get(&format!("{root}{path}")).copied();
    assert_eq!(get("work"), Some(200_000), "{regions:?}");
    assert_eq!(get("outer"), Some(1), "{regions:?}");
    assert_eq!(get("outer/inner"), Some(1), "{regions:?}");
    // Workers record at the top of their own threads.
    assert!(regions.get("busy").is_some_and(|n| *n > 0), "{regions:?}");
    assert_eq!(summary["died"]["signal"], signal, "{}", summary["died"]);
    let metadata = read_json(run, "metadata.json");
    let died = &metadata["died"];
    assert_eq!(died["signal"], signal, "{died}");
    let open_at_crash: u64 = metadata["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["open_at_crash"].as_u64().unwrap())
        .sum();
    // outer and inner on the main thread (and the program's region under `metron run`), plus
    // any `busy` region a worker had open.
    assert!(
        (2..=5).contains(&open_at_crash),
        "{open_at_crash} regions open at the crash"
    );
    let open_at_exit: u64 = metadata["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["open_at_exit"].as_u64().unwrap())
        .sum();
    assert_eq!(open_at_exit, 0, "a crash is not an exit");
    let text = std::fs::read_to_string(run.join("summary.txt")).unwrap();
    assert!(
        text.contains(&format!("died: {signal}")),
        "summary.txt says how the run died:\n{}",
        &text[..text.len().min(2000)]
    );
    assert_eq!(
        stderr(out).matches("metron: wrote").count(),
        1,
        "the outputs are written once:\n{}",
        stderr(out)
    );
    metadata
}

fn frames(died: &Value) -> Vec<String> {
    died["frames"]
        .as_array()
        .unwrap_or_else(|| panic!("died has frames: {died}"))
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_segfault_writes_the_run_with_the_crash_site_and_dies_by_sigsegv() {
    let dir = temp_dir("crash-segv");
    let out = run_in(crash_exe(), &dir, &["segv"], &[]);
    assert_died_by(out.status, libc::SIGSEGV, &stderr(&out));
    let metadata = assert_complete_crashed_run(&dir.join("run"), &out, "SIGSEGV");
    let died = &metadata["died"];
    assert_eq!(died["address"], "0x0", "{died}");
    let frames = frames(died);
    let site = format!("crash.c:{}", crash_line());
    assert!(
        frames[0].starts_with("crash_here") && frames[0].contains(&site),
        "the innermost frame is the faulting line {site}: {frames:#?}"
    );
    assert!(
        frames.iter().any(|f| f.starts_with("main ")),
        "the stack reaches main: {frames:#?}"
    );
}

#[test]
fn a_segfault_on_one_thread_while_main_returns_still_writes_the_run_and_dies_by_sigsegv() {
    // The main thread returns from main (exit status 0) while another thread is in the crash
    // handler: the exit must wait for the crashed run and let the signal end the process.
    let dir = temp_dir("crash-segv-exiting");
    let out = run_in(crash_exe(), &dir, &["segv_while_exiting"], &[]);
    assert_died_by(out.status, libc::SIGSEGV, &stderr(&out));
    let metadata = assert_complete_crashed_run(&dir.join("run"), &out, "SIGSEGV");
    let frames = frames(&metadata["died"]);
    assert!(
        frames[0].starts_with("crash_here"),
        "the crash site is the other thread's: {frames:#?}"
    );
}

#[test]
fn a_segfault_under_metron_run_leaves_a_valid_trace_with_the_slices_ended_at_the_crash() {
    let dir = temp_dir("crash-segv-run");
    let out = std::process::Command::new(artifacts().metron())
        .arg("run")
        .arg("--")
        .arg(crash_exe())
        .arg("segv")
        .env("METRON_OUTPUT_PATH", dir.join("run"))
        .env_remove("LD_PRELOAD")
        .output()
        .expect("run metron");
    assert_died_by(out.status, libc::SIGSEGV, &stderr(&out));
    let run = dir.join("run");
    let metadata = assert_complete_crashed_run_under(&run, &out, "SIGSEGV", "crash/");
    let crash_ns = metadata["died"]["ts_ns"].as_u64().unwrap();
    let trace = nvtx_support::decoded_trace(&run.join("trace.pftrace"));
    let slices = nvtx_support::slices(&trace);
    let count = |name: &str| slices.iter().filter(|s| s.name == name).count();
    assert_eq!(count("work"), 200_000);
    for name in ["outer", "inner"] {
        let s = slices
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("slice {name}"));
        // At the crash time, or (by clock refinement between two conversions of the same
        // ticks) a few nanoseconds after it, so that the thread's track stays monotonic.
        let end = s.ts + s.dur;
        assert!(
            (crash_ns..crash_ns + 1_000).contains(&end),
            "{name} ends at the crash ({crash_ns}), not at {end}: {:?}",
            s.args
        );
    }
}

#[test]
fn sigbus_sigfpe_and_abort_are_written_too() {
    for (scenario, signal, name) in [
        ("bus", libc::SIGBUS, "SIGBUS"),
        ("fpe", libc::SIGFPE, "SIGFPE"),
        ("abort", libc::SIGABRT, "SIGABRT"),
    ] {
        let dir = temp_dir(&format!("crash-{scenario}"));
        let out = run_in(crash_exe(), &dir, &[scenario], &[]);
        assert_died_by(out.status, signal, &format!("{scenario}: {}", stderr(&out)));
        let metadata = assert_complete_crashed_run(&dir.join("run"), &out, name);
        let frames = frames(&metadata["died"]);
        assert!(
            frames.iter().any(|f| f.starts_with("crash_here")),
            "{scenario}: the stack holds crash_here: {frames:#?}"
        );
    }
}

#[test]
fn the_programs_own_crash_handler_still_runs_after_the_run_is_written() {
    let dir = temp_dir("crash-own-handler");
    let out = run_in(crash_exe(), &dir, &["own_handler"], &[]);
    assert_eq!(
        out.status.code(),
        Some(42),
        "the program's handler ran and chose the exit: {:?}\n{}",
        out.status,
        stderr(&out)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "own handler\n");
    assert_complete_crashed_run(&dir.join("run"), &out, "SIGSEGV");
}

#[test]
fn with_metron_crash_off_a_segfault_writes_nothing() {
    let dir = temp_dir("crash-off");
    let out = run_in(crash_exe(), &dir, &["segv"], &[("METRON_CRASH", "off")]);
    assert_died_by(out.status, libc::SIGSEGV, &stderr(&out));
    assert!(!dir.join("run").join("metadata.json").exists());
}

scenario! {
    fn scenario_rust_program_segfaults() {
        let _outer = metron::scope!("rust_outer");
        for _ in 0..1000 {
            let _r = metron::scope!("rust_work");
        }
        // SAFETY: none; this is the crash under test.
        unsafe { std::ptr::null_mut::<u32>().write_volatile(7) };
    }
}

#[test]
fn a_rust_program_linked_with_the_crate_writes_its_run_when_it_segfaults() {
    let run = Scenario::new("scenario_rust_program_segfaults").run_unchecked();
    // Rust's own SIGSEGV handler is chained after Metron's.
    assert_died_by(run.status, libc::SIGSEGV, &run.stderr);
    let metadata = run.metadata();
    assert_eq!(metadata["died"]["signal"], "SIGSEGV");
    let summary = run.summary();
    let regions = region_counts(&summary["merged"]);
    assert_eq!(
        regions.get("rust_outer/rust_work"),
        Some(&1000),
        "{regions:?}"
    );
    assert_eq!(regions.get("rust_outer"), Some(&1), "{regions:?}");
    let frames = frames(&metadata["died"]);
    assert!(
        frames.iter().any(|f| f.contains("crash.rs")),
        "the stack names this test file: {frames:#?}"
    );
}
