//! One runtime per process: copies of Metron in one process (the Rust crate, `libmetron.a`,
//! the preloaded `libmetron.so`) record into the first one's runtime, and runs never write
//! over each other's folders.

mod c_api_support;
use c_api_support::*;
use metron_tests::{emit_data, scenario, SCENARIO_ENV};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn validate(trace: &Path) -> Value {
    metron_tests::validated_trace(trace, &[])
}

/// Slice paths ("outer/inner") over every thread of a validated trace, summed.
fn trace_paths(trace: &Value) -> BTreeMap<String, u64> {
    let mut paths = BTreeMap::new();
    for thread in trace["threads"].as_array().expect("threads") {
        for (path, n) in thread["paths"].as_object().expect("paths") {
            *paths.entry(path.clone()).or_default() += n.as_u64().unwrap();
        }
    }
    paths
}

/// The lines of `stderr` that report a written run folder.
fn wrote_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("metron: wrote "))
        .collect()
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The only run folder under `dir`, with the output that made it.
fn only_folder(dir: &Path, out: &Output) -> PathBuf {
    let folders = run_folders(dir);
    assert_eq!(
        folders.len(),
        1,
        "one run folder expected under {}: {folders:?}\nstderr:\n{}",
        dir.display(),
        stderr_of(out)
    );
    folders.into_iter().next().unwrap()
}

fn assert_owner_with_copies(metadata: &Value, copies: u64) {
    assert_eq!(
        metadata["runtime"]["role"], "owner",
        "{}",
        metadata["runtime"]
    );
    assert_eq!(
        metadata["runtime"]["copies_joined"], copies,
        "{}",
        metadata["runtime"]
    );
}

