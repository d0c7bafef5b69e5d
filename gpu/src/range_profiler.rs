//! GPU counters (`GpuCounters`) through the CUPTI Range Profiler: `METRON_GPU_METRICS` and
//! `METRON_GPU_COUNTER_MODE`.
//!
//! - **Kernel mode** (the default, the safe one): auto range with kernel replay, one range per
//!   kernel. The profiler is set up inside the first launch's callback (it needs the context):
//!   chip name, counter availability, host object, config image, number of passes (said on
//!   stderr before the first kernel runs). Each launch is bracketed by `Start` (launch enter)
//!   and `Stop` + `DecodeData` + `EvaluateToGpuValues` (launch exit): kernel replay runs every
//!   pass inside the launch, so the values are complete at its exit and are tied to the
//!   launch's correlation id, hence to its `kernels.csv` row and its launching region.
//! - **Region mode** (user range, user replay, single-pass metric sets): [`region_begin`]
//!   (`Start`, `PushRange`) and [`region_end`] (`PopRange`, `Stop`, `DecodeData`, evaluation,
//!   a fresh counter-data image) bracket one region instance, called by the `GpuCounters`
//!   component and the C API's region hooks (`component.rs`). One range at a time in the
//!   process (an inner region reads NaN). Kernel activity is disabled while a range is open:
//!   with it on, CUPTI counts an internal `WaitNs` kernel in each user range. The launch
//!   callbacks only set the profiler up. With N > 1 passes region mode is refused
//!   ([`decide`]): kernel mode runs and regions read NaN with the reason.
//! - **Timestamps.** Under kernel replay CUPTI writes kernel activity records with
//!   `start = end = 0`. Tracing stays on (so `kernels.csv` still has every kernel), and such a
//!   record takes the host span of its launch call (which includes every replay pass); the
//!   number of records so marked is in `metadata.json` (`gpu.counters.kernels_with_host_time`).
//!   The device time of a kernel is then the metric `gpu__time_duration.sum`.
//! - **Derived metrics**: `name=expression` entries ([`parse_spec`]), evaluated per range with
//!   the metric layer's expressions.
//! - **Threads.** Profiler calls are serialized by one lock; two threads launching at once can
//!   make `Start` fail, which turns counters off with CUPTI's error (never wrong numbers).
//!   Multi-threaded launches with counters were not run on a GPU.

use crate::sys::Cupti;
use crate::sys_profiler::{
    Names, Object, Profiler, AUTO_RANGE, KERNEL_REPLAY, USER_RANGE, USER_REPLAY,
};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Ranges the counter-data image holds before it is initialized again.
const MAX_RANGES: usize = 64;

/// How counters are scoped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// One range per kernel, kernel replay.
    Kernel,
    /// Metron regions as user ranges, user replay.
    Region,
}

impl Mode {
    /// The setting's word.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Kernel => "kernel",
            Mode::Region => "region",
        }
    }
}

/// `METRON_GPU_METRICS`: names split on commas, trimmed, empty ones and repeats dropped.
pub use metron_metrics::split_list as parse_metrics;

/// What `METRON_GPU_METRICS` asks for: CUPTI metrics, and derived metrics written
/// `name=expression` in the metric layer's language (`metron_metrics::Expr`, e.g.
/// `ipc=smsp__inst_executed.sum/sm__cycles_elapsed.max`), whose references are counted too.
pub use metron_metrics::MetricList as Spec;

/// Parses `METRON_GPU_METRICS` (`Err` names the entry whose expression does not parse).
pub fn parse_spec(raw: &str) -> Result<Spec, String> {
    Spec::parse(raw)
}

/// `METRON_GPU_COUNTER_MODE` (`kernel` for anything else, as the settings registry reports).
pub fn parse_mode(raw: Option<&str>) -> Mode {
    match raw.map(|s| s.trim().to_ascii_lowercase()) {
        Some(s) if s == "region" => Mode::Region,
        _ => Mode::Kernel,
    }
}

/// The mode that runs for the `requested` one and `passes`, and why it differs.
///
/// Region mode runs only for single-pass metric sets: with N > 1 passes each region would have
/// to repeat N times (user replay), which Metron does not drive; it counts per kernel instead
/// and a `GpuCounters` component reports NaN with that reason (never partial numbers).
pub fn decide(requested: Mode, passes: usize) -> (Mode, Option<String>) {
    match requested {
        Mode::Kernel => (Mode::Kernel, None),
        Mode::Region if passes > 1 => (
            Mode::Kernel,
            Some(format!(
                "region mode needs {passes} passes: each region would have to repeat {passes} \
                 times (user replay, not driven by Metron); counting per kernel with kernel \
                 replay instead, GpuCounters regions read NaN"
            )),
        ),
        Mode::Region => (Mode::Region, None),
    }
}

