//! `summary.json` and `summary.txt` checked against values computed independently: regions of
//! known sleep lengths (count, total, mean, min, max, stddev, % of parent), bundle values
//! (CPU time, page faults, field attributes), counters and marks.

use metron::components::{ContextSwitches, CpuClock, PageFaults, ThreadCpuClock};
use metron::Component;
use metron_tests::{emit_data, find, scenario, stat, stddev, thread_named, Scenario};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const WALL: &str = "wall_clock.elapsed";
const MS: f64 = 1e6;

/// Sleeps overshoot: a region of a `d` sleep lasts between `d` and `d + SLEEP_TOLERANCE`.
/// Generous, because a loaded machine (parallel builds) delays wake-ups by 10 ms and more;
/// the exact check is the one against the scenario's own `Instant` brackets.
const SLEEP_TOLERANCE: f64 = 25.0 * MS;

/// Runs `body` inside the guard made by `enter` and returns (time inside the guard, time
/// around the guard) in ns, measured with `std::time::Instant` (CLOCK_MONOTONIC): Metron's
/// region must lie between the two.
fn bracketed<G>(enter: impl FnOnce() -> G, body: impl FnOnce()) -> (f64, f64) {
    let around = Instant::now();
    let guard = enter();
    let inside = Instant::now();
    body();
    let inside = inside.elapsed();
    drop(guard);
    let around = around.elapsed();
    (inside.as_nanos() as f64, around.as_nanos() as f64)
}

fn sleep_ms(ms: u64) -> impl FnOnce() {
    move || std::thread::sleep(Duration::from_millis(ms))
}

const SHORT: [u64; 5] = [10; 5];
const LONG: [u64; 3] = [30; 3];
const VARIED: [u64; 4] = [10, 20, 30, 40];

scenario! {
    fn scenario_known_sleeps() {
        let mut data = json!({});
        let parent = bracketed(
            || metron::scope!("parent"),
            || {
                let mut short = Vec::new();
                for ms in SHORT {
                    short.push(bracketed(|| metron::scope!("short"), sleep_ms(ms)));
                }
                let mut long = Vec::new();
                for ms in LONG {
                    long.push(bracketed(|| metron::scope!("long"), sleep_ms(ms)));
                }
                let mut varied = Vec::new();
                for ms in VARIED {
                    varied.push(bracketed(|| metron::scope!("varied"), sleep_ms(ms)));
                }
                data["short"] = json!(short);
                data["long"] = json!(long);
                data["varied"] = json!(varied);
            },
        );
        data["parent"] = json!([parent]);
        emit_data(&data);
    }
}

/// The (inside, around) brackets of each region the scenario measured.
fn brackets(data: &Value, name: &str) -> (Vec<f64>, Vec<f64>) {
    data[name]
        .as_array()
        .unwrap()
        .iter()
        .map(|pair| (pair[0].as_f64().unwrap(), pair[1].as_f64().unwrap()))
        .unzip()
}

fn assert_within(what: &str, value: f64, low: f64, high: f64) {
    assert!(
        (low..=high).contains(&value),
        "{what} = {:.4} ms, expected {:.4}..={:.4} ms",
        value / MS,
        low / MS,
        high / MS
    );
}

/// Slack for converting TSC ticks to nanoseconds (calibration error) on top of a bracket.
fn slack(value: f64) -> f64 {
    20_000.0 + value * 1e-3
}

