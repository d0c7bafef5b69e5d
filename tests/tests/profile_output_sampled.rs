//! End to end, from the real sampler to the files: a program that spends 3 parts of its CPU
//! time in `spin_a` and 1 part in `spin_b`, run with `METRON_SAMPLING=1` at 1 kHz, gets those
//! shares in the flat profile and the call tree of `summary.json`, in `stacks.folded`, and as
//! `PerfSample`s in `trace.pftrace` whose callstacks name the functions.

use metron_tests::split::{thread_cpu_ns, Split};
use metron_tests::{scenario, Scenario};
use serde_json::Value;
use std::hint::black_box;
use std::path::Path;
use std::process::Command;

#[inline(never)]
fn spin_a(iterations: u64) -> u64 {
    let mut x = 0xa5a5u64;
    for i in 0..iterations {
        x = black_box(x.rotate_left(7) ^ i).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    x
}

#[inline(never)]
fn spin_b(iterations: u64) -> u64 {
    let mut x = 0x5a5au64;
    for i in 0..iterations {
        x = black_box(x.rotate_left(3) ^ i).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    x
}

/// About 3 parts `spin_a` for 1 part `spin_b` (as measured), for `seconds` of this thread's CPU
/// time (so a loaded machine changes the wall time, not the number of samples).
#[inline(never)]
fn workload(seconds: f64) -> (u64, Split) {
    let start = thread_cpu_ns();
    let mut acc = 0;
    let mut split = Split::default();
    while ((thread_cpu_ns() - start) as f64) < seconds * 1e9 {
        for _ in 0..10 {
            acc ^= split.step(spin_a, spin_b);
        }
    }
    (acc, split)
}

scenario! {
    fn scenario_spin() {
        // The first region starts the runtime, and with it the sampler.
        let _spin = metron::scope!("spin");
        let (acc, split) = workload(0.8);
        black_box(acc);
        metron_tests::emit_data(&serde_json::json!({ "a_share": split.first_share() }));
    }
}

/// The `inclusive` count of the function whose name ends with `name` (0 if absent).
fn inclusive(profile: &Value, name: &str) -> u64 {
    profile["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["function"].as_str().unwrap().ends_with(name))
        .map_or(0, |f| f["inclusive"].as_u64().unwrap())
}

#[test]
fn sampled_shares_reach_the_summary_the_folded_stacks_and_the_trace() {
    let run = Scenario::new("scenario_spin")
        .env("METRON_SAMPLING", "1")
        .env("METRON_SAMPLING_FREQ", "1000")
        .run();
    let summary = run.summary();
    let profiles = summary["sampling"]["profiles"].as_array().unwrap();
    let p = profiles
        .iter()
        .find(|p| p["clock"] == "cpu_time")
        .unwrap_or_else(|| panic!("no cpu_time profile: {:#}", summary["sampling"]));
    let samples = p["samples"].as_u64().unwrap();
    assert!(
        samples >= 300,
        "{samples} samples for 0.8 s of CPU at 1 kHz"
    );
    let (a, b) = (inclusive(p, "spin_a"), inclusive(p, "spin_b"));
    let share = a as f64 / (a + b) as f64;
    let measured = run.data()["a_share"].as_f64().unwrap();
    assert!(
        (share - measured).abs() < 0.07,
        "spin_a {a}, spin_b {b}: share {share:.3} (measured {measured:.3})"
    );
    assert!(inclusive(p, "workload") >= a + b);

    // stacks.folded agrees with the profile.
    let folded = std::fs::read_to_string(run.output_dir.join("stacks.folded")).unwrap();
    let count = |name: &str| -> u64 {
        folded
            .lines()
            .filter(|l| {
                l.split(';')
                    .any(|f| f.ends_with(name) || f.contains(&format!("{name} ")))
            })
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(count("spin_a"), a, "{folded}");
    assert_eq!(count("spin_b"), b);

    // The trace: as many PerfSamples as the sink reports, the main thread's naming spin_a.
    let trace = run.output_dir.join("trace.pftrace");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("perfetto/trace_samples.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(&trace)
        .output()
        .unwrap();
    let decoded: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "trace_samples.py: {e}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(out.status.success(), "{:#}", decoded["errors"]);
    let written = run.metadata()["outputs"]["trace"]["samples"]["samples"]
        .as_u64()
        .unwrap();
    let in_trace = decoded["samples"].as_array().unwrap();
    assert_eq!(in_trace.len() as u64, written);
    let with_a = in_trace
        .iter()
        .filter(|s| s["frames"].to_string().contains("spin_a"))
        .count() as u64;
    assert_eq!(
        with_a, a,
        "the trace and the summary count the same samples"
    );
}
