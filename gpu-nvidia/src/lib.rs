//! Metron's NVIDIA GPU backend: CUPTI activity tracing of kernels, copies, sets and CUDA API
//! calls, on Metron's clock, handed to Metron's sinks (Perfetto trace, `kernels.csv`,
//! summary) through [`metron::gpu`].
//!
//! - **Loading** ([`probe`], [`start`]): nothing is linked. The driver is `libcuda.so.1`;
//!   CUPTI is the copy the application already loaded (`dlopen("libcupti.so.13",
//!   RTLD_NOLOAD)`, e.g. PyTorch's), else the soname, else the known install paths
//!   ([`CUPTI_PATHS`] and `<venv>/lib/python3*/site-packages/nvidia/cu13/lib`). When anything is
//!   missing the backend is off and says why ([`Status::reason`], `metron avail`,
//!   `metadata.json` key `gpu`, `metadata.rs`); nothing panics. See `loading.rs`.
//! - **API calls** (`METRON_GPU_API`, default `runtime`): recorded from the one Callback API
//!   subscriber's enter/exit (`callbacks.rs`, the hub) into Metron's per-thread buffers
//!   (`api_log.rs`), not from CUPTI's RUNTIME/DRIVER activity kinds (`activity` keeps the old
//!   way).
//! - **Records**: CONCURRENT_KERNEL, MEMCPY, MEMSET (graph id and node id too), timestamps on
//!   `CLOCK_MONOTONIC` through
//!   `cuptiActivityRegisterTimestampCallback`. Buffers come from a pool preallocated at start
//!   (8 × `METRON_GPU_ACTIVITY_BUFFER`); completed buffers are decoded on CUPTI's own
//!   completion thread and handed to [`metron::gpu::submit`], never on an application thread.
//!   CUPTI's dropped-record count is read for each completed buffer. See `records.rs` (and
//!   `sys_activity.rs`, the layouts); theoretical occupancy in `occupancy.rs`.
//! - **Kernel ↔ region**: at each kernel or graph launch (runtime and driver) the subscriber
//!   records the annotation [`metron::gpu::LAUNCH_KEY`] with the correlation id on the
//!   launching thread; the flusher resolves it to the innermost open region. A graph launch's
//!   kernels, copies and sets share its correlation id, so they all join its region.
//! - **Counters** (`METRON_GPU_METRICS`, `METRON_GPU_COUNTER_MODE`): the CUPTI Range Profiler.
//!   Kernel mode: one range per kernel with kernel replay, bracketed by the same launch
//!   callbacks; values go to `kernels.csv` by correlation id. Region mode: [`GpuCounters`]
//!   (a `metron::Component`) and the C API's regions open a user range (user replay, single
//!   pass) per region instance. See `range_profiler/` (`kernel.rs`, `region.rs`) and
//!   `sys_profiler*.rs` (the parameter structs and calls).
//! - **PC sampling** (`METRON_GPU_PC_SAMPLING`, `METRON_GPU_PC_SAMPLING_MODE`): CUPTI's PC
//!   Sampling API with stall reasons, enabled per context from the resource callbacks of the
//!   same subscriber, joined to kernel, launching region and source line at the end of the
//!   run. See `pc_sampling/` (logic) and `sys_pcsampling.rs` (the structs and calls).
//! - **Metrics over time** (`METRON_GPU_PM_SAMPLING`): CUPTI's PM Sampling API, see
//!   `pm_sampling/` and `sys_pmsampling.rs`.
//! - **Outputs** are written by the sinks (`metron::sinks`: `gpu_join`, `kernels_csv`,
//!   `gpu_summary`, `gpu_pc_samples`, `gpu_pm_sampling`, the trace); this crate collects and
//!   attributes.

mod api_log;
mod callbacks;
mod component;
mod loading;
mod metadata;
mod metric_list;
mod occupancy;
pub mod pc_sampling;
mod per_thread;
pub mod pm_sampling;
mod range_profiler;
mod records;
mod region_kernels;
mod sys;
mod sys_activity;
mod sys_pcsampling;
mod sys_pmsampling;
// A few declared items (deinitialize, disable) are for the layout checks only.
#[allow(dead_code)]
mod sys_profiler;
mod sys_profiler_host;
mod sys_profiler_layouts;
mod sys_profiler_params;
mod sys_profiler_range;

