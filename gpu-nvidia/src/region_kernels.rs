//! Kernels of counted regions (region counter mode, `METRON_GPU_REGION_KERNELS=events`).
//!
//! While a user range is open CUPTI's kernel activity is off (with it on CUPTI runs its own
//! `WaitNs` kernel inside the range and the range counts it). The kernels launched meanwhile are
//! recorded from the launch callbacks instead: name (`symbolName`), grid, block, dynamic shared
//! memory and stream come from the launch's parameters, the correlation id (hence the region
//! join) from CUPTI; the device span from two CUDA events recorded on the launch's stream, one at
//! the launch's enter callback and one at its exit. Events run no kernel, so the range's counts
//! stay those of the application's kernels. An event pair brackets the kernel in stream order:
//! the span starts when the stream reaches the launch and ends when the kernel has finished, so
//! it can include a little queueing on the stream. Event times are relative; each context gets an
//! anchor event recorded on a stream of Metron's own and waited for at the region's start, whose
//! host time places the kernels on Metron's clock (the uncertainty, the anchor's wait, is in
//! `metadata.json` `gpu.counters.region_kernels`). Registers and static shared memory are not
//! known at a launch callback: those columns stay 0 and occupancy empty. A launch whose events
//! could not be recorded keeps the host span of its launch call (counted).
//!
//! The records are resolved at the end of each counted region (events already complete) and at
//! the end of the run (waiting for the rest), and go through the same sinks as CUPTI's.

use crate::sys::{self, CallbackData};
use metron::gpu::{GpuKind, GpuRecord};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Launch parameters read from a launch callback's `functionParams`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchParams {
    /// Grid size.
    pub grid: [i32; 3],
    /// Block size.
    pub block: [i32; 3],
    /// Dynamic shared memory per block, bytes.
    pub dynamic_shared: i32,
    /// The stream handle (`CUstream`; 0 is the default stream).
    pub stream: usize,
    /// A per-thread-default-stream variant (`_ptsz`).
    pub per_thread: bool,
}

fn u32_at(p: *const u8, off: usize) -> i32 {
    // SAFETY: callers pass a pointer to a parameter struct at least `off + 4` bytes long.
    unsafe { p.add(off).cast::<u32>().read_unaligned() as i32 }
}

fn ptr_at(p: *const u8, off: usize) -> usize {
    // SAFETY: as in `u32_at`, `off + 8` bytes.
    unsafe { p.add(off).cast::<usize>().read_unaligned() }
}

/// The launch parameters of a kernel-launch callback (`cbid` of [`sys::RUNTIME_LAUNCH_CBIDS`]
/// or [`sys::DRIVER_LAUNCH_CBIDS`]); `None` for other ids or null parameters. Offsets checked
/// against CUDA 13.0's `generated_cuda_runtime_api_meta.h` / `generated_cuda_meta.h`.
///
/// # Safety
/// `params` must be the `functionParams` CUPTI passed for `(domain, cbid)`.
pub unsafe fn launch_params(domain: i32, cbid: u32, params: *const c_void) -> Option<LaunchParams> {
    if params.is_null() {
        return None;
    }
    let p = params.cast::<u8>();
    let dim3 = |p: *const u8, off: usize| [u32_at(p, off), u32_at(p, off + 4), u32_at(p, off + 8)];
    match (domain, cbid) {
        // cudaLaunchKernel / cudaLaunchCooperativeKernel (+ _ptsz): func@0 gridDim@8
        // blockDim@20 args@32 sharedMem@40 stream@48.
        (sys::DOMAIN_RUNTIME, 211 | 214 | 269 | 270) => Some(LaunchParams {
            grid: dim3(p, 8),
            block: dim3(p, 20),
            dynamic_shared: u32_at(p, 40),
            stream: ptr_at(p, 48),
            per_thread: matches!(cbid, 214 | 270),
        }),
        // cudaLaunchKernelExC (+ _ptsz): config@0 -> cudaLaunchConfig_t gridDim@0 blockDim@12
        // dynamicSmemBytes@24 stream@32.
        (sys::DOMAIN_RUNTIME, 430 | 431) | (sys::DOMAIN_DRIVER, 652 | 653) => {
            let c = ptr_at(p, 0) as *const u8;
            if c.is_null() {
                return None;
            }
            // CUlaunchConfig has the same layout: gridDimX..Z@0 blockDimX..Z@12
            // sharedMemBytes@24 hStream@32.
            Some(LaunchParams {
                grid: dim3(c, 0),
                block: dim3(c, 12),
                dynamic_shared: u32_at(c, 24),
                stream: ptr_at(c, 32),
                per_thread: matches!(cbid, 431 | 653),
            })
        }
        // cuLaunchKernel / cuLaunchCooperativeKernel (+ _ptsz): f@0 gridDimX..Z@8
        // blockDimX..Z@20 sharedMemBytes@32 hStream@40.
        (sys::DOMAIN_DRIVER, 307 | 442 | 477 | 478) => Some(LaunchParams {
            grid: dim3(p, 8),
            block: dim3(p, 20),
            dynamic_shared: u32_at(p, 32),
            stream: ptr_at(p, 40),
            per_thread: matches!(cbid, 442 | 478),
        }),
        _ => None,
    }
}