#[test]
fn region_statistics_match_the_sleep_lengths_and_independent_instant_measurements() {
    let run = Scenario::new("scenario_known_sleeps").run();
    let data = run.data();
    let summary = run.summary();
    let tree = &summary["merged"];
    let parent = find(tree, &["parent"]);
    assert_eq!(parent["count"], 1);
    assert!(
        parent["metrics"][WALL]["pct_parent"].is_null(),
        "a top region has no parent"
    );
    assert_eq!(parent["metrics"][WALL]["unit"], "ns");
    let parent_total = stat(parent, WALL, "total");
    let all_sleeps: u64 = SHORT.iter().chain(&LONG).chain(&VARIED).sum();
    let sleeps = (SHORT.len() + LONG.len() + VARIED.len()) as f64;
    assert_within(
        "parent total",
        parent_total,
        all_sleeps as f64 * MS,
        all_sleeps as f64 * MS + sleeps * SLEEP_TOLERANCE,
    );

    let mut children_total = 0.0;
    for (name, plan) in [
        ("short", &SHORT[..]),
        ("long", &LONG[..]),
        ("varied", &VARIED[..]),
    ] {
        let node = find(tree, &["parent", name]);
        let n = plan.len() as f64;
        let nominal: Vec<f64> = plan.iter().map(|ms| *ms as f64 * MS).collect();
        let (inside, around) = brackets(&data, name);
        let count = stat(node, WALL, "count");
        let total = stat(node, WALL, "total");
        let mean = stat(node, WALL, "mean");
        let min = stat(node, WALL, "min");
        let max = stat(node, WALL, "max");
        let sd = stat(node, WALL, "stddev");
        let pct = stat(node, WALL, "pct_parent");
        children_total += total;
        assert_eq!(count, n, "{name}: count");
        assert_eq!(node["count"], plan.len());

        // Against std::time::Instant brackets taken by the scenario: each region lies
        // between the time inside its guard and the time around it.
        let sum = |v: &[f64]| v.iter().sum::<f64>();
        let lowest = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        let highest = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        assert_within(
            &format!("{name} total vs Instant"),
            total,
            sum(&inside) - slack(sum(&inside)),
            sum(&around) + slack(sum(&around)),
        );
        assert_within(
            &format!("{name} min vs Instant"),
            min,
            lowest(&inside) - slack(lowest(&inside)),
            lowest(&around) + slack(lowest(&around)),
        );
        assert_within(
            &format!("{name} max vs Instant"),
            max,
            highest(&inside) - slack(highest(&inside)),
            highest(&around) + slack(highest(&around)),
        );
        let spread = (inside
            .iter()
            .zip(&around)
            .map(|(i, a)| (a - i).powi(2))
            .sum::<f64>()
            / n)
            .sqrt();
        let sd_inside = stddev(&inside);
        assert_within(
            &format!("{name} stddev vs Instant"),
            sd,
            sd_inside - spread - slack(max),
            sd_inside + spread + slack(max),
        );
        // Against the nominal sleep lengths, within the stated tolerance per sleep.
        let nominal_total: f64 = nominal.iter().sum();
        let nominal_min = nominal.iter().copied().fold(f64::INFINITY, f64::min);
        let nominal_max = nominal.iter().copied().fold(0.0, f64::max);
        let nominal_sd = stddev(&nominal);
        assert_within(
            &format!("{name} total"),
            total,
            nominal_total,
            nominal_total + n * SLEEP_TOLERANCE,
        );
        assert_within(
            &format!("{name} mean"),
            mean,
            nominal_total / n,
            nominal_total / n + SLEEP_TOLERANCE,
        );
        assert_within(
            &format!("{name} min"),
            min,
            nominal_min,
            nominal_min + SLEEP_TOLERANCE,
        );
        assert_within(
            &format!("{name} max"),
            max,
            nominal_max,
            nominal_max + SLEEP_TOLERANCE,
        );
        // Each value is within [0, tol] of its nominal length, so the population stddev is
        // within tol of the nominal one.
        assert_within(
            &format!("{name} stddev"),
            sd,
            (nominal_sd - SLEEP_TOLERANCE).max(0.0),
            nominal_sd + SLEEP_TOLERANCE,
        );
        let nominal_pct_low =
            100.0 * nominal_total / (all_sleeps as f64 * MS + sleeps * SLEEP_TOLERANCE);
        let nominal_pct_high =
            100.0 * (nominal_total + n * SLEEP_TOLERANCE) / (all_sleeps as f64 * MS);
        assert!(
            (nominal_pct_low..=nominal_pct_high).contains(&pct),
            "{name}: pct_parent {pct:.2}, expected {nominal_pct_low:.2}..={nominal_pct_high:.2}"
        );

        assert!(
            (pct - 100.0 * total / parent_total).abs() < 1e-6,
            "{name}: pct_parent is total / parent total"
        );
    }
    // The parent's own time is the loop around the sleeps: positive and small.
    let own = stat(parent, WALL, "self");
    assert!((own - (parent_total - children_total)).abs() < 1.0);
    assert!((0.0..2.0 * MS).contains(&own), "parent self {own} ns");

    // summary.txt: the unit header and every region, with its count.
    let text = run.summary_text();
    assert!(
        text.contains("wall_clock.elapsed [us], merged across 1 threads"),
        "{text}"
    );
    assert!(text.contains("| region"));
    for header in [
        "count", "total", "mean", "min", "max", "stddev", "% parent", "% self",
    ] {
        assert!(text.contains(header), "column {header}");
    }
    for (row, count) in [
        ("parent", 1),
        ("|_ short", 5),
        ("|_ long", 3),
        ("|_ varied", 4),
    ] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("| {row} ")))
            .unwrap_or_else(|| panic!("row {row:?} in summary.txt:\n{text}"));
        // The tree label may hold a `|` itself: count the columns from the right.
        let cells: Vec<&str> = line.rsplit('|').map(str::trim).collect();
        assert_eq!(cells[8], count.to_string(), "{line}");
    }
}

