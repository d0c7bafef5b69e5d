//! The C call overhead next to the Rust figure (a benchmark, not a timed test: `#[ignore]`).
//!
//! cargo test --release -p metron-tests --test c_api_overhead -- --ignored --nocapture

mod c_api_support;
use c_api_support::*;
use std::process::Command;
use std::time::Instant;

/// ns per pair printed after `label` ("enabled" by name, "enabled by id").
fn c_ns_per_pair(exe: &std::path::Path, pairs: u64, label: &str) -> f64 {
    let dir = temp_dir("overhead-run");
    let out = run_in(
        exe,
        &dir,
        &[&pairs.to_string(), "enabled"],
        &[("METRON_SUMMARY", "false")],
    );
    assert_success(&out, "c_overhead");
    let text = String::from_utf8_lossy(&out.stdout);
    text.split(&format!("{label}: "))
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("unexpected output: {text}"))
}

/// Instructions per pair of the loop `function` under callgrind: the difference of two runs.
fn c_instructions_per_pair(exe: &std::path::Path, function: &str) -> Option<f64> {
    let collected = |pairs: u64| -> Option<f64> {
        let dir = temp_dir("overhead-callgrind");
        let out = Command::new("valgrind")
            .args([
                "--tool=callgrind",
                "--callgrind-out-file=/dev/null",
                // Only the timed loop of the calling thread, not the flusher's work.
            ])
            .arg(format!("--toggle-collect={function}"))
            .arg(exe)
            .args([&pairs.to_string(), "enabled"])
            .env("METRON_OUTPUT_PATH", dir.join("run"))
            .env("METRON_TRACE", "false")
            .env("METRON_SUMMARY", "false")
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stderr);
        let line = text.lines().find(|l| l.contains("Collected :"))?;
        line.split(':').nth(1)?.trim().parse().ok()
    };
    let (a, b) = (collected(100_000)?, collected(200_000)?);
    Some((b - a) / 100_000.0)
}

#[test]
#[ignore = "benchmark: run with --ignored --nocapture"]
fn c_call_overhead_next_to_the_rust_figure() {
    let dir = temp_dir("overhead");
    let exe = compile(
        &artifacts().root.join("examples/c/overhead.c"),
        &dir,
        &["-O2"],
    );
    let pairs = 5_000_000u64;
    let c_ns: Vec<f64> = (0..3)
        .map(|_| c_ns_per_pair(&exe, pairs, "enabled"))
        .collect();
    let c_id_ns: Vec<f64> = (0..3)
        .map(|_| c_ns_per_pair(&exe, pairs, "enabled by id"))
        .collect();

    // The runtime started before main; this process's run goes into `rust-run`.
    metron::set_output_path(&dir.join("rust-run").to_string_lossy()).expect("nothing flushed yet");
    metron::init();
    let mut rust_ns = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        for _ in 0..pairs {
            let _g = metron::scope!("pair");
        }
        rust_ns.push(start.elapsed().as_nanos() as f64 / pairs as f64);
    }
    let min = |v: &[f64]| v.iter().cloned().fold(f64::INFINITY, f64::min);
    println!(
        "begin+end pair, tight loop, best of 3 x {pairs}: C through libmetron.so by name {:.2} ns, by id {:.2} ns, Rust scope! {:.2} ns",
        min(&c_ns),
        min(&c_id_ns),
        min(&rust_ns)
    );
    for (what, function) in [("by name", "pairs_ns"), ("by id", "pairs_id_ns")] {
        if let Some(ir) = c_instructions_per_pair(&exe, function) {
            println!("C through libmetron.so, {what}: {ir:.1} instructions per pair (callgrind)");
        }
    }
    metron::finish();
}