/// `CU_STREAM_PER_THREAD`.
const STREAM_PER_THREAD: usize = 2;

/// A launch recorded while kernel activity was off.
#[derive(Clone, Debug)]
pub struct Launch {
    /// Correlation id (the region join).
    pub correlation: u32,
    /// The kernel's raw (mangled) name.
    pub raw_name: String,
    /// From the launch parameters.
    pub params: LaunchParams,
    /// CUPTI's device id of the context.
    pub device: u32,
    /// CUPTI's context id.
    pub context: u32,
    /// CUPTI's stream id.
    pub stream: u32,
    /// The launch call's host span (enter, exit), Metron's clock.
    pub host: (u64, u64),
    /// The anchor of the launch's context (index into the anchors), if its events were recorded.
    pub anchor: Option<usize>,
    /// The events recorded at enter and exit (`CUevent`s).
    pub events: Option<(usize, usize)>,
    /// The launch's context (`CUcontext`), whose free list takes the events back.
    pub ctx: usize,
    /// Why the launch has no event span.
    pub missing: Option<&'static str>,
}

/// The record of a launch: device times `anchor_ns + offset`, offsets of its events from the
/// anchor event in ms (`None`: not measured, the host span stands in).
pub fn to_record(
    l: &Launch,
    name: Arc<str>,
    anchor_ns: u64,
    offsets: Option<(f32, f32)>,
) -> GpuRecord {
    let mut r = GpuRecord::new(GpuKind::Kernel, name);
    match offsets {
        Some((s, e)) if s >= 0.0 && e >= s => {
            r.start_ns = anchor_ns + (f64::from(s) * 1e6).round() as u64;
            r.end_ns = anchor_ns + (f64::from(e) * 1e6).round() as u64;
        }
        _ => {
            r.start_ns = l.host.0;
            r.end_ns = l.host.1.max(l.host.0);
        }
    }
    r.device = l.device;
    r.context = l.context;
    r.stream = l.stream;
    r.correlation = l.correlation;
    r.grid = l.params.grid;
    r.block = l.params.block;
    r.dynamic_shared = l.params.dynamic_shared;
    r
}

type CuFn1 = unsafe extern "C" fn(*mut *mut c_void, u32) -> i32;
type CuRecord = unsafe extern "C" fn(*mut c_void, *mut c_void) -> i32;
type CuOne = unsafe extern "C" fn(*mut c_void) -> i32;
type CuElapsed = unsafe extern "C" fn(*mut f32, *mut c_void, *mut c_void) -> i32;
type CuptiStreamId = unsafe extern "C" fn(*mut c_void, *mut c_void, u8, *mut u32) -> i32;
type CuptiCtxU32 = unsafe extern "C" fn(*mut c_void, *mut u32) -> i32;

#[derive(Clone, Copy)]
struct Fns {
    event_create: CuFn1,
    event_record: CuRecord,
    event_query: CuOne,
    event_synchronize: CuOne,
    event_elapsed: CuElapsed,
    stream_create: CuFn1,
    stream_id: CuptiStreamId,
    device_id: CuptiCtxU32,
    context_id: CuptiCtxU32,
}

