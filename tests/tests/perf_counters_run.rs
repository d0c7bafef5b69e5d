//! `PerfCounters` in a whole run: the events of `METRON_PERF_EVENTS`, derived metrics of
//! `METRON_METRICS` (computed from the region's totals, checked against the same formula by
//! hand), hardware events refused on a machine without a PMU (named, with the reason, the run
//! going on), pass planning announced before the run, and bad metric files reported.

use metron::components::{PageFaults, PerfCounters};
use metron_tests::{emit_data, find, scenario, stat, thread_named, Scenario};
use serde_json::{json, Value};

const PAGES: usize = 1500;

#[derive(metron::Bundle, Default)]
struct Counted {
    perf: PerfCounters,
    faults: PageFaults,
}

fn touch_fresh_pages(pages: usize) {
    let mut v: Vec<u8> = Vec::with_capacity(pages * 4096);
    let base = v.spare_capacity_mut().as_mut_ptr();
    for p in 0..pages {
        // SAFETY: inside the capacity; a volatile store so the page is really touched.
        unsafe { std::ptr::write_volatile(base.add(p * 4096), std::mem::MaybeUninit::new(1)) };
    }
}

scenario! {
    fn scenario_counted_regions() {
        for _ in 0..3 {
            let _r = metron::scope!("faulting", Counted);
            touch_fresh_pages(PAGES);
        }
        emit_data(&json!({"pages": PAGES}));
    }
}

/// The scenario runs on the test harness thread, named after the test (cut to 15 bytes).
fn main_thread(summary: &Value) -> &Value {
    thread_named(summary, "scenario_counte")
}

#[test]
fn software_counters_and_derived_metrics_reach_the_summary() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/data/software_metrics.xml");
    let run = Scenario::new("scenario_counted_regions")
        .env(
            "METRON_PERF_EVENTS",
            "task-clock,page-faults,context-switches,cycles",
        )
        .env("METRON_METRICS_FILE", file)
        .env("METRON_METRICS", "faults_per_cpu_ms,switches_per_fault")
        .run();
    let summary = run.summary();
    let region = find(&main_thread(&summary)["regions"], &["faulting"]);
    let faults = stat(region, "perf_counters.page-faults", "total");
    let rusage_faults = stat(region, "page_faults.minor", "total");
    let cpu_ns = stat(region, "perf_counters.task-clock", "total");
    let switches = stat(region, "perf_counters.context-switches", "total");
    println!(
        "faults {faults} (getrusage {rusage_faults}), task-clock {cpu_ns} ns, switches {switches}"
    );
    assert!(
        faults >= 1.0 && faults <= 3.0 * PAGES as f64 + 30.0,
        "{faults}"
    );
    assert!(
        (faults - rusage_faults).abs() <= 0.02 * rusage_faults + 6.0,
        "perf {faults} vs getrusage {rusage_faults}"
    );
    assert!(cpu_ns > 0.0);
    // Derived metrics equal the formula applied by hand to the same totals.
    let derived = &region["derived"];
    let by_hand = faults / (cpu_ns / 1e6);
    let got = derived["faults_per_cpu_ms"]
        .as_f64()
        .expect("faults_per_cpu_ms computed");
    assert!(
        (got - by_hand).abs() <= 1e-9 * by_hand.abs(),
        "{got} vs {by_hand}"
    );
    if faults > 0.0 {
        let got = derived["switches_per_fault"].as_f64().unwrap();
        assert!((got - switches / faults).abs() < 1e-12, "{got}");
    }
    // Unused slots and refused events leave no metric behind.
    let metrics = region["metrics"].as_object().unwrap();
    assert!(
        !metrics
            .keys()
            .any(|k| k.contains("event") || k.contains("cycles")),
        "{metrics:?}"
    );
    assert!(metrics.contains_key("perf_counters.running_fraction"));
    assert_eq!(stat(region, "perf_counters.running_fraction", "min"), 1.0);
    let text = run.summary_text();
    assert!(text.contains("derived metrics"), "{text}");
    assert!(text.contains("faults_per_cpu_ms"), "{text}");

    let meta = run.metadata();
    let perf = &meta["perf_counters"];
    let counted: Vec<&str> = perf["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    let has_pmu = counted.contains(&"cycles");
    if has_pmu {
        println!("this machine has a hardware PMU: cycles counted");
    } else {
        assert_eq!(counted, ["task-clock", "page-faults", "context-switches"]);
        let refused = &perf["unavailable"][0];
        assert_eq!(refused["name"], "cycles");
        assert!(refused["reason"]
            .as_str()
            .unwrap()
            .contains("no hardware PMU"));
        assert!(
            run.stderr
                .contains("counter `cycles` (hardware) is not counted"),
            "stderr: {}",
            run.stderr
        );
    }
    assert_eq!(
        perf["metrics"],
        json!(["faults_per_cpu_ms", "switches_per_fault"])
    );
}

