//! `METRON_BACKEND_THREADS=2`: the trace sink encodes on a thread of its own while the summary
//! takes the same batches. The trace must stay one valid trace with every slice of every
//! thread, nested as recorded, and the summary must count the same regions as with one thread.

use metron_tests::{emit_data, scenario, Scenario};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Per thread: enough regions for several batches above the parallel threshold (8192 events).
const PAIRS: u64 = 30_000;
const THREADS: u64 = 2;

scenario! {
    fn scenario_many_regions() {
        let workers: Vec<_> = (0..THREADS)
            .map(|w| {
                std::thread::Builder::new()
                    .name(format!("recorder-{w}"))
                    .spawn(|| {
                        for i in 0..PAIRS {
                            let _outer = metron::scope!("outer");
                            if i % 2 == 0 {
                                let _inner = metron::scope!("inner");
                                std::hint::black_box(i);
                            }
                        }
                    })
                    .expect("spawn")
            })
            .collect();
        for w in workers {
            w.join().expect("join");
        }
        emit_data(&json!({}));
    }
}

/// Slice paths of the recorder threads, and their slice count.
fn recorder_paths(trace: &Value) -> BTreeMap<String, Value> {
    trace["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .filter(|t| {
            t["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("recorder-"))
        })
        .map(|t| (t["name"].as_str().unwrap().to_string(), t["paths"].clone()))
        .collect()
}

fn run(threads: &str) -> (BTreeMap<String, Value>, Value, Value) {
    let run = Scenario::new("scenario_many_regions")
        .env("METRON_BACKEND_THREADS", threads)
        // Segments of 64 KiB (4,096 slots): every thread hands over many batches while it runs.
        .env("METRON_BUFFER_SIZE", "256K")
        .run();
    let trace = metron_tests::validated_trace(&run.output_dir.join("trace.pftrace"), &["--slices"]);
    let summary = run.summary();
    (
        recorder_paths(&trace),
        summary["merged"].clone(),
        run.metadata(),
    )
}

#[test]
fn the_trace_encoded_on_its_own_thread_is_the_same_trace() {
    let (paths, merged, meta) = run("2");
    let expected = json!({"outer": PAIRS, "outer/inner": PAIRS / 2});
    assert_eq!(paths.len() as u64, THREADS, "{paths:?}");
    for (name, p) in &paths {
        assert_eq!(p, &expected, "slices of {name}");
    }
    let backend = &meta["buffer"]["backend"];
    assert_eq!(backend["threads"], 2, "{backend}");
    assert!(
        backend["batches_shared"].as_u64().unwrap() > 0,
        "no batch used the second thread: {backend}"
    );
    let report = &meta["outputs"]["trace"];
    assert_eq!(report["complete"], true, "{report}");
    // The summary, fed on the flusher meanwhile, counts what one thread counts.
    let (one_paths, one_merged, one_meta) = run("1");
    assert_eq!(one_meta["buffer"]["backend"]["batches_shared"], 0);
    assert_eq!(one_paths, paths);
    assert_eq!(
        metron_tests::shape(&one_merged),
        metron_tests::shape(&merged)
    );
}