static FNS: OnceLock<Result<Fns, String>> = OnceLock::new();
static CUPTI_PATH: OnceLock<String> = OnceLock::new();

fn fns() -> Result<&'static Fns, &'static str> {
    FNS.get_or_init(|| {
        let cuda = sys::dlopen("libcuda.so.1", true)?;
        let cupti = sys::dlopen(
            CUPTI_PATH.get().map_or("libcupti.so.13", String::as_str),
            true,
        )
        .or_else(|_| sys::dlopen("libcupti.so.13", true))?;
        // SAFETY: each type is the C signature of the named function (cuda.h, cupti_activity.h,
        // cupti_events.h); the handles are never closed.
        unsafe {
            Ok(Fns {
                event_create: sys::sym(cuda, "cuEventCreate")?,
                event_record: sys::sym(cuda, "cuEventRecord")?,
                event_query: sys::sym(cuda, "cuEventQuery")?,
                event_synchronize: sys::sym(cuda, "cuEventSynchronize")?,
                event_elapsed: sys::sym(cuda, "cuEventElapsedTime")?,
                stream_create: sys::sym(cuda, "cuStreamCreate")?,
                stream_id: sys::sym(cupti, "cuptiGetStreamIdEx")?,
                device_id: sys::sym(cupti, "cuptiGetDeviceId")?,
                context_id: sys::sym(cupti, "cuptiGetContextId")?,
            })
        }
    })
    .as_ref()
    .map_err(String::as_str)
}

/// Where the backend's libcupti is (set at start).
pub(crate) fn set_cupti_path(path: &str) {
    let _ = CUPTI_PATH.set(path.to_string());
}

/// Kernel activity is off for a counted range: launches are recorded here.
static UNTRACED: AtomicBool = AtomicBool::new(false);
/// Recording on (the setting is `events`).
static ON: AtomicBool = AtomicBool::new(false);

/// The calling thread is inside this module's own driver call.
#[inline]
pub(crate) fn own_call() -> bool {
    crate::per_thread::THREAD
        .try_with(|t| t.own_call.get())
        .unwrap_or(false)
}

struct OwnCall;
impl OwnCall {
    fn new() -> OwnCall {
        let _ = crate::per_thread::THREAD.try_with(|t| t.own_call.set(true));
        OwnCall
    }
}
impl Drop for OwnCall {
    fn drop(&mut self) {
        let _ = crate::per_thread::THREAD.try_with(|t| t.own_call.set(false));
    }
}

struct Anchor {
    event: usize,
    host_ns: u64,
}

#[derive(Default)]
struct State {
    pending: Vec<Launch>,
    anchors: Vec<Anchor>,
    /// Per context: its current anchor and Metron's stream.
    current: HashMap<usize, (usize, usize)>,
    /// Free events per context.
    free: HashMap<usize, Vec<usize>>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);
static RECORDED: AtomicU64 = AtomicU64::new(0);
static WITH_EVENTS: AtomicU64 = AtomicU64::new(0);
static HOST_TIME: AtomicU64 = AtomicU64::new(0);
static ANCHOR_WAIT_MAX_NS: AtomicU64 = AtomicU64::new(0);
static MISSING: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Turns recording on (the setting asks for it).
pub(crate) fn enable(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// Recording is asked for (region mode with `events`).
#[inline]
pub(crate) fn enabled() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Kernel activity went off (`true`) or back on for counted ranges.
pub(crate) fn set_untraced(off: bool) {
    UNTRACED.store(off && ON.load(Ordering::Relaxed), Ordering::Release);
}

/// Graph launches inside counted ranges (their kernels come from CUPTI's serialized KERNEL
/// kind, switched on around the launch call).
static GRAPH_LAUNCHES: AtomicU64 = AtomicU64::new(0);
/// Graph kernels whose record had no device time (CUPTI gave the graph's span to one node):
/// they carry that node's span.
static GRAPH_SHARED_SPAN: AtomicU64 = AtomicU64::new(0);

/// A graph launch's enter (`true`) or exit callback while [`recording`]: CUPTI's serialized
/// KERNEL kind on for the launch call, so the graph's kernel nodes are recorded (measured on
/// the H100: the kind adds no `WaitNs` to the range's values, as CONCURRENT_KERNEL does; CUPTI
/// gives the graph launch's whole span to one node and zero timestamps to the others).
pub(crate) fn graph_launch(cupti: &sys::Cupti, enter: bool) {
    // Graph launch calls in progress (on any thread): the kind goes off when the last ends.
    static IN_FLIGHT: Mutex<u32> = Mutex::new(0);
    let mut n = IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner());
    if enter {
        GRAPH_LAUNCHES.fetch_add(1, Ordering::Relaxed);
        *n += 1;
        if *n == 1 {
            let _ = sys::enable(cupti, sys::kind::KERNEL);
        }
    } else {
        *n = n.saturating_sub(1);
        if *n == 0 {
            let _ = sys::disable(cupti, sys::kind::KERNEL);
        }
    }
}

