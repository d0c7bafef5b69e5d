//! Rust `tracing` through `metron-tracing`: spans become regions on the thread that enters
//! them, events become instants, spans that move between threads (std threads, tokio tasks
//! migrating between workers) also become async slices, fields become annotations when asked
//! for, and the layer works beside `fmt` and `EnvFilter` (what they filter out is not
//! recorded). Checked in the summary, in the events a user sink receives, and in the Perfetto
//! trace decoded by `tests/perfetto/validate_trace.py`.

use metron_tests::recording::{of_kind, recorded, recording_sink};
use metron_tests::{find, scenario, shape, threads, Scenario};
use metron_tracing::{MetronLayer, MetronSubscriber};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use tracing::Instrument;
use tracing_subscriber::prelude::*;

// ---------------------------------------------------------------------------------------------
// Harness: the trace validator (the recording sink is metron_tests::recording).

/// The summary's thread named `name` (the first, when several share it).
fn summary_thread<'a>(summary: &'a Value, name: &str) -> &'a Value {
    metron_tests::thread_named(summary, name)
}

/// Every summary thread named `name`.
fn summary_threads<'a>(summary: &'a Value, name: &str) -> Vec<&'a Value> {
    threads(summary)
        .iter()
        .filter(|t| t["name"] == name)
        .collect()
}

/// The async range of the summary named `name`.
fn async_range<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["async_ranges"]["ranges"]
        .as_array()
        .expect("async_ranges.ranges")
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| {
            panic!(
                "no async range {name:?}: {}",
                summary["async_ranges"]["ranges"]
            )
        })
}

/// Decodes the run's trace with the independent validator; fails when a check fails.
fn validated_trace(dir: &Path) -> Value {
    let ok = Command::new("python3")
        .args([
            "-c",
            "import perfetto.protos.perfetto.trace.perfetto_trace_pb2",
        ])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        ok,
        "the trace checks need Python 3 with the `perfetto` package: run scripts/install-deps.sh"
    );
    let validator = Path::new(env!("CARGO_MANIFEST_DIR")).join("perfetto/validate_trace.py");
    let out = Command::new("python3")
        .arg(validator)
        .arg(dir.join("trace.pftrace"))
        .output()
        .expect("run validate_trace.py");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "validator output is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        out.status.success(),
        "validate_trace.py failed: {}\nchecks: {}",
        String::from_utf8_lossy(&out.stderr),
        json["checks"]
    );
    json
}

