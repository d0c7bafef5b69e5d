//! Kernel mode with one user range per launch (single-pass metric sets): how CUDA graph
//! launches are counted.
//!
//! CUPTI's auto range with kernel replay decodes no range for a `cudaGraphLaunch` and loses
//! the graph's activity records (H100, CUDA 13.0): kernel replay saves and restores memory
//! around one kernel, which a graph's nodes do not allow. A metric set that fits in one pass
//! needs no replay at all, so such sessions are configured with *user* ranges and user replay
//! from the start, and every launch — a kernel or a whole graph — is one range: `Start`,
//! `PushRange` at the launch's enter callback, `PopRange`, `Stop`, `DecodeData` and evaluation
//! at its exit (decoding waits for the range's work), then a fresh counter-data image for the
//! next `Start` (under user replay a new `Start` writes range 0 again). A kernel launch's range
//! is that kernel; a graph launch's range is the sum over its nodes, as `ncu --graph-profiling
//! graph` counts it (`kernels.csv` puts it on the launch's first kernel row).
//!
//! What did not work, measured on the H100 (CUDA 13.0): switching a
//! kernel-replay session to user ranges for a graph launch (`SetConfig` again: `PushRange`
//! fails with `CUPTI_ERROR_INVALID_PARAMETER`; to auto range with user replay: `Stop` fails with
//! `CUPTI_ERROR_UNKNOWN`), disabling and enabling the profiler object inside the launch callback
//! (the process crashes), and auto range with user replay throughout (CUPTI's own `WaitNs`
//! kernel is counted into the ranges). So graph nodes are not counted one by one.
//!
//! Kernels are recorded through CUPTI's serialized KERNEL kind for the whole run (switched once,
//! when the first such session is set up; CONCURRENT_KERNEL off): with CONCURRENT_KERNEL on,
//! CUPTI runs a `WaitNs` kernel of its own inside each user range and counts it (the KERNEL kind
//! left the values exact on the H100); switching the kinds around every launch instead made no
//! measurable difference there, so they are switched once. Metric sets of several passes keep kernel
//! replay (per kernel, exact), and their graph launches read NaN with the reason.

use super::*;

/// The range name of a launch's user range.
const LAUNCH_RANGE_NAME: &std::ffi::CStr = c"metron_launch";

/// Graph launches counted (one range each).
pub(super) static GRAPHS_COUNTED: AtomicU64 = AtomicU64::new(0);

/// Host time of each profiler step over all launches, ns (`metadata.json`
/// `gpu.counters.launch_range_steps_ns`): Start, PushRange, PopRange, Stop, DecodeData,
/// evaluation, and the fresh image with its SetConfig.
pub(super) static STEP_NS: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];
pub(super) const STEP_NAMES: [&str; 7] = [
    "start",
    "push",
    "pop",
    "stop",
    "decode",
    "evaluate",
    "image_and_config",
];

/// Runs `f` and adds its host time to step `i`.
fn timed<T>(i: usize, f: impl FnOnce() -> T) -> T {
    let t0 = crate::timestamp();
    let r = f();
    STEP_NS[i].fetch_add(crate::timestamp().saturating_sub(t0), Ordering::Relaxed);
    r
}

/// The steps' times for `metadata.json`.
pub(super) fn steps_json() -> Value {
    STEP_NAMES
        .iter()
        .zip(&STEP_NS)
        .map(|(n, v)| (n.to_string(), json!(v.load(Ordering::Relaxed))))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// Sessions whose metric set needs `passes` passes count each launch as a user range.
/// (Not with `METRON_GPU_KERNEL_REPLAY=on`.)
pub(super) fn per_launch_user_ranges(passes: usize) -> bool {
    static KERNEL_REPLAY: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let replay = *KERNEL_REPLAY.get_or_init(|| {
        std::env::var("METRON_GPU_KERNEL_REPLAY")
            .ok()
            .and_then(|v| metron::settings::parse_bool(&v))
            .unwrap_or(false)
    });
    passes == 1 && !replay
}

/// Why a graph launch on a kernel-replay session (a metric set of `passes` passes) is not
/// counted.
pub(super) fn graph_refusal(passes: usize) -> String {
    format!(
        "CUDA graph launch with a metric set of {passes} passes: kernel replay cannot replay \
         graph nodes, and user replay would launch the graph {passes} times (repeating the \
         program's work); metrics that fit in one pass are counted per graph launch"
    )
}

/// Kernel records from CUPTI's serialized KERNEL kind from now on (once per process).
pub(super) fn serialized_kernel_records(cupti: &Cupti) {
    static SWITCHED: std::sync::Once = std::sync::Once::new();
    SWITCHED.call_once(|| {
        kernel_activity(cupti, false);
        let _ = crate::sys::enable(cupti, crate::sys::kind::KERNEL);
    });
}

/// Opens the launch's range on `s` (launch enter, the gate held): `Start`, `PushRange`.
pub(super) fn begin(cupti: &Cupti, s: &mut Session) -> Result<(), String> {
    let p = s.profiler;
    let opened = timed(0, || p.start_on(cupti, s.object)).and_then(|_| {
        timed(1, || p.push_on(cupti, s.object, LAUNCH_RANGE_NAME)).inspect_err(|_| {
            let _ = p.stop_on(cupti, s.object);
        })
    });
    if opened.is_err() {
        let _ = fresh_image(cupti, s);
    }
    opened
}

/// Closes the launch's range (launch exit): its values (hardware metrics only); the session
/// gets a fresh image either way.
pub(super) fn end(cupti: &Cupti, s: &mut Session) -> Result<Vec<f64>, String> {
    let p = s.profiler;
    let read = (|| -> Result<Vec<f64>, String> {
        timed(2, || p.pop_on(cupti, s.object))?;
        let all_passes = timed(3, || p.stop_on(cupti, s.object))?;
        let dropped = timed(4, || p.decode_on(cupti, s.object))?;
        RANGES_DROPPED.fetch_add(dropped as u64, Ordering::Relaxed);
        let n = p.ranges_in(cupti, &s.image)?;
        if !all_passes {
            return Err("CUPTI wants more passes of this launch (user replay)".into());
        }
        match n {
            0 => Err(format!(
                "CUPTI decoded no range for this launch (dropped {dropped})"
            )),
            n => timed(5, || p.evaluate(cupti, s.host, &s.image, n - 1, &s.names)),
        }
    })();
    let restored = fresh_image(cupti, s);
    match (read, restored) {
        (Ok(v), Ok(())) => Ok(v),
        (Err(e), _) | (Ok(_), Err(e)) => Err(e),
    }
}

/// A fresh counter-data image for the next `Start`.
fn fresh_image(cupti: &Cupti, s: &mut Session) -> Result<(), String> {
    timed(6, || s.reconfigure(cupti, USER_RANGE, USER_REPLAY))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_pass_sets_count_launches_as_user_ranges() {
        assert!(per_launch_user_ranges(1));
        assert!(!per_launch_user_ranges(2));
        let why = graph_refusal(3);
        assert!(
            why.contains("3 passes") && why.contains("one pass"),
            "{why}"
        );
    }
}
