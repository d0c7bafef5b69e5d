//! Region mode (`METRON_GPU_COUNTER_MODE=region`): a user range with user replay per region
//! instance (the `GpuCounters` component's and the C API's regions), batched per counter-data
//! image (`batch.rs`) and evaluated off the region's thread (`evaluate.rs`); a metric set of
//! N passes is collected across a region's instances, pass k from its k-th. An instance's
//! values reach the summary by its range number; NaN with a reason when it cannot be counted.

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

/// The range number of the next region instance (0 is Metron's warm-up).
static NEXT_RANGE: AtomicU64 = AtomicU64::new(1);

/// Host time of region mode's steps over all instances, ns, and how often each ran
/// (`metadata.json` `gpu.counters.region_steps`): the whole begin and end as the region's
/// thread sees them, the activity switches, push, pop, and the image closes (`Stop`,
/// `DecodeData`, a fresh image).
pub(super) static REGION_STEP_NS: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];
pub(super) static REGION_STEP_COUNT: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];
pub(super) const REGION_STEP_NAMES: [&str; 7] = [
    "begin",
    "end",
    "activity_off",
    "activity_on",
    "start_and_push",
    "pop",
    "close_image",
];

/// Runs `f` and adds its host time to region step `i`.
pub(super) fn step<T>(i: usize, f: impl FnOnce() -> T) -> T {
    let t0 = crate::timestamp();
    let r = f();
    REGION_STEP_NS[i].fetch_add(crate::timestamp().saturating_sub(t0), Ordering::Relaxed);
    REGION_STEP_COUNT[i].fetch_add(1, Ordering::Relaxed);
    r
}

