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
//!   a fresh counter-data image) bracket one region instance on the calling thread's current
//!   context, called by the `GpuCounters` component and the C API's regions
//!   (`component.rs`). One range per context at a time: a nested region on the same thread,
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
//! - **CUDA graphs** (kernel mode): `Start`/`Stop` around `cudaGraphLaunch` decodes no range and
//!   loses the graph's activity records (H100, CUDA 13.0), so graph launches are not bracketed:
//!   their kernels are traced, joined to the launching region, and read NaN with that reason.
//!   Region mode counts graph work like any other. Launches while a stream capture is in
//!   progress are not profiled either (a profiler call would invalidate a global capture).
//! - **Several GPUs**: one session (config, image, gate) per context, the chip of the context's
//!   device. Only one GPU was available to run it.
//! - **Timestamps.** Under kernel replay CUPTI writes kernel activity records with
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

/// Ranges the counter-data image holds (a graph launch needs one per kernel node).
const MAX_RANGES: usize = 128;
/// The image is initialized again once fewer than this many ranges are free.
const RANGES_FREE: usize = 64;

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
    /// The CUDA device of the context.
    device: i32,
    /// Held from a launch's enter to its exit (kernel mode): one profiled launch at a time
    /// on this context, whichever thread launches.
    gate: Arc<Gate>,
    /// The user range open on this context (region mode).
    open: Option<OpenRange>,
}

/// A region's user range, open on a context.
struct OpenRange {
    /// The thread that opened it.
    owner: u32,
    /// Another thread that launched work on the context while it was open (its values would
    /// include that work).
    foreign: Option<u32>,
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
    spec: Spec,
}

/// correlation id → host span of the launch (enter, exit). A lock of its own: CUPTI's
/// completion callback reads it and must never wait on the profiler's lock.
static LAUNCHES: Mutex<Option<HashMap<u32, (u64, u64)>>> = Mutex::new(None);

static ACTIVE: AtomicBool = AtomicBool::new(false);
static SET_UP: AtomicBool = AtomicBool::new(false);
static PROFILED: AtomicU64 = AtomicU64::new(0);
static NAN_LAUNCHES: AtomicU64 = AtomicU64::new(0);
static GRAPH_LAUNCHES: AtomicU64 = AtomicU64::new(0);
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
    static HELD: std::cell::RefCell<Option<Box<HeldGate>>> =
        const { std::cell::RefCell::new(None) };
}

/// A launch's context and the gate its thread holds.
type HeldGate = (usize, Arc<Gate>);

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
            crate::component::set_c_hooks(requested == Mode::Region);
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
        sessions: HashMap::new(),
        initialized: false,
        spec,
    });
}

/// Counters off for the rest of the run: only for what no later launch can fix (the
/// profiler cannot be set up: unknown metric, unsupported device).
fn fail(state: &mut State, e: String) {
    eprintln!("metron: GPU counters off: {e}");
    state.info.error = Some(e);
    ACTIVE.store(false, Ordering::Release);
    crate::component::set_c_hooks(false);
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
    let size = p.counter_data_size(&cupti, object, &names, MAX_RANGES)?;
    let mut image = vec![0u8; size];
    p.counter_data_init(&cupti, object, &mut image)?;
    let (range, replay) = range_and_replay(mode);
    p.set_config_on(
        &cupti, object, &config, &mut image, range, replay, MAX_RANGES,
    )?;
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
            device,
            gate: Arc::new(Gate::default()),
            open: None,
        },
    );
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

/// A context was created (its creating call's resource callback, application thread): the
/// profiler is set up there rather than inside the context's first launch or region, so the
/// program's first kernel does not carry it. An error leaves the set-up to the first launch,
/// which reports it.
pub fn on_context_created(ctx: *mut c_void) {
    if ctx.is_null() || !ACTIVE.load(Ordering::Acquire) {
        return;
    }
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(state) = guard.as_mut() else { return };
    if !state.sessions.contains_key(&(ctx as usize)) {
        let _ = set_up(state, ctx);
    }
}

/// The correlation id of Metron's warm-up launch (no CUPTI record carries it).
const WARM_UP_CORRELATION: u32 = u32::MAX;