pub use callbacks::ApiMode;
use callbacks::*;
#[doc(hidden)]
pub use callbacks::{bench_drain_calls, bench_traced_call};
use loading::{devices, load_cupti, load_driver, Loaded, LOADED, STATUS};
pub use loading::{probe, status, Status, CUPTI_PATHS};
pub use metadata::metadata;
pub use metric_list::{metrics, register_info, GpuMetric};
pub use occupancy::{block_limits, occupancy, BlockLimits, Limits};
use occupancy::{limits_json, limits_of};
use records::*;

pub use component::{region_reason, GpuCounters, MAX_GPU_FIELDS};
pub use pc_sampling::{stall_reasons, GpuPcSampling};
pub use range_profiler::{c_region_begin, c_region_end, c_region_mode};

/// The PC Sampling API layouts Metron reads and writes: `("CStruct.field", offset)`,
/// `("sizeof CStruct", size)` and `("PARAMS_SIZE CStruct", CStructSize)`, for checking against
/// `cupti_pcsampling.h` and `cupti_callbacks.h`.
pub fn pcsampling_layouts() -> Vec<(&'static str, usize)> {
    sys_pcsampling::layouts()
}

/// The PM Sampling API layouts Metron writes (`("STRUCT_SIZE CStruct", size)`, ...), for
/// checking against `cupti_pmsampling.h`.
pub fn pmsampling_layouts() -> Vec<(&'static str, usize)> {
    sys_pmsampling::layouts()
}

/// `METRON_GPU_COUNTER_MODE` as the backend reads it: `"kernel"` or `"region"`.
pub fn parse_gpu_counter_mode(raw: Option<&str>) -> &'static str {
    range_profiler::parse_mode(raw).as_str()
}

/// The mode that runs for the `requested` one (`"kernel"`/`"region"`) and a metric set of
/// `passes` passes, and why it differs (region mode is single-pass only).
pub fn decide_gpu_counter_mode(requested: &str, passes: usize) -> (&'static str, Option<String>) {
    let (m, note) = range_profiler::decide(range_profiler::parse_mode(Some(requested)), passes);
    (m.as_str(), note)
}

use metron::gpu::{GpuDevice, GpuKind, GpuRecord};
use metron::settings::env_bool;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The record layouts Metron reads: `("CStruct.field", offset)` and `("sizeof CStruct", size)`,
/// for checking against `cupti.h`.
pub fn record_layouts() -> Vec<(&'static str, usize)> {
    sys::layouts()
}

/// The Range Profiler parameter-struct layouts Metron writes: `("CStruct.field", offset)`,
/// `("sizeof CStruct", size)` and `("STRUCT_SIZE CStruct", CStruct_STRUCT_SIZE)`, for checking
/// against `cupti_range_profiler.h`, `cupti_profiler_host.h`, `cupti_profiler_target.h` and
/// `cupti_target.h`.
pub fn profiler_layouts() -> Vec<(&'static str, usize)> {
    sys_profiler_layouts::layouts()
}

/// `METRON_GPU_METRICS` as the backend reads it (split, trimmed, deduplicated).
pub fn parse_gpu_metrics(raw: &str) -> Vec<String> {
    range_profiler::parse_metrics(raw)
}

