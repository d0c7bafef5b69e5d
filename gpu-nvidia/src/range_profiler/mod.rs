//! GPU counters (`GpuCounters`) through the CUPTI Range Profiler: `METRON_GPU_METRICS` and
//! `METRON_GPU_COUNTER_MODE`.
//!
//! - **Kernel mode** (the default, the safe one): one range per launch. The profiler is set up
//!   at context creation (it needs the context): chip name, counter availability, host object,
//!   config image, number of passes (said on stderr before the first kernel runs). A metric set
//!   of one pass is counted with one *user* range per launch (`launch_range.rs`: `Start` and
//!   `PushRange` at launch enter, `PopRange`, `Stop`, `DecodeData`, evaluation at launch exit),
//!   so a CUDA graph launch is counted too, as the sum over its nodes. A set of several passes
//!   uses auto range with *kernel replay* (`Start` at launch enter, `Stop` + `DecodeData` +
//!   `EvaluateToGpuValues` at launch exit: kernel replay runs every pass inside the launch).
//!   Either way the values are complete at the launch's exit and are tied to its correlation
//!   id, hence to its `kernels.csv` row and its launching region.
//! - **Region mode** (user range, user replay, single-pass metric sets): [`region_begin`]
//!   (`Start`, `PushRange`) and [`region_end`] (`PopRange`, `Stop`, `DecodeData`, evaluation,
//!   a fresh counter-data image) bracket one region instance on the calling thread's current
//!   context, called by the `GpuCounters` component and the C API's regions
//!   (`component.rs`, `c_api.rs`). One range per context at a time: a nested region on the same thread,
//!   or a region of another thread that overlaps it on the same GPU, reads NaN with the
//!   reason, and so does the open region when another thread launched work on its context
//!   meanwhile (the GPU's counters cannot tell them apart). CUPTI's CONCURRENT_KERNEL activity
//!   is off while a range is open: with it on, CUPTI counts its own `WaitNs` kernel in every
//!   range (+16.8M instructions per range on the H100, measured 2026-11-24; `edges`, off only
//!   around Start/Push and Pop/Stop, did not help). The range's kernels are still recorded
//!   (`METRON_GPU_REGION_KERNELS=events`, the default; `region_kernels.rs`): from their launch
//!   callbacks with CUDA events for the device span, graph launches through the serialized
//!   KERNEL kind (which, unlike CONCURRENT_KERNEL, left the values exact on the H100). With N > 1
//!   passes region mode is refused ([`decide`]): kernel mode runs and regions read NaN.
//! - **Threads** (kernel mode): CUPTI's auto range allows one `Start`..`Stop` per context at a
//!   time, so each context has a gate taken at a launch's enter callback and released at its
//!   exit: a launch on another thread waits there until the profiled launch is decoded
//!   (`metadata.json` `gpu.counters.launches_serialized` counts the waits and their time).
//!   Kernel replay already serializes profiled kernels on the GPU; the gate adds the host-side
//!   wait. A failed launch reads NaN with CUPTI's error and the session is reset: counters are
//!   never turned off for the rest of the run by one launch.
//! - **CUDA graphs** (kernel mode): a single-pass set counts each graph launch as one range,
//!   the sum over its nodes (`kernels.csv`: on the launch's first kernel row; `ncu
//!   --graph-profiling graph`). Node by node is not possible from a launch callback (see
//!   `launch_range.rs`), nor with several passes (kernel replay cannot replay graph nodes):
//!   those graph kernels read NaN with the reason. Region mode counts graph work like any other.
//!   Launches while a stream capture is in progress are not profiled (a profiler call would
//!   invalidate a global capture).
//! - **Several GPUs**: one session (config, image, gate) per context, the chip of the context's
//!   device. Only one GPU was available to run it.
//! - **Timestamps.** Under kernel replay (several passes) CUPTI writes kernel activity records with
//!   `start = end = 0`. Tracing stays on (so `kernels.csv` still has every kernel), and such a
//!   record takes the host span of its launch call (which includes every replay pass); the
//!   number of records so marked is in `metadata.json` (`gpu.counters.kernels_with_host_time`).
//!   The device time of a kernel is then the metric `gpu__time_duration.sum`.
//! - **Derived metrics**: `name=expression` entries ([`parse_spec`]), evaluated per range with
//!   the metric layer's expressions.

