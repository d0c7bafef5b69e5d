//! Time windows (`METRON_TRACE_PERIODS`): a region that runs only outside the window is
//! absent, one inside is present, and samples are taken only inside; a bad spec is reported
//! with the accepted grammar and the run still writes its output.

mod sampling_support;

use metron_tests::{emit_data, scenario, shape, Scenario};
use sampling_support::{gettid, SampleLog};
use serde_json::json;
use std::hint::black_box;
use std::time::{Duration, Instant};

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Busy for `d` of wall time inside region `name`.
fn busy_region(name: &'static str, d: Duration) -> (u64, u64) {
    let start = monotonic_ns();
    match name {
        "before" => {
            let _g = metron::scope!("before");
            spin(d);
        }
        "inside" => {
            let _g = metron::scope!("inside");
            spin(d);
        }
        _ => {
            let _g = metron::scope!("after");
            spin(d);
        }
    }
    (start, monotonic_ns())
}

fn spin(d: Duration) {
    let t = Instant::now();
    let mut x = 1u64;
    while t.elapsed() < d {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

fn sleep_until(t0: Instant, at: Duration) {
    if let Some(left) = at.checked_sub(t0.elapsed()) {
        std::thread::sleep(left);
    }
}

scenario! {
    fn scenario_one_window() {
        let log = SampleLog::install(); // starts the runtime: the window counts from here
        let t0 = Instant::now();
        let before = busy_region("before", Duration::from_millis(200));
        sleep_until(t0, Duration::from_millis(650));
        let inside = busy_region("inside", Duration::from_millis(200));
        sleep_until(t0, Duration::from_millis(1300));
        let after = busy_region("after", Duration::from_millis(200));
        metron::flush();
        let tid = gettid();
        let count = |(lo, hi): (u64, u64)| {
            log.all()
                .iter()
                .filter(|(t, s)| *t == tid && s.trigger == "cpu" && s.ts_ns >= lo && s.ts_ns <= hi)
                .count()
        };
        emit_data(&json!({
            "samples_before": count(before),
            "samples_inside": count(inside),
            "samples_after": count(after),
        }));
    }
}

#[test]
fn regions_and_samples_outside_the_window_are_not_recorded() {
    let run = Scenario::new("scenario_one_window")
        .env("METRON_TRACE_PERIODS", "realtime:0.5:0.5")
        .env("METRON_SAMPLING", "on")
        .run();
    let summary = run.summary();
    let tree = shape(&summary["merged"]);
    assert!(tree.contains("inside×1"), "{tree}");
    assert!(!tree.contains("before"), "{tree}");
    assert!(!tree.contains("after"), "{tree}");
    let data = run.data();
    println!("{data}");
    assert_eq!(data["samples_before"], 0, "{data}");
    assert_eq!(data["samples_after"], 0, "{data}");
    assert!(data["samples_inside"].as_u64().unwrap() >= 30, "{data}");
    let skipped = run.metadata()["sampling"]["skipped_outside_window"]
        .as_u64()
        .unwrap();
    assert!(skipped >= 50, "signals outside the window: {skipped}");
}

#[test]
fn trace_delay_and_duration_make_one_window() {
    let run = Scenario::new("scenario_one_window")
        .env("METRON_TRACE_DELAY", "500ms")
        .env("METRON_TRACE_DURATION", "500ms")
        .run();
    let tree = shape(&run.summary()["merged"]);
    assert_eq!(tree, "inside×1", "{tree}");
}

#[test]
fn a_bad_period_is_reported_with_the_grammar_and_the_run_is_still_written() {
    let run = Scenario::new("scenario_one_window")
        .env("METRON_TRACE_PERIODS", "walltime:1:2")
        .run();
    assert!(
        run.stderr.contains("METRON_TRACE_PERIODS=\"walltime:1:2\" is not accepted: expected none, or a comma list of periods [clock:]delay:duration[:repeat], where clock is realtime (default) or cputime"),
        "{}",
        run.stderr
    );
    // The default (no window) is used: everything is recorded.
    let tree = shape(&run.summary()["merged"]);
    assert!(
        tree.contains("before×1") && tree.contains("after×1"),
        "{tree}"
    );
    let errors = run.metadata()["setting_errors"].to_string();
    assert!(errors.contains("METRON_TRACE_PERIODS"), "{errors}");
}

fn process_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Spins (recording region `name` around each 1 ms slice) until the process has used `until`
/// ns of CPU since `origin`.
fn spin_regions_until(name: &'static str, origin: u64, until: u64) {
    while process_cpu_ns() - origin < until {
        let _g = match name {
            "early" => metron::scope!("early"),
            "middle" => metron::scope!("middle"),
            _ => metron::scope!("late"),
        };
        let t = process_cpu_ns();
        let mut x = 1u64;
        while process_cpu_ns() - t < 1_000_000 {
            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

scenario! {
    fn scenario_cputime_window() {
        metron::init();
        let origin = process_cpu_ns();
        spin_regions_until("early", origin, 200_000_000);
        // skip the edge
        while process_cpu_ns() - origin < 350_000_000 {
            black_box(spin_cpu_slice());
        }
        spin_regions_until("middle", origin, 550_000_000);
        while process_cpu_ns() - origin < 700_000_000 {
            black_box(spin_cpu_slice());
        }
        spin_regions_until("late", origin, 900_000_000);
    }
}

fn spin_cpu_slice() -> u64 {
    let mut x = 1u64;
    for _ in 0..100_000 {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
    x
}

#[test]
fn a_cputime_window_counts_the_process_cpu_time() {
    let run = Scenario::new("scenario_cputime_window")
        .env("METRON_TRACE_PERIODS", "cputime:0.3:0.3")
        .run();
    let tree = shape(&run.summary()["merged"]);
    assert!(tree.starts_with("middle×"), "{tree}");
    assert!(!tree.contains("early") && !tree.contains("late"), "{tree}");
}
