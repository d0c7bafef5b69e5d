//! The Callback API hub: the one CUPTI subscriber's callback (runtime and driver domains,
//! resources). Per launch: the kernel ↔ region join (the launch annotation with the
//! correlation id), kernel-mode counters' brackets, PC and PM sampling's launch hooks, stream
//! capture bookkeeping; per traced call: its enter/exit into [`crate::api_log`] as
//! `METRON_GPU_API` ([`ApiMode`]) selects (Metron's clock, no allocation).

use super::*;

/// `METRON_GPU_API`: which API calls become slices, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ApiMode {
    /// Every runtime call (Callback API), plus driver launches made outside the runtime.
    Runtime = 0,
    /// Every driver call (Callback API), runtime launches still join kernels to regions.
    Driver = 1,
    /// Every runtime and driver call (Callback API).
    Both = 2,
    /// No API slices; launches still join kernels to regions.
    None = 3,
    /// CUPTI's RUNTIME and DRIVER activity records (the old, costlier way).
    Activity = 4,
}

impl ApiMode {
    /// The setting's value (`runtime` for anything unknown, as the registry reports).
    pub fn parse(raw: Option<&str>) -> ApiMode {
        match raw.map(str::trim) {
            Some("driver") => ApiMode::Driver,
            Some("both") => ApiMode::Both,
            Some("none") => ApiMode::None,
            Some("activity") => ApiMode::Activity,
            _ => ApiMode::Runtime,
        }
    }

    pub(crate) fn from_u8(v: u8) -> ApiMode {
        match v {
            1 => ApiMode::Driver,
            2 => ApiMode::Both,
            3 => ApiMode::None,
            4 => ApiMode::Activity,
            _ => ApiMode::Runtime,
        }
    }

    /// Every runtime call is recorded.
    pub fn runtime(self) -> bool {
        matches!(self, ApiMode::Runtime | ApiMode::Both)
    }

    /// Every driver call is recorded.
    pub fn driver(self) -> bool {
        matches!(self, ApiMode::Driver | ApiMode::Both)
    }

    /// The setting's word.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiMode::Runtime => "runtime",
            ApiMode::Driver => "driver",
            ApiMode::Both => "both",
            ApiMode::None => "none",
            ApiMode::Activity => "activity",
        }
    }
}

use crate::per_thread::THREAD;

pub(crate) static API_MODE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// A kernel or graph launch (the callbacks that join work to regions and profile kernels).
#[inline]
pub(crate) fn is_launch(domain: i32, cbid: u32) -> bool {
    if domain == sys::DOMAIN_RUNTIME {
        sys::RUNTIME_LAUNCH_CBIDS.contains(&cbid) || sys::RUNTIME_GRAPH_LAUNCH_CBIDS.contains(&cbid)
    } else {
        sys::DRIVER_LAUNCH_CBIDS.contains(&cbid) || sys::DRIVER_GRAPH_LAUNCH_CBIDS.contains(&cbid)
    }
}

/// A kernel launch (not a graph launch).
#[inline]
pub(crate) fn is_kernel_launch(domain: i32, cbid: u32) -> bool {
    if domain == sys::DOMAIN_RUNTIME {
        sys::RUNTIME_LAUNCH_CBIDS.contains(&cbid)
    } else {
        sys::DRIVER_LAUNCH_CBIDS.contains(&cbid)
    }
}

/// Counts kernel records made outside CUPTI's activity buffers (kernels of counted regions).
pub(crate) fn count_kernels(n: u64) {
    COUNTS[0].fetch_add(n, Ordering::Relaxed);
}

/// Stream captures in progress in the process (a launch into a capturing stream runs nothing,
/// and a profiler call during a global capture would invalidate it).
pub(crate) static CAPTURES: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// A stream capture is in progress somewhere in the process.
pub(crate) fn capturing() -> bool {
    CAPTURES.load(Ordering::Acquire) > 0
}

#[inline]
pub(crate) fn capture_bookkeeping(domain: i32, cbid: u32) {
    let (begin, end) = if domain == sys::DOMAIN_RUNTIME {
        (
            sys::RUNTIME_CAPTURE_BEGIN_CBIDS.contains(&cbid),
            sys::RUNTIME_CAPTURE_END_CBIDS.contains(&cbid),
        )
    } else {
        (
            sys::DRIVER_CAPTURE_BEGIN_CBIDS.contains(&cbid),
            sys::DRIVER_CAPTURE_END_CBIDS.contains(&cbid),
        )
    };
    if begin {
        CAPTURES.fetch_add(1, Ordering::AcqRel);
    } else if end {
        let _ = CAPTURES.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            Some((n - 1).max(0))
        });
    }
}

