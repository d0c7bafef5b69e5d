//! `metron run` on programs that never call Metron: run folders and exit codes.

mod c_api_support;
use c_api_support::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn metron_run(out_dir: &Path, cwd: &Path, command: &[&str]) -> Output {
    let template = out_dir.join("%exe%-%pid%");
    Command::new(artifacts().metron())
        .current_dir(cwd)
        .args(["run", "--output-path"])
        .arg(template)
        .arg("--")
        .args(command)
        .env("METRON_TRACE", "false")
        .env_remove("METRON_OUTPUT_PATH")
        .env_remove("LD_PRELOAD")
        .output()
        .expect("run metron")
}

/// The run folders whose program name starts with `exe`.
fn folders_of(dir: &Path, exe: &str) -> Vec<PathBuf> {
    run_folders(dir)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(exe))
        })
        .collect()
}

/// The program's own region: named after it, one, and as long as the run.
fn check_program_run(folder: &Path, exe_prefix: &str, at_least_ns: f64) {
    let summary = read_json(folder, "summary.json");
    let merged = summary["merged"].as_array().unwrap();
    let main = merged
        .iter()
        .find(|n| n["name"].as_str().unwrap().starts_with(exe_prefix))
        .unwrap_or_else(|| panic!("no region named after {exe_prefix}: {summary}"));
    assert_eq!(main["count"], 1);
    let wall = main["metrics"]["wall_clock.elapsed"]["total"]
        .as_f64()
        .unwrap();
    assert!(wall >= at_least_ns, "main duration {wall} ns");
    let metadata = read_json(folder, "metadata.json");
    assert_eq!(metadata["process"]["preload"], true);
    assert!(!metadata["process"]["threads_at_exit"]
        .as_array()
        .unwrap()
        .is_empty());
    assert_eq!(metadata["run"]["pid"], summary["pid"]);
    assert_eq!(metadata["threads"][0]["open_at_exit"], 0, "{metadata}");
}