use crate::sys::Cupti;
use crate::sys_profiler::{
    Names, Object, Profiler, AUTO_RANGE, KERNEL_REPLAY, USER_RANGE, USER_REPLAY,
};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

mod batch;
mod c_api;
mod evaluate;
mod kernel;
mod launch_range;
mod region;
pub use c_api::*;
pub use kernel::*;
pub use region::*;

/// Ranges the counter-data image holds (a graph launch needs one per kernel node).
const MAX_RANGES: usize = 128;
/// The image is initialized again once fewer than this many ranges are free.
const RANGES_FREE: usize = 64;
/// Region mode: ranges per counter-data image (`METRON_GPU_REGION_RANGES`): one region
/// instance in this many pays the image's close (`Stop`, `DecodeData`, a fresh image).
const REGION_RANGES: usize = 256;

/// `METRON_GPU_REGION_RANGES` (1 to 4096; anything else is said on stderr once and the
/// default used).
fn region_ranges() -> usize {
    static RANGES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *RANGES.get_or_init(|| match std::env::var("METRON_GPU_REGION_RANGES") {
        Err(_) => REGION_RANGES,
        Ok(v) if v.trim().is_empty() => REGION_RANGES,
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if (1..=4096).contains(&n) => n,
            _ => {
                eprintln!(
                    "metron: METRON_GPU_REGION_RANGES={v:?} is not a number from 1 to 4096 \
                     (ranges per counter-data image); using {REGION_RANGES}"
                );
                REGION_RANGES
            }
        },
    })
}

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

/// The mode that runs for the `requested` one and `passes`, and what it means.
///
/// Region mode runs for any metric set: with N > 1 passes pass k is collected from the k-th
/// instance of a region name (`batch.rs`), so each value combines N instances.
pub fn decide(requested: Mode, passes: usize) -> (Mode, Option<String>) {
    match requested {
        Mode::Kernel => (Mode::Kernel, None),
        Mode::Region if passes > 1 => (
            Mode::Region,
            Some(format!(
                "the metric set needs {passes} passes: pass k is collected from the k-th \
                 instance of a region, so each value combines {passes} instances of one region \
                 name (a region that repeats fewer than {passes} times reads NaN)"
            )),
        ),
        Mode::Region => (Mode::Region, None),
    }
}

/// The profiler's state on one CUDA context (set up on its first launch or region).
struct Session {
    profiler: Profiler,
    host: Object,
    /// The chip name and counter-availability image `host` was made from: CUPTI may keep
    /// pointers to them for the host object's life.
    _host_inputs: (CString, Vec<u8>),
    object: Object,
    names: Names,
    config: Vec<u8>,
    image: Vec<u8>,
    /// Ranges already evaluated in `image`.
    evaluated: usize,
    /// Kernel (auto range, kernel replay) or region (user range, user replay).
    mode: Mode,
    /// Passes the metric set needs on this context's chip.
    passes: usize,
    /// Kernel mode with one user range per launch (a single-pass metric set), rather than
    /// auto range with kernel replay (`launch_range.rs`).
    user_ranges: bool,
    /// Held from a launch's enter to its exit (kernel mode): one profiled launch at a time
    /// on this context, whichever thread launches.
    gate: Arc<Gate>,
    /// Region mode's user ranges on this context.
    batch: batch::Batch,
    /// Region mode: the name of each range number of an image (`"0"`, `"1"`, ...).
    range_names: Vec<CString>,
}

impl Session {
    /// A fresh counter-data image and `SetConfig` with `range` and `replay`: the session is
    /// ready for its next `Start` (under user replay a new `Start` after a complete pass set
    /// writes range 0 again, so each user-replay range needs one).
    fn reconfigure(&mut self, cupti: &Cupti, range: i32, replay: i32) -> Result<(), String> {
        let p = self.profiler;
        self.evaluated = 0;
        p.counter_data_init(cupti, self.object, &mut self.image)?;
        p.set_config_on(
            cupti,
            self.object,
            &self.config,
            &mut self.image,
            range,
            replay,
            MAX_RANGES,
        )
    }
}

/// A lock that can be taken in one callback and released in another (launch enter, exit).
#[derive(Default)]
struct Gate {
    busy: Mutex<bool>,
    free: Condvar,
}

impl Gate {
    /// Waits until no other launch holds the gate; returns true when it had to wait.
    fn acquire(&self) -> bool {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        let waited = *busy;
        while *busy {
            busy = self.free.wait(busy).unwrap_or_else(|e| e.into_inner());
        }
        *busy = true;
        waited
    }

