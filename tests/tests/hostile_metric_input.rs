//! Hostile input under `metron run`: a metric file holding a 20,000-deep
//! expression once killed the launched program with SIGSEGV (rc 139), and a bad setting
//! echoed its whole value. Now the program runs on, its outputs are written, and stderr has
//! one short line saying what was wrong and what is accepted.

mod c_api_support;
use c_api_support::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The longest stderr line a bad input may cost.
const SHORT: usize = 300;

/// A C program that does a little work and exits 0.
fn small_program(dir: &Path) -> PathBuf {
    let source = dir.join("small.c");
    std::fs::write(
        &source,
        "#include <stdio.h>\nint main(void) { volatile unsigned long s = 0;\n\
         for (unsigned long i = 0; i < 1000000; i++) s += i;\n\
         printf(\"%lu\\n\", (unsigned long)s); return 0; }\n",
    )
    .unwrap();
    let exe = dir.join("small");
    let out = Command::new("cc")
        .args(["-std=c99", "-O1", "-Wall", "-Werror"])
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run cc");
    assert_success(&out, "cc small.c");
    exe
}

/// `metron run -- exe` with its run folder under `runs`, and `env` added.
fn metron_run(runs: &Path, exe: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(artifacts().metron());
    cmd.args(["run", "--output-path"])
        .arg(runs.join("%exe%-%pid%"))
        .arg("--")
        .arg(exe)
        .env("METRON_TRACE", "false")
        .env_remove("METRON_OUTPUT_PATH")
        .env_remove("METRON_METRICS_FILE")
        .env_remove("METRON_METRICS")
        .env_remove("METRON_PERF_EVENTS")
        .env_remove("LD_PRELOAD");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run metron")
}

/// The one line of `stderr` that contains `what` (the `metron` launcher, which never records,
/// holds its start-up messages back: only the program says it).
fn the_line_with<'a>(stderr: &'a str, what: &str) -> &'a str {
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains(what)).collect();
    assert_eq!(
        lines.len(),
        1,
        "one line with {what:?} expected:\n{stderr:.2000}"
    );
    lines[0]
}

/// The run exited 0 and wrote its summary and metadata.
fn assert_ran_and_wrote_outputs(out: &Output, runs: &Path) {
    assert_success(out, "metron run -- small");
    let folders = run_folders(runs);
    assert_eq!(folders.len(), 1, "{folders:?}");
    let summary = std::fs::read_to_string(folders[0].join("summary.txt")).expect("summary.txt");
    assert!(summary.contains("small"), "{summary}");
    let metadata = read_json(&folders[0], "metadata.json");
    assert_eq!(metadata["process"]["preload"], true, "{metadata}");
}

#[test]
fn a_metric_file_with_20000_nested_parentheses_is_one_short_error_and_the_program_runs_on() {
    let dir = temp_dir("hostile-metric-file");
    let exe = small_program(&dir);
    let file = dir.join("hostile.xml");
    std::fs::write(
        &file,
        format!(
            "<metrics>\n  <arch name=\"perf-generic\"/>\n  <metric name=\"DEEP\" expr=\"{}cycles{}\"/>\n</metrics>\n",
            "(".repeat(20_000),
            ")".repeat(20_000)
        ),
    )
    .unwrap();
    let runs = dir.join("runs");
    let out = metron_run(
        &runs,
        &exe,
        &[("METRON_METRICS_FILE", file.to_str().unwrap())],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr:.2000}");
    assert_ran_and_wrote_outputs(&out, &runs);

    let line = the_line_with(&stderr, "METRON_METRICS_FILE");
    println!("{} chars: {line}", line.chars().count());
    assert!(line.chars().count() < SHORT, "{line:.500}");
    // What was wrong, where, and what is accepted.
    assert!(line.contains("hostile.xml:3:285: "), "{line}");
    assert!(line.contains("nest deeper than 256 levels"), "{line}");
    assert!(line.contains("at most 256 are accepted"), "{line}");
    assert!(line.contains("built-in metrics are used"), "{line}");
    // No line of stderr quotes the input at length.
    for l in stderr.lines() {
        assert!(l.chars().count() < SHORT, "{l:.500}");
    }
}

#[test]
fn a_40_kb_setting_value_is_quoted_cut_and_the_program_runs_on() {
    let dir = temp_dir("hostile-setting");
    let exe = small_program(&dir);
    let value = "x".repeat(40_000);
    let runs = dir.join("runs");
    let out = metron_run(&runs, &exe, &[("METRON_BUFFER_SIZE", &value)]);
    assert_ran_and_wrote_outputs(&out, &runs);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = the_line_with(&stderr, "METRON_BUFFER_SIZE=");
    assert!(line.chars().count() < SHORT, "{line:.500}");
    assert!(
        line.contains(&format!(
            "METRON_BUFFER_SIZE=\"{}…\" is not accepted",
            "x".repeat(80)
        )),
        "{line}"
    );
    assert!(line.contains("expected a size in bytes"), "{line}");
}