scenario! {
    fn scenario_rust_program_with_eight_threads() {
        let role = metron::process_runtime();
        let threads: Vec<_> = (0..8)
            .map(|_| {
                std::thread::spawn(|| {
                    for _ in 0..3 {
                        let _outer = metron::scope!("rust-work");
                        let _inner = metron::scope!("rust-step");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        emit_data(&serde_json::json!({ "role": format!("{role:?}") }));
    }
}

#[test]
fn a_rust_program_under_metron_run_keeps_its_regions_in_the_one_run_folder() {
    let a = artifacts();
    let dir = temp_dir("one-runtime-rust");
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(a.metron())
        .args(["run", "--output-path"])
        .arg(dir.join("run"))
        .arg("--")
        .arg(&exe)
        .args([
            "scenario_rust_program_with_eight_threads",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(SCENARIO_ENV, "1")
        .env_remove("METRON_OUTPUT_PATH")
        .env_remove("LD_PRELOAD")
        .output()
        .expect("run metron");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = stderr_of(&out);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("Joined"),
        "the crate's copy joins the preloaded one: {stdout}"
    );
    assert_eq!(
        wrote_lines(&stderr).len(),
        1,
        "one run, one line:\n{stderr}"
    );
    let folder = only_folder(&dir, &out);
    let summary = read_json(&folder, "summary.json");
    let counts = region_counts(&summary["merged"]);
    assert_eq!(counts.get("rust-work"), Some(&24), "{counts:?}");
    assert_eq!(counts.get("rust-work/rust-step"), Some(&24), "{counts:?}");
    let program = counts
        .keys()
        .filter(|name| name.starts_with("one_runtime") && !name.contains('/'))
        .count();
    assert_eq!(program, 1, "the whole-program region: {counts:?}");
    let metadata = read_json(&folder, "metadata.json");
    assert_owner_with_copies(&metadata, 1);
    assert_eq!(metadata["process"]["preload"], true);
    let trace = validate(&folder.join("trace.pftrace"));
    let paths = trace_paths(&trace);
    assert_eq!(paths.get("rust-work"), Some(&24), "{paths:?}");
    assert_eq!(paths.get("rust-work/rust-step"), Some(&24), "{paths:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn one_runtime_program(name: &str) -> PathBuf {
    program("one_runtime").join(name)
}

#[test]
fn a_cpp_program_linked_with_the_static_library_under_metron_run_loses_nothing() {
    let a = artifacts();
    let dir = temp_dir("one-runtime-static");
    let exe = compile_static(
        &one_runtime_program("static_app.cpp"),
        &dir.join("static_app"),
        &[],
    );
    let out = Command::new(a.metron())
        .args(["run", "--output-path"])
        .arg(dir.join("out/run"))
        .arg("--")
        .arg(&exe)
        .env_remove("METRON_OUTPUT_PATH")
        .env_remove("LD_PRELOAD")
        .output()
        .expect("run metron");
    let stderr = stderr_of(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(wrote_lines(&stderr).len(), 1, "{stderr}");
    let folder = only_folder(&dir.join("out"), &out);
    let summary = read_json(&folder, "summary.json");
    let counts = region_counts(&summary["merged"]);
    assert_eq!(counts.get("cpp-work"), Some(&200), "{counts:?}");
    assert_eq!(counts.get("cpp-work/cpp-step"), Some(&200), "{counts:?}");
    assert_eq!(counts.get("static_app"), Some(&1), "{counts:?}");
    assert_owner_with_copies(&read_json(&folder, "metadata.json"), 1);
    let paths = trace_paths(&validate(&folder.join("trace.pftrace")));
    assert_eq!(paths.get("cpp-work/cpp-step"), Some(&200), "{paths:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_libraries_each_with_a_static_copy_nest_their_regions_on_the_same_threads() {
    let dir = temp_dir("one-runtime-dlopen");
    let lib = |name: &str, define: &[&str]| {
        let mut extra = vec!["-shared", "-Wl,--exclude-libs,ALL", "-Wl,-Bsymbolic"];
        extra.extend_from_slice(define);
        compile_static(&one_runtime_program("copy_lib.c"), &dir.join(name), &extra)
    };
    let liba = lib("liba.so", &["-DLIB_A"]);
    let libb = lib("libb.so", &[]);
    let main = dir.join("dlopen_two");
    let cc = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-O1", "-g"])
        .arg(one_runtime_program("dlopen_two.c"))
        .arg("-o")
        .arg(&main)
        .args(["-ldl", "-lpthread"])
        .output()
        .expect("cc");
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let out = Command::new(&main)
        .arg(&liba)
        .arg(&libb)
        .env("METRON_OUTPUT_PATH", dir.join("out/run"))
        .env_remove("LD_PRELOAD")
        .env_remove("METRON_PRELOAD")
        .output()
        .expect("run dlopen_two");
    let stderr = stderr_of(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(wrote_lines(&stderr).len(), 1, "{stderr}");
    let folder = only_folder(&dir.join("out"), &out);
    let metadata = read_json(&folder, "metadata.json");
    assert_owner_with_copies(&metadata, 1);
    let paths = trace_paths(&validate(&folder.join("trace.pftrace")));
    assert_eq!(paths.get("in A"), Some(&4000), "{paths:?}");
    assert_eq!(paths.get("in A/in B"), Some(&4000), "{paths:?}");
    assert_eq!(paths.len(), 2, "nothing else: {paths:?}");
    let summary = read_json(&folder, "summary.json");
    let counts = region_counts(&summary["merged"]);
    assert_eq!(counts.get("in A"), Some(&4000), "{counts:?}");
    assert_eq!(counts.get("in A/in B"), Some(&4000), "{counts:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_copy_with_another_abi_is_refused_clearly_and_records_separately() {
    let dir = temp_dir("one-runtime-foreign");
    // Static: its priority-101 constructor then runs before Metron's, in the same executable.
    let exe = compile_static(
        &one_runtime_program("foreign_owner.c"),
        &dir.join("foreign_owner"),
        &["-D_DEFAULT_SOURCE"],
    );
    let out = run_in(&exe, &dir, &[], &[]);
    let stderr = stderr_of(&out);
    assert!(out.status.success(), "{stderr}");
    let refusals: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("ABI version 999") && l.contains("records separately"))
        .collect();
    assert_eq!(refusals.len(), 1, "one line says why:\n{stderr}");
    let folder = only_folder(&dir, &out);
    let metadata = read_json(&folder, "metadata.json");
    assert_eq!(
        metadata["runtime"]["role"], "separate",
        "{}",
        metadata["runtime"]
    );
    assert!(metadata["runtime"]["note"]
        .as_str()
        .is_some_and(|n| n.contains("9.9.9")));
    let counts = region_counts(&read_json(&folder, "summary.json")["merged"]);
    assert_eq!(counts.get("own"), Some(&10), "{counts:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn processes_given_one_folder_each_get_their_own() {
    let dir = temp_dir("one-runtime-same-folder");
    let exe = compile(&program("threads8.c"), &dir, &[]);
    let target = dir.join("out/same");
    let children: Vec<_> = (0..4)
        .map(|_| {
            Command::new(&exe)
                .env("METRON_OUTPUT_PATH", &target)
                .env("METRON_TRACE", "false")
                .env_remove("LD_PRELOAD")
                .env_remove("METRON_PRELOAD")
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start")
        })
        .collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().expect("wait"))
        .collect();
    let mut folders = Vec::new();
    for out in &outputs {
        let stderr = stderr_of(out);
        assert!(out.status.success(), "{stderr}");
        let line = wrote_lines(&stderr);
        assert_eq!(line.len(), 1, "{stderr}");
        let folder = line[0]
            .trim_start_matches("metron: wrote ")
            .split(" (")
            .next()
            .unwrap()
            .to_string();
        if folder != target.display().to_string() {
            assert!(
                stderr.contains("is another run's; this run writes"),
                "a moved run says so:\n{stderr}"
            );
        }
        folders.push(PathBuf::from(folder));
    }
    let distinct: std::collections::BTreeSet<_> = folders.iter().collect();
    assert_eq!(distinct.len(), 4, "{folders:?}");
    let mut pids = std::collections::BTreeSet::new();
    for folder in &folders {
        let metadata = read_json(folder, "metadata.json");
        pids.insert(metadata["run"]["pid"].as_u64().unwrap());
        let counts = region_counts(&read_json(folder, "summary.json")["merged"]);
        assert_eq!(
            counts.get("work"),
            Some(&1600),
            "{}: {counts:?}",
            folder.display()
        );
        let names: Vec<String> = std::fs::read_dir(folder)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().all(|n| !n.starts_with('.')),
            "no claim file or other hidden file is left: {names:?}"
        );
    }
    assert_eq!(pids.len(), 4, "each folder holds its own process");
    let _ = std::fs::remove_dir_all(&dir);
}