static STARTED: AtomicBool = AtomicBool::new(false);
static LAUNCH_KEY_ID: AtomicU32 = AtomicU32::new(0);
static CUPTI_DROPPED: AtomicU64 = AtomicU64::new(0);
static BUFFERS_ALLOCATED: AtomicU64 = AtomicU64::new(0);
static BUFFERS_REFUSED: AtomicU64 = AtomicU64::new(0);
static BUFFER_BYTES: AtomicU64 = AtomicU64::new(4 << 20);
/// Records decoded: kernels, copies, sets, runtime calls, driver calls, synchronizations,
/// event records, event records left out for want of a device time.
static COUNTS: [AtomicU64; 8] = [
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
];
/// What the dependency records (`METRON_GPU_SYNC`) got: on, and why not or what is missing.
static DEPENDENCIES: Mutex<(bool, Option<String>)> = Mutex::new((false, None));
/// Free activity buffers (addresses).
static POOL: Mutex<Vec<usize>> = Mutex::new(Vec::new());
/// Buffers preallocated at start.
const POOL_BUFFERS: usize = 8;
/// At most this many buffers in all; past it CUPTI gets none and drops (counted).
const MAX_BUFFERS: u64 = 64;

/// `METRON_GPU_ACTIVITY_BUFFER` (at least 64 KiB).
fn env_size(name: &str, default: u64) -> u64 {
    let n = metron::settings::env_size(name, default as usize) as u64;
    if n >= 64 << 10 {
        n
    } else {
        default
    }
}

/// Starts tracing (idempotent): loads the driver and CUPTI, enables the activity kinds and
/// the launch callbacks, registers with Metron. `Err(reason)` when it cannot; the reason is
/// also kept for `metadata.json`. Safe to call inside `InitializeInjection` (no `cuInit`).
///
/// In a copy of Metron that joined another copy's runtime (a Rust program using this crate
/// under `metron run`, whose preloaded `libmetron.so` traces the GPU), it starts nothing and
/// returns `Ok`: one CUPTI subscriber per process, the owner's (a second subscription fails
/// with `CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED` and can disturb the first).
pub fn start() -> Result<(), String> {
    if matches!(
        metron::process_runtime(),
        metron::ProcessRuntime::Joined { .. }
    ) {
        return Ok(());
    }
    if STARTED.swap(true, Ordering::AcqRel) {
        return match status() {
            Some(s) if s.enabled => Ok(()),
            Some(s) => Err(s.reason.unwrap_or_default()),
            None => Err("starting".into()),
        };
    }
    let result = start_inner();
    let status = match &result {
        Ok(s) => s.clone(),
        Err(s) => s.clone(),
    };
    *STATUS.lock().unwrap_or_else(|e| e.into_inner()) = Some(status.clone());
    // The metadata section says why the backend is off, too.
    metron::add_metadata_section("gpu", metadata);
    match result {
        Ok(_) => Ok(()),
        Err(s) => Err(s.reason.unwrap_or_default()),
    }
}