/// The steps for `metadata.json`: `{name: {"ns": total, "count": n}}`.
pub(super) fn region_steps_json() -> Value {
    REGION_STEP_NAMES
        .iter()
        .enumerate()
        .map(|(i, n)| {
            (
                n.to_string(),
                json!({"ns": REGION_STEP_NS[i].load(Ordering::Relaxed), "count": REGION_STEP_COUNT[i].load(Ordering::Relaxed)}),
            )
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// The Range Profiler calls of one session, for its batch.
pub(super) struct SessionCalls<'a> {
    pub(super) cupti: &'a Cupti,
    pub(super) p: Profiler,
    pub(super) object: Object,
    pub(super) image: &'a mut Vec<u8>,
    pub(super) config: &'a [u8],
    pub(super) capacity: usize,
    /// The ranges' names, by number in the image (made once per session).
    pub(super) names: &'a [std::ffi::CString],
}

impl batch::RangeCalls for SessionCalls<'_> {
    type Image = Vec<u8>;
    fn start(&mut self) -> Result<(), String> {
        self.p.start_on(self.cupti, self.object)
    }
    fn push(&mut self, slot: usize) -> Result<(), String> {
        let name = self
            .names
            .get(slot)
            .map_or(USER_RANGE_NAME, |n| n.as_c_str());
        self.p.push_on(self.cupti, self.object, name)
    }
    fn pop(&mut self) -> Result<(), String> {
        self.p.pop_on(self.cupti, self.object)
    }
    fn stop(&mut self) -> Result<bool, String> {
        self.p.stop_on(self.cupti, self.object)
    }
    fn decode(&mut self) -> Result<usize, String> {
        let dropped = self.p.decode_on(self.cupti, self.object)?;
        RANGES_DROPPED.fetch_add(dropped as u64, Ordering::Relaxed);
        Ok(dropped)
    }
    fn rotate(&mut self) -> Result<Vec<u8>, String> {
        // Zeroed pages come from the allocator lazily; CUPTI initializes the header.
        let mut fresh = vec![0u8; self.image.len()];
        self.p
            .counter_data_init(self.cupti, self.object, &mut fresh)?;
        self.p.set_config_on(
            self.cupti,
            self.object,
            self.config,
            &mut fresh,
            USER_RANGE,
            USER_REPLAY,
            self.capacity,
        )?;
        Ok(std::mem::replace(self.image, fresh))
    }
}

/// Runs `f` on the session of `ctx` with its batch and calls; hands a closed image to the
/// evaluator.
fn with_batch<T>(
    state: &mut State,
    ctx: usize,
    cupti: &Cupti,
    f: impl FnOnce(&mut batch::Batch, &mut SessionCalls<'_>) -> (T, Option<batch::Closed<Vec<u8>>>),
) -> Option<T> {
    let s = state.sessions.get_mut(&ctx)?;
    let mut calls = SessionCalls {
        cupti,
        p: s.profiler,
        object: s.object,
        image: &mut s.image,
        config: &s.config,
        capacity: s.batch.capacity(),
        names: &s.range_names,
    };
    let (out, closed) = f(&mut s.batch, &mut calls);
    if let Some(closed) = closed {
        let job = evaluate::Job {
            closed,
            cupti: *cupti,
            profiler: s.profiler,
            host: s.host.0 as usize,
            metrics: state.info.metrics.clone(),
            spec: state.spec.clone(),
        };
        evaluate::submit(job);
    }
    Some(out)
}

/// Opens a user range for an instance of region `site` (its call site id: instances of one
/// name share the passes of a metric set that needs several) on the calling thread's current
/// context: sets the profiler up there if no launch did yet, `Start` when the batch is not
/// started, `PushRange`. `Ok(range number)`; `Err(reason)`: the instance reads NaN (counters
/// off, kernel mode, a region already open on this context, on this thread or another,
/// another region's pass set in progress, or a CUPTI error).
pub fn region_begin(site: u32) -> Result<u64, String> {
    step(0, || open_range(site, None))
}

/// Opens the range of an instance numbered `id` (`None`: the next number).
fn open_range(site: u32, id: Option<u64>) -> Result<u64, String> {
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
    if crate::per_thread::THREAD.with(|t| t.region_ctx.get()) != 0 {
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
    match session_of(state, ctx) {
        Ok(s) if s.mode != Mode::Region => {
            return Err(state.info.note.clone().unwrap_or_default());
        }
        Ok(_) => {}
        Err((e, permanent)) => {
            if permanent {
                fail(state, e.clone());
            }
            return Err(e);
        }
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
        // Before the range opens: the anchor's wait is not counted (once a second at most).
        crate::region_kernels::anchor(ctx);
    }
    let id = id.unwrap_or_else(|| NEXT_RANGE.fetch_add(1, Ordering::Relaxed));
    let busy = state
        .sessions
        .get(&(ctx as usize))
        .and_then(|s| s.batch.open_owner())
        .is_some();
    if rk != RegionKernels::On && !busy {
        step(2, || kernel_activity(&cupti, false));
    }
    let opened = with_batch(state, ctx as usize, &cupti, |b, calls| {
        let opened = step(4, || b.begin(calls, id, site, me));
        (opened, b.take_abandoned())
    })
    .unwrap_or_else(|| Err(batch::Refused("the profiler is not set up".into())));
    if rk == RegionKernels::Edges || (opened.is_err() && !busy && rk != RegionKernels::On) {
        step(3, || kernel_activity(&cupti, true));
    }
    match opened {
        Ok(()) => {
            crate::per_thread::THREAD.with(|t| t.region_ctx.set(ctx as usize));
            Ok(id)
        }
        Err(batch::Refused(e)) => {
            if busy {
                REGIONS_OVERLAPPED.fetch_add(1, Ordering::Relaxed);
            }
            Err(e)
        }
    }
}

/// Closes the range [`region_begin`] opened on this thread (`PopRange`; when the image is
/// full, `Stop`, `DecodeData` and a fresh image, the full one evaluated off this thread).
/// The instance's values arrive later, by its range number.
pub fn region_end() -> Result<(), String> {
    step(1, region_end_inner)
}

fn region_end_inner() -> Result<(), String> {
    let ctx = crate::per_thread::THREAD.with(|t| t.region_ctx.replace(0));
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
    let rk = region_kernels();
    if rk == RegionKernels::Edges {
        kernel_activity(&cupti, false);
    }
    let me = crate::tid();
    let ended = with_batch(state, ctx, &cupti, |b, calls| {
        match step(5, || b.end(calls, me)) {
            Ok(Some(closed)) => {
                // The pop filled the image (or completed a pass set): its close is timed apart.
                (Ok(()), Some(closed))
            }
            Ok(None) => (Ok(()), None),
            Err(batch::Refused(e)) => (Err(e), None),
        }
    })
    .unwrap_or_else(|| Err("the profiler is not set up".into()));
    if rk != RegionKernels::On {
        step(3, || kernel_activity(&cupti, true));
    }
    if ended.is_ok() {
        REGIONS_COUNTED.fetch_add(1, Ordering::Relaxed);
    }
    // The range's kernels (recorded from launch callbacks) go to the sinks outside the
    // profiler's lock (delivery takes the pipeline's).
    drop(guard);
    crate::region_kernels::resolve(false);
    ended
}

/// Closes the range [`region_begin`] opened on this thread and waits for its values (the
/// `GpuCounters` component, whose fields are written at the region's end): the image is closed
/// now and evaluated on this thread. A metric set of several passes gives values only to the
/// instance that completes a pass set; the others read NaN with the reason.
pub fn region_end_values(id: u64) -> Result<Vec<f64>, String> {
    evaluate::want(id);
    if let Err(e) = region_end() {
        let _ = evaluate::take_values(id);
        return Err(e);
    }
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let state = guard.as_mut().ok_or("GPU counters are off")?;
    let Some((cupti, _)) = *CUPTI.lock().unwrap_or_else(|e| e.into_inner()) else {
        return Err("CUPTI not loaded".into());
    };
    let ctx = crate::LOADED
        .get()
        .and_then(|l| l.driver.current_context())
        .map_or(0, |c| c as usize);
    with_batch(state, ctx, &cupti, |b, calls| {
        ((), step(6, || b.flush(calls)))
    });
    drop(guard);
    evaluate::drain();
    evaluate::take_values(id)
}

/// A context is about to be destroyed (its resource callback; at the latest cudart's exit
/// handler, which runs before the run's end): its batch is closed while the context lives.
pub(crate) fn on_context_destroying(ctx: *mut c_void) {
    if !REGION_REQUESTED.load(Ordering::Relaxed) || ctx.is_null() {
        return;
    }
    finish_context(ctx as usize);
    evaluate::drain();
}

/// Closes the batch of `ctx` (its image decoded, or an incomplete pass set reported), with
/// the context made current around the calls.
fn finish_context(ctx: usize) {
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let (Some(state), Some((cupti, _))) = (
        guard.as_mut(),
        *CUPTI.lock().unwrap_or_else(|e| e.into_inner()),
    ) else {
        return;
    };
    let Some(driver) = crate::LOADED.get().map(|l| &l.driver) else {
        return;
    };
    // A context already destroyed cannot be pushed: its open image is lost and its instances
    // read NaN ("never decoded") in the summary.
    let _ = driver.with_context(ctx as *mut c_void, || {
        with_batch(state, ctx, &cupti, |b, calls| {
            ((), step(6, || b.finish(calls)))
        });
    });
}

/// Registers [`at_exit`] once, when region mode's first session is set up: the CUDA
/// runtime's exit handlers were registered before (the context exists), so this one runs
/// before them, while the context can still be pushed and its image decoded (Metron's own end
/// of the run comes after them).
pub(super) fn close_at_exit() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: a plain extern "C" function with no arguments.
        if unsafe { libc::atexit(at_exit) } != 0 {
            eprintln!(
                "metron: GPU counters: atexit failed; open ranges are closed at Metron's own end"
            );
        }
    });
}