/// The profiler's state once set up (on the first launch).
struct Session {
    profiler: Profiler,
    host: Object,
    object: Object,
    names: Names,
    _config: Vec<u8>,
    image: Vec<u8>,
    /// Ranges already evaluated in `image`.
    evaluated: usize,
    /// Kernel (auto range, kernel replay) or region (user range, user replay).
    mode: Mode,
}

#[derive(Default)]
struct Info {
    metrics: Vec<String>,
    requested: Option<Mode>,
    mode: Option<Mode>,
    passes: Option<usize>,
    chip: Option<String>,
    note: Option<String>,
    error: Option<String>,
    config_bytes: usize,
    counter_data_bytes: usize,
}

struct State {
    info: Info,
    session: Option<Session>,
    spec: Spec,
}

/// correlation id → host span of the launch (enter, exit). A lock of its own: CUPTI's
/// completion callback reads it and must never wait on the profiler's lock.
static LAUNCHES: Mutex<Option<HashMap<u32, (u64, u64)>>> = Mutex::new(None);

static ACTIVE: AtomicBool = AtomicBool::new(false);
static SET_UP: AtomicBool = AtomicBool::new(false);
static PROFILED: AtomicU64 = AtomicU64::new(0);
static RANGES_DROPPED: AtomicU64 = AtomicU64::new(0);
static HOST_TIME: AtomicU64 = AtomicU64::new(0);
static STATE: Mutex<Option<State>> = Mutex::new(None);
static CUPTI: Mutex<Option<(Cupti, Profiler)>> = Mutex::new(None);

/// Counters are on (metrics were asked for and nothing failed so far).
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Reads the settings and, when metrics are asked for, resolves the profiler functions from
/// the libcupti at `cupti_path`. Called at start; the profiler itself is set up at the first
/// launch.
pub fn configure(cupti: &Cupti, cupti_path: &str) {
    let raw = std::env::var("METRON_GPU_METRICS").unwrap_or_default();
    if parse_metrics(&raw).is_empty() {
        return;
    }
    let (spec, spec_error) = match parse_spec(&raw) {
        Ok(s) => (s, None),
        Err(e) => (
            Spec {
                hardware: Vec::new(),
                derived: Vec::new(),
            },
            Some(e),
        ),
    };
    let metrics = spec.hardware.clone();
    let requested = parse_mode(std::env::var("METRON_GPU_COUNTER_MODE").ok().as_deref());
    let mut info = Info {
        metrics: metrics.clone(),
        requested: Some(requested),
        ..Info::default()
    };
    let loaded = match spec_error {
        Some(e) => Err(e),
        None => crate::sys::dlopen(cupti_path, true)
            .or_else(|_| crate::sys::dlopen("libcupti.so.13", true))
            .and_then(Profiler::load)
            .map_err(|e| format!("the Range Profiler is not in {cupti_path}: {e}")),
    };
    match loaded {
        Ok(p) => {
            *CUPTI.lock().unwrap_or_else(|e| e.into_inner()) = Some((*cupti, p));
            metron::sinks::kernels_csv::set_counter_metrics(
                spec.columns(),
                spec.derived
                    .iter()
                    .map(|(n, s, _)| (n.clone(), s.clone()))
                    .collect(),
            );
            REGION_REQUESTED.store(requested == Mode::Region, Ordering::Relaxed);
            ACTIVE.store(true, Ordering::Release);
        }
        Err(e) => {
            info.error = Some(e);
            eprintln!(
                "metron: GPU counters off: {}",
                info.error.as_deref().unwrap_or("")
            );
        }
    }
    *STATE.lock().unwrap_or_else(|e| e.into_inner()) = Some(State {
        info,
        session: None,
        spec,
    });
}

fn fail(state: &mut State, e: String) {
    eprintln!("metron: GPU counters off: {e}");
    state.info.error = Some(e);
    ACTIVE.store(false, Ordering::Release);
}

