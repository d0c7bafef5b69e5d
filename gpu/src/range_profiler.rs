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
//! - **Region mode** (user ranges, user replay) needs each region to repeat once per pass and
//!   an internal CUPTI kernel distorts it while kernel tracing is on. It is not driven yet:
//!   a request for it falls back to kernel mode, with the reason in `metadata.json` and on
//!   stderr ([`decide`]); the per-region totals (`summary.json` `gpu_counters`) are sums over
//!   each region's kernels, which is exact for additive (`.sum`) metrics.
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
use crate::sys_profiler::{Names, Object, Profiler, AUTO_RANGE, KERNEL_REPLAY};
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
pub fn parse_metrics(raw: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in raw.split(',').map(str::trim).filter(|m| !m.is_empty()) {
        if !out.iter().any(|o| o == m) {
            out.push(m.to_string());
        }
    }
    out
}

/// What `METRON_GPU_METRICS` asks for: CUPTI metrics, and derived metrics written
/// `name=expression` in the metric layer's language (`metron_metrics::Expr`, e.g.
/// `ipc=smsp__inst_executed.sum/sm__cycles_elapsed.max`), whose references are counted too.
#[derive(Debug)]
pub struct Spec {
    /// The CUPTI metrics to count (listed, then referenced by derived ones), no repeats.
    pub hardware: Vec<String>,
    /// `(name, expression source, parsed)`.
    pub derived: Vec<(String, String, metron_metrics::Expr)>,
}

impl Spec {
    /// Every column name: hardware metrics, then derived ones.
    pub fn columns(&self) -> Vec<String> {
        let mut c = self.hardware.clone();
        c.extend(self.derived.iter().map(|d| d.0.clone()));
        c
    }

    /// The derived values for one range's hardware values (NaN when an expression fails, e.g.
    /// a division by zero).
    pub fn derive(&self, hardware: &[f64]) -> Vec<f64> {
        self.derived
            .iter()
            .map(|(_, _, e)| {
                e.evaluate(&|n| {
                    self.hardware
                        .iter()
                        .position(|h| h == n)
                        .and_then(|i| hardware.get(i))
                        .map(std::slice::from_ref)
                })
                .unwrap_or(f64::NAN)
            })
            .collect()
    }
}

/// Parses `METRON_GPU_METRICS` (`Err` names the entry whose expression does not parse).
pub fn parse_spec(raw: &str) -> Result<Spec, String> {
    let mut spec = Spec {
        hardware: Vec::new(),
        derived: Vec::new(),
    };
    let add = |hw: &mut Vec<String>, m: &str| {
        if !hw.iter().any(|o| o == m) {
            hw.push(m.to_string());
        }
    };
    for entry in parse_metrics(raw) {
        match entry.split_once('=') {
            None => add(&mut spec.hardware, &entry),
            Some((name, source)) => {
                let (name, source) = (name.trim(), source.trim());
                let expr = metron_metrics::Expr::parse(source)
                    .map_err(|e| format!("derived GPU metric {name}={source}: {e}"))?;
                for r in expr.names() {
                    add(&mut spec.hardware, r);
                }
                spec.derived
                    .push((name.to_string(), source.to_string(), expr));
            }
        }
    }
    Ok(spec)
}

/// `METRON_GPU_COUNTER_MODE` (`kernel` for anything else, as the settings registry reports).
pub fn parse_mode(raw: Option<&str>) -> Mode {
    match raw.map(|s| s.trim().to_ascii_lowercase()) {
        Some(s) if s == "region" => Mode::Region,
        _ => Mode::Kernel,
    }
}

/// The mode that runs for the `requested` one and `passes`, and why it differs.
pub fn decide(requested: Mode, passes: usize) -> (Mode, Option<String>) {
    match requested {
        Mode::Kernel => (Mode::Kernel, None),
        Mode::Region if passes > 1 => (
            Mode::Kernel,
            Some(format!(
                "region mode needs {passes} passes: each region would have to repeat {passes} \
                 times (user replay); counting per kernel with kernel replay instead"
            )),
        ),
        Mode::Region => (
            Mode::Kernel,
            Some(
                "region mode (user ranges) is not implemented in this build; counting per \
                 kernel with kernel replay, summed per launching region"
                    .into(),
            ),
        ),
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
    p.set_config_on(
        &cupti,
        object,
        &config,
        &mut image,
        AUTO_RANGE,
        KERNEL_REPLAY,
        MAX_RANGES,
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
    if !ACTIVE.load(Ordering::Acquire) || state.session.is_none() {
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
        let (m, note) = decide(Mode::Region, 1);
        assert_eq!(m, Mode::Kernel);
        assert!(note.is_some());
    }
}