#[inline]
pub(crate) fn tid() -> u32 {
    THREAD
        .try_with(crate::per_thread::GpuThread::tid)
        .unwrap_or_else(|_| sys::gettid())
}

/// The one Callback API subscriber (runtime and driver domains): launch enter/exit for the
/// kernel ↔ region join and kernel-mode counters, and every traced call's enter/exit into
/// [`api_log`] (Metron's clock, no allocation).
pub(crate) extern "C" fn on_callback(
    _user: *mut c_void,
    domain: i32,
    cbid: u32,
    data: *const c_void,
) {
    if domain == sys_pcsampling::DOMAIN_RESOURCE {
        on_resource_callback(cbid, data);
        return;
    }
    let _ = THREAD.try_with(|t| {
        if domain == sys::DOMAIN_DRIVER
            && t.in_runtime.get() > 0
            && !ApiMode::from_u8(API_MODE.load(Ordering::Relaxed)).driver()
        {
            // The runtime's own driver call (half of a runtime launch's callbacks): neither a
            // launch nor traced. Answered here, before the body's frame is set up.
            return;
        }
        on_api_callback(t, domain, cbid, data);
    });
}

/// [`on_callback`] for the resource domain (contexts, modules): rare, kept out of the launch
/// path's code.
#[cold]
#[inline(never)]
fn on_resource_callback(cbid: u32, data: *const c_void) {
    pm_sampling::on_resource(cbid);
    // SAFETY: resource-domain data is a CUpti_ResourceData (checked non-null inside).
    unsafe { pc_sampling::on_resource(cbid, data) };
    if cbid == sys_pcsampling::CBID_CONTEXT_DESTROY_STARTING && !data.is_null() {
        // SAFETY: resource-domain data is a CUpti_ResourceData (checked non-null).
        let ctx = unsafe { (*data.cast::<sys_pcsampling::ResourceData>()).context };
        crate::range_profiler::on_context_destroying(ctx);
    }
    if cbid == sys_pcsampling::CBID_CONTEXT_CREATED && !data.is_null() {
        // After PC sampling's own set-up on the context, so the warm-up launch is sampled.
        // SAFETY: resource-domain data is a CUpti_ResourceData (checked non-null).
        let ctx = unsafe { (*data.cast::<sys_pcsampling::ResourceData>()).context };
        context_created(ctx);
    }
}