scenario! {
    fn scenario_first_region_of_the_process() {
        // The very first Metron call of the process: the runtime started before `main`
        // (settings, sinks, a 2 ms clock calibration), so it only attaches this thread's buffer.
        let (inside, around) = bracketed(|| metron::scope!("first"), || {});
        emit_data(&json!({ "inside": inside, "around": around }));
    }
}

#[test]
fn the_first_region_of_a_process_does_not_include_metrons_start_up() {
    let run = Scenario::new("scenario_first_region_of_the_process").run();
    let data = run.data();
    let around = data["around"].as_f64().unwrap();
    let first = stat(find(&run.summary()["merged"], &["first"]), WALL, "total");
    assert!(
        first <= around,
        "the first region lasted {first} ns, longer than the {around} ns bracket around it"
    );
    assert!(
        first < 0.5 * MS,
        "the first region lasted {:.3} ms of the {:.3} ms its guard took to make and drop",
        first / MS,
        around / MS
    );
}

// ---------------------------------------------------------------------------------------------
// Bundles.

/// CPU time and page faults of the region.
#[derive(metron::Bundle, Default)]
struct CpuAndFaults {
    cpu: ThreadCpuClock,
    faults: PageFaults,
}

/// One component per field attribute combination.
#[derive(metron::Bundle, Default)]
struct Partial {
    cpu: ThreadCpuClock,
    #[bundle(no_start)]
    process_cpu: CpuClock,
    #[bundle(no_stop)]
    faults: PageFaults,
    #[bundle(no_start, no_stop)]
    switches: ContextSwitches,
}

/// Burns `ns` of this thread's CPU time.
fn burn_cpu(ns: u64) {
    let mut clock = ThreadCpuClock::default();
    clock.start();
    loop {
        for _ in 0..1000 {
            std::hint::black_box(0u64);
        }
        clock.stop();
        if clock.value() >= ns {
            return;
        }
    }
}

/// Writes one byte into every page of `bytes` of fresh memory.
fn touch_fresh_pages(bytes: usize) {
    let mut v: Vec<u8> = Vec::with_capacity(bytes);
    for i in (0..bytes).step_by(4096) {
        v.spare_capacity_mut()[i].write(1);
    }
    std::hint::black_box(&v);
}

#[metron::profile(bundle = CpuAndFaults)]
fn profiled_with_a_bundle() {
    burn_cpu(2_000_000);
}

