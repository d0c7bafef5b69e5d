//! `METRON_TRACE_MAX_SIZE`: the trace stops at its size limit and stays a valid trace.
//!
//! A program records far more regions than a 256 KiB trace holds, on two threads, under one
//! region that stays open across the cut. The trace is decoded by the independent validator
//! (`tests/perfetto/validate_trace.py`, the official Perfetto protobuf definitions): it must
//! frame, every slice must sit on a described track with a resolved name and be closed (the
//! ones open at the cut flagged `cut_at_max_size`), and the file must be no larger than the
//! limit. `metadata.json` and the last stderr line report the cut; the records the trace left
//! out plus the ones it kept add up to every record; `summary.json` still has every region.

mod c_api_support;
use metron_tests::{scenario, Scenario};
use serde_json::Value;
use std::path::Path;

const LIMIT: u64 = 256 << 10;
const ITERATIONS: u64 = 40_000;

fn work() {
    for _ in 0..ITERATIONS {
        let _outer = metron::scope!("outer");
        let _inner = metron::scope!("inner");
        std::hint::black_box(0);
    }
}

scenario! {
    fn scenario_many_regions() {
        let _whole = metron::scope!("whole");
        let worker = std::thread::Builder::new()
            .name("worker".into())
            .spawn(work)
            .unwrap();
        work();
        worker.join().unwrap();
    }
}

fn validate(trace: &Path) -> Value {
    metron_tests::validated_trace(trace, &["--slices"])
}

#[test]
fn a_trace_cut_at_its_size_limit_stays_valid_and_the_cut_is_reported() {
    let run = Scenario::new("scenario_many_regions")
        .env("METRON_TRACE_MAX_SIZE", "256K")
        .run();
    let dir = &run.output_dir;
    let trace_path = dir.join("trace.pftrace");
    let size = std::fs::metadata(&trace_path).expect("the trace").len();
    assert!(size <= LIMIT, "the trace takes {size} bytes, over {LIMIT}");
    assert!(
        size > LIMIT / 2,
        "the trace uses the room it has ({size} of {LIMIT} bytes)"
    );

    let trace = validate(&trace_path);
    for check in [
        "tracks_described",
        "unknown_event_name",
        "unknown_annotation_name",
        "wrong_clock",
        "every_slice_closed",
        "slice_ends_match",
        "process_track",
        "trace_stats_present",
    ] {
        let c = trace["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == check)
            .unwrap_or_else(|| panic!("the validator ran check {check}"));
        assert_eq!(c["ok"], true, "{check}: {c}");
    }
    let slices = trace["slices"].as_array().expect("--slices lists them");
    assert!(
        slices.iter().all(|s| s["name"].is_string()),
        "every slice has its name"
    );
    let cut_flagged: Vec<&Value> = slices
        .iter()
        .filter(|s| s["args"]["cut_at_max_size"] == true)
        .collect();
    assert!(
        cut_flagged.iter().any(|s| s["name"] == "whole"),
        "the region open across the cut ends there, flagged: {cut_flagged:?}"
    );
    let run_end = &trace["run_end"]["args"];

    let metadata = run.metadata();
    let report = &metadata["outputs"]["trace"];
    let cut = &report["cut_at_max_size"];
    assert!(cut.is_object(), "metadata reports the cut: {report}");
    let left_out = cut["records_left_out"].as_u64().unwrap();
    let closed = cut["slices_closed_at_cut"].as_u64().unwrap();
    assert!(left_out > 0, "{cut}");
    assert_eq!(closed as usize, cut_flagged.len());
    assert_eq!(report["max_file_bytes"], LIMIT);
    assert_eq!(report["bytes"], size, "metadata has the file's size");
    assert_eq!(report["complete"], false);
    assert_eq!(run_end["records_left_out_at_max_size"], left_out);
    // Every record is either in the trace (a begin and an end per slice, less the ends the
    // cut added) or counted as left out.
    let records = metadata["records"]["written"].as_u64().unwrap();
    assert_eq!(
        2 * slices.len() as u64 - closed + left_out,
        records,
        "slices in the trace {}, closed at the cut {closed}, left out {left_out}",
        slices.len()
    );

    let last = run.stderr.lines().last().unwrap_or_default();
    let expected = format!(
        "; trace cut at {} bytes ({left_out} records left out; METRON_TRACE_MAX_SIZE={LIMIT})",
        cut["at_bytes"]
    );
    assert!(
        last.starts_with("metron: wrote") && last.contains(&expected) && !last.contains("FAILED"),
        "the last line reports the cut ({expected}): {last}\n{}",
        run.stderr
    );

    // The summary sees every record.
    let summary = run.summary();
    let regions = c_api_support::region_counts(&summary["merged"]);
    assert_eq!(regions.get("whole"), Some(&1), "{regions:?}");
    assert_eq!(regions.get("whole/outer"), Some(&ITERATIONS), "{regions:?}");
    assert_eq!(regions.get("outer"), Some(&ITERATIONS), "{regions:?}");
    assert_eq!(regions.get("outer/inner"), Some(&ITERATIONS), "{regions:?}");
    assert!(run.summary_text().contains("inner"));
}

#[test]
fn a_malformed_size_is_reported_with_what_is_accepted_and_the_trace_is_not_cut() {
    for bad in ["12Q", "10K", "-1"] {
        let run = Scenario::new("scenario_many_regions")
            .env("METRON_TRACE_MAX_SIZE", bad)
            .run();
        let line = run
            .stderr
            .lines()
            .find(|l| l.contains("METRON_TRACE_MAX_SIZE"))
            .unwrap_or_else(|| panic!("the bad value {bad:?} is reported:\n{}", run.stderr));
        assert!(
            line.contains(&format!("\"{bad}\""))
                && line.contains("off (no limit), or a size in bytes of at least 64K")
                && line.contains("512K, 64M, 1G"),
            "{line}"
        );
        let metadata = run.metadata();
        let report = &metadata["outputs"]["trace"];
        assert_eq!(report["max_file_bytes"], Value::Null, "{report}");
        assert_eq!(report["cut_at_max_size"], Value::Null, "{report}");
        assert_eq!(report["complete"], true, "{report}");
        let last = run.stderr.lines().last().unwrap_or_default();
        assert!(!last.contains("trace cut"), "{last}");
    }
}
