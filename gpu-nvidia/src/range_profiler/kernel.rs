//! Kernel mode (the default): the profiler set up at context creation, the warm-up launch,
//! and the launch path: an auto range with kernel replay bracketing each launch (a gate per
//! context, one `Start`..`Stop` at a time), decoded into `kernels.csv` values by correlation id.

use super::*;

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
pub(super) const WARM_UP_CORRELATION: u32 = u32::MAX;

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
        region_warm_up(launch)
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
                s.batch.launched(crate::tid());
                return;
            }
            Ok(s) if graph && !s.user_ranges => {
                let why = launch_range::graph_refusal(s.passes);
                launch_nan(state, correlation, why);
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
    let mut user_ranges = false;
    let started = {
        let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
        let Some(state) = guard.as_mut() else {
            gate.release();
            return;
        };
        let cupti = CUPTI.lock().unwrap_or_else(|e| e.into_inner()).map(|c| c.0);
        match (cupti, state.sessions.get_mut(&(ctx as usize))) {
            (Some(cupti), Some(s)) => match if s.user_ranges {
                user_ranges = true;
                launch_range::begin(&cupti, s)
            } else {
                s.profiler.start_on(&cupti, s.object)
            } {
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
    let _ = HELD.try_with(|h| {
        h.set(Some(Box::new(Held {
            ctx: ctx as usize,
            gate,
            user_ranges,
            graph,
        })))
    });
    LAUNCHES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(correlation, (now, now));
}

/// What one profiled launch decoded: one range per kernel it ran, `(range name, values)`.
pub(super) type Ranges = Vec<(String, Vec<f64>)>;

/// Launch exit: `Stop`, `DecodeData`, the values of the launch's ranges (one per kernel:
/// a graph launch gives one per kernel node), then the gate is released.
pub fn after_launch(correlation: u32, now: u64) {
    let Some(Held {
        ctx,
        gate,
        user_ranges,
        graph,
    }) = HELD.try_with(|h| h.take()).ok().flatten().map(|held| *held)
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
                (Some(cupti), Some(s)) if user_ranges => {
                    launch_range::end(&cupti, s).map(|v| vec![(String::new(), v)])
                }
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
                    if graph {
                        launch_range::GRAPHS_COUNTED.fetch_add(1, Ordering::Relaxed);
                        let (_, values) = ranges.pop().expect("one range per launch");
                        metron::sinks::kernels_csv::record_launch_sum(correlation, values);
                    } else if ranges.len() == 1 {
                        let (_, values) = ranges.pop().expect("one range");
                        metron::sinks::kernels_csv::record_kernel_counters(correlation, values);
                    } else {
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
pub(super) fn stop_and_read(cupti: &Cupti, s: &mut Session) -> Result<Ranges, String> {
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
        s.reconfigure(cupti, AUTO_RANGE, KERNEL_REPLAY)?;
    }
    read
}

/// The range and replay modes of `mode` for a metric set of `passes` passes, for `SetConfig`.
pub(super) fn range_and_replay(mode: Mode, passes: usize) -> (i32, i32) {
    match mode {
        Mode::Kernel if launch_range::per_launch_user_ranges(passes) => (USER_RANGE, USER_REPLAY),
        Mode::Kernel => (AUTO_RANGE, KERNEL_REPLAY),
        Mode::Region => (USER_RANGE, USER_REPLAY),
    }
}
