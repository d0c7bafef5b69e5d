//! Eight threads pushing and popping from C give the same summary as the Rust API doing the
//! same work. One test per binary: the Rust half uses this process's own Metron run.

mod c_api_support;
use c_api_support::*;
use serde_json::Value;
use std::collections::BTreeMap;

/// Per thread: region path → count, sorted (thread ids and order differ between the runs).
fn per_thread(summary: &Value) -> Vec<BTreeMap<String, u64>> {
    let mut all: Vec<_> = summary["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["is_metron"] != true)
        .map(|t| region_counts(&t["regions"]))
        .filter(|c| !c.is_empty())
        .collect();
    all.sort();
    all
}

#[test]
fn eight_threads_from_c_and_from_rust_give_the_same_summary() {
    let dir = temp_dir("threads8");
    let exe = compile(&program("threads8.c"), &dir, &[]);
    let out = run_in(&exe, &dir, &[], &[]);
    assert_success(&out, "threads8.c");
    let c_summary = read_json(&dir.join("run"), "summary.json");

    // The same work through the Rust API, in this process.
    // The runtime started before main; this process's run goes into `rust`.
    metron::set_output_path(&dir.join("rust").to_string_lossy()).expect("nothing flushed yet");
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            std::thread::spawn(move || {
                for _ in 0..200 {
                    let _work = metron::scope!("work");
                    metron::annotate!("thread", t);
                    for _ in 0..3 {
                        let _step = metron::scope!("step");
                    }
                    let _leaf = metron::scope!("leaf");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let report = metron::finish().expect("the Rust run finishes");
    let rust_summary = read_json(&report.output_dir, "summary.json");

    let expected = counts(&[("work", 1600), ("work/step", 4800), ("work/leaf", 1600)]);
    assert_eq!(region_counts(&c_summary["merged"]), expected);
    assert_eq!(region_counts(&rust_summary["merged"]), expected);
    let c_threads = per_thread(&c_summary);
    assert_eq!(c_threads.len(), 8);
    assert_eq!(c_threads, per_thread(&rust_summary));
    let metadata = read_json(&dir.join("run"), "metadata.json");
    assert_eq!(metadata["c_api"]["errors_total"], 0);
    assert_eq!(metadata["records"]["dropped"], 0);
}