fn start_inner() -> Result<Status, Status> {
    if !env_bool("METRON_ENABLED", true) {
        return Err(Status::off("METRON_ENABLED is off".into()));
    }
    if !env_bool("METRON_GPU", true) {
        return Err(Status::off("METRON_GPU is off".into()));
    }
    let (driver, driver_path) = load_driver().map_err(Status::off)?;
    let mut status = Status {
        driver_path: Some(driver_path),
        driver_version: driver.version(),
        ..Status::default()
    };
    let (cupti, cupti_path, reused) = load_cupti().map_err(|e| Status {
        reason: Some(e),
        ..status.clone()
    })?;
    status.cupti_path = Some(cupti_path);
    status.cupti_reused = reused;
    status.cupti_version = cupti.version();
    if status.cupti_version.is_some_and(|v| v < 130000) {
        status.reason = Some(format!(
            "CUPTI API version {} is older than 13 (CUDA 13): its record layouts are not supported",
            status.cupti_version.unwrap_or(0)
        ));
        return Err(status);
    }
    let _ = LOADED.set(Loaded { driver, cupti });
    // Measured now, not inside the first launch's callback (it waits until 2 ms have passed
    // since Metron's start, which CUDA's own initialization has taken by now).
    let _ = metron::clock::calibration();
    let cupti = &LOADED.get().expect("set above").cupti;
    let bytes = env_size("METRON_GPU_ACTIVITY_BUFFER", 4 << 20);
    BUFFER_BYTES.store(bytes, Ordering::Relaxed);
    {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        for _ in 0..POOL_BUFFERS {
            pool.push(sys::alloc_buffer(bytes as usize) as usize);
        }
        BUFFERS_ALLOCATED.store(POOL_BUFFERS as u64, Ordering::Relaxed);
    }
    let fail = |status: &Status, e: String| Status {
        reason: Some(format!(
            "{e}{}",
            if e.contains("(999)") || e.contains("UNKNOWN") {
                ": no usable GPU or driver"
            } else {
                ""
            }
        )),
        ..status.clone()
    };
    let diag = std::env::var("METRON_GPU_DIAG").unwrap_or_default();
    let diag_has = |w: &str| diag.split(',').any(|d| d.trim() == w);
    DIAG_NO_ANNOTATE.store(diag_has("no_annotate"), Ordering::Relaxed);
    DIAG_API_EMPTY.store(diag_has("api_empty"), Ordering::Relaxed);
    WARM_UP.store(env_bool("METRON_GPU_WARM_UP", true), Ordering::Relaxed);
    sys::register(
        cupti,
        buffer_requested,
        buffer_completed,
        (!diag_has("no_ts")).then_some(timestamp as sys::TimestampFn),
        !diag_has("no_tid"),
    )
    .map_err(|e| fail(&status, e))?;
    let api = ApiMode::parse(std::env::var("METRON_GPU_API").ok().as_deref());
    API_MODE.store(api as u8, Ordering::Relaxed);
    let mut kinds = vec![sys::kind::CONCURRENT_KERNEL];
    if !diag_has("no_copy") {
        kinds.extend([sys::kind::MEMCPY, sys::kind::MEMSET]);
    }
    if api == ApiMode::Activity {
        kinds.push(sys::kind::RUNTIME);
        if !diag_has("rt_only") {
            kinds.push(sys::kind::DRIVER);
        }
    }
    for &k in &kinds {
        sys::enable(cupti, k).map_err(|e| fail(&status, e))?;
    }
    if env_bool("METRON_GPU_SYNC", true) {
        enable_dependencies(cupti, &diag_has);
    } else {
        *DEPENDENCIES.lock().unwrap_or_else(|e| e.into_inner()) =
            (false, Some("METRON_GPU_SYNC is off".into()));
    }
    LAUNCH_KEY_ID.store(
        metron::intern(metron::gpu::LAUNCH_KEY, metron::CallsiteKind::AnnotationKey),
        Ordering::Release,
    );
    api_log::preallocate();
    let mut domains = Vec::new();
    if api.runtime() {
        domains.push(sys::DOMAIN_RUNTIME);
    }
    if api.driver() {
        domains.push(sys::DOMAIN_DRIVER);
    }
    let mut ids: Vec<(i32, u32)> = Vec::new();
    for &c in sys::RUNTIME_LAUNCH_CBIDS
        .iter()
        .chain(sys::RUNTIME_GRAPH_LAUNCH_CBIDS)
    {
        ids.push((sys::DOMAIN_RUNTIME, c));
    }
    for &c in sys::DRIVER_LAUNCH_CBIDS
        .iter()
        .chain(sys::DRIVER_GRAPH_LAUNCH_CBIDS)
    {
        ids.push((sys::DOMAIN_DRIVER, c));
    }
    for &c in sys::RUNTIME_CAPTURE_BEGIN_CBIDS
        .iter()
        .chain(sys::RUNTIME_CAPTURE_END_CBIDS)
    {
        ids.push((sys::DOMAIN_RUNTIME, c));
    }
    for &c in sys::DRIVER_CAPTURE_BEGIN_CBIDS
        .iter()
        .chain(sys::DRIVER_CAPTURE_END_CBIDS)
    {
        ids.push((sys::DOMAIN_DRIVER, c));
    }
    // PC sampling (METRON_GPU_PC_SAMPLING): contexts and modules through the same subscriber.
    let counters_on = std::env::var("METRON_GPU_METRICS").is_ok_and(|m| !m.trim().is_empty());
    match pc_sampling::configure(
        cupti,
        status.cupti_path.as_deref().unwrap_or("libcupti.so.13"),
        counters_on,
    ) {
        Ok(Some(_)) => ids.extend(pc_sampling::resource_cbids()),
        Ok(None) => {}
        Err(e) => eprintln!("metron: {e}"),
    }
    // PM sampling (METRON_GPU_PM_SAMPLING): set up at the first launch; refused beside the
    // Range Profiler or PC sampling.
    let pc_on = pc_sampling::on()
        || std::env::var("METRON_GPU_PC_SAMPLING")
            .is_ok_and(|v| !matches!(v.trim(), "" | "off" | "0" | "false" | "no"));
    let pm_on = pm_sampling::configure(
        cupti,
        status.cupti_path.as_deref().unwrap_or("libcupti.so.13"),
        counters_on,
        pc_on,
    );
    FEATURES_NEED_CALLBACKS.store(counters_on || pc_on || pm_on, Ordering::Relaxed);
    // Context creation: device limits are read and the features set up there, not in the
    // program's first launch.
    let created = (
        sys_pcsampling::DOMAIN_RESOURCE,
        sys_pcsampling::CBID_CONTEXT_CREATED,
    );
    if !ids.contains(&created) {
        ids.push(created);
    }
    let destroying = (
        sys_pcsampling::DOMAIN_RESOURCE,
        sys_pcsampling::CBID_CONTEXT_DESTROY_STARTING,
    );
    let region_mode =
        range_profiler::parse_mode(std::env::var("METRON_GPU_COUNTER_MODE").ok().as_deref())
            == range_profiler::Mode::Region;
    if counters_on && region_mode && !ids.contains(&destroying) {
        // Region mode closes a context's batch of ranges while the context is alive.
        ids.push(destroying);
    }
    if pm_on && !pc_sampling::on() {
        // Context destruction stops sampling while the context is alive.
        ids.extend(pc_sampling::resource_cbids());
    }
    if diag_has("no_cb") {
        domains.clear();
        ids.clear();
    }
    match sys::subscribe(cupti, on_callback, &domains, &ids) {
        Ok(sub) => {
            let _ = TRACING.set(Tracing {
                kinds,
                sub,
                ids: ids
                    .into_iter()
                    .filter(|&(d, _)| d == sys::DOMAIN_RUNTIME || d == sys::DOMAIN_DRIVER)
                    .collect(),
                domains,
            });
        }
        // Tracing still works; only the region join and API slices are lost.
        Err(e) => eprintln!("metron: GPU kernels will not be tied to regions: {e}"),
    }
    region_kernels::set_cupti_path(status.cupti_path.as_deref().unwrap_or("libcupti.so.13"));
    range_profiler::configure(
        cupti,
        status.cupti_path.as_deref().unwrap_or("libcupti.so.13"),
    );
    status.enabled = true;
    status.reason = None;
    metron::init();
    pc_sampling::register();
    pm_sampling::register();
    metron::gpu::set_backend(
        metron::gpu::Backend {
            flush,
            metadata,
            stream_word: "stream",
        },
        Vec::new(),
    );
    metron::gpu::on_collecting(set_collecting);
    Ok(status)
}

