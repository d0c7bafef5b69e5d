//! Region mode (`METRON_GPU_COUNTER_MODE=region`): a user range with user replay per region
//! instance (the `GpuCounters` component's and the C API's regions), single-pass metric
//! sets; the region's values, NaN with a reason when a range cannot be counted.

use super::*;

/// The name every user range gets (values are per region instance: the name is not read).
pub(super) const USER_RANGE_NAME: &std::ffi::CStr = c"metron_region";

pub(super) static REGIONS_COUNTED: AtomicU64 = AtomicU64::new(0);
pub(super) static REGIONS_REFUSED: AtomicU64 = AtomicU64::new(0);
pub(super) static REGIONS_NESTED: AtomicU64 = AtomicU64::new(0);
pub(super) static REGIONS_OVERLAPPED: AtomicU64 = AtomicU64::new(0);
/// The values of the first [`SAMPLES`] counted regions, in order (for `metadata.json`: a
/// check that needs no trace reader).
pub(super) static REGION_SAMPLES: Mutex<Vec<Vec<f64>>> = Mutex::new(Vec::new());
pub(super) const SAMPLES: usize = 32;
/// Why the last region read NaN (first reason said on stderr too).
pub(super) static REGION_REASON: Mutex<Option<String>> = Mutex::new(None);

thread_local! {
    /// The context whose user range this thread opened (region mode).
    pub(super) static REGION_CTX: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Region mode was asked for (`METRON_GPU_COUNTER_MODE=region`) and counters are on: regions
/// should call [`region_begin`] / [`region_end`].
#[inline]
pub fn region_requested() -> bool {
    REGION_REQUESTED.load(Ordering::Relaxed) && ACTIVE.load(Ordering::Relaxed)
}

/// `METRON_GPU_COUNTER_MODE=region` with metrics, read by [`configure`].
pub(super) static REGION_REQUESTED: AtomicBool = AtomicBool::new(false);

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
pub(super) static KERNELS_OFF: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

pub(super) fn kernel_activity(cupti: &Cupti, on: bool) {
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
        s.reconfigure(&cupti, USER_RANGE, USER_REPLAY)?;
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