/// Sets the profiler up on `ctx` (first launch): passes said on stderr.
fn set_up(state: &mut State, ctx: *mut c_void) -> Result<(), String> {
    let (cupti, p) = CUPTI
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .ok_or("CUPTI not loaded")?;
    if ctx.is_null() {
        return Err("the first launch has no current CUDA context".into());
    }
    p.initialize(&cupti)?;
    // Device 0: one GPU per process is what was validated (several GPUs: not run).
    let chip = p.chip_name(&cupti, 0)?;
    state.info.chip = Some(chip.clone());
    let availability = p.counter_availability(&cupti, ctx)?;
    let host = p.host_init(&cupti, &chip, &availability)?;
    let mut unknown = Vec::new();
    for m in &state.info.metrics {
        if let Err(e) = p.metric_description(&cupti, host, m) {
            unknown.push(format!("{m} ({e})"));
        }
    }
    if !unknown.is_empty() {
        let _ = p.host_deinit(&cupti, host);
        return Err(format!(
            "unknown metric(s) on {chip}: {}",
            unknown.join(", ")
        ));
    }
    let names = Names::new(&state.info.metrics)?;
    let mut config = p.config_image(&cupti, host, &names)?;
    let passes = p.num_passes(&cupti, &mut config)?;
    let requested = state.info.requested.unwrap_or(Mode::Kernel);
    let (mode, note) = decide(requested, passes);
    eprintln!(
        "metron: GPU counters: {} metric(s) on {chip} need {passes} pass(es); mode {}{}",
        state.info.metrics.len(),
        mode.as_str(),
        if passes > 1 {
            format!(" (kernel replay: each kernel runs {passes} times)")
        } else {
            String::new()
        }
    );
    if let Some(n) = &note {
        eprintln!("metron: GPU counters: {n}");
    }
    state.info.passes = Some(passes);
    state.info.mode = Some(mode);
    state.info.note = note;
    state.info.config_bytes = config.len();
    let object = p.enable_on(&cupti, ctx)?;
    let size = p.counter_data_size(&cupti, object, &names, MAX_RANGES)?;
    let mut image = vec![0u8; size];
    p.counter_data_init(&cupti, object, &mut image)?;
    let (range, replay) = range_and_replay(mode);
    p.set_config_on(
        &cupti, object, &config, &mut image, range, replay, MAX_RANGES,
    )?;
    state.info.counter_data_bytes = size;
    state.session = Some(Session {
        profiler: p,
        host,
        object,
        names,
        _config: config,
        image,
        evaluated: 0,
        mode,
    });
    SET_UP.store(true, Ordering::Release);
    Ok(())
}

/// Launch enter (outermost launch API call, application thread): sets up on the first launch,
/// then `Start`.
pub fn before_launch(ctx: *mut c_void, correlation: u32, now: u64) {
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(state) = guard.as_mut() else { return };
    if !ACTIVE.load(Ordering::Acquire) {
        return;
    }
    if state.session.is_none() {
        if let Err(e) = set_up(state, ctx) {
            fail(state, e);
            return;
        }
    }
    let Some((cupti, _)) = *CUPTI.lock().unwrap_or_else(|e| e.into_inner()) else {
        return;
    };
    let s = state.session.as_ref().expect("set up above");
    if s.mode == Mode::Region {
        // Region mode: ranges are opened by regions (`region_begin`), not by launches.
        return;
    }
    if let Err(e) = s.profiler.start_on(&cupti, s.object) {
        fail(state, e);
        return;
    }
    drop(guard);
    LAUNCHES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(correlation, (now, now));
}

/// Launch exit: `Stop`, `DecodeData`, the new range's values for `correlation`.
pub fn after_launch(correlation: u32, now: u64) {
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(state) = guard.as_mut() else { return };
    if !ACTIVE.load(Ordering::Acquire)
        || state
            .session
            .as_ref()
            .is_none_or(|s| s.mode == Mode::Region)
    {
        return;
    }
    {
        let mut launches = LAUNCHES.lock().unwrap_or_else(|e| e.into_inner());
        let Some(span) = launches.as_mut().and_then(|l| l.get_mut(&correlation)) else {
            return;
        };
        span.1 = now;
    }
    let Some((cupti, _)) = *CUPTI.lock().unwrap_or_else(|e| e.into_inner()) else {
        return;
    };
    let s = state.session.as_mut().expect("checked above");
    let result = (|| -> Result<Option<Vec<f64>>, String> {
        let p = s.profiler;
        p.stop_on(&cupti, s.object)?;
        let dropped = p.decode_on(&cupti, s.object)?;
        RANGES_DROPPED.fetch_add(dropped as u64, Ordering::Relaxed);
        let n = p.ranges_in(&cupti, &s.image)?;
        let mut last = None;
        for i in s.evaluated..n {
            last = Some(p.evaluate(&cupti, s.host, &s.image, i, &s.names)?);
        }
        s.evaluated = n;
        if n + 1 >= MAX_RANGES {
            p.counter_data_init(&cupti, s.object, &mut s.image)?;
            p.set_config_on(
                &cupti,
                s.object,
                &s._config,
                &mut s.image,
                AUTO_RANGE,
                KERNEL_REPLAY,
                MAX_RANGES,
            )?;
            s.evaluated = 0;
        }
        Ok(last)
    })();
    match result {
        Ok(Some(mut values)) => {
            PROFILED.fetch_add(1, Ordering::Relaxed);
            let derived = state.spec.derive(&values);
            values.extend(derived);
            metron::sinks::kernels_csv::record_kernel_counters(correlation, values);
        }
        Ok(None) => {}
        Err(e) => fail(state, e),
    }
}