/// What tracing switched on at start, to switch it off and on again with collection.
struct Tracing {
    /// Activity kinds enabled.
    kinds: Vec<i32>,
    /// The Callback API subscriber.
    sub: usize,
    /// Its runtime/driver domains enabled whole.
    domains: Vec<i32>,
    /// Its single runtime/driver callbacks (launches, stream captures).
    ids: Vec<(i32, u32)>,
}

static TRACING: OnceLock<Tracing> = OnceLock::new();

/// Counters, PC or PM sampling were asked for: their launch callbacks stay on while
/// collection is off.
static FEATURES_NEED_CALLBACKS: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Whether tracing is switched on (it starts on).
static TRACING_ON: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// `metron_stop()` / `metron_start()` (`metron::set_collecting`): CUPTI's kernel, copy and API
/// records and the launch and API callbacks are switched off and on with collection, so a
/// stopped program pays CUPTI nothing per launch (as `cudaProfilerStop` does under Nsight
/// Systems). The callbacks stay on while counters, PC or PM sampling need them.
fn set_collecting(on: bool) {
    let (Some(loaded), Some(t)) = (LOADED.get(), TRACING.get()) else {
        return;
    };
    if TRACING_ON.swap(on, Ordering::AcqRel) == on {
        return;
    }
    let cupti = &loaded.cupti;
    for &k in &t.kinds {
        let r = if on {
            sys::enable(cupti, k)
        } else {
            sys::disable(cupti, k)
        };
        if let Err(e) = r {
            eprintln!(
                "metron: GPU tracing could not be switched {}: {e}",
                if on { "on" } else { "off" }
            );
        }
    }
    if !FEATURES_NEED_CALLBACKS.load(Ordering::Relaxed) {
        if let Err(e) = sys::set_callbacks(cupti, t.sub, &t.domains, &t.ids, on) {
            eprintln!(
                "metron: GPU callbacks could not be switched {}: {e}",
                if on { "on" } else { "off" }
            );
        }
    }
}