/// Recent graph launches' timed spans, by correlation id (for nodes CUPTI left at zero).
static GRAPH_SPANS: Mutex<Vec<(u32, u64, u64)>> = Mutex::new(Vec::new());

/// Kernel records of graph nodes with no device time (start 0) take the span CUPTI gave
/// another node of the same graph launch (same correlation id), from this batch or a recent
/// one; counted in `metadata.json`.
pub fn fill_graph_spans(records: &mut [GpuRecord]) {
    if !records
        .iter()
        .any(|r| r.kind == GpuKind::Kernel && r.graph_id != 0)
    {
        return;
    }
    let mut spans = GRAPH_SPANS.lock().unwrap_or_else(|e| e.into_inner());
    for r in records.iter() {
        if r.kind == GpuKind::Kernel && r.graph_id != 0 && r.start_ns != 0 {
            if spans.len() >= 256 {
                spans.remove(0);
            }
            spans.push((r.correlation, r.start_ns, r.end_ns));
        }
    }
    for r in records.iter_mut() {
        if r.kind == GpuKind::Kernel && r.graph_id != 0 && r.start_ns == 0 {
            if let Some(&(_, s, e)) = spans.iter().rev().find(|x| x.0 == r.correlation) {
                r.start_ns = s;
                r.end_ns = e;
                GRAPH_SHARED_SPAN.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Launches are to be recorded here now.
#[inline]
pub(crate) fn recording() -> bool {
    UNTRACED.load(Ordering::Acquire)
}

fn take_event(fns: &Fns, state: &mut State, ctx: usize) -> Option<usize> {
    if let Some(e) = state.free.get_mut(&ctx).and_then(Vec::pop) {
        return Some(e);
    }
    let mut e: *mut c_void = std::ptr::null_mut();
    let _own = OwnCall::new();
    // SAFETY: a valid out-pointer; flags 0 (timing enabled); the context is current (a launch
    // callback or a region begin on this thread).
    (unsafe { (fns.event_create)(&mut e, 0) } == 0 && !e.is_null()).then_some(e as usize)
}

/// Records an anchor for the calling thread's context `ctx`: an event on Metron's own stream,
/// waited for; its host time is the middle of the record..wait interval. Called at a counted
/// region's begin, before the range opens (its wait is outside the range).
pub(crate) fn anchor(ctx: *mut c_void) {
    if !ON.load(Ordering::Relaxed) || ctx.is_null() {
        return;
    }
    let Ok(fns) = fns() else { return };
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let state = guard.get_or_insert_with(State::default);
    let key = ctx as usize;
    if let Some(&(i, _)) = state.current.get(&key) {
        // An anchor younger than a second is kept: event offsets are f32 milliseconds
        // (about 60 ns of precision at one second).
        if crate::timestamp().saturating_sub(state.anchors[i].host_ns) < 1_000_000_000 {
            return;
        }
    }
    let stream = match state.current.get(&key) {
        Some(&(_, s)) => s,
        None => {
            let mut s: *mut c_void = std::ptr::null_mut();
            let _own = OwnCall::new();
            // SAFETY: a valid out-pointer; CU_STREAM_NON_BLOCKING (1).
            if unsafe { (fns.stream_create)(&mut s, 1) } != 0 {
                return;
            }
            s as usize
        }
    };
    let Some(ev) = take_event(fns, state, key) else {
        return;
    };
    let _own = OwnCall::new();
    let t0 = crate::timestamp();
    // SAFETY: an event and a stream of this context.
    let ok = unsafe { (fns.event_record)(ev as *mut c_void, stream as *mut c_void) } == 0
        // SAFETY: the event just recorded.
        && unsafe { (fns.event_synchronize)(ev as *mut c_void) } == 0;
    let t1 = crate::timestamp();
    if !ok {
        state.free.entry(key).or_default().push(ev);
        return;
    }
    ANCHOR_WAIT_MAX_NS.fetch_max(t1.saturating_sub(t0), Ordering::Relaxed);
    state.anchors.push(Anchor {
        event: ev,
        host_ns: t0 + (t1 - t0) / 2,
    });
    state.current.insert(key, (state.anchors.len() - 1, stream));
}

fn note_missing(why: &'static str) {
    let mut m = MISSING.lock().unwrap_or_else(|e| e.into_inner());
    if m.len() < 4 && !m.iter().any(|s| s == why) {
        m.push(why.to_string());
    }
}

/// A launch's enter callback while [`recording`]: reads its parameters and records the start
/// event on its stream.
pub(crate) fn on_enter(domain: i32, cbid: u32, data: &CallbackData, now: u64) {
    // SAFETY: CUPTI's functionParams for this (domain, cbid).
    let Some(params) = (unsafe { launch_params(domain, cbid, data.function_params) }) else {
        return;
    };
    RECORDED.fetch_add(1, Ordering::Relaxed);
    let raw_name = if data.symbol_name.is_null() {
        String::from("<unknown kernel>")
    } else {
        // SAFETY: CUPTI's NUL-terminated symbol name, valid during the callback.
        unsafe { sys::c_str(data.symbol_name) }
    };
    let mut launch = Launch {
        correlation: data.correlation_id,
        raw_name,
        params,
        device: 0,
        context: 0,
        stream: 0,
        host: (now, now),
        anchor: None,
        events: None,
        ctx: data.context as usize,
        missing: None,
    };
    let fns = match fns() {
        Ok(f) => f,
        Err(_) => {
            launch.missing = Some("the CUDA event functions were not found");
            push(launch);
            return;
        }
    };
    let ctx = data.context;
    let stream = if params.stream == 0 && params.per_thread {
        STREAM_PER_THREAD
    } else {
        params.stream
    };
    // The exit callback records the end event on the same stream.
    crate::per_thread::THREAD.with(|t| {
        t.pending_correlation.set(data.correlation_id);
        t.pending_stream.set(stream);
    });
    {
        let _own = OwnCall::new();
        // SAFETY: valid out-pointers and the launch's context and stream.
        unsafe {
            (fns.device_id)(ctx, &mut launch.device);
            (fns.context_id)(ctx, &mut launch.context);
            (fns.stream_id)(
                ctx,
                stream as *mut c_void,
                u8::from(params.per_thread),
                &mut launch.stream,
            );
        }
    }
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let state = guard.get_or_insert_with(State::default);
    let key = ctx as usize;
    let Some(&(anchor, _)) = state.current.get(&key) else {
        drop(guard);
        launch.missing = Some("no anchor event on this context (no counted region began on it)");
        push(launch);
        return;
    };
    let (Some(a), Some(b)) = (take_event(fns, state, key), take_event(fns, state, key)) else {
        drop(guard);
        launch.missing = Some("cuEventCreate failed");
        push(launch);
        return;
    };
    let _own = OwnCall::new();
    // SAFETY: an event of this context and the launch's stream.
    if unsafe { (fns.event_record)(a as *mut c_void, stream as *mut c_void) } != 0 {
        state.free.entry(key).or_default().extend([a, b]);
        drop(guard);
        launch.missing = Some("cuEventRecord failed on the launch's stream");
        push(launch);
        return;
    }
    launch.anchor = Some(anchor);
    launch.events = Some((a, b));
    state.pending.push(launch);
}

fn push(launch: Launch) {
    STATE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(State::default)
        .pending
        .push(launch);
}

/// The launch's exit callback: records the end event and the host span's end.
pub(crate) fn on_exit(correlation: u32, now: u64) {
    if !ON.load(Ordering::Relaxed) {
        return;
    }
    let (corr, stream) =
        crate::per_thread::THREAD.with(|t| (t.pending_correlation.get(), t.pending_stream.get()));
    if corr != correlation {
        return;
    }
    crate::per_thread::THREAD.with(|t| {
        t.pending_correlation.set(0);
        t.pending_stream.set(0);
    });
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(state) = guard.as_mut() else { return };
    let Some(l) = state
        .pending
        .iter_mut()
        .rev()
        .find(|l| l.correlation == correlation)
    else {
        return;
    };
    l.host.1 = now;
    if let (Some((_, b)), Ok(fns)) = (l.events, fns()) {
        let _own = OwnCall::new();
        // SAFETY: the end event and the stream the start event went on (this launch's).
        if unsafe { (fns.event_record)(b as *mut c_void, stream as *mut c_void) } != 0 {
            l.events = None;
            l.missing = Some("cuEventRecord failed at the launch's exit");
        }
    }
}

/// Resolves the recorded launches whose end event completed (all of them, waiting, when
/// `wait`) into kernel records and submits them.
pub(crate) fn resolve(wait: bool) {
    if !ON.load(Ordering::Relaxed) {
        return;
    }
    let mut records = Vec::new();
    {
        let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
        let Some(state) = guard.as_mut() else { return };
        if state.pending.is_empty() {
            return;
        }
        let fns = fns().ok().copied();
        let mut keep = Vec::new();
        let _own = OwnCall::new();
        for l in std::mem::take(&mut state.pending) {
            let mut offsets = None;
            let mut anchor_ns = 0;
            if let (Some((a, b)), Some(ai), Some(f)) = (l.events, l.anchor, fns) {
                let (anchor_event, host_ns) = {
                    let x = &state.anchors[ai];
                    (x.event, x.host_ns)
                };
                anchor_ns = host_ns;
                let done = if wait {
                    // SAFETY: a recorded event.
                    unsafe { (f.event_synchronize)(b as *mut c_void) == 0 }
                } else {
                    // SAFETY: a recorded event; 0 = complete, 600 = not ready.
                    match unsafe { (f.event_query)(b as *mut c_void) } {
                        0 => true,
                        600 => {
                            keep.push(l);
                            continue;
                        }
                        _ => false,
                    }
                };
                if done {
                    let (mut s, mut e) = (0f32, 0f32);
                    // SAFETY: valid out-pointers; complete events of one context.
                    let ok = unsafe {
                        (f.event_elapsed)(&mut s, anchor_event as *mut c_void, a as *mut c_void)
                            == 0
                            && (f.event_elapsed)(
                                &mut e,
                                anchor_event as *mut c_void,
                                b as *mut c_void,
                            ) == 0
                    };
                    if ok {
                        offsets = Some((s, e));
                    }
                }
                state.free.entry(l.ctx).or_default().extend([a, b]);
            }
            if offsets.is_some() {
                WITH_EVENTS.fetch_add(1, Ordering::Relaxed);
            } else {
                HOST_TIME.fetch_add(1, Ordering::Relaxed);
                note_missing(l.missing.unwrap_or("the launch's events did not complete"));
            }
            let name: Arc<str> = metron::gpu::demangle_kernel(&l.raw_name).into();
            records.push(to_record(&l, name, anchor_ns, offsets));
        }
        state.pending = keep;
    }
    crate::count_kernels(records.len() as u64);
    metron::gpu::submit(&records);
}

/// The `region_kernels` part of `gpu.counters` in `metadata.json`.
pub(crate) fn metadata() -> Value {
    json!({
        "source": "launch callbacks (name, grid, block, stream, correlation) and CUDA events on the launch's stream (device span), while CUPTI's kernel activity is off for a counted range",
        "recorded": RECORDED.load(Ordering::Relaxed),
        "with_event_times": WITH_EVENTS.load(Ordering::Relaxed),
        "with_host_times": HOST_TIME.load(Ordering::Relaxed),
        "host_time_reasons": *MISSING.lock().unwrap_or_else(|e| e.into_inner()),
        "anchor_wait_max_ns": ANCHOR_WAIT_MAX_NS.load(Ordering::Relaxed),
        "graph_launches": GRAPH_LAUNCHES.load(Ordering::Relaxed),
        "graph_kernels_with_the_graphs_span": GRAPH_SHARED_SPAN.load(Ordering::Relaxed),
        "graph_source": "CUPTI's serialized KERNEL kind, on around each graph launch call inside a counted range; CUPTI gives the graph's whole span to one node and zero timestamps to the others, which then carry that span",
        "not_known": "registers and static shared memory (0 in kernels.csv), occupancy (empty)",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes<const N: usize>(words: &[(usize, u64, usize)]) -> [u8; N] {
        let mut b = [0u8; N];
        for &(off, v, len) in words {
            b[off..off + len].copy_from_slice(&v.to_le_bytes()[..len]);
        }
        b
    }

    #[test]
    fn runtime_launch_parameters_are_read() {
        // cudaLaunchKernel_v7000_params: grid (64,2,1), block (256,1,1), 1024 B, stream 0x77.
        let p: [u8; 56] = bytes(&[
            (8, 64, 4),
            (12, 2, 4),
            (16, 1, 4),
            (20, 256, 4),
            (24, 1, 4),
            (28, 1, 4),
            (40, 1024, 8),
            (48, 0x77, 8),
        ]);
        // SAFETY: a 56-byte buffer laid out as cudaLaunchKernel_v7000_params.
        let got = unsafe { launch_params(sys::DOMAIN_RUNTIME, 211, p.as_ptr().cast()) }.unwrap();
        assert_eq!(
            got,
            LaunchParams {
                grid: [64, 2, 1],
                block: [256, 1, 1],
                dynamic_shared: 1024,
                stream: 0x77,
                per_thread: false
            }
        );
        // SAFETY: as above.
        let ptsz = unsafe { launch_params(sys::DOMAIN_RUNTIME, 214, p.as_ptr().cast()) }.unwrap();
        assert!(ptsz.per_thread);
        // Not a launch id.
        // SAFETY: as above.
        assert!(unsafe { launch_params(sys::DOMAIN_RUNTIME, 20, p.as_ptr().cast()) }.is_none());
        // SAFETY: null parameters.
        assert!(unsafe { launch_params(sys::DOMAIN_RUNTIME, 211, std::ptr::null()) }.is_none());
    }

    #[test]
    fn driver_and_ex_launch_parameters_are_read() {
        // cuLaunchKernel_params: grid (3,4,5) block (32,8,1) shared 48 stream 0x99.
        let p: [u8; 64] = bytes(&[
            (8, 3, 4),
            (12, 4, 4),
            (16, 5, 4),
            (20, 32, 4),
            (24, 8, 4),
            (28, 1, 4),
            (32, 48, 4),
            (40, 0x99, 8),
        ]);
        // SAFETY: laid out as cuLaunchKernel_params.
        let got = unsafe { launch_params(sys::DOMAIN_DRIVER, 307, p.as_ptr().cast()) }.unwrap();
        assert_eq!(
            (got.grid, got.block, got.dynamic_shared, got.stream),
            ([3, 4, 5], [32, 8, 1], 48, 0x99)
        );
        // cuLaunchKernelEx: config pointer -> CUlaunchConfig (same layout as cudaLaunchConfig_t).
        let cfg: [u8; 56] = bytes(&[
            (0, 7, 4),
            (4, 1, 4),
            (8, 1, 4),
            (12, 128, 4),
            (16, 1, 4),
            (20, 1, 4),
            (24, 4096, 4),
            (32, 0x55, 8),
        ]);
        let p: [u8; 32] = bytes(&[(0, cfg.as_ptr() as u64, 8)]);
        for (d, id, per_thread) in [
            (sys::DOMAIN_DRIVER, 652, false),
            (sys::DOMAIN_DRIVER, 653, true),
            (sys::DOMAIN_RUNTIME, 430, false),
        ] {
            // SAFETY: a parameter struct whose first word points at a launch config.
            let got = unsafe { launch_params(d, id, p.as_ptr().cast()) }.unwrap();
            assert_eq!(got.grid, [7, 1, 1]);
            assert_eq!(got.block, [128, 1, 1]);
            assert_eq!(got.dynamic_shared, 4096);
            assert_eq!(got.stream, 0x55);
            assert_eq!(got.per_thread, per_thread);
        }
    }

    fn launch(events: bool) -> Launch {
        Launch {
            correlation: 41,
            raw_name: "_Z5saxpyifPKfPf".into(),
            params: LaunchParams {
                grid: [65536, 1, 1],
                block: [256, 1, 1],
                dynamic_shared: 0,
                stream: 0x10,
                per_thread: false,
            },
            device: 0,
            context: 1,
            stream: 14,
            host: (5_000, 9_000),
            anchor: events.then_some(0),
            events: events.then_some((1, 2)),
            ctx: 0x1000,
            missing: (!events).then_some("cuEventRecord failed on the launch's stream"),
        }
    }

    #[test]
    fn event_offsets_place_the_kernel_after_the_anchor() {
        let l = launch(true);
        // 0.25 ms and 0.3275 ms after an anchor at 1 s.
        let r = to_record(&l, "saxpy".into(), 1_000_000_000, Some((0.25, 0.3275)));
        assert_eq!(r.kind, GpuKind::Kernel);
        assert_eq!(r.start_ns, 1_000_250_000);
        assert_eq!(r.end_ns, 1_000_327_500);
        assert_eq!((r.correlation, r.stream, r.context), (41, 14, 1));
        assert_eq!(r.grid, [65536, 1, 1]);
        assert_eq!(r.block, [256, 1, 1]);
        assert_eq!(r.registers, 0);
        assert!(r.occupancy.is_none());
    }

    #[test]
    fn graph_nodes_without_time_take_their_launchs_span() {
        let node = |corr: u32, node: u64, s: u64, e: u64| {
            let mut r = GpuRecord::new(GpuKind::Kernel, "k".into());
            r.correlation = corr;
            r.graph_id = 2;
            r.graph_node = node;
            r.start_ns = s;
            r.end_ns = e;
            r
        };
        // As on the H100: per graph launch one node has the graph's span, the others 0.
        let mut batch = vec![
            node(72, 2, 0, 0),
            node(72, 3, 0, 0),
            node(72, 1, 1_000, 256_000),
            node(73, 1, 258_000, 512_000),
        ];
        fill_graph_spans(&mut batch);
        assert_eq!((batch[0].start_ns, batch[0].end_ns), (1_000, 256_000));
        assert_eq!((batch[1].start_ns, batch[1].end_ns), (1_000, 256_000));
        // A later batch: a node of launch 73 takes the span seen before; a node with no timed
        // sibling stays at 0; a kernel outside graphs is left alone.
        let mut later = vec![node(73, 2, 0, 0), node(99, 2, 0, 0)];
        let mut plain = GpuRecord::new(GpuKind::Kernel, "p".into());
        plain.correlation = 73;
        later.push(plain);
        fill_graph_spans(&mut later);
        assert_eq!((later[0].start_ns, later[0].end_ns), (258_000, 512_000));
        assert_eq!(later[1].start_ns, 0);
        assert_eq!(later[2].start_ns, 0);
    }

    #[test]
    fn a_launch_without_events_keeps_its_host_span() {
        let l = launch(false);
        let r = to_record(&l, "saxpy".into(), 0, None);
        assert_eq!((r.start_ns, r.end_ns), (5_000, 9_000));
        // Offsets out of order (an event from before the anchor) fall back too.
        let r = to_record(&launch(true), "saxpy".into(), 1_000, Some((-0.5, 0.1)));
        assert_eq!((r.start_ns, r.end_ns), (5_000, 9_000));
    }
}