/// The range and replay modes of `mode` for `SetConfig`.
fn range_and_replay(mode: Mode) -> (i32, i32) {
    match mode {
        Mode::Kernel => (AUTO_RANGE, KERNEL_REPLAY),
        Mode::Region => (USER_RANGE, USER_REPLAY),
    }
}

/// The name every user range gets (values are per region instance: the name is not read).
const USER_RANGE_NAME: &std::ffi::CStr = c"metron_region";

/// A user range is open (one at a time in the process: one nesting level).
static REGION_OPEN: AtomicBool = AtomicBool::new(false);
static REGIONS_COUNTED: AtomicU64 = AtomicU64::new(0);
static REGIONS_REFUSED: AtomicU64 = AtomicU64::new(0);
static REGIONS_NESTED: AtomicU64 = AtomicU64::new(0);
/// The values of the first [`SAMPLES`] counted regions, in order (for `metadata.json`: a
/// check that needs no trace reader).
static REGION_SAMPLES: Mutex<Vec<Vec<f64>>> = Mutex::new(Vec::new());
const SAMPLES: usize = 32;
/// Why the last region read NaN (first reason said on stderr too).
static REGION_REASON: Mutex<Option<String>> = Mutex::new(None);

/// Region mode was asked for (`METRON_GPU_COUNTER_MODE=region`) and counters are on: regions
/// should call [`region_begin`] / [`region_end`].
#[inline]
pub fn region_requested() -> bool {
    REGION_REQUESTED.load(Ordering::Relaxed) && ACTIVE.load(Ordering::Relaxed)
}

/// `METRON_GPU_COUNTER_MODE=region` with metrics, read by [`configure`].
static REGION_REQUESTED: AtomicBool = AtomicBool::new(false);