/// Runs Metron's warm-up `launch` at context creation inside what the program's own first
/// kernel or region would go through (a profiled launch in kernel mode, a counted range in
/// region mode), so that CUPTI's lazy work for the first range happens here. Its range is
/// Metron's own: the counts it adds are taken back.
pub fn warm_up(ctx: *mut c_void, launch: &dyn Fn() -> Result<(), String>) -> Result<(), String> {
    if !ACTIVE.load(Ordering::Acquire) {
        return launch();
    }
    let region = STATE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .is_some_and(|s| s.info.requested == Some(Mode::Region));
    let counts = (
        PROFILED.load(Ordering::Relaxed),
        NAN_LAUNCHES.load(Ordering::Relaxed),
        REGIONS_COUNTED.load(Ordering::Relaxed),
        REGION_SAMPLES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len(),
    );
    let result = if region {
        let open = region_begin().is_ok();
        let r = launch();
        if open {
            let _ = region_end();
        }
        r
    } else {
        before_launch(ctx, WARM_UP_CORRELATION, 0, false);
        let r = launch();
        after_launch(WARM_UP_CORRELATION, 0);
        r
    };
    PROFILED.store(counts.0, Ordering::Relaxed);
    NAN_LAUNCHES.store(counts.1, Ordering::Relaxed);
    REGIONS_COUNTED.store(counts.2, Ordering::Relaxed);
    REGION_SAMPLES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .truncate(counts.3);
    if let Some(l) = LAUNCHES.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        l.remove(&WARM_UP_CORRELATION);
    }
    result
}

/// Launch enter (outermost kernel or graph launch call, application thread).
///
/// Kernel mode: takes the context's gate (a launch profiled on another thread finishes
/// first: CUPTI's auto range with kernel replay allows one Start..Stop per context at a time),
/// then `Start`. Region mode: marks an open range of another thread as mixed.
pub fn before_launch(ctx: *mut c_void, correlation: u32, now: u64, graph: bool) {
    let gate = {
        let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
        let Some(state) = guard.as_mut() else { return };
        if !ACTIVE.load(Ordering::Acquire) {
            return;
        }
        if crate::capturing() {
            // A launch into a capturing stream runs nothing; any other launch meanwhile is not
            // profiled (Start/Stop would invalidate a global-mode capture).
            launch_nan(
                state,
                correlation,
                "launched while a CUDA stream capture was in progress in the process (profiling \
                 it would invalidate the capture)"
                    .into(),
            );
            return;
        }
        match session_of(state, ctx) {
            Ok(s) if s.mode == Mode::Region => {
                let me = crate::tid();
                if let Some(open) = s.open.as_mut() {
                    if open.owner != me && open.foreign.is_none() {
                        open.foreign = Some(me);
                    }
                }
                return;
            }
            Ok(_) if graph => {
                // Seen on the H100 (CUDA 13.0): Start/Stop around cudaGraphLaunch decodes no
                // range and the graph's kernel, copy and set records are lost. Graph launches
                // are not bracketed; their kernels are traced and read NaN with this reason.
                launch_nan(
                    state,
                    correlation,
                    "CUDA graph launch: CUPTI's auto range with kernel replay decodes no range \
                     for graph nodes (and loses their activity records), so graph kernels are \
                     traced but not counted"
                        .into(),
                );
                return;
            }
            Ok(s) => s.gate.clone(),
            Err((e, permanent)) => {
                if permanent {
                    fail(state, e);
                } else {
                    launch_nan(state, correlation, e);
                }
                return;
            }
        }
    };
    let t0 = crate::timestamp();
    if gate.acquire() {
        GATE_WAITS.fetch_add(1, Ordering::Relaxed);
        GATE_WAIT_NS.fetch_add(crate::timestamp().saturating_sub(t0), Ordering::Relaxed);
    }
    let started = {
        let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
        let Some(state) = guard.as_mut() else {
            gate.release();
            return;
        };
        let cupti = CUPTI.lock().unwrap_or_else(|e| e.into_inner()).map(|c| c.0);
        match (cupti, state.sessions.get_mut(&(ctx as usize))) {
            (Some(cupti), Some(s)) => match s.profiler.start_on(&cupti, s.object) {
                Ok(()) => true,
                Err(e) => {
                    launch_nan(state, correlation, e);
                    false
                }
            },
            _ => false,
        }
    };
    if !started {
        gate.release();
        return;
    }
    let _ = HELD.try_with(|h| *h.borrow_mut() = Some(Box::new((ctx as usize, gate))));
    LAUNCHES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(correlation, (now, now));
}

