//! fork, _exit, signals, abort, threads that predate Metron, and exec, through the C API.

mod c_api_support;
use c_api_support::*;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::OnceLock;

fn lifecycle_exe() -> &'static PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| compile(&program("lifecycle.c"), &temp_dir("lifecycle-exe"), &[]))
}

#[test]
fn forked_children_are_disabled_cleanly_and_the_parent_run_is_intact() {
    let dir = temp_dir("fork");
    // %pid% in the path: a child that wrote output would show up as a second folder.
    let out = run_in(
        lifecycle_exe(),
        &dir,
        &["fork"],
        &[(
            "METRON_OUTPUT_PATH",
            dir.join("runs/%pid%").to_str().unwrap(),
        )],
    );
    assert_success(&out, "lifecycle fork");
    let folders = run_folders(&dir.join("runs"));
    assert_eq!(
        folders.len(),
        1,
        "only the parent writes a run folder: {folders:?}"
    );
    let summary = read_json(&folders[0], "summary.json");
    let regions = region_counts(&summary["merged"]);
    assert_eq!(regions.get("parent"), Some(&1));
    assert_eq!(regions.get("after_forks"), Some(&1));
    assert!(regions.get("busy").is_some_and(|n| *n > 0));
    assert!(!regions.contains_key("child_region"), "{regions:?}");
    let metadata = read_json(&folders[0], "metadata.json");
    for t in metadata["threads"].as_array().unwrap() {
        assert_eq!(t["unbalanced_ends"], 0, "{t}");
        assert_eq!(t["open_at_exit"], 0, "{t}");
    }
}

#[test]
fn a_child_that_calls_underscore_exit_leaves_the_parent_run_intact() {
    let dir = temp_dir("_exit");
    let out = run_in(lifecycle_exe(), &dir, &["_exit"], &[]);
    assert_success(&out, "lifecycle _exit");
    let summary = read_json(&dir.join("run"), "summary.json");
    assert_eq!(region_counts(&summary["merged"]), counts(&[("parent", 1)]));
}

fn dies_by_signal_and_writes_its_run(scenario: &str, signal: i32) {
    let dir = temp_dir(scenario);
    let out = run_in(
        lifecycle_exe(),
        &dir,
        &[scenario],
        &[("METRON_SIGNALS", "on")],
    );
    assert_eq!(
        out.status.signal(),
        Some(signal),
        "the process still dies by the signal: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let run = dir.join("run");
    let summary = read_json(&run, "summary.json");
    let regions = region_counts(&summary["merged"]);
    assert_eq!(regions.get("before_signal"), Some(&1), "{regions:?}");
    assert_eq!(regions.get("open_when_signalled"), Some(&1), "{regions:?}");
    assert!(regions.get("busy").is_some_and(|n| *n > 0), "{regions:?}");
    let metadata = read_json(&run, "metadata.json");
    assert_eq!(metadata["c_api"]["errors_total"], 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("metron: wrote").count(),
        1,
        "the outputs are written once:\n{stderr}"
    );
}

#[test]
fn sigterm_writes_the_run_once_then_the_process_dies_by_sigterm() {
    dies_by_signal_and_writes_its_run("sigterm", libc::SIGTERM);
}

#[test]
fn sigint_writes_the_run_once_then_the_process_dies_by_sigint() {
    dies_by_signal_and_writes_its_run("sigint", libc::SIGINT);
}

#[test]
fn abort_writes_the_run_then_the_process_dies_by_sigabrt() {
    dies_by_signal_and_writes_its_run("abort", libc::SIGABRT);
}

#[test]
fn without_metron_signals_a_sigterm_kills_as_before_and_writes_nothing() {
    let dir = temp_dir("sigterm-off");
    let out = run_in(
        lifecycle_exe(),
        &dir,
        &["sigterm"],
        &[("METRON_SIGNALS", "off")],
    );
    assert_eq!(out.status.signal(), Some(libc::SIGTERM));
    assert!(!dir.join("run").exists());
}

#[test]
fn a_handler_the_program_installed_first_is_kept() {
    let dir = temp_dir("handler");
    let out = run_in(
        lifecycle_exe(),
        &dir,
        &["handler"],
        &[("METRON_SIGNALS", "on")],
    );
    assert_success(&out, "lifecycle handler");
    let summary = read_json(&dir.join("run"), "summary.json");
    assert_eq!(
        region_counts(&summary["merged"]),
        counts(&[("with_own_handler", 1)])
    );
}

#[test]
fn threads_created_before_metron_started_record_normally() {
    let dir = temp_dir("early");
    let out = run_in(lifecycle_exe(), &dir, &["early"], &[]);
    assert_success(&out, "lifecycle early");
    let summary = read_json(&dir.join("run"), "summary.json");
    assert_eq!(
        region_counts(&summary["merged"]),
        counts(&[("main", 1), ("early_thread", 30)])
    );
    let threads = summary["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| region_counts(&t["regions"]).get("early_thread") == Some(&10))
        .count();
    assert_eq!(threads, 3);
}

#[test]
fn exec_writes_the_old_programs_run_first_and_the_new_program_writes_its_own() {
    let dir = temp_dir("exec");
    let out = run_in(lifecycle_exe(), &dir, &["exec"], &[]);
    assert_success(&out, "lifecycle exec");
    // libmetron's execv writes the old image's run before the exec; the new image (same pid,
    // often the same second) writes beside it instead of over it.
    let before = read_json(&dir.join("run"), "summary.json");
    assert_eq!(
        region_counts(&before["merged"]),
        counts(&[("before_exec", 1)])
    );
    let after = read_json(&dir.join("run-2"), "summary.json");
    assert_eq!(
        region_counts(&after["merged"]),
        counts(&[("after_exec", 1)])
    );
}