/// Why the last region (component or C region) read NaN; `None` when none did.
pub fn region_reason() -> Option<String> {
    REGION_REASON
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// Remembers why a region reads NaN (said once on stderr per distinct reason).
pub(crate) fn refuse(reason: String) -> String {
    REGIONS_REFUSED.fetch_add(1, Ordering::Relaxed);
    let mut last = REGION_REASON.lock().unwrap_or_else(|e| e.into_inner());
    if last.as_deref() != Some(reason.as_str()) {
        eprintln!("metron: GPU counters for this region: NaN: {reason}");
        *last = Some(reason.clone());
    }
    reason
}

/// The columns regions report (hardware metrics then derived), as configured.
pub fn region_columns() -> Vec<String> {
    let guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    match guard.as_ref() {
        Some(s) => s.spec.columns(),
        None => parse_spec(&std::env::var("METRON_GPU_METRICS").unwrap_or_default())
            .map(|s| s.columns())
            .unwrap_or_default(),
    }
}

/// Opens a user range for a region: sets the profiler up on the current context if no launch
/// did yet, disables kernel activity (CUPTI's internal `WaitNs` kernel would be counted
/// otherwise), `Start`, `PushRange`. `Err(reason)`: the region reads NaN (counters off, kernel
/// mode, several passes, a region already open, or a CUPTI error).
pub fn region_begin() -> Result<(), String> {
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(state) = guard.as_mut() else {
        return Err(
            "GPU counters are off: no METRON_GPU_METRICS, or the GPU backend was not started \
             (run under `metron run` or call metron_gpu::start())"
                .into(),
        );
    };
    if !ACTIVE.load(Ordering::Acquire) {
        return Err(format!(
            "GPU counters are off: {}",
            state.info.error.as_deref().unwrap_or("not started")
        ));
    }
    if state.info.requested != Some(Mode::Region) {
        return Err(
            "METRON_GPU_COUNTER_MODE is not `region`: counters are per kernel (kernels.csv)".into(),
        );
    }
    if REGION_OPEN.load(Ordering::Acquire) {
        REGIONS_NESTED.fetch_add(1, Ordering::Relaxed);
        return Err(
            "another GPU-counted region is open (one level of user ranges: the outer region \
             counts this one's kernels)"
                .into(),
        );
    }
    if state.session.is_none() {
        let ctx = crate::LOADED
            .get()
            .and_then(|l| l.driver.current_context())
            .unwrap_or(std::ptr::null_mut());
        if let Err(e) = set_up(state, ctx) {
            if ctx.is_null() {
                // No context yet: the first launch sets up; this region reads NaN.
                return Err(format!("no current CUDA context yet ({e})"));
            }
            fail(state, e.clone());
            return Err(e);
        }
    }
    let s = state.session.as_ref().expect("set up above");
    if s.mode != Mode::Region {
        return Err(state.info.note.clone().unwrap_or_default());
    }
    let Some((cupti, _)) = *CUPTI.lock().unwrap_or_else(|e| e.into_inner()) else {
        return Err("CUPTI not loaded".into());
    };
    // The WaitNs kernel CUPTI launches after each user range is counted in the range while
    // kernel activity is on (gpu-machine notes §3): kernel records are off while a range is
    // open (its kernels are not in kernels.csv / the trace).
    let _ = crate::sys::disable(&cupti, crate::sys::kind::CONCURRENT_KERNEL);
    let opened = s
        .profiler
        .start_on(&cupti, s.object)
        .and_then(|_| s.profiler.push_on(&cupti, s.object, USER_RANGE_NAME));
    if let Err(e) = opened {
        let _ = s.profiler.stop_on(&cupti, s.object);
        let _ = crate::sys::enable(&cupti, crate::sys::kind::CONCURRENT_KERNEL);
        fail(state, e.clone());
        return Err(e);
    }
    REGION_OPEN.store(true, Ordering::Release);
    Ok(())
}

/// Closes the range [`region_begin`] opened: `PopRange`, `Stop`, `DecodeData`, evaluation of
/// the range, kernel activity on again. The values: hardware metrics then derived ones.
pub fn region_end() -> Result<Vec<f64>, String> {
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(state) = guard.as_mut() else {
        return Err("GPU counters are off".into());
    };
    if !REGION_OPEN.swap(false, Ordering::AcqRel) {
        return Err("no GPU-counted region is open".into());
    }
    let Some((cupti, _)) = *CUPTI.lock().unwrap_or_else(|e| e.into_inner()) else {
        return Err("CUPTI not loaded".into());
    };
    let Some(s) = state.session.as_mut() else {
        return Err("the profiler is not set up".into());
    };
    let result = (|| -> Result<Vec<f64>, String> {
        let p = s.profiler;
        p.pop_on(&cupti, s.object)?;
        let all_passes = p.stop_on(&cupti, s.object)?;
        let dropped = p.decode_on(&cupti, s.object)?;
        RANGES_DROPPED.fetch_add(dropped as u64, Ordering::Relaxed);
        let n = p.ranges_in(&cupti, &s.image)?;
        let last = match n {
            0 => None,
            n => Some(p.evaluate(&cupti, s.host, &s.image, n - 1, &s.names)?),
        };
        // Under user replay a new Start after a complete pass set writes range 0 again (seen
        // on the H100: the second region decoded no new range): a fresh image per region.
        p.counter_data_init(&cupti, s.object, &mut s.image)?;
        p.set_config_on(
            &cupti,
            s.object,
            &s._config,
            &mut s.image,
            USER_RANGE,
            USER_REPLAY,
            MAX_RANGES,
        )?;
        s.evaluated = 0;
        if !all_passes {
            return Err("CUPTI wants more passes of this region (user replay)".into());
        }
        last.ok_or_else(|| format!("no range decoded (dropped {dropped})"))
    })();
    let _ = crate::sys::enable(&cupti, crate::sys::kind::CONCURRENT_KERNEL);
    match result {
        Ok(mut values) => {
            REGIONS_COUNTED.fetch_add(1, Ordering::Relaxed);
            let derived = state.spec.derive(&values);
            values.extend(derived);
            let mut samples = REGION_SAMPLES.lock().unwrap_or_else(|e| e.into_inner());
            if samples.len() < SAMPLES {
                samples.push(values.clone());
            }
            Ok(values)
        }
        Err(e) => {
            fail(state, e.clone());
            Err(e)
        }
    }
}

/// The host span of a profiled launch, for a kernel record whose device timestamps CUPTI
/// zeroed (kernel replay).
pub fn host_span(correlation: u32) -> Option<(u64, u64)> {
    if !SET_UP.load(Ordering::Acquire) {
        return None;
    }
    let span = LAUNCHES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()?
        .get(&correlation)
        .copied();
    if span.is_some() {
        HOST_TIME.fetch_add(1, Ordering::Relaxed);
    }
    span
}

/// The `gpu.counters` section of `metadata.json` (`null` when no metric was asked for).
pub fn metadata() -> Value {
    let guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(state) = guard.as_ref() else {
        return Value::Null;
    };
    let i = &state.info;
    json!({
        "metrics": i.metrics,
        "derived": state.spec.derived.iter().map(|(n, s, _)| json!({"name": n, "expression": s})).collect::<Vec<_>>(),
        "mode_requested": i.requested.map(Mode::as_str),
        "mode": i.mode.map(Mode::as_str),
        "mode_note": i.note,
        "passes": i.passes,
        "chip": i.chip,
        "error": i.error,
        "kernels_profiled": PROFILED.load(Ordering::Relaxed),
        "ranges_dropped": RANGES_DROPPED.load(Ordering::Relaxed),
        "kernels_with_host_time": HOST_TIME.load(Ordering::Relaxed),
        "regions_counted": REGIONS_COUNTED.load(Ordering::Relaxed),
        "regions_refused": REGIONS_REFUSED.load(Ordering::Relaxed),
        "regions_nested": REGIONS_NESTED.load(Ordering::Relaxed),
        "region_reason": region_reason(),
        "region_first_values": *REGION_SAMPLES.lock().unwrap_or_else(|e| e.into_inner()),
        "region_kernel_activity": "off while a user range is open (CUPTI's internal WaitNs kernel would be counted in the range): kernels of counted regions are not in kernels.csv or the trace",
        "config_image_bytes": i.config_bytes,
        "counter_data_image_bytes": i.counter_data_bytes,
        "kernel_timestamps": "under kernel replay CUPTI zeroes kernel timestamps: such kernels carry the host span of their launch call (all passes included); use gpu__time_duration.sum for device time",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_split_trimmed_and_deduplicated() {
        assert_eq!(
            parse_metrics(
                " smsp__inst_executed.sum, dram__bytes_read.sum,,smsp__inst_executed.sum "
            ),
            vec!["smsp__inst_executed.sum", "dram__bytes_read.sum"]
        );
        assert!(parse_metrics("").is_empty());
        assert!(parse_metrics(" , ").is_empty());
    }

    #[test]
    fn derived_metrics_add_their_references_and_evaluate_per_range() {
        let spec = parse_spec(
            "smsp__inst_executed.sum, ipc=smsp__inst_executed.sum/sm__cycles_elapsed.max",
        )
        .unwrap();
        assert_eq!(
            spec.hardware,
            vec!["smsp__inst_executed.sum", "sm__cycles_elapsed.max"]
        );
        assert_eq!(
            spec.columns(),
            vec!["smsp__inst_executed.sum", "sm__cycles_elapsed.max", "ipc"]
        );
        assert_eq!(spec.derive(&[300.0, 100.0]), vec![3.0]);
        let e = parse_spec("bad=smsp__x.sum/(").unwrap_err();
        assert!(e.contains("bad=smsp__x.sum/("), "{e}");
    }

    #[test]
    fn mode_defaults_to_kernel() {
        assert_eq!(parse_mode(None), Mode::Kernel);
        assert_eq!(parse_mode(Some("kernel")), Mode::Kernel);
        assert_eq!(parse_mode(Some(" Region ")), Mode::Region);
        assert_eq!(parse_mode(Some("bogus")), Mode::Kernel);
    }

    #[test]
    fn region_mode_never_gives_wrong_numbers() {
        assert_eq!(decide(Mode::Kernel, 10), (Mode::Kernel, None));
        let (m, note) = decide(Mode::Region, 10);
        assert_eq!(m, Mode::Kernel);
        assert!(note.unwrap().contains("repeat 10 times"));
        assert_eq!(decide(Mode::Region, 1), (Mode::Region, None));
        assert_eq!(range_and_replay(Mode::Region), (USER_RANGE, USER_REPLAY));
        assert_eq!(range_and_replay(Mode::Kernel), (AUTO_RANGE, KERNEL_REPLAY));
    }
}
