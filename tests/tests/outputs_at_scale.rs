//! Outputs in proportion to their information: a program of thousands of distinct call stacks
//! gets a compact `summary.json` and its pictures; a flame graph of 10⁵ distinct stacks is
//! drawn small, saying what it folded; a thread per task (20,000 threads) gets small files
//! and a bounded memory. Sizes and memory are asserted; times are measured by
//! `scripts/outputs-at-scale.sh`, not here.

mod c_api_support;
use c_api_support::*;
use metron::sinks::late_files::LateFilesSink;
use metron::{RunInfo, Sink};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

fn program_source(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scale_programs")
        .join(name)
}

fn size(dir: &Path, file: &str) -> u64 {
    std::fs::metadata(dir.join(file))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join(file).display()))
        .len()
}

#[test]
fn a_program_of_many_distinct_stacks_gets_a_compact_summary_and_its_pictures() {
    let dir = temp_dir("deepstacks");
    let exe = dir.join("deepstacks");
    let out = Command::new("cc")
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&exe)
        .arg(program_source("deepstacks.c"))
        .output()
        .unwrap();
    assert_success(&out, "cc deepstacks.c");
    let runs = dir.join("runs");
    let out = Command::new(artifacts().metron())
        .args(["sample", "--output-path"])
        .arg(runs.join("run"))
        .args(["--trace", "false", "--"])
        .arg(&exe)
        .arg("2")
        .env_remove("LD_PRELOAD")
        .output()
        .unwrap();
    assert_success(&out, "metron sample -- deepstacks 2");
    let run = runs.join("run");
    let metadata = read_json(&run, "metadata.json");
    let stacks = metadata["outputs"]["stacks"]["cpu_time"]["distinct_stacks"]
        .as_u64()
        .expect("stacks.folded written");
    println!(
        "{stacks} distinct stacks; summary.json {} B, flamegraph.svg {} B, report.html {} B",
        size(&run, "summary.json"),
        size(&run, "flamegraph.svg"),
        size(&run, "report.html")
    );
    assert!(stacks >= 500, "deepstacks takes many paths: {stacks}");
    assert!(size(&run, "summary.json") <= 5 << 20);
    assert!(size(&run, "flamegraph.svg") > 0 && size(&run, "report.html") > 0);
    // Threads merged: every stack rooted at the program (or at Metron's own threads).
    let folded = std::fs::read_to_string(run.join("stacks.folded")).unwrap();
    assert!(
        folded
            .lines()
            .all(|l| l.starts_with("deepstacks;") || l.starts_with("metron:")),
        "{}",
        &folded[..folded.len().min(2000)]
    );
    // summary.json is compact and its call tree's root counts agree with stacks.folded.
    let text = std::fs::read_to_string(run.join("summary.json")).unwrap();
    assert!(!text.contains("\n  "), "no indentation");
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    let profile = &summary["sampling"]["profiles"][0];
    let program_samples: u64 = folded
        .lines()
        .filter(|l| l.starts_with("deepstacks;"))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(profile["samples"].as_u64().unwrap(), program_samples);
    assert!(profile.get("call_tree_by_thread").is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_flame_graph_of_a_hundred_thousand_stacks_is_small_and_says_what_it_folded() {
    let dir = temp_dir("stacks-1e5");
    // 10⁵ distinct stacks, 12 frames deep, a few of them heavy: one of 24 functions per level.
    let mut folded = String::new();
    let mut samples = 0u64;
    for i in 0..100_000u64 {
        let mut line = String::from("app;main");
        let mut x = i;
        for _ in 0..12 {
            let _ = write!(line, ";f{}", x % 24);
            x /= 24;
        }
        let n = if i % 1000 == 0 { 500 } else { 1 };
        samples += n;
        let _ = writeln!(folded, "{line} {n}");
    }
    std::fs::write(dir.join("stacks.folded"), &folded).unwrap();
    std::fs::write(dir.join("summary.json"), r#"{"exe":"app","merged":[]}"#).unwrap();
    let mut sink = LateFilesSink::pictures();
    let run = RunInfo {
        output_dir: dir.clone(),
        pid: 1,
        exe: "app".into(),
        argv: vec![],
        hostname: "test".into(),
        start_realtime_ns: 0,
        start_ns: 0,
        end_ns: 1,
    };
    sink.finish(&run).expect("pictures drawn");
    let report = sink.metadata().expect("the report's metadata.json section");
    let f = &report["folded"]["flamegraph.svg"];
    println!("{report:#}");
    assert_eq!(f["stacks"], 100_000);
    assert_eq!(f["samples"], samples);
    let folded_stacks = f["stacks_folded"].as_u64().unwrap();
    assert!(folded_stacks > 90_000, "{f}");
    assert!(f["samples_folded"].as_u64().unwrap() < samples);
    let svg = std::fs::read_to_string(dir.join("flamegraph.svg")).unwrap();
    assert!(svg.len() < 2 << 20, "flamegraph.svg is {} bytes", svg.len());
    assert!(
        svg.contains(&format!("{folded_stacks} of 100000 distinct stacks folded")),
        "the subtitle says what was folded"
    );
    // Nothing dropped: the root frame holds every sample.
    assert!(
        svg.contains(&format!(
            "<title>all ({} samples, 100%)",
            fmt_thousands(samples)
        )),
        "the root holds all {samples} samples"
    );
    assert!(size(&dir, "report.html") < 4 << 20);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `n` with a comma every three digits, as inferno writes counts.
fn fmt_thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Runs `cmd` (a program and its arguments) to its end under GNU time and returns whether it
/// succeeded and its peak RSS in KiB. Not `wait4` from this process: a child forked from the
/// test inherits the test's high-water mark across `exec`, so a small program would report the
/// test's size; GNU time is small when it forks the program. `None`: no `/usr/bin/time`.
fn peak_rss_kib(program: &Path, args: &[&str], env: &[(&str, &Path)]) -> Option<(bool, i64)> {
    if !Path::new("/usr/bin/time").exists() {
        println!("SKIP peak RSS: /usr/bin/time is missing (apt-get install time)");
        return None;
    }
    let mut cmd = Command::new("/usr/bin/time");
    cmd.args(["-f", "peak_rss_kib=%M"])
        .arg(program)
        .args(args)
        .env_remove("LD_PRELOAD");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run /usr/bin/time");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let kib = stderr
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("peak_rss_kib="))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS from /usr/bin/time: {stderr}"));
    Some((out.status.success(), kib))
}

#[test]
fn a_thread_per_task_keeps_small_files_and_gives_finished_threads_memory_back() {
    let dir = temp_dir("thread-per-task");
    let source = program_source("thread_per_task.c");
    let exe = compile(&source, &dir, &["-pthread"]);
    let own = dir.join("own");
    let out = Command::new("cc")
        .args([
            "-std=c99",
            "-O1",
            "-D_DEFAULT_SOURCE",
            "-DMETRON_DISABLE",
            "-I",
        ])
        .arg(&artifacts().include)
        .arg(&source)
        .arg("-o")
        .arg(&own)
        .arg("-lpthread")
        .output()
        .unwrap();
    assert_success(&out, "cc -DMETRON_DISABLE thread_per_task.c");
    let run = dir.join("run");
    let own_rss = peak_rss_kib(&own, &["20000"], &[]);
    let metron_rss = peak_rss_kib(
        &exe,
        &["20000"],
        &[
            ("METRON_OUTPUT_PATH", &run),
            ("METRON_TRACE", Path::new("false")),
        ],
    );
    if let (Some((own_ok, own_kib)), Some((metron_ok, metron_kib))) = (own_rss, metron_rss) {
        assert!(own_ok && metron_ok);
        println!("peak RSS: {own_kib} KiB alone, {metron_kib} KiB under Metron");
        assert!(
            metron_kib - own_kib <= 32 << 10,
            "{metron_kib} KiB under Metron, {own_kib} KiB alone"
        );
        assert!(metron_kib > own_kib, "Metron's memory is measured");
    } else {
        let out = run_in(&exe, &dir, &["20000"], &[]);
        assert_success(&out, "thread_per_task");
    }
    println!(
        "summary.txt {} B, summary.json {} B, metadata.json {} B",
        size(&run, "summary.txt"),
        size(&run, "summary.json"),
        size(&run, "metadata.json")
    );
    assert!(size(&run, "summary.txt") <= 200 << 10);
    assert!(size(&run, "metadata.json") <= 1 << 20);
    // Every region is still counted, in the merged tree and over the tables.
    let summary = read_json(&run, "summary.json");
    assert_eq!(
        region_counts(&summary["merged"]),
        counts(&[("task", 20_000), ("task/step", 180_000)])
    );
    let threads = summary["threads"].as_array().unwrap();
    let folded: u64 = threads.iter().filter_map(|t| t["threads"].as_u64()).sum();
    let apart = threads.iter().filter(|t| t["threads"].is_null()).count() as u64;
    assert_eq!(folded + apart, 20_000, "every thread in one table");
    let per_table: u64 = threads
        .iter()
        .map(|t| {
            region_counts(&t["regions"])
                .get("task")
                .copied()
                .unwrap_or(0)
        })
        .sum();
    assert_eq!(per_table, 20_000);
    let metadata = read_json(&run, "metadata.json");
    let written: u64 = metadata["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["records_written"].as_u64().unwrap())
        .sum();
    assert_eq!(written, metadata["records"]["written"].as_u64().unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}
