//! `metadata.json`: settings in force, versions, clock calibration, and per-thread record
//! counts — everything needed to judge whether a run's data is complete.

use crate::buffer::BacklogStats;
use crate::pipeline::Pipeline;
use crate::record::SLOT_BYTES;
use crate::settings::Settings;
use crate::sink::RunInfo;
use metron_components::clock;
use serde_json::{json, Value};
use std::sync::Mutex;

/// A section of `metadata.json`: its key, and what computes its value at the end of the run.
type Section = (&'static str, fn() -> Value);

/// Extra sections of `metadata.json` added by bindings (e.g. the C API's error counts).
static SECTIONS: Mutex<Vec<Section>> = Mutex::new(Vec::new());

/// Adds section `name` to `metadata.json`: `section` is called when the run finishes and its
/// value is written under `name` (a later registration of the same name replaces it).
pub fn add_section(name: &'static str, section: fn() -> Value) {
    if let Some(owner) = crate::shared_runtime::owner() {
        match crate::shared_runtime::same_build_owner() {
            Some(_) => crate::shared_runtime::joined::add_section(owner, name, section),
            None => crate::first_use::say(format!(
                "metadata section {name}: this copy of Metron records into another copy of a different build, which cannot take it; left out"
            )),
        }
        return;
    }
    let mut sections = SECTIONS.lock().unwrap_or_else(|e| e.into_inner());
    sections.retain(|(n, _)| *n != name);
    sections.push((name, section));
}

/// Reports calls refused by a documented limit: (what was refused, how many times).
type Refusals = fn() -> Vec<(String, u64)>;

/// The sources of refusals (the C API's nesting limit, ...), asked at the end of the run.
static REFUSALS: Mutex<Vec<Refusals>> = Mutex::new(Vec::new());

/// Adds `source` of calls refused by a documented limit (nesting depth, name length, ...):
/// at the end of the run, each (what, count) with a count above zero is shown in the run's
/// last stderr line, the header of `summary.txt` and `refused` in `metadata.json` and
/// `summary.json`, so that a refusal is never only in a binding's own section. Call it once
/// per source.
pub fn add_refusals(source: Refusals) {
    REFUSALS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(source);
}

/// Every refusal counted so far (non-zero counts only).
pub(crate) fn refusals() -> Vec<(String, u64)> {
    let sources = REFUSALS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    sources
        .into_iter()
        .flat_map(|f| f())
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// The registered sections, evaluated now.
fn extra_sections() -> Vec<(&'static str, Value)> {
    let sections = SECTIONS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    sections.into_iter().map(|(name, f)| (name, f())).collect()
}

/// Threads listed one by one in `metadata.json` while they are this many or fewer.
const THREADS_MANY: usize = 64;
/// Threads listed one by one when there are more (those that wrote the most records).
const THREADS_APART: usize = 16;

/// `metadata.json`'s `threads`: each thread's counts while they are few; past
/// [`THREADS_MANY`], the [`THREADS_APART`] that wrote the most apart and the others summed,
/// one entry per thread name (`"threads"`: how many, `"thread"`: null), so that a thread per
/// task makes the file grow with the names, not with the threads. Every count is kept.
fn threads_json(threads: &[&crate::pipeline::ThreadStats]) -> Value {
    if threads.len() <= THREADS_MANY {
        return json!(threads);
    }
    let mut order: Vec<&crate::pipeline::ThreadStats> = threads.to_vec();
    order.sort_by(|a, b| {
        let index = |s: &crate::pipeline::ThreadStats| s.thread.as_ref().map_or(0, |t| t.index);
        b.records_written
            .cmp(&a.records_written)
            .then(index(a).cmp(&index(b)))
    });
    let (apart, rest) = order.split_at(THREADS_APART);
    let mut out: Vec<Value> = apart.iter().map(|s| json!(s)).collect();
    let mut groups: std::collections::BTreeMap<(String, bool), [u64; 8]> = Default::default();
    for s in rest {
        let key = s
            .thread
            .as_ref()
            .map_or((String::new(), false), |t| (t.name.clone(), t.is_metron));
        let g = groups.entry(key).or_default();
        for (sum, n) in g.iter_mut().zip([
            1,
            s.records_written,
            s.records_dropped,
            s.unbalanced_ends,
            s.open_at_exit,
            s.open_at_crash,
            s.malformed,
            s.samples,
        ]) {
            *sum += n;
        }
    }
    for ((name, is_metron), g) in groups {
        out.push(json!({
            "thread": null,
            "name": name,
            "is_metron": is_metron,
            "threads": g[0],
            "records_written": g[1],
            "records_dropped": g[2],
            "unbalanced_ends": g[3],
            "open_at_exit": g[4],
            "open_at_crash": g[5],
            "malformed": g[6],
            "samples": g[7],
        }));
    }
    Value::Array(out)
}

/// What the runtime hands `metadata.json` of itself.
pub(crate) struct RuntimeFacts<'a> {
    pub(crate) settings: &'a Settings,
    /// Warnings about the output path's keys.
    pub(crate) path_warnings: &'a [String],
    pub(crate) segments_mapped: u64,
    pub(crate) backlog: BacklogStats,
}

/// Brings a `metadata.json` built before the late outputs up to date with them: their reports
/// (`outputs`), the errors, and the sections registered by other parts (the GPU backend's,
/// whose late outputs finish then). The settings, threads, records and clock do not change at
/// the end of the run and are not made again.
pub(crate) fn refresh_outputs(metadata: &mut Value, pipeline: &Pipeline, errors: &[String]) {
    metadata["output_errors"] = json!(errors);
    metadata["outputs"] = Value::Object(pipeline.sink_metadata());
    for (name, value) in extra_sections() {
        metadata[name] = value;
    }
    if let Some(gpu) = crate::gpu::metadata() {
        metadata["gpu"] = gpu;
    }
}

pub(crate) fn build(
    rt: &RuntimeFacts<'_>,
    run: &RunInfo,
    pipeline: &mut Pipeline,
    errors: &[String],
) -> Value {
    let final_cal = pipeline.calibration();
    let initial = pipeline.initial_calibration();
    let threads = pipeline.thread_stats();
    let written: u64 = threads.iter().map(|t| t.records_written).sum();
    // Records that came before Metron's first constructor could let threads record.
    let before_start = crate::thread_buffer::dropped_before_hooks();
    let dropped: u64 = threads.iter().map(|t| t.records_dropped).sum::<u64>() + before_start;
    let mut metadata = json!({
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
        "rank": crate::ranks::rank_json(&run.hostname),
        "clock_pairs": crate::ranks::clock_pairs_json(),
        "settings": rt.settings.resolved,
        "setting_errors": rt.settings.errors.iter().map(|e| e.to_string()).chain(rt.path_warnings.iter().cloned()).collect::<Vec<_>>(),
        "buffer": {
            "slot_bytes": SLOT_BYTES,
            "segment_bytes": rt.settings.buffer_bytes,
            "policy": rt.settings.policy,
            "segments_mapped": rt.segments_mapped,
            "backlog_policy": rt.settings.backlog_policy,
            "backlog": rt.backlog,
            "backend": pipeline.backend_metadata(),
        },
        "records": { "written": written, "dropped": dropped, "dropped_before_start": before_start },
        "refused": refusals().into_iter().map(|(what, n)| (what, json!(n))).collect::<serde_json::Map<String, Value>>(),
        "threads": threads_json(&threads),
        "output_errors": errors,
        "outputs": pipeline.sink_metadata(),
    });
    metadata["runtime"] = crate::shared_runtime::metadata();
    if let Some(died) = crate::crash::died() {
        metadata["died"] = json!(died);
    }
    for (name, value) in extra_sections() {
        metadata[name] = value;
    }
    // The registered GPU backend's section, asked of the GPU glue. It replaces a `gpu` section
    // registered by name: the CUDA glue registers one that says why it is off, which the AMD
    // backend, when it is the one that registered, replaces.
    if let Some(gpu) = crate::gpu::metadata() {
        metadata["gpu"] = gpu;
    }
    metadata
}
