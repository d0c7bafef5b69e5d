//! `metadata.json`: settings in force, versions, clock calibration, and per-thread record
//! counts — everything needed to judge whether a run's data is complete.

use crate::pipeline::Pipeline;
use crate::runtime::{Runtime, RECORD_SLOT_BYTES};
use crate::sink::RunInfo;
use metron_components::clock;
use serde_json::{json, Value};

pub(crate) fn build(rt: &Runtime, run: &RunInfo, pipeline: &Pipeline, errors: &[String]) -> Value {
    let initial = pipeline.initial_calibration();
    let final_cal = pipeline.calibration.refined();
    let threads = pipeline.thread_stats();
    let written: u64 = threads.iter().map(|t| t.records_written).sum();
    let dropped: u64 = threads.iter().map(|t| t.records_dropped).sum();
    json!({
        "schema": "metron.metadata/1",
        "metron_version": env!("CARGO_PKG_VERSION"),
        "run": run,
        "clock": {
            "timeline": "CLOCK_MONOTONIC ns",
            "tick_source": clock::TICK_SOURCE,
            "reference_ticks": initial.ticks0,
            "reference_monotonic_ns": initial.mono0,
            "initial_ns_per_tick": initial.ns_per_tick,
            "final_ns_per_tick": final_cal.ns_per_tick,
            "initial_calibration_error_at_end_ns": initial.error_now_ns(),
            "final_calibration_error_at_end_ns": final_cal.error_now_ns(),
        },
        "settings": rt.settings.resolved,
        "setting_errors": rt.settings.errors.iter().map(|e| e.to_string()).chain(rt.path_warnings().iter().cloned()).collect::<Vec<_>>(),
        "buffer": {
            "slot_bytes": RECORD_SLOT_BYTES,
            "segment_bytes": rt.settings.buffer_bytes,
            "policy": rt.settings.policy,
            "segments_mapped": rt.segments_mapped(),
        },
        "records": { "written": written, "dropped": dropped },
        "threads": threads,
        "output_errors": errors,
    })
}