/// What one profiled launch decoded: one range per kernel it ran, `(range name, values)`.
type Ranges = Vec<(String, Vec<f64>)>;

/// Launch exit: `Stop`, `DecodeData`, the values of the launch's ranges (one per kernel:
/// a graph launch gives one per kernel node), then the gate is released.
pub fn after_launch(correlation: u32, now: u64) {
    let Some((ctx, gate)) = HELD
        .try_with(|h| h.borrow_mut().take())
        .ok()
        .flatten()
        .map(|held| *held)
    else {
        return;
    };
    if let Some(span) = LAUNCHES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_mut()
        .and_then(|l| l.get_mut(&correlation))
    {
        span.1 = now;
    }
    {
        let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(state) = guard.as_mut() {
            let cupti = CUPTI.lock().unwrap_or_else(|e| e.into_inner()).map(|c| c.0);
            let result = match (cupti, state.sessions.get_mut(&ctx)) {
                (Some(cupti), Some(s)) => stop_and_read(&cupti, s),
                _ => Err("the profiler session is gone".into()),
            };
            match result {
                Ok(ranges) if ranges.is_empty() => launch_nan(
                    state,
                    correlation,
                    "CUPTI decoded no range for this launch (no kernel ran, or the range was \
                     dropped)"
                        .into(),
                ),
                Ok(mut ranges) => {
                    PROFILED.fetch_add(ranges.len() as u64, Ordering::Relaxed);
                    for (_, values) in ranges.iter_mut() {
                        let derived = state.spec.derive(values);
                        values.extend(derived);
                    }
                    if ranges.len() == 1 {
                        let (_, values) = ranges.pop().expect("one range");
                        metron::sinks::kernels_csv::record_kernel_counters(correlation, values);
                    } else {
                        GRAPH_LAUNCHES.fetch_add(1, Ordering::Relaxed);
                        metron::sinks::kernels_csv::record_launch_ranges(correlation, ranges);
                    }
                }
                Err(e) => launch_nan(state, correlation, e),
            }
        }
    }
    gate.release();
}