extern "C" fn at_exit() {
    // A panic must not unwind into libc's exit path.
    let _ = std::panic::catch_unwind(|| flush_regions(true));
}

/// Closes every session's image so its ranges are evaluated: at the end of the run (each
/// session's context made current around its calls) and when nothing is open. Waits for
/// the evaluations.
pub(crate) fn flush_regions(at_end: bool) {
    if !REGION_REQUESTED.load(Ordering::Relaxed) {
        return;
    }
    if at_end {
        let contexts: Vec<usize> = STATE
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|s| s.sessions.keys().copied().collect())
            .unwrap_or_default();
        for ctx in contexts {
            finish_context(ctx);
        }
    }
    evaluate::drain();
}

/// The call site number of Metron's warm-up range.
const WARM_UP_SITE: u32 = u32::MAX;

/// Runs Metron's warm-up `launch` inside a counted range of its own (number 0, never
/// delivered), then closes its image at once (one pass) or drops its pass (several), so
/// CUPTI's lazy first `Start`, `Stop` and `DecodeData` happen in the set-up.
pub(super) fn region_warm_up(launch: &dyn Fn() -> Result<(), String>) -> Result<(), String> {
    let open = open_range(WARM_UP_SITE, Some(0)).is_ok();
    let r = launch();
    if open {
        let _ = region_end_inner();
        let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
        let cupti = CUPTI.lock().unwrap_or_else(|e| e.into_inner()).map(|c| c.0);
        let ctx = crate::LOADED
            .get()
            .and_then(|l| l.driver.current_context())
            .map_or(0, |c| c as usize);
        if let (Some(state), Some(cupti)) = (guard.as_mut(), cupti) {
            with_batch(state, ctx, &cupti, |b, calls| match b.passes() {
                1 => ((), b.flush(calls)),
                _ => {
                    b.discard(calls);
                    ((), None)
                }
            });
        }
        drop(guard);
        evaluate::drain();
    }
    r
}