    fn release(&self) {
        *self.busy.lock().unwrap_or_else(|e| e.into_inner()) = false;
        self.free.notify_one();
    }
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
    /// Devices with a profiler session.
    devices: Vec<i32>,
    /// Why launches were not profiled: reason → count.
    launch_errors: HashMap<String, u64>,
}

struct State {
    info: Info,
    /// context → session.
    sessions: HashMap<usize, Session>,
    initialized: bool,
    spec: Arc<Spec>,
}

/// correlation id → host span of the launch (enter, exit). A lock of its own: CUPTI's
/// completion callback reads it and must never wait on the profiler's lock.
static LAUNCHES: Mutex<Option<HashMap<u32, (u64, u64)>>> = Mutex::new(None);

static ACTIVE: AtomicBool = AtomicBool::new(false);
static SET_UP: AtomicBool = AtomicBool::new(false);
static PROFILED: AtomicU64 = AtomicU64::new(0);
static NAN_LAUNCHES: AtomicU64 = AtomicU64::new(0);
static RANGES_DROPPED: AtomicU64 = AtomicU64::new(0);
static HOST_TIME: AtomicU64 = AtomicU64::new(0);
/// Launches that waited for another thread's profiled launch, and the time they waited.
static GATE_WAITS: AtomicU64 = AtomicU64::new(0);
static GATE_WAIT_NS: AtomicU64 = AtomicU64::new(0);
static STATE: Mutex<Option<State>> = Mutex::new(None);
static CUPTI: Mutex<Option<(Cupti, Profiler)>> = Mutex::new(None);

thread_local! {
    /// The gate this thread holds between a launch's enter and exit: (context, gate); boxed
    /// (`libmetron.so` keeps its thread-local block small, see `user-api/src/thread_block.rs`).
    static HELD: std::cell::Cell<Option<Box<Held>>> = const { std::cell::Cell::new(None) };
}

/// A profiled launch between its enter and exit callbacks.
struct Held {
    /// Its context.
    ctx: usize,
    /// The context's gate, held by this thread.
    gate: Arc<Gate>,
    /// Counted as one user range (single-pass metric set), not with kernel replay.
    user_ranges: bool,
    /// A graph launch.
    graph: bool,
}

/// Counters are on (metrics were asked for and the profiler could be loaded).
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Reads the settings and, when metrics are asked for, resolves the profiler functions from
/// the libcupti at `cupti_path`. Called at start; the profiler itself is set up on each
/// context's first launch.
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
    crate::region_kernels::enable(
        requested == Mode::Region && region_kernels() == RegionKernels::Events,
    );
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
            c_api::set_c_hooks(requested == Mode::Region);
        }
        Err(e) => {
            info.error = Some(e);
            eprintln!(
                "metron: GPU counters off: {}",
                info.error.as_deref().unwrap_or("")
            );
        }
    }
    if requested == Mode::Region {
        metron::sinks::gpu_region_ranges::set_columns(spec.columns());
    }
    *STATE.lock().unwrap_or_else(|e| e.into_inner()) = Some(State {
        info,
        sessions: HashMap::new(),
        initialized: false,
        spec: Arc::new(spec),
    });
}

/// Counters off for the rest of the run: only for what no later launch can fix (the
/// profiler cannot be set up: unknown metric, unsupported device).
fn fail(state: &mut State, e: String) {
    eprintln!("metron: GPU counters off: {e}");
    state.info.error = Some(e);
    ACTIVE.store(false, Ordering::Release);
    c_api::set_c_hooks(false);
}

/// This launch's kernels read NaN with `reason` (counted; said once per distinct reason).
fn launch_nan(state: &mut State, correlation: u32, reason: String) {
    NAN_LAUNCHES.fetch_add(1, Ordering::Relaxed);
    let n = state.info.launch_errors.entry(reason.clone()).or_insert(0);
    if *n == 0 {
        eprintln!("metron: GPU counters: a launch reads NaN: {reason}");
    }
    *n += 1;
    metron::sinks::kernels_csv::record_kernel_nan(correlation, reason);
}

