//! `metron run --passes auto`: the counter plan decides how many runs, each pass counts its
//! share (METRON_PERF_PASS), and the merged summary takes every counter and derived metric
//! from the pass that counted it, with the run-to-run variation reported.

mod c_api_support;
use c_api_support::*;
use serde_json::Value;
use std::process::Command;

/// A short CPU-bound loop in an unmodified program, so only the whole-program region is
/// recorded. (Not `sh`: dash leaves through `_exit`, which skips every exit handler.)
const LOOP: &str = "sum(i * i for i in range(200000))";

/// `metron run --passes auto` into `base` with counters that need two passes of group size 2
/// (IPC's cycles and instructions together), on `python3 -c program`.
fn run_two_passes(base: &std::path::Path, program: &str) -> std::process::Output {
    Command::new(artifacts().metron())
        .args([
            "run",
            "--perf-events",
            "task-clock,page-faults,cycles,instructions,branch-misses",
            "--metrics",
            "IPC",
            "--perf-group-size",
            "2",
            "--passes",
            "auto",
            "--trace",
            "false",
            "-o",
        ])
        .arg(base)
        .args(["--", "python3", "-c", program])
        .env_remove("METRON_OUTPUT_PATH")
        .env_remove("LD_PRELOAD")
        .output()
        .expect("run metron")
}

fn program_node(summary: &Value) -> &Value {
    &summary["merged"][0]
}

#[test]
fn passes_auto_runs_each_pass_and_merges_them() {
    let dir = temp_dir("passes-auto");
    let base = dir.join("merged");
    let out = run_two_passes(&base, LOOP);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}");
    assert!(out.status.success(), "{stderr}");
    // Announced before the first run: 2 passes, IPC's counters together.
    let first = stderr.lines().next().unwrap_or("");
    assert!(first.contains("2 passes"), "{first}");
    assert!(first.contains("cycles, instructions"), "{first}");
    assert!(stderr.contains("2 passes merged"), "{stderr}");

    let passes = read_json(&base, "passes.json");
    assert_eq!(passes["passes"], 2);
    assert_eq!(passes["plan"].as_array().unwrap().len(), 2);
    for pass in 1..=2 {
        let meta = read_json(&base.join(format!("pass-{pass}")), "metadata.json");
        assert_eq!(meta["perf_counters"]["pass"], pass);
    }
    // Software events are counted in every pass; the merged summary takes pass 1's.
    let merged = read_json(&base, "summary.json");
    let node = program_node(&merged);
    let task = &node["metrics"]["perf_counters.task-clock"];
    assert!(task["total"].as_f64().unwrap() > 0.0, "{node:#}");
    assert_eq!(task["pass"], 1);
    let variation = passes["variation"].as_array().unwrap();
    let entry = &variation[0];
    assert_eq!(entry["wall_clock_total_ns"].as_array().unwrap().len(), 2);
    assert!(entry["variation_pct"].as_f64().unwrap() >= 0.0);
    assert!(node["pass_variation_pct"].is_number());
    let has_pmu = passes["counted"][0]["events"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e == "cycles" || e == "branch-misses");
    if has_pmu {
        assert!(
            node["derived"]["IPC"]["value"].as_f64().unwrap() > 0.0,
            "{node:#}"
        );
    } else {
        println!(
            "no hardware PMU here: the hardware counters of both passes are absent, as reported"
        );
        assert!(stderr.contains("no hardware PMU"), "{stderr}");
    }
}

#[test]
fn a_bad_pass_count_is_refused() {
    let out = Command::new(artifacts().metron())
        .args(["run", "--passes", "zero", "--", "true"])
        .output()
        .expect("run metron");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("expected auto or a number of passes"),
        "{stderr}"
    );
}

#[test]
fn every_pass_runs_when_the_program_exits_non_zero() {
    let dir = temp_dir("passes-exit");
    let base = dir.join("merged");
    let program = format!("{LOOP}; import sys; sys.exit(3)");
    let out = run_two_passes(&base, &program);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}");
    // The program's own status, and both passes run and merged all the same.
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("2 passes merged"), "{stderr}");
    for pass in 1..=2 {
        let meta = read_json(&base.join(format!("pass-{pass}")), "metadata.json");
        assert_eq!(meta["perf_counters"]["pass"], pass);
    }
    // The merged folder has a text summary too, naming the counters and their passes.
    let merged = read_json(&base, "summary.json");
    assert!(program_node(&merged)["metrics"]["perf_counters.task-clock"].is_object());
    let text = std::fs::read_to_string(base.join("summary.txt")).expect("merged summary.txt");
    assert!(text.contains("2 passes merged"), "{text}");
    assert!(text.contains("perf_counters.task-clock: total"), "{text}");
    assert!(text.contains("(pass 1)"), "{text}");
}