/// Slices named `name` on the trace's thread tracks named `thread`, added up.
fn trace_slices(trace: &Value, thread: &str, name: &str) -> u64 {
    trace["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .filter(|t| t["name"] == thread)
        .map(|t| t["names"][name].as_u64().unwrap_or(0))
        .sum()
}

// ---------------------------------------------------------------------------------------------
// The standalone subscriber across std threads.

fn std_threads_workload() {
    {
        let _outer = tracing::info_span!("outer").entered();
        for i in 0..3 {
            let _inner = tracing::debug_span!("inner", i).entered();
            tracing::info!("step");
        }
    }
    let workers: Vec<_> = (0..2)
        .map(|w| {
            std::thread::Builder::new()
                .name(format!("worker-{w}"))
                .spawn(move || {
                    let _job = tracing::info_span!("job", w).entered();
                    for _ in 0..4 {
                        let _step = tracing::trace_span!("step").entered();
                    }
                })
                .unwrap()
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    // Created here, entered and closed on another thread.
    let moved = tracing::info_span!("moved");
    std::thread::Builder::new()
        .name("mover".into())
        .spawn(move || {
            moved.in_scope(|| std::thread::sleep(Duration::from_millis(2)));
            drop(moved);
        })
        .unwrap()
        .join()
        .unwrap();
    // Created and closed here, entered here and on another thread (through a clone).
    let shared = tracing::info_span!("shared");
    shared.in_scope(|| {});
    let clone = shared.clone();
    std::thread::Builder::new()
        .name("helper".into())
        .spawn(move || clone.in_scope(|| {}))
        .unwrap()
        .join()
        .unwrap();
    drop(shared);
}

scenario! {
    fn scenario_subscriber_std_threads() {
        let _ = recording_sink();
        tracing::subscriber::set_global_default(MetronSubscriber::new()).unwrap();
        std_threads_workload();
    }
}

scenario! {
    fn scenario_layer_std_threads() {
        let _ = recording_sink();
        tracing_subscriber::registry().with(MetronLayer::new()).init();
        std_threads_workload();
    }
}

fn check_std_threads(run: &metron_tests::Run) {
    let summary = run.summary();
    let main = &threads(&summary)[0];
    assert_eq!(
        shape(&main["regions"]),
        "outer×1{inner×3}, shared×1",
        "spans entered on the main thread are nested regions there"
    );
    for w in ["worker-0", "worker-1"] {
        assert_eq!(
            shape(&summary_thread(&summary, w)["regions"]),
            "job×1{step×4}"
        );
    }
    assert_eq!(
        shape(&summary_thread(&summary, "mover")["regions"]),
        "moved×1"
    );
    assert_eq!(
        shape(&summary_thread(&summary, "helper")["regions"]),
        "shared×1"
    );
    // Events are instants named after their call site.
    let marks = summary["marks"].as_array().expect("marks");
    assert_eq!(marks.len(), 1, "{marks:?}");
    assert!(marks[0]["name"].as_str().unwrap().starts_with("event "));
    assert_eq!(marks[0]["count"], 3);

    // Only the two spans that changed threads are async slices, each once, paired.
    let events = recorded(run);
    let by_name = |kind: &str| {
        let mut v = of_kind(&events, kind);
        v.sort_by_key(|e| e["name"].as_str().unwrap().to_string());
        v
    };
    let begins = by_name("async_begin");
    let ends = by_name("async_end");
    let names: Vec<&Value> = begins.iter().map(|e| &e["name"]).collect();
    assert_eq!(names, [&json!("moved"), &json!("shared")]);
    assert_eq!(ends.len(), 2);
    for (b, e) in begins.iter().zip(&ends) {
        assert_eq!(b["cookie"], e["cookie"]);
        assert_eq!(b["name"], e["name"]);
        assert!(b["ts"].as_u64() <= e["ts"].as_u64());
    }
    // "moved" lasts at least the 2 ms slept inside it; it closed on the mover thread.
    assert_eq!(ends[0]["thread"], "mover");
    assert!(ends[0]["ts"].as_u64().unwrap() - begins[0]["ts"].as_u64().unwrap() >= 2_000_000);
    assert_eq!(ends[1]["thread"], begins[1]["thread"]);

    let moved = async_range(&summary, "moved");
    assert_eq!(moved["count"], 1);
    assert_eq!(async_range(&summary, "shared")["count"], 1);
    assert_eq!(
        summary["async_ranges"]["ranges"].as_array().unwrap().len(),
        2
    );
    assert_eq!(summary["async_ranges"]["unmatched_ends"], 0);
    assert_eq!(summary["async_ranges"]["open_at_exit"], 0);

    let trace = validated_trace(&run.output_dir);
    assert_eq!(trace_slices(&trace, "worker-0", "step"), 4);
    assert_eq!(trace_slices(&trace, "mover", "moved"), 1);
}

#[test]
fn subscriber_spans_become_regions_per_thread_and_moved_spans_async_slices() {
    check_std_threads(&Scenario::new("scenario_subscriber_std_threads").run());
}

#[test]
fn layer_spans_become_regions_per_thread_and_moved_spans_async_slices() {
    check_std_threads(&Scenario::new("scenario_layer_std_threads").run());
}

// ---------------------------------------------------------------------------------------------
// tokio: instrumented tasks on a multi-thread runtime.

const TASKS: u64 = 8;
/// tokio's worker thread name as the kernel keeps it (15 bytes).
const WORKER: &str = "tokio-rt-worker";
const ROUNDS: u64 = 5;

fn tokio_workload() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                // Created on the main thread (inside block_on), polled on the workers.
                let span = tracing::info_span!("task", t);
                tokio::spawn(
                    async move {
                        for _ in 0..ROUNDS {
                            tokio::time::sleep(Duration::from_millis(2)).await;
                            tokio::task::yield_now().await;
                            let _compute = tracing::debug_span!("compute").entered();
                            // Blocks this worker a little, so that the others take the
                            // queued tasks (and tasks move between workers).
                            std::thread::sleep(Duration::from_millis(1));
                        }
                    }
                    .instrument(span),
                )
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
}

scenario! {
    fn scenario_tokio_layer() {
        let _ = recording_sink();
        tracing_subscriber::registry().with(MetronLayer::new()).init();
        tokio_workload();
    }
}

scenario! {
    fn scenario_tokio_subscriber() {
        let _ = recording_sink();
        tracing::subscriber::set_global_default(MetronSubscriber::new()).unwrap();
        tokio_workload();
    }
}

fn check_tokio(run: &metron_tests::Run) {
    let summary = run.summary();
    let workers = summary_threads(&summary, WORKER);
    let polls: Vec<u64> = workers
        .iter()
        .map(|w| {
            w["regions"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|n| n["name"] == "task")
                .map(|n| n["count"].as_u64().unwrap())
                .sum()
        })
        .collect();
    // Every poll is a region on the worker that polled: at least the first poll, one after
    // each sleep and one after each yield.
    let total: u64 = polls.iter().sum();
    assert!(
        total >= TASKS * (1 + 2 * ROUNDS),
        "task polls per worker: {polls:?}"
    );
    assert!(
        polls.iter().filter(|&&p| p > 0).count() >= 2,
        "tasks ran on several workers: {polls:?}"
    );
    // The compute span nests inside the poll that entered it.
    let computes: u64 = workers
        .iter()
        .filter(|w| {
            w["regions"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n["name"] == "task")
        })
        .map(|w| {
            let task = find(&w["regions"], &["task"]);
            task["children"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["name"] == "compute")
                .map(|c| c["count"].as_u64().unwrap())
                .sum::<u64>()
        })
        .sum();
    assert_eq!(computes, TASKS * ROUNDS);
    // Each task is one async slice from its creation on the main thread to its close, which
    // spans its sleeps.
    let task = async_range(&summary, "task");
    assert_eq!(task["count"], TASKS);
    assert!(task["min_ns"].as_f64().unwrap() >= (ROUNDS * 2_000_000) as f64);
    assert_eq!(summary["async_ranges"]["unmatched_ends"], 0);
    assert_eq!(summary["async_ranges"]["open_at_exit"], 0);
    // The main thread created the spans but never entered them: only workers have polls.
    for t in threads(&summary) {
        if t["name"] != WORKER {
            assert!(!shape(&t["regions"]).contains("task"), "{}", t["name"]);
        }
    }

    let events = recorded(run);
    let mut cookies: Vec<u64> = of_kind(&events, "async_begin")
        .iter()
        .map(|e| e["cookie"].as_u64().unwrap())
        .collect();
    cookies.sort_unstable();
    cookies.dedup();
    assert_eq!(cookies.len() as u64, TASKS, "one distinct cookie per task");

    let trace = validated_trace(&run.output_dir);
    assert_eq!(trace_slices(&trace, WORKER, "task"), total);
    assert_eq!(trace_slices(&trace, WORKER, "compute"), TASKS * ROUNDS);
}

#[test]
fn layer_tokio_tasks_are_regions_per_poll_and_one_async_slice_each() {
    check_tokio(&Scenario::new("scenario_tokio_layer").run());
}

#[test]
fn subscriber_tokio_tasks_are_regions_per_poll_and_one_async_slice_each() {
    check_tokio(&Scenario::new("scenario_tokio_subscriber").run());
}

// ---------------------------------------------------------------------------------------------
// Beside fmt and EnvFilter.

fn filtered_workload() {
    let _kept = tracing::info_span!("kept").entered();
    tracing::debug_span!("too_verbose").in_scope(|| {});
    tracing::info_span!(target: "noisy", "from_noisy_target").in_scope(|| {});
    tracing::warn_span!("important").in_scope(|| {});
    tracing::info!("kept event");
    tracing::debug!("filtered event");
}

scenario! {
    fn scenario_layer_beside_fmt_and_env_filter() {
        let _ = recording_sink();
        tracing_subscriber::registry()
            .with(tracing_subscriber::EnvFilter::new("info,noisy=off"))
            .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(false))
            .with(MetronLayer::new())
            .init();
        filtered_workload();
    }
}

scenario! {
    fn scenario_layer_with_its_own_filter() {
        let _ = recording_sink();
        tracing_subscriber::registry()
            .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(false))
            .with(MetronLayer::new().with_filter(tracing_subscriber::EnvFilter::new("warn")))
            .init();
        filtered_workload();
    }
}