/// Sets the profiler up on `ctx` (its first launch or region): passes said on stderr once.
fn set_up(state: &mut State, ctx: *mut c_void) -> Result<(), String> {
    let (cupti, p) = CUPTI
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .ok_or("CUPTI not loaded")?;
    if ctx.is_null() {
        return Err("the launch has no current CUDA context".into());
    }
    if !state.initialized {
        p.initialize(&cupti)?;
        state.initialized = true;
    }
    let device = crate::LOADED
        .get()
        .and_then(|l| l.driver.current_device())
        .unwrap_or(0);
    let chip = p.chip_name(&cupti, device.max(0) as usize)?;
    let availability = p.counter_availability(&cupti, ctx)?;
    // Kept in the session as long as the host object (see `Profiler::host_init`).
    let chip_c = CString::new(chip.as_str()).map_err(|_| "chip name with NUL".to_string())?;
    let host = p.host_init(&cupti, &chip_c, &availability)?;
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
    if state.info.chip.is_none() {
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
    }
    state.info.chip = Some(chip);
    state.info.passes = Some(passes);
    state.info.mode = Some(mode);
    state.info.note = note;
    state.info.config_bytes = config.len();
    let object = p.enable_on(&cupti, ctx)?;
    let ranges = match mode {
        Mode::Region => region_ranges(),
        Mode::Kernel => MAX_RANGES,
    };
    let size = p.counter_data_size(&cupti, object, &names, ranges)?;
    let mut image = vec![0u8; size];
    p.counter_data_init(&cupti, object, &mut image)?;
    let (range, replay) = range_and_replay(mode, passes);
    p.set_config_on(&cupti, object, &config, &mut image, range, replay, ranges)?;
    state.info.counter_data_bytes = size;
    state.info.devices.push(device);
    state.sessions.insert(
        ctx as usize,
        Session {
            profiler: p,
            host,
            _host_inputs: (chip_c, availability),
            object,
            names,
            config,
            image,
            evaluated: 0,
            mode,
            passes,
            user_ranges: mode == Mode::Kernel && launch_range::per_launch_user_ranges(passes),
            gate: Arc::new(Gate::default()),
            batch: batch::Batch::new(ranges, passes),
            range_names: match mode {
                Mode::Region => (0..ranges)
                    .map(|i| CString::new(i.to_string()).expect("digits"))
                    .collect(),
                Mode::Kernel => Vec::new(),
            },
        },
    );
    if mode == Mode::Region {
        close_at_exit();
    }
    if mode == Mode::Kernel && launch_range::per_launch_user_ranges(passes) {
        launch_range::serialized_kernel_records(&cupti);
    }
    SET_UP.store(true, Ordering::Release);
    Ok(())
}