#[test]
fn a_plan_of_several_passes_is_announced_before_the_run() {
    let run = Scenario::new("scenario_counted_regions")
        .env(
            "METRON_PERF_EVENTS",
            "task-clock,cycles,instructions,branch-misses,cache-misses",
        )
        .env("METRON_METRICS", "IPC")
        .env("METRON_PERF_GROUP_SIZE", "2")
        .env("METRON_PERF_PASS", "2")
        .run();
    let meta = run.metadata();
    let perf = &meta["perf_counters"];
    assert_eq!(perf["group_size"], 2);
    assert_eq!(perf["group_size_source"], "configured");
    assert_eq!(perf["pass"], 2);
    let passes = perf["passes"].as_array().unwrap();
    assert_eq!(passes.len(), 2, "{perf}");
    // IPC's two counters share one pass.
    assert!(
        passes
            .iter()
            .any(|p| p == &json!(["cycles", "instructions"])),
        "{perf}"
    );
    assert!(
        run.stderr.contains("need 2 passes of at most 2"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("This run counts pass 2"),
        "{}",
        run.stderr
    );
    // The announcement comes before anything the program printed or did.
    let first = run.stderr.lines().next().unwrap_or("");
    assert!(first.starts_with("metron:"), "{first}");
    // The run went on: the regions are in the summary.
    let summary = run.summary();
    assert_eq!(
        find(&main_thread(&summary)["regions"], &["faulting"])["count"],
        3
    );
}

#[test]
fn bad_names_and_broken_metric_files_are_reported_and_the_run_goes_on() {
    let broken = concat!(env!("CARGO_MANIFEST_DIR"), "/data/broken_metrics.xml");
    let run = Scenario::new("scenario_counted_regions")
        .env("METRON_PERF_EVENTS", "task-clock,instrutions,page-faults")
        .env("METRON_METRICS_FILE", broken)
        .env("METRON_METRICS", "IPCC")
        .env("METRON_PERF_GROUP_SIZE", "twelve")
        .run();
    let err = &run.stderr;
    println!("{err}");
    assert!(err.contains("unknown counter `instrutions`"), "{err}");
    assert!(err.contains("did you mean instructions"), "{err}");
    assert!(err.contains("broken_metrics.xml:3:"), "{err}");
    assert!(err.contains("METRON_METRICS: "), "{err}");
    assert!(err.contains("IPCC"), "{err}");
    assert!(err.contains("accepted: "), "{err}");
    assert!(
        err.contains("METRON_PERF_GROUP_SIZE=\"twelve\" is not accepted"),
        "{err}"
    );
    let summary = run.summary();
    let region = find(&main_thread(&summary)["regions"], &["faulting"]);
    assert!(stat(region, "perf_counters.page-faults", "count") == 3.0);
    assert!(stat(region, "perf_counters.task-clock", "total") > 0.0);
}

scenario! {
    fn scenario_uncounted_regions() {
        for _ in 0..3 {
            let _r = metron::scope!("plain");
            touch_fresh_pages(16);
        }
    }
}

/// The default events are opened only when a `PerfCounters` component is used: a run that
/// never counts does not call `perf_event_open` at its start (where no other perf event is
/// open, the kernel's perf hooks switch on: milliseconds on a VM), and says so; a run that
/// counts with the defaults probes them at the first use and reports them as before.
#[test]
fn the_default_events_are_opened_only_by_a_run_that_counts() {
    let plain = Scenario::new("scenario_uncounted_regions").run();
    let meta = plain.metadata();
    let section = &meta["perf_counters"];
    assert_eq!(
        section["events_not_opened"],
        json!(["task-clock", "page-faults", "context-switches"]),
        "{section:#}"
    );
    assert!(section.get("events").is_none(), "{section:#}");

    let counted = Scenario::new("scenario_counted_regions").run();
    let meta = counted.metadata();
    let names: Vec<&str> = meta["perf_counters"]["events"]
        .as_array()
        .expect("the events probed at the first use")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(names, ["task-clock", "page-faults", "context-switches"]);
    let summary = counted.summary();
    let region = find(&main_thread(&summary)["regions"], &["faulting"]);
    assert!(stat(region, "perf_counters.page-faults", "total") >= 1.0);
}