#[test]
fn python_gets_a_run_folder_and_keeps_its_exit_code() {
    let dir = temp_dir("run-python");
    let out = metron_run(
        &dir,
        &dir,
        &[
            "python3",
            "-c",
            "import time, sys; time.sleep(0.05); sys.exit(4)",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let folders = folders_of(&dir, "python");
    assert_eq!(folders.len(), 1, "{:?}", run_folders(&dir));
    check_program_run(&folders[0], "python", 50e6);
}

#[test]
fn a_shell_command_gets_run_folders_and_keeps_its_exit_code() {
    let dir = temp_dir("run-sh");
    let out = metron_run(&dir, &dir, &["/bin/sh", "-c", "sleep 0.1"]);
    assert_eq!(out.status.code(), Some(0));
    // One run folder for the command (named after it): the shell waited for `sleep`, so it is
    // the command's process whose run is the folder's own; `sleep` recorded nothing of its
    // own and is listed in processes.json (process tree mode, docs/src/cli.md).
    let runs = folders_of(&dir, "sh");
    assert_eq!(run_folders(&dir), runs, "one run folder");
    assert_eq!(runs.len(), 1, "{:?}", run_folders(&dir));
    let exe = read_json(&runs[0], "metadata.json")["run"]["exe"]
        .as_str()
        .unwrap()
        .to_string();
    check_program_run(&runs[0], &exe, 100e6);
    let index = read_json(&runs[0], "processes.json");
    let listed = index["processes"].as_array().unwrap();
    assert!(
        listed.iter().any(|p| p["exe"] == "sleep"),
        "sleep is listed: {index}"
    );
    assert!(
        listed
            .iter()
            .any(|p| p["is_command"] == true && p["exit"]["code"] == 0),
        "the command's exit status: {index}"
    );

    let out = metron_run(&dir, &dir, &["/bin/sh", "-c", "exit 3"]);
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn make_on_a_tiny_makefile_gets_run_folders_and_keeps_its_exit_code() {
    let dir = temp_dir("run-make");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(
        work.join("Makefile"),
        "all: out.txt\nout.txt:\n\tcp Makefile out.txt\nfail:\n\tfalse\n",
    )
    .unwrap();
    let runs = dir.join("runs");
    let out = metron_run(&runs, &work, &["make", "-s"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(work.join("out.txt").exists());
    let makes = folders_of(&runs, "make");
    assert_eq!(makes.len(), 1, "{:?}", run_folders(&runs));
    assert_eq!(run_folders(&runs).len(), 1, "{:?}", run_folders(&runs));
    check_program_run(&makes[0], "make", 0.0);
    // make runs `cp` itself (no shell needed): the child is in the tree's index.
    let index = read_json(&makes[0], "processes.json");
    assert!(
        index["processes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["exe"] == "cp" && p["trivial"] == true),
        "{index}"
    );
    // With METRON_PROCESSES=separate every process gets its own folder, as before.
    let separate = dir.join("separate");
    let out = Command::new(artifacts().metron())
        .current_dir(&work)
        .args(["run", "--processes", "separate", "--output-path"])
        .arg(separate.join("%exe%-%pid%"))
        .args(["--", "make", "-s", "-B"])
        .env("METRON_TRACE", "false")
        .env_remove("METRON_OUTPUT_PATH")
        .env_remove("LD_PRELOAD")
        .output()
        .expect("run metron");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        folders_of(&separate, "make").len(),
        1,
        "{:?}",
        run_folders(&separate)
    );
    assert_eq!(
        folders_of(&separate, "cp").len(),
        1,
        "{:?}",
        run_folders(&separate)
    );

    let out = metron_run(&runs, &work, &["make", "-s", "fail"]);
    assert_eq!(out.status.code(), Some(2), "make's own failure status");
}

#[test]
fn a_plain_c_program_gets_its_threads_and_main_duration() {
    let dir = temp_dir("run-threads");
    let source = dir.join("plain.c");
    std::fs::write(
        &source,
        r#"#include <pthread.h>
#include <unistd.h>
static void* idle(void* arg) { (void)arg; pause(); return 0; }
int main(void) {
    pthread_t t[2];
    pthread_create(&t[0], 0, idle, 0);
    pthread_create(&t[1], 0, idle, 0);
    usleep(50000);
    return 9;
}
"#,
    )
    .unwrap();
    let exe = dir.join("plain");
    let status = Command::new("cc")
        .args([
            "-std=c99",
            "-D_DEFAULT_SOURCE",
            "-Wall",
            "-Werror",
            "-pthread",
        ])
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap();
    assert!(status.success());
    let runs = dir.join("runs");
    let out = metron_run(&runs, &dir, &[exe.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(9));
    let folders = folders_of(&runs, "plain");
    assert_eq!(folders.len(), 1);
    check_program_run(&folders[0], "plain", 50e6);
    let metadata = read_json(&folders[0], "metadata.json");
    let program_threads = metadata["process"]["threads_at_exit"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| !t["name"].as_str().unwrap().starts_with("metron"))
        .filter(|t| t["name"] == "plain")
        .count();
    assert_eq!(program_threads, 3, "{}", metadata["process"]);
}

#[test]
fn a_command_that_does_not_exist_exits_127() {
    let dir = temp_dir("run-missing");
    let out = metron_run(&dir, &dir, &["/nonexistent/program"]);
    assert_eq!(out.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&out.stderr).contains("command not found"));
    // Nor a name PATH does not have; and nothing is left behind in the working directory
    // (the default output folder is relative to it).
    let cwd = temp_dir("run-missing-cwd");
    let out = Command::new(artifacts().metron())
        .args(["run", "--", "metron-no-such-command-anywhere"])
        .current_dir(&cwd)
        .env_remove("METRON_OUTPUT_PATH")
        .env_remove("LD_PRELOAD")
        .output()
        .expect("run metron");
    assert_eq!(out.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&out.stderr).contains("command not found"));
    let left: Vec<_> = std::fs::read_dir(&cwd).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