/// The session of `ctx`, set up on first use. `Err((reason, permanent))`.
fn session_of(state: &mut State, ctx: *mut c_void) -> Result<&mut Session, (String, bool)> {
    if !state.sessions.contains_key(&(ctx as usize)) {
        if ctx.is_null() {
            return Err(("the launch has no current CUDA context".into(), false));
        }
        set_up(state, ctx).map_err(|e| (e, true))?;
    }
    state
        .sessions
        .get_mut(&(ctx as usize))
        .ok_or_else(|| ("no profiler session".to_string(), false))
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
        "devices": i.devices,
        "kernels_profiled": PROFILED.load(Ordering::Relaxed),
        "launches_nan": NAN_LAUNCHES.load(Ordering::Relaxed),
        "launch_nan_reasons": i.launch_errors,
        "graph_launches_profiled": launch_range::GRAPHS_COUNTED.load(Ordering::Relaxed),
        "launch_range_steps_ns": launch_range::steps_json(),
        "kernel_mode_ranges": match (i.mode, i.passes) {
            (Some(Mode::Kernel), Some(p)) if launch_range::per_launch_user_ranges(p) => Some("one user range per launch (user replay, single pass): a kernel launch counts its kernel, a graph launch the sum over its nodes"),
            (Some(Mode::Kernel), Some(_)) => Some("auto range with kernel replay: one range per kernel; graph launches read NaN"),
            _ => None,
        },
        "launches_serialized": {
            "waited": GATE_WAITS.load(Ordering::Relaxed),
            "wait_ns": GATE_WAIT_NS.load(Ordering::Relaxed),
            "rule": "kernel mode: one profiled launch (Start..launch..Stop) at a time per CUDA context; a launch on another thread waits at its enter callback",
        },
        "regions_overlapped": REGIONS_OVERLAPPED.load(Ordering::Relaxed),
        "ranges_dropped": RANGES_DROPPED.load(Ordering::Relaxed),
        "kernels_with_host_time": HOST_TIME.load(Ordering::Relaxed),
        "regions_counted": REGIONS_COUNTED.load(Ordering::Relaxed),
        "regions_refused": REGIONS_REFUSED.load(Ordering::Relaxed),
        "regions_nested": REGIONS_NESTED.load(Ordering::Relaxed),
        "region_steps": region_steps_json(),
        "region_images_evaluated": evaluate::IMAGES_EVALUATED.load(Ordering::Relaxed),
        "region_evaluate_ns": evaluate::EVALUATE_NS.load(Ordering::Relaxed),
        "region_ranges_per_image": (i.mode == Some(Mode::Region)).then(region_ranges),
        "region_batching": match (i.mode, i.passes) {
            (Some(Mode::Region), Some(1)) => Some("one Start, a PushRange/PopRange per region instance; Stop, DecodeData and a fresh image when the image is full and at the end; ranges evaluated on metron-gpu-eval; values joined to their instances by range number (gpu.counters_range)".to_string()),
            (Some(Mode::Region), Some(n)) => Some(format!("{n} passes across instances: pass k from the k-th instance of one region name (Start..Stop each), decoded after the {n}th; values combined over the {n} instances")),
            _ => None,
        },
        "region_reason": region_reason(),
        "region_first_values": *REGION_SAMPLES.lock().unwrap_or_else(|e| e.into_inner()),
        "region_kernel_activity": match region_kernels() {
            RegionKernels::Edges => "edges: kernel activity off around Start/PushRange and PopRange/Stop only, on while the region runs: kernels of counted regions are in kernels.csv and the trace",
            RegionKernels::On => "on throughout (METRON_GPU_REGION_KERNELS=on): CUPTI's internal WaitNs kernel is counted in each range's values (filtered from kernels.csv by name)",
            RegionKernels::Off => "off while a user range is open (METRON_GPU_REGION_KERNELS=off): kernels of counted regions are not in kernels.csv or the trace",
            RegionKernels::Events => "events (the default): CUPTI's kernel activity is off while a user range is open; the range's kernels are recorded from their launch callbacks, device spans from CUDA events on the launch's stream (see region_kernels)",
            RegionKernels::Serial => "serial (a probe): CONCURRENT_KERNEL off and the serialized KERNEL kind on while a user range is open",
        },
        "region_kernels": crate::region_kernels::metadata(),
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

    /// The per-context gate: launches of several threads, each holding it from "enter" to
    /// "exit" (different calls, as in the callbacks), never overlap, and all get through.
    #[test]
    fn the_gate_serializes_launches_of_several_threads() {
        use std::sync::atomic::AtomicUsize;
        let gate = Arc::new(Gate::default());
        let inside = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (gate, inside, done) = (gate.clone(), inside.clone(), done.clone());
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        gate.acquire();
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
                        std::thread::yield_now();
                        assert_eq!(inside.fetch_sub(1, Ordering::SeqCst), 1);
                        gate.release();
                        done.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(done.load(Ordering::SeqCst), 800);
        assert!(!gate.acquire(), "free again after the last release");
    }

    #[test]
    fn mode_defaults_to_kernel() {
        assert_eq!(parse_mode(None), Mode::Kernel);
        assert_eq!(parse_mode(Some("kernel")), Mode::Kernel);
        assert_eq!(parse_mode(Some(" Region ")), Mode::Region);
        assert_eq!(parse_mode(Some("bogus")), Mode::Kernel);
    }

    #[test]
    fn region_mode_collects_several_passes_across_instances() {
        assert_eq!(decide(Mode::Kernel, 10), (Mode::Kernel, None));
        let (m, note) = decide(Mode::Region, 10);
        assert_eq!(m, Mode::Region);
        assert!(note.unwrap().contains("k-th instance"));
        assert_eq!(decide(Mode::Region, 1), (Mode::Region, None));
        assert_eq!(range_and_replay(Mode::Region, 1), (USER_RANGE, USER_REPLAY));
        assert_eq!(range_and_replay(Mode::Kernel, 1), (USER_RANGE, USER_REPLAY));
        assert_eq!(
            range_and_replay(Mode::Kernel, 2),
            (AUTO_RANGE, KERNEL_REPLAY)
        );
    }
}