/// [`on_callback`] for the runtime and driver domains past the runtime's nested driver calls,
/// with the thread's state. Not inlined, so that the early return in front does not pay for
/// this frame.
#[inline(never)]
fn on_api_callback(t: &crate::per_thread::GpuThread, domain: i32, cbid: u32, data: *const c_void) {
    if data.is_null() || (domain != sys::DOMAIN_RUNTIME && domain != sys::DOMAIN_DRIVER) {
        return;
    }
    if DIAG_API_EMPTY.load(Ordering::Relaxed) && !is_launch(domain, cbid) {
        return;
    }
    if t.warming_up.get() {
        // Metron's own warm-up launch at context creation.
        return;
    }
    if domain == sys::DOMAIN_DRIVER && region_kernels::enabled() && region_kernels::own_call() {
        // Metron's own event calls for kernels of counted regions.
        return;
    }
    // SAFETY: non-null data for the runtime or driver API domain.
    let data = unsafe { sys::CallbackData::from_raw(data) };
    let enter = data.callback_site == 0;
    let mode = ApiMode::from_u8(API_MODE.load(Ordering::Relaxed));
    let nested = if domain == sys::DOMAIN_RUNTIME {
        let d = &t.in_runtime;
        if enter {
            d.set(d.get() + 1);
        } else {
            d.set(d.get().saturating_sub(1));
        }
        false
    } else {
        // Only in `driver`/`both` mode: [`on_callback`] answered the others' nested calls.
        t.in_runtime.get() > 0
    };
    let launch = !nested && is_launch(domain, cbid);
    let traced = match mode {
        ApiMode::Runtime => domain == sys::DOMAIN_RUNTIME || launch,
        ApiMode::Driver => domain == sys::DOMAIN_DRIVER,
        ApiMode::Both => true,
        ApiMode::None | ApiMode::Activity => false,
    };
    if enter {
        if !(launch || traced) {
            // A call only subscribed for bookkeeping at its exit (or a driver call made by the
            // runtime): no clock read.
            return;
        }
        // The TSC (one instruction) rather than clock_gettime: on the H100 VM two clock reads
        // per launch cost about 0.2 us (tests/cuda/cupti_toggle.cu, KCD -> KCDt). Ticks become
        // ns when the calls are drained.
        let ticks = metron::clock::now_ticks();
        data.stash(ticks);
        if launch {
            if DEVICE_INFO.get().is_none() {
                // No context creation was seen (created before Metron started).
                start_device_reader();
            }
            if pm_sampling::pending() {
                read_device_info();
                let _slice = SetupSlice::begin("GPU PM sampling set-up (first launch)");
                pm_sampling::before_launch(
                    device_info().map_or(1, |d| d.devices.len()),
                    data.context,
                    LOADED.get().map(|l| l.driver.ctx_push_current),
                );
            }
            if !DIAG_NO_ANNOTATE.load(Ordering::Relaxed) {
                metron::by_id::annotate(
                    LAUNCH_KEY_ID.load(Ordering::Relaxed),
                    metron::AnnotationValue::U64(u64::from(data.correlation_id)),
                );
            }
            if pc_sampling::on() && !PC_FIRST_LAUNCH_SEEN.swap(true, Ordering::AcqRel) {
                // CUPTI's own work for the first sampled launch (0.4-0.7 s on the H200s) cannot
                // move out of the launch: it is marked as Metron's set-up for what it is.
                std::mem::forget(SetupSlice::begin(
                    "GPU PC sampling: CUPTI's first sampled launch",
                ));
                t.pc_first_launch_open.set(true);
            }
            pc_sampling::before_launch(data.context);
            if range_profiler::active() {
                let graph = if domain == sys::DOMAIN_RUNTIME {
                    sys::RUNTIME_GRAPH_LAUNCH_CBIDS.contains(&cbid)
                } else {
                    sys::DRIVER_GRAPH_LAUNCH_CBIDS.contains(&cbid)
                };
                range_profiler::before_launch(
                    data.context,
                    data.correlation_id,
                    tick_ns(ticks),
                    graph,
                );
            }
            if region_kernels::recording() {
                if is_kernel_launch(domain, cbid) {
                    region_kernels::on_enter(domain, cbid, data, tick_ns(ticks));
                } else if let Some(l) = LOADED.get() {
                    region_kernels::graph_launch(&l.cupti, true);
                    t.graph_kind_on.set(true);
                }
            }
        }
    } else {
        let ticks = if launch || traced {
            metron::clock::now_ticks()
        } else {
            0
        };
        if launch && range_profiler::active() {
            range_profiler::after_launch(data.correlation_id, tick_ns(ticks));
        }
        if launch {
            pc_sampling::after_launch(data.context);
            if t.pc_first_launch_open.replace(false) {
                drop(SetupSlice);
            }
            if region_kernels::enabled() {
                region_kernels::on_exit(data.correlation_id, tick_ns(ticks));
            }
            if t.graph_kind_on.replace(false) {
                if let Some(l) = LOADED.get() {
                    region_kernels::graph_launch(&l.cupti, false);
                }
            }
        }
        if !nested && data.return_code() == 0 {
            capture_bookkeeping(domain, cbid);
        }
        if traced {
            api_log::record(&api_log::ApiCall {
                start: data.stashed(),
                end: ticks,
                correlation: data.correlation_id,
                cbid,
                domain,
                tid: t.tid(),
                status: data.return_code(),
            });
        }
    }
}

/// One traced runtime API call that is not a launch (`cudaGetDevice`), through the subscriber
/// as CUPTI calls it, enter then exit: Metron's own work per traced call, without CUPTI
/// (`benches/benches/nvidia_api.rs`). Records into the calling thread's API buffer.
#[doc(hidden)]
pub fn bench_traced_call(correlation: u32) {
    const CUDA_GET_DEVICE: u32 = 17;
    let mut stash = 0u64;
    let mut status = 0i32;
    let mut data = sys::CallbackData {
        callback_site: 0,
        function_name: c"cudaGetDevice".as_ptr(),
        function_params: std::ptr::null(),
        function_return_value: (&mut status as *mut i32).cast(),
        symbol_name: std::ptr::null(),
        context: std::ptr::null_mut(),
        context_uid: 1,
        correlation_data: &mut stash,
        correlation_id: correlation,
    };
    for site in [0, 1] {
        data.callback_site = site;
        let raw = (&data as *const sys::CallbackData).cast::<c_void>();
        on_callback(
            std::ptr::null_mut(),
            sys::DOMAIN_RUNTIME,
            CUDA_GET_DEVICE,
            raw,
        );
    }
}

/// Drains the API calls recorded so far (for benches: keeps the buffers from filling).
#[doc(hidden)]
pub fn bench_drain_calls() -> u64 {
    let mut n = 0;
    api_log::drain(|_| n += 1);
    n
}