/// `Stop`, `DecodeData`, and the new ranges of `s`'s image; on an error the session is reset
/// (a fresh image and config) so the next launch starts clean.
fn stop_and_read(cupti: &Cupti, s: &mut Session) -> Result<Ranges, String> {
    let p = s.profiler;
    let read = (|| -> Result<Ranges, String> {
        p.stop_on(cupti, s.object)?;
        let dropped = p.decode_on(cupti, s.object)?;
        RANGES_DROPPED.fetch_add(dropped as u64, Ordering::Relaxed);
        let n = p.ranges_in(cupti, &s.image)?;
        let mut ranges = Vec::new();
        for i in s.evaluated..n {
            let name = p.range_name(cupti, &s.image, i).unwrap_or_default();
            ranges.push((name, p.evaluate(cupti, s.host, &s.image, i, &s.names)?));
        }
        s.evaluated = n;
        if dropped > 0 {
            return Err(format!(
                "{dropped} range(s) of this launch were dropped (more kernels than the \
                 counter-data image holds: {MAX_RANGES})"
            ));
        }
        Ok(ranges)
    })();
    if read.is_err() || s.evaluated + RANGES_FREE >= MAX_RANGES {
        if read.is_err() {
            let _ = p.stop_on(cupti, s.object);
        }
        p.counter_data_init(cupti, s.object, &mut s.image)?;
        p.set_config_on(
            cupti,
            s.object,
            &s.config,
            &mut s.image,
            AUTO_RANGE,
            KERNEL_REPLAY,
            MAX_RANGES,
        )?;
        s.evaluated = 0;
    }
    read
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

static REGIONS_COUNTED: AtomicU64 = AtomicU64::new(0);
static REGIONS_REFUSED: AtomicU64 = AtomicU64::new(0);
static REGIONS_NESTED: AtomicU64 = AtomicU64::new(0);
static REGIONS_OVERLAPPED: AtomicU64 = AtomicU64::new(0);
/// The values of the first [`SAMPLES`] counted regions, in order (for `metadata.json`: a
/// check that needs no trace reader).
static REGION_SAMPLES: Mutex<Vec<Vec<f64>>> = Mutex::new(Vec::new());
const SAMPLES: usize = 32;
/// Why the last region read NaN (first reason said on stderr too).
static REGION_REASON: Mutex<Option<String>> = Mutex::new(None);

thread_local! {
    /// The context whose user range this thread opened (region mode).
    static REGION_CTX: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

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

/// How kernel activity is handled around a user range (`METRON_GPU_REGION_KERNELS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RegionKernels {
    /// On throughout (CUPTI's `WaitNs` kernel is then counted in each range).
    On,
    /// Off while the range is open (its kernels are not traced).
    Off,
    /// Off only around `Start`/`PushRange` and `PopRange`/`Stop`, on in between (measured on
    /// the H100: CUPTI still counts its `WaitNs` kernel, as with `On`).
    Edges,
    /// Off while the range is open; the range's launches are recorded from their callbacks
    /// with CUDA events for the device span (`region_kernels.rs`). The default.
    Events,
    /// CONCURRENT_KERNEL off and the serialized KERNEL kind on while the range is open (a
    /// probe: does the serialized kind avoid `WaitNs`?).
    Serial,
}

pub(crate) fn region_kernels() -> RegionKernels {
    match std::env::var("METRON_GPU_REGION_KERNELS")
        .ok()
        .as_deref()
        .map(str::trim)
    {
        Some("edges") => RegionKernels::Edges,
        Some("serial") => RegionKernels::Serial,
        Some("events") | None | Some("") => RegionKernels::Events,
        Some(v) if metron::settings::parse_bool(v) == Some(true) => RegionKernels::On,
        _ => RegionKernels::Off,
    }
}

/// Counted ranges that turned kernel activity off (it is back on when the last one closes).
static KERNELS_OFF: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn kernel_activity(cupti: &Cupti, on: bool) {
    let serial = region_kernels() == RegionKernels::Serial;
    if on {
        let was = KERNELS_OFF
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(n.saturating_sub(1))
            })
            .unwrap_or(0);
        if was == 1 {
            crate::region_kernels::set_untraced(false);
            if serial {
                let _ = crate::sys::disable(cupti, crate::sys::kind::KERNEL);
            }
            let _ = crate::sys::enable(cupti, crate::sys::kind::CONCURRENT_KERNEL);
        }
    } else if KERNELS_OFF.fetch_add(1, Ordering::AcqRel) == 0 {
        let _ = crate::sys::disable(cupti, crate::sys::kind::CONCURRENT_KERNEL);
        if serial {
            let _ = crate::sys::enable(cupti, crate::sys::kind::KERNEL);
        }
        crate::region_kernels::set_untraced(true);
    }
}