#[test]
fn spans_a_global_env_filter_drops_are_not_recorded_and_fmt_still_prints() {
    let run = Scenario::new("scenario_layer_beside_fmt_and_env_filter").run();
    let summary = run.summary();
    assert_eq!(
        shape(&threads(&summary)[0]["regions"]),
        "kept×1{important×1}"
    );
    let marks = summary["marks"].as_array().unwrap();
    assert_eq!(marks.len(), 1, "only the info event: {marks:?}");
    assert!(run.stderr.contains("kept event"), "{}", run.stderr);
    assert!(!run.stderr.contains("filtered event"));
}

#[test]
fn a_per_layer_filter_limits_what_metron_records_but_not_what_fmt_prints() {
    let run = Scenario::new("scenario_layer_with_its_own_filter").run();
    let summary = run.summary();
    assert_eq!(shape(&threads(&summary)[0]["regions"]), "important×1");
    assert!(summary["marks"].as_array().unwrap().is_empty());
    assert!(run.stderr.contains("kept event"), "{}", run.stderr);
}

// ---------------------------------------------------------------------------------------------
// Fields, only when asked for.

fn fields_workload() {
    let span = tracing::info_span!(
        "load",
        rows = 1024u64,
        delta = -3i64,
        path = "a.txt",
        ratio = 0.5,
        ok = true,
        ids = ?[1, 2],
        late = tracing::field::Empty
    );
    span.in_scope(|| tracing::info!(n = 3u64, "hello"));
    span.record("rows", 2048u64);
    span.record("late", "now");
    span.in_scope(|| {});
}