/// `METRON_GPU_DIAG=no_annotate` (a developer's bisection knob, with `no_ts`, `no_tid`,
/// `no_cb`, `no_copy`): launches write no join annotation.
static DIAG_NO_ANNOTATE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// `METRON_GPU_DIAG=api_empty`: callbacks of calls other than launches return at once (CUPTI's
/// own cost per traced call, for the launch-cost measurements).
static DIAG_API_EMPTY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A context was created (the resource callback, on the application thread inside its
/// creating call): the device limits are read on a thread of Metron's own, and PM sampling and
/// the Range Profiler are set up now, each inside a `metron set-up` slice, instead of inside
/// the program's first kernel launch.
fn context_created(ctx: *mut c_void) {
    start_device_reader();
    if pm_sampling::pending() {
        read_device_info();
        let _slice = SetupSlice::begin("GPU PM sampling set-up (context creation)");
        pm_sampling::before_launch(
            device_info().map_or(1, |d| d.devices.len()),
            ctx,
            LOADED.get().map(|l| l.driver.ctx_push_current),
        );
    }
    if range_profiler::active() {
        let _slice = SetupSlice::begin("GPU counters set-up (context creation)");
        range_profiler::on_context_created(ctx);
    }
    if WARM_UP.load(Ordering::Relaxed) {
        if let Some(l) = LOADED.get() {
            let _slice = SetupSlice::begin("GPU warm-up launch (context creation)");
            crate::per_thread::THREAD.with(|t| t.warming_up.set(true));
            let launch = || l.driver.warm_up_launch();
            if let Err(e) = range_profiler::warm_up(ctx, &launch) {
                eprintln!("metron: {e}; the program's first launch carries CUPTI's set-up");
            }
            crate::per_thread::THREAD.with(|t| t.warming_up.set(false));
        }
    }
}

/// The synchronization and CUDA event records (what waited for what, for `metron whatif`):
/// not essential, so a CUPTI that refuses them leaves the run traced without them (said in
/// `metadata.json`).
fn enable_dependencies(cupti: &sys::Cupti, diag_has: &dyn Fn(&str) -> bool) {
    let mut state = (true, None);
    // Event records cost a launch-bound PyTorch step about 5 % (H200, paired runs): asked for.
    let events = env_bool("METRON_GPU_EVENTS", false);
    let kinds = [
        (sys::kind::SYNCHRONIZATION, true),
        (sys::kind::CUDA_EVENT, events),
    ];
    for (k, _) in kinds.iter().filter(|(_, on)| *on) {
        if let Err(e) = sys::enable(cupti, *k) {
            state = (false, Some(e));
        }
    }
    if state.0 && events && !diag_has("no_event_ts") {
        // Without a device time an event record cannot be placed (it is counted, not traced).
        if let Err(e) = sys::enable_event_timestamps(cupti, true) {
            state.1 = Some(format!("event records without a device time: {e}"));
        }
    }
    if state.0 {
        let _ = sys::enable_all_sync_records(cupti, false);
    }
    *DEPENDENCIES.lock().unwrap_or_else(|e| e.into_inner()) = state;
}

/// `METRON_GPU_WARM_UP`: a kernel of Metron's own is launched once at context creation.
static WARM_UP: AtomicBool = AtomicBool::new(true);

/// The device reader was started.
static DEVICE_READER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Reads the device names and limits on a thread of Metron's own (about 3 ms of driver
/// queries that used to land inside the program's first launch). Readers of
/// [`DEVICE_INFO`] that need it wait through [`read_device_info`].
fn start_device_reader() {
    if DEVICE_READER.swap(true, Ordering::AcqRel) || DEVICE_INFO.get().is_some() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("metron-gpu-info".into())
        .spawn(read_device_info);
    if spawned.is_err() {
        read_device_info();
    }
}

/// Metron's own set-up work on an application thread: a `metron set-up` region with an
/// annotation saying what it was, so the run shows what it cost and where.
struct SetupSlice;

/// The `metron set-up` region's id and its annotation key's.
static SETUP_IDS: OnceLock<(u32, u32)> = OnceLock::new();

impl SetupSlice {
    fn begin(what: &'static str) -> SetupSlice {
        let &(region, key) = SETUP_IDS.get_or_init(|| {
            (
                metron::intern(SETUP_REGION, metron::CallsiteKind::Region),
                metron::intern("metron.setup", metron::CallsiteKind::AnnotationKey),
            )
        });
        SETUP_COUNT.fetch_add(1, Ordering::Relaxed);
        metron::by_id::begin(region);
        metron::by_id::annotate(key, metron::AnnotationValue::Str(what));
        SetupSlice
    }
}

impl Drop for SetupSlice {
    fn drop(&mut self) {
        if let Some(&(region, _)) = SETUP_IDS.get() {
            metron::by_id::end(region);
        }
    }
}

/// The process's first PC-sampled launch was seen.
static PC_FIRST_LAUNCH_SEEN: AtomicBool = AtomicBool::new(false);

/// The name of Metron's set-up slices.
pub const SETUP_REGION: &str = metron::sinks::summary::SETUP_REGION;

/// Set-up slices recorded.
static SETUP_COUNT: AtomicU64 = AtomicU64::new(0);

/// CUPTI's timestamps: Metron's timeline clock.
extern "C" fn timestamp() -> u64 {
    metron::clock::monotonic_ns()
}

/// The GPUs and their limits, read once at the first launch: on an application thread, with
/// the driver initialized and alive (at exit the driver may already be shut down).
struct DeviceInfo {
    devices: Vec<GpuDevice>,
    limits: Vec<Option<Limits>>,
    /// Per device, `limits_json` (`Null` where the limits were not read).
    limits_json: Vec<Value>,
}

static DEVICE_INFO: OnceLock<DeviceInfo> = OnceLock::new();

fn device_info() -> Option<&'static DeviceInfo> {
    DEVICE_INFO.get()
}