scenario! {
    fn scenario_bundles() {
        {
            let _g = metron::scope!("spin_and_touch", CpuAndFaults);
            burn_cpu(20_000_000);
            touch_fresh_pages(16 << 20);
        }
        {
            let _g = metron::scope!("sleep_only", CpuAndFaults);
            std::thread::sleep(Duration::from_millis(20));
        }
        let explicit = metron::begin!("explicit_bundle", CpuAndFaults);
        burn_cpu(2_000_000);
        explicit.end();
        profiled_with_a_bundle();

        // 30 ms of CPU outside any region, then a short region.
        burn_cpu(30_000_000);
        let _g = metron::scope!("partial", Partial);
        burn_cpu(5_000_000);
        touch_fresh_pages(1 << 20);
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn bundle_values_show_cpu_time_and_page_faults_and_field_attributes_exclude_operations() {
    let run = Scenario::new("scenario_bundles").run();
    let summary = run.summary();
    let tree = &summary["merged"];
    let cpu = "thread_cpu_clock.time";
    let minor = "page_faults.minor";

    let spin = find(tree, &["spin_and_touch"]);
    assert_eq!(spin["count"], 1);
    assert_eq!(spin["metrics"][cpu]["unit"], "ns");
    assert_eq!(spin["metrics"][minor]["unit"], "count");
    let spin_cpu = stat(spin, cpu, "total");
    // 20 ms of burnt CPU, plus the kernel's time for ~4096 page faults.
    assert_within("spin_and_touch cpu", spin_cpu, 20.0 * MS, 60.0 * MS);
    assert!(stat(spin, WALL, "total") >= spin_cpu - slack(spin_cpu));
    let faults = stat(spin, minor, "total");
    assert!(
        faults >= 1000.0,
        "16 MiB of fresh pages: {faults} minor faults"
    );
    assert_eq!(stat(spin, "page_faults.major", "total"), 0.0);

    let sleep = find(tree, &["sleep_only"]);
    assert!(stat(sleep, WALL, "total") >= 20.0 * MS);
    assert!(
        stat(sleep, cpu, "total") < 5.0 * MS,
        "sleeping burns no CPU"
    );
    assert!(stat(sleep, minor, "total") < 100.0);

    for name in ["explicit_bundle", "profiled_with_a_bundle"] {
        let node = find(tree, &[name]);
        assert_within(
            &format!("{name} cpu"),
            stat(node, cpu, "total"),
            2.0 * MS,
            15.0 * MS,
        );
    }

    let partial = find(tree, &["partial"]);
    let partial_cpu = stat(partial, cpu, "total");
    assert_within("partial cpu", partial_cpu, 5.0 * MS, 25.0 * MS);
    // no_start: never started, so stop() measures from 0: the process's whole CPU time,
    // which includes the 30 ms (and more) burnt before the region.
    let process = stat(partial, "cpu_clock.time", "total");
    assert!(
        process >= partial_cpu + 30.0 * MS,
        "no_start process CPU time {process} ns"
    );
    // no_stop: never stopped, so the value stays 0 despite the faults and the sleep.
    for field in [
        "page_faults.minor",
        "page_faults.major",
        "context_switches.voluntary",
        "context_switches.involuntary",
    ] {
        assert_eq!(stat(partial, field, "total"), 0.0, "{field}");
        assert_eq!(stat(partial, field, "max"), 0.0, "{field}");
    }

    // summary.txt has a table per metric, with its display unit.
    let text = run.summary_text();
    for header in [
        "thread_cpu_clock.time [us]",
        "page_faults.minor [count]",
        "cpu_clock.time [us]",
    ] {
        assert!(text.contains(header), "{header} in summary.txt");
    }
}

// ---------------------------------------------------------------------------------------------
// Counters and marks.

const QUEUE: [f64; 8] = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0];

scenario! {
    fn scenario_counters_and_marks() {
        let _r = metron::scope!("work");
        for (i, v) in QUEUE.iter().enumerate() {
            // Any numeric type is accepted.
            match i % 3 {
                0 => metron::counter!("queue_depth", *v as u8),
                1 => metron::counter!("queue_depth", *v as i32),
                _ => metron::counter!("queue_depth", *v as f32),
            }
        }
        for v in [10, 20] {
            metron::counter!("bytes_in_flight", v);
        }
        for _ in 0..7 {
            metron::mark!("tick");
        }
        metron::mark!("rare");
        std::thread::Builder::new()
            .name("other".into())
            .spawn(|| {
                for v in [30u64, 40, 50] {
                    metron::counter!("bytes_in_flight", v);
                }
                for _ in 0..5 {
                    metron::mark!("tick");
                }
            })
            .unwrap()
            .join()
            .unwrap();
    }
}

#[test]
fn counters_and_marks_have_exact_statistics() {
    let run = Scenario::new("scenario_counters_and_marks").run();
    let summary = run.summary();
    let counter = |name: &str| {
        summary["counters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("counter {name}: {}", summary["counters"]))
    };
    let mean = QUEUE.iter().sum::<f64>() / QUEUE.len() as f64;
    assert_eq!(
        counter("queue_depth"),
        json!({"name": "queue_depth", "count": 8, "last": 6.0, "min": 1.0, "max": 9.0, "mean": mean})
    );
    // Over two threads: count, min, max and mean are exact.
    let bytes = counter("bytes_in_flight");
    assert_eq!(bytes["count"], 5);
    assert_eq!(bytes["min"], 10.0);
    assert_eq!(bytes["max"], 50.0);
    assert_eq!(bytes["mean"], 30.0);
    assert_eq!(
        summary["marks"],
        json!([{"name": "rare", "count": 1}, {"name": "tick", "count": 12}])
    );
    let metadata = run.metadata();
    let other = thread_named(&metadata, "other");
    assert_eq!(other["records_written"], 3 + 5);
    // Records: one region (2), 10 counters, 8 marks on the main thread, 8 on the other.
    assert_eq!(metadata["records"]["written"], 2 + 10 + 8 + 8);
    let text = run.summary_text();
    assert!(text.contains("\ncounters\n") && text.contains("queue_depth"));
    assert!(text.contains("  tick: 12"), "{text}");
}