scenario! {
    fn scenario_fields() {
        let _ = recording_sink();
        tracing::subscriber::set_global_default(MetronSubscriber::new().with_fields(true)).unwrap();
        fields_workload();
    }
}

scenario! {
    fn scenario_fields_layer_with_level_prefix() {
        let _ = recording_sink();
        tracing_subscriber::registry()
            .with(MetronLayer::new().with_fields(true).with_level_prefix(true))
            .init();
        fields_workload();
    }
}

scenario! {
    fn scenario_no_fields() {
        let _ = recording_sink();
        tracing::subscriber::set_global_default(MetronSubscriber::new()).unwrap();
        fields_workload();
    }
}

fn annotations(run: &metron_tests::Run) -> Vec<Value> {
    of_kind(&recorded(run), "annotation")
        .into_iter()
        .map(|a| json!([a["region"], a["key"], a["value"]]))
        .collect()
}

fn expected_annotations(region: &str) -> Vec<Value> {
    let first = [
        json!([region, "rows", {"u64": 1024}]),
        json!([region, "delta", {"i64": -3}]),
        json!([region, "path", {"str": "a.txt"}]),
        json!([region, "ratio", {"f64": 0.5}]),
        json!([region, "ok", {"bool": true}]),
        json!([region, "ids", {"str": "[1, 2]"}]),
        // The event's fields annotate the region open around it.
        json!([region, "message", {"str": "hello"}]),
        json!([region, "n", {"u64": 3}]),
    ];
    let second = [
        json!([region, "rows", {"u64": 2048}]),
        json!([region, "delta", {"i64": -3}]),
        json!([region, "path", {"str": "a.txt"}]),
        json!([region, "ratio", {"f64": 0.5}]),
        json!([region, "ok", {"bool": true}]),
        json!([region, "ids", {"str": "[1, 2]"}]),
        json!([region, "late", {"str": "now"}]),
    ];
    first.into_iter().chain(second).collect()
}

#[test]
fn fields_become_annotations_of_every_region_of_their_span_when_asked_for() {
    let run = Scenario::new("scenario_fields").run();
    assert_eq!(annotations(&run), expected_annotations("load"));
}

#[test]
fn the_layer_records_fields_and_prefixes_names_with_the_level_when_asked() {
    let run = Scenario::new("scenario_fields_layer_with_level_prefix").run();
    assert_eq!(annotations(&run), expected_annotations("INFO load"));
    let summary = run.summary();
    assert_eq!(shape(&threads(&summary)[0]["regions"]), "INFO load×2");
    let marks = summary["marks"].as_array().unwrap();
    assert!(marks[0]["name"]
        .as_str()
        .unwrap()
        .starts_with("INFO event "));
}

#[test]
fn fields_are_not_recorded_unless_asked_for() {
    let run = Scenario::new("scenario_no_fields").run();
    assert!(annotations(&run).is_empty());
    assert_eq!(shape(&threads(&run.summary())[0]["regions"]), "load×2");
}

// ---------------------------------------------------------------------------------------------
// More live spans than the span table holds.

/// More than the span table's 16,384 entries.
const LIVE_SPANS: usize = 20_000;

fn many_live_spans_workload() {
    let spans: Vec<tracing::Span> = (0..LIVE_SPANS)
        .map(|_| tracing::info_span!("many"))
        .collect();
    for span in &spans {
        span.in_scope(|| {});
    }
    drop(spans);
}

scenario! {
    fn scenario_many_live_spans_subscriber() {
        tracing::subscriber::set_global_default(MetronSubscriber::new()).unwrap();
        many_live_spans_workload();
    }
}

scenario! {
    fn scenario_many_live_spans_layer() {
        tracing_subscriber::registry().with(MetronLayer::new()).init();
        many_live_spans_workload();
    }
}

fn check_many(run: &metron_tests::Run) {
    let summary = run.summary();
    assert_eq!(
        shape(&threads(&summary)[0]["regions"]),
        format!("many×{LIVE_SPANS}")
    );
    assert!(summary["async_ranges"]["ranges"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[test]
fn subscriber_spans_beyond_the_span_table_fall_back_and_are_all_recorded() {
    check_many(&Scenario::new("scenario_many_live_spans_subscriber").run());
}

#[test]
fn layer_spans_beyond_the_span_table_fall_back_and_are_all_recorded() {
    check_many(&Scenario::new("scenario_many_live_spans_layer").run());
}