fn read_device_info() {
    let Some(loaded) = LOADED.get() else { return };
    DEVICE_INFO.get_or_init(|| {
        let devices = devices(&loaded.driver);
        let limits: Vec<Option<Limits>> = devices
            .iter()
            .map(|d| limits_of(&loaded.driver, d.index))
            .collect();
        let limits_json = devices
            .iter()
            .zip(&limits)
            .map(|(d, l)| {
                l.as_ref()
                    .map_or(Value::Null, |l| limits_json(&loaded.driver, d.index, l))
            })
            .collect();
        metron::gpu::set_devices(devices.clone());
        if let Some(s) = STATUS.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            s.devices = devices.clone();
        }
        DeviceInfo {
            devices,
            limits,
            limits_json,
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One empty launch as CUPTI calls Metron for `cudaLaunchKernel` in the default mode:
    /// runtime enter, the runtime's nested `cuLaunchKernel` enter and exit, runtime exit.
    #[inline(never)]
    fn one_launch(data: &mut sys::CallbackData, slot: &mut u64, correlation: u32) {
        data.correlation_id = correlation;
        data.correlation_data = slot;
        for (domain, cbid, site) in [
            (sys::DOMAIN_RUNTIME, 211, 0),
            (sys::DOMAIN_DRIVER, 307, 0),
            (sys::DOMAIN_DRIVER, 307, 1),
            (sys::DOMAIN_RUNTIME, 211, 1),
        ] {
            data.callback_site = site;
            on_callback(
                std::ptr::null_mut(),
                domain,
                cbid,
                (data as *const sys::CallbackData).cast(),
            );
        }
    }

    /// Which of a runtime launch's four callbacks become API calls, per `METRON_GPU_API` mode:
    /// the runtime's nested driver call is answered before the callback's body in `runtime` and
    /// `none` modes (not recorded), and recorded in `both`.
    #[test]
    fn a_runtime_launch_records_its_nested_driver_call_only_where_the_mode_traces_the_driver() {
        let _one = api_log::DRAINING.lock().unwrap_or_else(|e| e.into_inner());
        no_devices();
        let mut seen = Vec::new();
        for (mode, correlation) in [
            (ApiMode::Runtime, 900_001),
            (ApiMode::None, 900_002),
            (ApiMode::Both, 900_003),
        ] {
            API_MODE.store(mode as u8, Ordering::Relaxed);
            // On a thread of its own: a fresh runtime depth.
            std::thread::spawn(move || {
                let mut ret = 0;
                let mut slot = 0;
                one_launch(&mut callback_data(&mut ret), &mut slot, correlation);
            })
            .join()
            .unwrap();
            let mut calls = Vec::new();
            api_log::drain(|c| {
                if c.correlation == correlation {
                    calls.push((c.domain, c.cbid));
                }
            });
            calls.sort();
            seen.push(calls);
        }
        API_MODE.store(ApiMode::Runtime as u8, Ordering::Relaxed);
        let (driver, runtime) = (sys::DOMAIN_DRIVER, sys::DOMAIN_RUNTIME);
        assert_eq!(
            seen,
            [
                vec![(runtime, 211)],
                vec![],
                vec![(driver, 307), (runtime, 211)],
            ]
        );
    }

    /// No GPU seen (so a launch does not start the device reader).
    fn no_devices() {
        let _ = DEVICE_INFO.set(DeviceInfo {
            devices: Vec::new(),
            limits: Vec::new(),
            limits_json: Vec::new(),
        });
    }

    /// The callback data of one call whose status is `*ret`.
    fn callback_data(ret: &mut i32) -> sys::CallbackData {
        sys::CallbackData {
            callback_site: 0,
            function_name: std::ptr::null(),
            function_params: std::ptr::null(),
            function_return_value: (ret as *mut i32).cast(),
            symbol_name: std::ptr::null(),
            context: std::ptr::null_mut(),
            context_uid: 1,
            correlation_data: std::ptr::null_mut(),
            correlation_id: 0,
        }
    }

    /// Metron's own work per launch in its Callback API subscriber, without CUPTI: run under
    /// callgrind to count it (`valgrind --tool=callgrind --toggle-collect='*one_launch*'
    /// <test binary> --ignored --exact tests::callback_path_per_launch`; instructions / 10,000).
    #[test]
    #[ignore]
    fn callback_path_per_launch() {
        no_devices();
        API_MODE.store(ApiMode::Runtime as u8, Ordering::Relaxed);
        let mut ret: i32 = 0;
        let mut data = callback_data(&mut ret);
        let mut slot = 0u64;
        for i in 0..10_000 {
            one_launch(&mut data, &mut slot, i + 1);
        }
        let (recorded, _, _) = api_log::counts();
        assert!(recorded >= 10_000, "{recorded}");
    }

    #[test]
    fn api_names_lose_their_version_suffix() {
        assert_eq!(api_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
        assert_eq!(api_name("cuLaunchKernel"), "cuLaunchKernel");
        assert_eq!(
            api_name("cudaLaunchKernel_ptsz_v7000"),
            "cudaLaunchKernel_ptsz"
        );
    }
}