/// Opens a user range for a region on the calling thread's current context: sets the
/// profiler up there if no launch did yet, `Start`, `PushRange`. `Err(reason)`: the region
/// reads NaN (counters off, kernel mode, several passes, a region already open on this
/// context, on this thread or another, or a CUPTI error).
pub fn region_begin() -> Result<(), String> {
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(state) = guard.as_mut() else {
        return Err(
            "GPU counters are off: no METRON_GPU_METRICS, or the GPU backend was not started \
             (run under `metron run` or call metron_gpu_nvidia::start())"
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
    if REGION_CTX.with(|c| c.get()) != 0 {
        REGIONS_NESTED.fetch_add(1, Ordering::Relaxed);
        return Err(
            "another GPU-counted region is open on this thread (one level of user ranges: the \
             outer region counts this one's kernels)"
                .into(),
        );
    }
    let ctx = crate::LOADED
        .get()
        .and_then(|l| l.driver.current_context())
        .unwrap_or(std::ptr::null_mut());
    if ctx.is_null() {
        return Err(
            "no current CUDA context on this thread yet (the region began before the thread's \
             first CUDA call)"
                .into(),
        );
    }
    let me = crate::tid();
    let s = match session_of(state, ctx) {
        Ok(s) => s,
        Err((e, permanent)) => {
            if permanent {
                fail(state, e.clone());
            }
            return Err(e);
        }
    };
    if s.mode != Mode::Region {
        let note = state.info.note.clone().unwrap_or_default();
        return Err(note);
    }
    if let Some(open) = &s.open {
        REGIONS_OVERLAPPED.fetch_add(1, Ordering::Relaxed);
        let owner = open.owner;
        if let Some(open) = s.open.as_mut() {
            // The open range would count this region's kernels too.
            open.foreign.get_or_insert(me);
        }
        return Err(format!(
            "a region of thread {owner} is counted on this GPU (device {}) at the same time: \
             the GPU's counters cannot tell overlapping regions apart (both read NaN; kernel \
             mode gives per-kernel values summed per region)",
            s.device
        ));
    }
    let Some((cupti, _)) = *CUPTI.lock().unwrap_or_else(|e| e.into_inner()) else {
        return Err("CUPTI not loaded".into());
    };
    if crate::capturing() {
        return Err(
            "a CUDA stream capture is in progress in the process (a user range would \
             invalidate it)"
                .into(),
        );
    }
    let rk = region_kernels();
    if rk == RegionKernels::Events {
        // Before the range opens: the anchor's wait is not counted.
        crate::region_kernels::anchor(ctx);
    }
    if rk != RegionKernels::On {
        kernel_activity(&cupti, false);
    }
    let opened = s
        .profiler
        .start_on(&cupti, s.object)
        .and_then(|_| s.profiler.push_on(&cupti, s.object, USER_RANGE_NAME));
    if rk == RegionKernels::Edges || opened.is_err() {
        kernel_activity(&cupti, true);
    }
    if let Err(e) = opened {
        let _ = s.profiler.stop_on(&cupti, s.object);
        return Err(e);
    }
    s.open = Some(OpenRange {
        owner: me,
        foreign: None,
    });
    REGION_CTX.with(|c| c.set(ctx as usize));
    Ok(())
}

/// Closes the range [`region_begin`] opened on this thread: `PopRange`, `Stop`,
/// `DecodeData`, evaluation of the range. The values: hardware metrics then derived ones;
/// NaN (`Err`) when another thread launched work on the context while it was open.
pub fn region_end() -> Result<Vec<f64>, String> {
    let ctx = REGION_CTX.with(|c| c.replace(0));
    if ctx == 0 {
        return Err("no GPU-counted region is open on this thread".into());
    }
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(state) = guard.as_mut() else {
        return Err("GPU counters are off".into());
    };
    let Some((cupti, _)) = *CUPTI.lock().unwrap_or_else(|e| e.into_inner()) else {
        return Err("CUPTI not loaded".into());
    };
    let Some(s) = state.sessions.get_mut(&ctx) else {
        return Err("the profiler is not set up".into());
    };
    let open = s.open.take();
    let rk = region_kernels();
    if rk == RegionKernels::Edges {
        kernel_activity(&cupti, false);
    }
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
            &s.config,
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
    if rk != RegionKernels::On {
        kernel_activity(&cupti, true);
    }
    let device = s.device;
    let result = match (result, open.and_then(|o| o.foreign)) {
        (Ok(_), Some(other)) => {
            REGIONS_OVERLAPPED.fetch_add(1, Ordering::Relaxed);
            Err(format!(
                "thread {other} launched GPU work on this GPU (device {device}) while this \
                 region was counted: its values would include that work (kernel mode gives \
                 per-kernel values summed per region)"
            ))
        }
        (r, _) => r,
    };
    let out = match result {
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
        Err(e) => Err(e),
    };
    // The range's kernels (recorded from launch callbacks) go to the sinks outside the
    // profiler's lock (delivery takes the pipeline's).
    drop(guard);
    crate::region_kernels::resolve(false);
    out
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
        "graph_launches_profiled": GRAPH_LAUNCHES.load(Ordering::Relaxed),
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
