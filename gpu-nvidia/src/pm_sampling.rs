//! GPU metrics over time (CUPTI PM Sampling API, `METRON_GPU_PM_SAMPLING`,
//! `METRON_GPU_PM_INTERVAL`): SM throughput, DRAM read/write throughput, achieved occupancy,
//! tensor-pipe use... sampled at a fixed interval across the whole run, as Perfetto counter
//! tracks beside the kernel slices and as per-kernel / per-region mean and max.
//!
//! **Checked on the H100** (CUDA 13.0, docs/gpu-validation.md, issue 16): on `pm_mix` (copy and
//! FMA kernels with idle gaps) the DRAM tracks are high in the copies and near zero elsewhere,
//! the SM track the reverse, samples fall inside their kernel slices, and the copies' mean DRAM
//! bytes/s is within 1 % of bytes moved / kernel time, in every run. CUPTI keeps pointers to the
//! chip name, the counter-availability image and the config image it is given, so all three live
//! as long as sampling does (freed after set-up, `DecodeData` failed or crashed).
//!
//! - **Set-up** (once, at the first kernel launch, on the launching thread: the context
//!   exists then): `cuptiProfilerInitialize`, the device's PM-sampling counter availability,
//!   a profiler host object of type `PM_SAMPLING` for the whole list (when it is refused or needs
//!   more than one pass, each metric is checked in turn and an unknown one, or one that would
//!   need a second pass, is dropped with the reason), the config image (must be one pass),
//!   `cuptiPmSamplingEnable(device)`, `SetConfig` (interval in ns or in GPU cycles, a
//!   [`HW_BUFFER_BYTES`] hardware buffer), a counter-data image for [`MAX_SAMPLES`] samples
//!   (initialized once and kept as a pristine copy), `Start`.
//! - **Decode** (Metron's thread `metron-pm-sampling`, every [`DECODE_PERIOD_MS`] ms, never an
//!   application thread): `DecodeData` into the image, `GetCounterDataInfo`, then each completed
//!   sample's timestamps (`CounterDataGetSampleInfo`) and values
//!   (`cuptiProfilerHostEvaluateToGpuValues`) into buffers allocated at set-up; the image is
//!   reset by copying the pristine copy over it. Decoding repeats at once while CUPTI says the
//!   image was full. No allocation per sample: the batch of records handed to
//!   [`metron::gpu::submit`] has its capacity reserved at set-up.
//! - **End of the run** ([`finish`], from PM sampling's own exit handler, registered at set-up
//!   and so run before the CUDA libraries' exit handlers, while the context is alive): the
//!   decode thread returns after the image under way; the finishing thread decodes up to the
//!   moment the end began, then `Stop`, the rest up to that moment, `Disable`, the host objects'
//!   deinitialization and `cuptiProfilerDeInitialize` (`finished_cleanly` in `metadata.json`).
//! - **Clock.** PM samples carry GPU timestamps. At the first sample Metron checks which host
//!   clock they follow (CUPTI's timestamp callback, `CLOCK_MONOTONIC`, or CUPTI's default
//!   `CLOCK_REALTIME`) by their distance to both clocks read at that moment, and converts with
//!   the `CLOCK_REALTIME − CLOCK_MONOTONIC` offset when they are real time ([`TimeBase`]); the
//!   choice is in `metadata.json`.
//! - **Losses.** `DecodeData`'s `overflow` flag and `CUPTI_ERROR_OUT_OF_MEMORY` (hardware buffer
//!   overflowed), decodes that stopped on a full image, and evaluation errors are counted in
//!   `metadata.json` section `gpu_pm_sampling`.
//! - **Outputs.** Counter records ([`GpuKind::Counter`]: metric name, device, the sample's start
//!   and end, its value) go to the sinks: the Perfetto trace has one counter track per metric
//!   under the device's `GPU <n> <name> metrics` track. At the end of the run
//!   `gpu_pm_sampling.csv` has per kernel name and per region the mean (weighted by the time
//!   each sample overlaps the kernel) and max of each metric over the GPU time spent there
//!   ([`aggregate`]); the same rows are in `metadata.json`, in `summary.json`
//!   (`gpu_pm_sampling`) and as a section of `summary.txt`.
//! - **Not with** Range Profiler counters (`METRON_GPU_METRICS`) or PC sampling
//!   (`METRON_GPU_PC_SAMPLING`): they program the same performance monitors, so PM sampling is
//!   refused at start with the reason (stderr once, `metadata.json`).

use crate::sys::{Cupti, CUPTI_SUCCESS};
use crate::sys_pmsampling::{self as pm, CNames, Handle, PmApi};
use metron::gpu::{GpuKind, GpuRecord};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The metrics sampled by `METRON_GPU_PM_SAMPLING=on`, in order (names the H100's CUPTI
/// accepts for PM sampling; docs/gpu-validation.md, issue 16): DRAM bytes read and written per
/// second, SM instruction throughput (% of peak), tensor pipe active (%), DRAM throughput (% of
/// peak): one pass on GH100. (Achieved occupancy, `sm__warps_active.avg.pct_of_peak_sustained_elapsed`,
/// would need a second pass with them there; `dramc__read_throughput`/`dramc__write_throughput`
/// read about 1/80 of ncu's PmSampling values there, so the DRAM tracks are in bytes/s.)
pub const DEFAULT_METRICS: &[&str] = &[
    "dram__bytes_read.sum.per_second",
    "dram__bytes_write.sum.per_second",
    "sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
];
/// `METRON_GPU_PM_INTERVAL`'s default: 100 µs (10 kHz, as Nsight Systems' GPU metrics).
pub const DEFAULT_INTERVAL_NS: u64 = 100_000;
/// Samples per decode (the counter-data image's capacity).
pub const MAX_SAMPLES: u32 = 4096;
/// The decode thread's period.
pub const DECODE_PERIOD_MS: u64 = 20;
/// CUPTI's hardware buffer for the samples.
pub const HW_BUFFER_BYTES: usize = 256 << 20;
/// Devices sampled at most.
const MAX_DEVICES: usize = 16;

/// The interval as CUPTI takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interval {
    /// Nanoseconds (`GPU_TIME_INTERVAL`).
    Ns(u64),
    /// GPU cycles (`GPU_SYSCLK_INTERVAL`).
    Cycles(u64),
}

impl Interval {
    fn trigger(self) -> (i32, u64) {
        match self {
            Interval::Ns(n) => (pm::TRIGGER_TIME, n),
            Interval::Cycles(n) => (pm::TRIGGER_SYSCLK, n),
        }
    }

    fn to_json(self) -> Value {
        match self {
            Interval::Ns(n) => json!({"ns": n}),
            Interval::Cycles(n) => json!({"cycles": n}),
        }
    }
}

/// The settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Metric names, in track order.
    pub metrics: Vec<String>,
    /// Sampling interval.
    pub interval: Interval,
}

/// `METRON_GPU_PM_SAMPLING` and `METRON_GPU_PM_INTERVAL`: `Ok(None)` when off.
pub fn parse_settings(
    metrics: Option<&str>,
    interval: Option<&str>,
) -> Result<Option<Config>, String> {
    let m = metrics.map(str::trim).unwrap_or("");
    let metrics: Vec<String> = match m {
        "" | "off" | "0" | "false" | "no" => return Ok(None),
        "on" | "1" | "true" | "yes" | "default" => {
            DEFAULT_METRICS.iter().map(|s| s.to_string()).collect()
        }
        list => {
            let mut v: Vec<String> = Vec::new();
            for n in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                if n.contains(char::is_whitespace) {
                    return Err(format!(
                        "METRON_GPU_PM_SAMPLING: {n:?} is not a metric name (accepted: off, on, or a comma-separated list of CUPTI PM-sampling metrics)"
                    ));
                }
                let n = n.strip_prefix("pmsampling:").unwrap_or(n).to_string();
                if !v.contains(&n) {
                    v.push(n);
                }
            }
            v
        }
    };
    Ok(Some(Config {
        metrics,
        interval: parse_interval(interval)?,
    }))
}

/// `METRON_GPU_PM_INTERVAL`: `N` or `Nns` (ns), `Nus`, `Nms`, or `Ncycles` (GPU cycles).
pub fn parse_interval(raw: Option<&str>) -> Result<Interval, String> {
    let s = raw.map(str::trim).unwrap_or("");
    if s.is_empty() {
        return Ok(Interval::Ns(DEFAULT_INTERVAL_NS));
    }
    let bad = || {
        format!(
            "METRON_GPU_PM_INTERVAL: {s:?} is not an interval (accepted: N or Nns, Nus, Nms in time, Ncycles in GPU cycles; N > 0)"
        )
    };
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n: u64 = s[..digits].parse().map_err(|_| bad())?;
    if n == 0 {
        return Err(bad());
    }
    let unit = s[digits..].trim();
    Ok(match unit {
        "" | "ns" => Interval::Ns(n),
        "us" => Interval::Ns(n.checked_mul(1_000).ok_or_else(bad)?),
        "ms" => Interval::Ns(n.checked_mul(1_000_000).ok_or_else(bad)?),
        "cycles" | "cycle" | "c" => Interval::Cycles(n),
        _ => return Err(bad()),
    })
}

/// Why PM sampling cannot run beside the other settings (`None`: it can).
pub fn conflict(counters_on: bool, pc_sampling_on: bool) -> Option<String> {
    let other = match (counters_on, pc_sampling_on) {
        (true, true) => "METRON_GPU_METRICS and METRON_GPU_PC_SAMPLING are set",
        (true, false) => "METRON_GPU_METRICS is set",
        (false, true) => "METRON_GPU_PC_SAMPLING is set",
        (false, false) => return None,
    };
    Some(format!(
        "GPU PM sampling is off: {other}; the Range Profiler and PC sampling use the same performance monitors as PM sampling, which cannot run together on one context (unset the others to sample metrics over time)"
    ))
}

/// How GPU sample timestamps become Metron's clock (`CLOCK_MONOTONIC` ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeBase {
    /// Added to a GPU timestamp.
    pub offset: i64,
    /// `"monotonic"` or `"realtime"`.
    pub domain: &'static str,
}

impl TimeBase {
    /// From a just-decoded sample's end `ts` and both host clocks read now: the domain `ts` is
    /// nearest to (a sample ends shortly before it is decoded).
    pub fn detect(ts: u64, mono_now: u64, real_now: u64) -> TimeBase {
        let d_mono = (ts as i128 - mono_now as i128).unsigned_abs();
        let d_real = (ts as i128 - real_now as i128).unsigned_abs();
        if d_mono <= d_real {
            TimeBase {
                offset: 0,
                domain: "monotonic",
            }
        } else {
            TimeBase {
                offset: (mono_now as i128 - real_now as i128) as i64,
                domain: "realtime",
            }
        }
    }

    /// `ts` on Metron's clock.
    #[inline]
    pub fn convert(self, ts: u64) -> u64 {
        (ts as i128 + self.offset as i128).max(0) as u64
    }
}

fn realtime_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// What one decode pass reads: the part of CUPTI a drain needs (a trait so the drain logic is
/// tested without a GPU).
pub trait SampleSource {
    /// `DecodeData` into the image: `(CUPTI result, stop reason, overflow flag)`.
    fn decode(&mut self) -> (i32, i32, bool);
    /// Completed samples in the image.
    fn completed(&mut self) -> Result<usize, String>;
    /// Sample `i`'s `(start, end)` GPU timestamps.
    fn times(&mut self, i: usize) -> Result<(u64, u64), String>;
    /// Sample `i`'s values, one per metric.
    fn values(&mut self, i: usize, out: &mut [f64]) -> Result<(), String>;
    /// Resets the image (copies the pristine one over it).
    fn reset(&mut self);
}

/// Loss and volume counts (for `metadata.json`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Samples decoded.
    pub samples: u64,
    /// Decode passes.
    pub decodes: u64,
    /// Decodes where CUPTI reported the hardware buffer overflowed (samples lost).
    pub overflows: u64,
    /// Decodes that stopped because the image was full (decoded again at once: no loss).
    pub image_full: u64,
    /// Samples whose timestamps or values CUPTI could not give (skipped).
    pub sample_errors: u64,
    /// Decode calls that failed.
    pub decode_errors: u64,
    /// The latest sample end decoded, Metron's clock (0: none yet).
    pub last_end_ns: u64,
}

/// Drains `src` into `batch` (counter records: one per sample and metric, reserved capacity)
/// and hands each full image to `submit`; `values` has one slot per metric. A full image is
/// decoded again at once unless `enough(counts)` says to leave the rest to a later call.
#[allow(clippy::too_many_arguments)]
pub fn drain<S: SampleSource>(
    src: &mut S,
    device: u32,
    names: &[Arc<str>],
    base: &mut Option<TimeBase>,
    clocks: &mut dyn FnMut() -> (u64, u64),
    values: &mut [f64],
    batch: &mut Vec<GpuRecord>,
    counts: &mut Counts,
    submit: &mut dyn FnMut(&[GpuRecord]),
    enough: &dyn Fn(&Counts) -> bool,
) {
    // Bounded: a full image is drained again at once, but never forever.
    for _ in 0..64 {
        let (r, stop, overflow) = src.decode();
        counts.decodes += 1;
        if overflow || r == pm::ERROR_OUT_OF_MEMORY {
            counts.overflows += 1;
        }
        if r != CUPTI_SUCCESS {
            counts.decode_errors += 1;
            return;
        }
        let n = match src.completed() {
            Ok(n) => n,
            Err(_) => {
                counts.decode_errors += 1;
                return;
            }
        };
        for i in 0..n {
            let Ok((start, end)) = src.times(i) else {
                counts.sample_errors += 1;
                continue;
            };
            if src.values(i, values).is_err() {
                counts.sample_errors += 1;
                continue;
            }
            let tb = *base.get_or_insert_with(|| {
                let (mono, real) = clocks();
                TimeBase::detect(end, mono, real)
            });
            counts.samples += 1;
            counts.last_end_ns = counts.last_end_ns.max(tb.convert(end));
            for (m, name) in names.iter().enumerate() {
                let mut rec = GpuRecord::new(GpuKind::Counter, name.clone());
                rec.start_ns = tb.convert(start);
                rec.end_ns = tb.convert(end);
                rec.device = device;
                rec.value = values[m];
                batch.push(rec);
            }
        }
        if !batch.is_empty() {
            submit(batch);
            batch.clear();
        }
        src.reset();
        if stop != pm::STOP_COUNTER_DATA_FULL {
            return;
        }
        counts.image_full += 1;
        if enough(counts) {
            return;
        }
    }
}

/// One device's sampler.
struct Device {
    index: u32,
    object: Handle,
    image: Vec<u8>,
    pristine: Vec<u8>,
}

/// The live sampler: CUPTI, the host object, the devices and the preallocated buffers.
struct Sampler {
    api: PmApi,
    cupti: Cupti,
    host: Handle,
    /// Host objects of the metric trials, destroyed at the end (see `setup`).
    spare_hosts: Vec<Handle>,
    /// The chip name, counter availability image and config image given to CUPTI at set-up,
    /// alive as long as sampling is: CUPTI may keep pointers to them (NVIDIA's sample keeps
    /// all three for the whole run). Freed after set-up, DecodeData failed with
    /// `CUPTI_ERROR_UNKNOWN` or crashed on the H100.
    _given: (std::ffi::CString, Vec<u8>, Vec<u8>),
    names: CNames,
    tracks: Vec<Arc<str>>,
    devices: Vec<Device>,
    values: Vec<f64>,
    batch: Vec<GpuRecord>,
    base: Option<TimeBase>,
    counts: Counts,
    stopped: bool,
}

struct CuptiSource<'a> {
    api: &'a PmApi,
    cupti: &'a Cupti,
    host: Handle,
    names: &'a CNames,
    dev: &'a mut Device,
}

static DEBUG_DECODES: AtomicU64 = AtomicU64::new(0);
/// The decode thread is inside `cuptiPmSamplingDecodeData` (which did not return on the H100).
static IN_DECODE: AtomicBool = AtomicBool::new(false);

fn debug_decode() -> bool {
    DEBUG_DECODES.load(Ordering::Relaxed) < 6 || STOP.load(Ordering::Relaxed)
}

impl SampleSource for CuptiSource<'_> {
    fn decode(&mut self) -> (i32, i32, bool) {
        if debug_decode() {
            debug("decode: calling DecodeData");
        }
        IN_DECODE.store(true, Ordering::Release);
        let r = self.api.decode_into(self.dev.object, &mut self.dev.image);
        IN_DECODE.store(false, Ordering::Release);
        if debug_decode() {
            debug(&format!(
                "decode: result {} stop {} overflow {}",
                r.0, r.1, r.2
            ));
        }
        (r.0, r.1, r.2)
    }
    fn completed(&mut self) -> Result<usize, String> {
        let r = self
            .api
            .data_info_of(self.cupti, &self.dev.image)
            .map(|(t, p, c)| {
                if debug_decode() {
                    debug(&format!("decode: total {t} populated {p} completed {c}"));
                }
                c
            });
        DEBUG_DECODES.fetch_add(1, Ordering::Relaxed);
        r
    }
    fn times(&mut self, i: usize) -> Result<(u64, u64), String> {
        let r = self
            .api
            .sample_times(self.cupti, self.dev.object, &self.dev.image, i);
        if i == 0 && debug_decode() {
            debug(&format!(
                "sample 0: {r:?}, monotonic now {}, realtime now {}",
                metron::clock::monotonic_ns(),
                realtime_ns()
            ));
        }
        r
    }
    fn values(&mut self, i: usize, out: &mut [f64]) -> Result<(), String> {
        self.api
            .evaluate_into(self.cupti, self.host, &self.dev.image, i, self.names, out)
    }
    fn reset(&mut self) {
        self.dev.image.copy_from_slice(&self.dev.pristine);
    }
}

impl Sampler {
    /// Decodes every device; `enough`: see [`drain`].
    fn drain_all(&mut self, enough: &dyn Fn(&Counts) -> bool) {
        let Sampler {
            api,
            cupti,
            host,
            names,
            tracks,
            devices,
            values,
            batch,
            base,
            counts,
            ..
        } = self;
        for dev in devices.iter_mut() {
            let index = dev.index;
            let mut src = CuptiSource {
                api,
                cupti,
                host: *host,
                names,
                dev,
            };
            drain(
                &mut src,
                index,
                tracks,
                base,
                &mut || (metron::clock::monotonic_ns(), realtime_ns()),
                values,
                batch,
                counts,
                &mut |b| metron::gpu::submit(b),
                enough,
            );
        }
    }
}

/// The decode thread's stack.
const DECODE_STACK_BYTES: usize = 64 << 20;

/// Settings read at start (`None`: off or refused).
static CONFIG: Mutex<Option<(Config, Cupti, String)>> = Mutex::new(None);
/// Set-up still to do at the first launch.
static PENDING: AtomicBool = AtomicBool::new(false);
static SAMPLER: Mutex<Option<Sampler>> = Mutex::new(None);
static THREAD: Mutex<Option<std::thread::JoinHandle<()>>> = Mutex::new(None);
static STOP: AtomicBool = AtomicBool::new(false);
/// The end of the run stopped, decoded everything and disabled sampling.
static FINISHED_CLEANLY: AtomicBool = AtomicBool::new(false);
static SETUP_NS: AtomicU64 = AtomicU64::new(0);
/// Why it is off or what went wrong (refusal, set-up errors, dropped metrics).
static NOTES: Mutex<Vec<String>> = Mutex::new(Vec::new());
static REFUSED: Mutex<Option<String>> = Mutex::new(None);
static FINAL: Mutex<Option<Value>> = Mutex::new(None);
static ACTIVE_METRICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn note(s: String) {
    eprintln!("metron: {s}");
    NOTES.lock().unwrap_or_else(|e| e.into_inner()).push(s);
}

/// Reads the settings at start (no CUDA call). `counters_on`/`pc_on`: the Range Profiler or
/// PC sampling was asked for. Returns true when PM sampling will set up at the first launch.
pub fn configure(cupti: &Cupti, cupti_path: &str, counters_on: bool, pc_on: bool) -> bool {
    let cfg = match parse_settings(
        std::env::var("METRON_GPU_PM_SAMPLING").ok().as_deref(),
        std::env::var("METRON_GPU_PM_INTERVAL").ok().as_deref(),
    ) {
        Ok(Some(c)) => c,
        Ok(None) => return false,
        Err(e) => {
            note(format!("GPU PM sampling is off: {e}"));
            *REFUSED.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
            return false;
        }
    };
    if let Some(why) = conflict(counters_on, pc_on) {
        note(why.clone());
        *REFUSED.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
        return false;
    }
    *CONFIG.lock().unwrap_or_else(|e| e.into_inner()) = Some((cfg, *cupti, cupti_path.into()));
    PENDING.store(true, Ordering::Release);
    true
}

/// `cuptiProfilerInitialize`.
fn profiler_initialize(api: &PmApi, cupti: &Cupti) -> Result<(), String> {
    let mut ip = <crate::sys_profiler::InitializeParams as crate::sys_profiler::Params>::new();
    // SAFETY: an initialized parameter struct.
    let r = unsafe { (api.prof.profiler_initialize)(&mut ip) };
    if r != CUPTI_SUCCESS {
        return Err(format!(
            "cuptiProfilerInitialize failed: {}",
            cupti.result_string(r)
        ));
    }
    Ok(())
}

/// The one-time set-up is still to be done.
pub fn pending() -> bool {
    PENDING.load(Ordering::Relaxed)
}

/// At a context's creation, or else a launch's enter (the application thread): the one-time
/// set-up.
#[inline]
pub fn before_launch(devices: usize, ctx: *mut std::ffi::c_void, push: Option<PushCtx>) {
    if PENDING.load(Ordering::Relaxed) && PENDING.swap(false, Ordering::AcqRel) {
        let t0 = metron::clock::monotonic_ns();
        setup(devices.clamp(1, MAX_DEVICES), ctx as usize, push);
        SETUP_NS.store(metron::clock::monotonic_ns() - t0, Ordering::Relaxed);
    }
}

/// `cuCtxPushCurrent`: the decode thread makes the launching context current (CUPTI's
/// `DecodeData` hung or failed with `CUPTI_ERROR_UNKNOWN` on a thread with no context).
pub type PushCtx = unsafe extern "C" fn(*mut std::ffi::c_void) -> crate::sys::CuResult;

fn setup(n_devices: usize, ctx: usize, push: Option<PushCtx>) {
    let Some((cfg, cupti, path)) = CONFIG.lock().unwrap_or_else(|e| e.into_inner()).clone() else {
        return;
    };
    let fail = |e: String| note(format!("GPU PM sampling is off: {e}"));
    let handle = match crate::sys::dlopen(&path, true)
        .or_else(|_| crate::sys::dlopen("libcupti.so.13", true))
    {
        Ok(h) => h,
        Err(e) => return fail(format!("libcupti not reachable ({e})")),
    };
    let api = match PmApi::load(handle) {
        Ok(a) => a,
        Err(e) => {
            return fail(format!(
                "this CUPTI has no PM sampling API (CUDA 12.6+): {e}"
            ))
        }
    };
    // cuptiProfilerInitialize (called here, after the context exists, it works on the H100;
    // inside `InitializeInjection`, during cuInit, it failed with CUPTI_ERROR_UNKNOWN).
    if let Err(e) = profiler_initialize(&api, &cupti) {
        return fail(e);
    }
    let chip = match profiler_chip(&api, &cupti) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let chip_c = match std::ffi::CString::new(chip.clone()) {
        Ok(c) => c,
        Err(_) => return fail("chip name with NUL".into()),
    };
    let avail = match api.counter_availability(&cupti, 0) {
        Ok(a) => a,
        Err(e) => return fail(e),
    };
    // The whole list in one host object first, as NVIDIA's sample does; that object is the one
    // kept. Only when the list is refused or needs more than one pass are metrics added one at a
    // time: an unknown one, or one that would need a second pass with those before it, is
    // dropped with the reason and the rest go on. The trial host objects are kept until the end
    // of the run: on the H100, destroying them before sampling went with DecodeData failing
    // (CUPTI_ERROR_UNKNOWN) or crashing (docs/gpu-validation.md, issue 16).
    let mut spare_hosts: Vec<Handle> = Vec::new();
    let try_set =
        |set: &[String], spare: &mut Vec<Handle>| -> Result<(Handle, Vec<u8>, usize), String> {
            let h = api.host_init(&cupti, &chip_c, &avail)?;
            match CNames::new(set).and_then(|n| api.config_image(&cupti, h, &n)) {
                Ok((config, passes)) => Ok((h, config, passes)),
                Err(e) => {
                    spare.push(h);
                    Err(e)
                }
            }
        };
    let whole = try_set(&cfg.metrics, &mut spare_hosts);
    let (metrics, host, config) = match whole {
        Ok((h, config, 1)) => (cfg.metrics.clone(), h, config),
        other => {
            if let Ok((h, ..)) = other {
                spare_hosts.push(h);
            }
            let mut metrics: Vec<String> = Vec::new();
            for m in &cfg.metrics {
                let mut set = metrics.clone();
                set.push(m.clone());
                match try_set(&set, &mut spare_hosts) {
                    Ok((h, _, p)) => {
                        spare_hosts.push(h);
                        if p == 1 {
                            metrics.push(m.clone());
                        } else if metrics.is_empty() {
                            note(format!(
                                "GPU PM sampling: metric {m} dropped (it needs {p} passes; PM sampling takes one)"
                            ));
                        } else {
                            note(format!(
                                "GPU PM sampling: metric {m} dropped (with {} it needs {p} passes; PM sampling takes one)",
                                metrics.join(", ")
                            ));
                        }
                    }
                    Err(e) => note(format!(
                        "GPU PM sampling: metric {m} dropped ({e}); PM-sampling metrics of {chip} are listed by `ncu --query-metrics-collection pmsampling`"
                    )),
                }
            }
            if metrics.is_empty() {
                return fail("none of the metrics is accepted for PM sampling".into());
            }
            match try_set(&metrics, &mut spare_hosts) {
                Ok((h, config, 1)) => (metrics, h, config),
                Ok((h, _, passes)) => {
                    spare_hosts.push(h);
                    return fail(format!(
                        "the metrics need {passes} passes; PM sampling takes one (sample fewer metrics)"
                    ));
                }
                Err(e) => return fail(e),
            }
        }
    };
    let names = match CNames::new(&metrics) {
        Ok(n) => n,
        Err(e) => return fail(e),
    };
    let (trigger, interval) = cfg.interval.trigger();
    let mut devices = Vec::new();
    for d in 0..n_devices {
        let hw = HW_BUFFER_BYTES;
        let dev = (|| {
            let obj = api.enable_on(&cupti, d)?;
            api.set_config_on(&cupti, obj, &config, hw, interval, trigger)?;
            let size = api.data_size_for(&cupti, obj, &names, MAX_SAMPLES)?;
            let mut image = vec![0u8; size];
            api.data_init_on(&cupti, obj, &mut image)?;
            let pristine = image.clone();
            api.object_call(&cupti, obj, 0)?;
            debug(&format!(
                "device {d}: image {size} bytes, hw buffer {hw}, interval {interval} trigger {trigger}"
            ));
            Ok::<_, String>(Device {
                index: d as u32,
                object: obj,
                image,
                pristine,
            })
        })();
        match dev {
            Ok(dev) => devices.push(dev),
            Err(e) => note(format!("GPU PM sampling: device {d}: {e}")),
        }
    }
    if devices.is_empty() {
        return fail("no device could be sampled".into());
    }
    debug(&format!(
        "started on {} device(s): {}",
        devices.len(),
        metrics.join(",")
    ));
    let tracks: Vec<Arc<str>> = metrics.iter().map(|m| Arc::from(m.as_str())).collect();
    *ACTIVE_METRICS.lock().unwrap_or_else(|e| e.into_inner()) = metrics.clone();
    let n = metrics.len();
    *SAMPLER.lock().unwrap_or_else(|e| e.into_inner()) = Some(Sampler {
        api,
        cupti,
        host,
        spare_hosts,
        _given: (chip_c, avail, config),
        names,
        tracks,
        devices,
        values: vec![0.0; n],
        batch: Vec::with_capacity(MAX_SAMPLES as usize * n),
        base: None,
        counts: Counts::default(),
        stopped: false,
    });
    let t = std::thread::Builder::new()
        .name("metron-pm-sampling".into())
        // CUPTI's DecodeData runs deep on its caller's stack: on Rust's 2 MiB default it
        // crashed (NVIDIA's sample, on an 8 MiB pthread stack, did not). Address space only.
        .stack_size(DECODE_STACK_BYTES)
        .spawn(move || {
            if let Some(push) = push {
                // SAFETY: ctx is the context of the launch that set sampling up, alive while
                // the process runs (the thread stops before the context is destroyed).
                let r = unsafe { push(ctx as *mut std::ffi::c_void) };
                debug(&format!("decode thread: cuCtxPushCurrent -> {r}"));
            }
            // Decode first, then wait: NVIDIA's sample decodes from the moment sampling starts
            // (tests/cuda/pm_probe.cu), before samples pile up in the hardware buffer.
            while !STOP.load(Ordering::Acquire) {
                if let Some(s) = SAMPLER.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
                    if !s.stopped {
                        // At the end, the thread that ends the run decodes what is left:
                        // this one returns after the image under way.
                        s.drain_all(&|_| STOP.load(Ordering::Acquire));
                    }
                }
                std::thread::park_timeout(std::time::Duration::from_millis(DECODE_PERIOD_MS));
            }
        });
    // Registered after the CUDA libraries' own exit handlers (the context exists now), so it
    // runs before them: sampling stops and is decoded while the driver is still up (decoding
    // from Metron's own, earlier-registered handler ended the process on the H100).
    // SAFETY: a plain extern "C" function with no arguments.
    if unsafe { libc::atexit(at_exit) } != 0 {
        note("GPU PM sampling: atexit failed; samples are decoded at Metron's own exit".into());
    }
    match t {
        Ok(t) => *THREAD.lock().unwrap_or_else(|e| e.into_inner()) = Some(t),
        Err(e) => note(format!(
            "GPU PM sampling: decode thread not started ({e}); samples are read at the end"
        )),
    }
}

fn profiler_chip(api: &PmApi, cupti: &Cupti) -> Result<String, String> {
    let mut p = <crate::sys_profiler::GetChipNameParams as crate::sys_profiler::Params>::new();
    p.device_index = 0;
    // SAFETY: an initialized parameter struct.
    let r = unsafe { (api.prof.device_get_chip_name)(&mut p) };
    if r != CUPTI_SUCCESS || p.chip_name.is_null() {
        return Err(format!(
            "cuptiDeviceGetChipName failed: {}",
            cupti.result_string(r)
        ));
    }
    // SAFETY: CUPTI returned a NUL-terminated static string.
    Ok(unsafe { std::ffi::CStr::from_ptr(p.chip_name) }
        .to_string_lossy()
        .into_owned())
}

/// `METRON_GPU_PM_DEBUG`: the set-up and end steps on stderr.
fn debug(what: &str) {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if *ON.get_or_init(|| std::env::var_os("METRON_GPU_PM_DEBUG").is_some()) {
        eprintln!("metron: pm sampling: {what}");
    }
}

extern "C" fn at_exit() {
    debug("exit handler");
    // A panic must not unwind into libc's exit path.
    let _ = std::panic::catch_unwind(finish);
}

/// A resource callback: sampling stops when a context is about to be destroyed (at the latest,
/// cudart's own exit handler), while it is still alive.
pub fn on_resource(cbid: u32) {
    if cbid == crate::sys_pcsampling::CBID_CONTEXT_DESTROY_STARTING {
        debug("context destroy starting");
        finish();
    }
}

/// How long the end of the run waits for the decode thread to return from the decode under
/// way (one image of [`MAX_SAMPLES`] samples took about 100 ms on the H100). Shorter than the
/// crash handler's wait, so a crash inside CUPTI on the decode thread still writes the run.
const FINISH_WAIT_MS: u64 = 3_000;

/// End of the run (PM sampling's own exit handler, which runs before the CUDA libraries' exit
/// handlers; or the backend's final flush, or a context's destruction, whichever comes first):
/// the decode thread returns after the image under way (waited for, bounded); this thread
/// decodes everything sampled so far while sampling still runs, then `Stop`, decodes again
/// until CUPTI has nothing left, then `Disable`, the host objects' deinitialization and
/// `cuptiProfilerDeInitialize`, as NVIDIA's `pm_sampling` sample ends. (Calling `Stop` first,
/// as the sample does while its decode thread decodes, lost the last 1 to 5 ms of samples in 3
/// of 5 runs on the H100: what was not decoded when `Stop` came was gone.) Never called with
/// Metron's pipeline lock held (the decode thread may be waiting for it in `submit`).
pub fn finish() {
    if STOP.swap(true, Ordering::AcqRel) {
        return;
    }
    let t0 = metron::clock::monotonic_ns();
    let ms = |t: u64| (metron::clock::monotonic_ns() - t) as f64 / 1e6;
    debug(&format!(
        "finish on thread {} (decode under way: {})",
        crate::sys::gettid(),
        IN_DECODE.load(Ordering::Acquire)
    ));
    if let Some(t) = THREAD.lock().unwrap_or_else(|e| e.into_inner()).take() {
        t.thread().unpark();
        let until = std::time::Instant::now() + std::time::Duration::from_millis(FINISH_WAIT_MS);
        while !t.is_finished() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        if !t.is_finished() {
            // Calling CUPTI again while it is inside DecodeData is not safe; leave it.
            note(format!(
                "GPU PM sampling: the decode thread did not return from CUPTI within {} s at the end of the run; the last samples are not decoded",
                FINISH_WAIT_MS / 1000
            ));
            return;
        }
        let _ = t.join();
        debug(&format!("finish: decode thread joined ({:.1} ms)", ms(t0)));
    }
    let mut g = SAMPLER.lock().unwrap_or_else(|e| e.into_inner());
    let Some(s) = g.as_mut() else { return };
    if s.stopped {
        return;
    }
    // Everything sampled until now, while sampling still runs. Decoding is slower than sampling
    // at short intervals (about 70 µs per sample of 5 metrics on the H100, against a 20 µs
    // interval), so samples taken after this point, during Metron's own end, are not waited
    // for: the drain stops at the first image that reaches `until`.
    let until = metron::clock::monotonic_ns();
    let reached = |c: &Counts| c.last_end_ns >= until;
    s.drain_all(&reached);
    debug(&format!(
        "finish: decoded before Stop ({:.1} ms), {} samples",
        ms(t0),
        s.counts.samples
    ));
    for d in &s.devices {
        if let Err(e) = s.api.object_call(&s.cupti, d.object, 1) {
            NOTES.lock().unwrap_or_else(|e| e.into_inner()).push(e);
        }
    }
    // After Stop the hardware buffer only drains: decode until a pass brings nothing new or
    // the samples reach `until`.
    for _ in 0..16 {
        if reached(&s.counts) {
            break;
        }
        let before = s.counts.samples;
        s.drain_all(&reached);
        if s.counts.samples == before {
            break;
        }
    }
    s.stopped = true;
    debug(&format!(
        "finish: stopped and decoded ({:.1} ms), {} samples",
        ms(t0),
        s.counts.samples
    ));
    for d in &s.devices {
        if let Err(e) = s.api.object_call(&s.cupti, d.object, 2) {
            NOTES.lock().unwrap_or_else(|e| e.into_inner()).push(e);
        }
    }
    s.api.host_deinit(&s.cupti, s.host);
    for &h in &s.spare_hosts {
        s.api.host_deinit(&s.cupti, h);
    }
    if let Err(e) = s.api.prof.deinitialize(&s.cupti) {
        NOTES.lock().unwrap_or_else(|e| e.into_inner()).push(e);
    }
    FINISHED_CLEANLY.store(true, Ordering::Release);
    debug(&format!("finish: disabled ({:.1} ms)", ms(t0)));
}

/// Registers the sink and the metadata section (after `metron::init`).
pub fn register() {
    let asked = std::env::var("METRON_GPU_PM_SAMPLING")
        .is_ok_and(|v| !matches!(v.trim(), "" | "off" | "0" | "false" | "no"));
    if PENDING.load(Ordering::Acquire) {
        metron::add_sink(Box::new(PmSink::default()));
    }
    if asked {
        metron::add_metadata_section("gpu_pm_sampling", metadata);
    }
}

/// The `gpu_pm_sampling` section of `metadata.json`.
pub fn metadata() -> Value {
    let cfg = CONFIG.lock().unwrap_or_else(|e| e.into_inner()).clone();
    // try_lock: a decode stuck in CUPTI holds the sampler; metadata.json is written anyway.
    let s = match SAMPLER.try_lock() {
        Ok(g) => g,
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => {
            return json!({"enabled": true, "note": "the decode thread was still inside CUPTI at the end", "notes": *NOTES.lock().unwrap_or_else(|e| e.into_inner())})
        }
    };
    let counts = s.as_ref().map(|s| s.counts).unwrap_or_default();
    json!({
        "enabled": s.is_some(),
        "refused": *REFUSED.lock().unwrap_or_else(|e| e.into_inner()),
        "notes": *NOTES.lock().unwrap_or_else(|e| e.into_inner()),
        "metrics_asked": cfg.as_ref().map(|c| c.0.metrics.clone()),
        "metrics": *ACTIVE_METRICS.lock().unwrap_or_else(|e| e.into_inner()),
        "interval": cfg.as_ref().map(|c| c.0.interval.to_json()),
        "devices": s.as_ref().map(|s| s.devices.iter().map(|d| d.index).collect::<Vec<_>>()),
        "timestamp_domain": s.as_ref().and_then(|s| s.base).map(|b| b.domain),
        "timestamp_offset_ns": s.as_ref().and_then(|s| s.base).map(|b| b.offset),
        "samples": counts.samples,
        "decodes": counts.decodes,
        "hardware_buffer_overflows": counts.overflows,
        "image_full_decodes": counts.image_full,
        "sample_errors": counts.sample_errors,
        "decode_errors": counts.decode_errors,
        "hardware_buffer_bytes": HW_BUFFER_BYTES,
        "max_samples_per_decode": MAX_SAMPLES,
        "setup_ms": SETUP_NS.load(Ordering::Relaxed) as f64 / 1e6,
        "finished_cleanly": FINISHED_CLEANLY.load(Ordering::Acquire),
        "summary": *FINAL.lock().unwrap_or_else(|e| e.into_inner()),
    })
}

/// One recorded PM sample: its start and end GPU timestamps and one value per metric, as
/// `cuptiPmSamplingCounterDataGetSampleInfo` and `cuptiProfilerHostEvaluateToGpuValues` gave
/// them.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedSample {
    /// Start timestamp (GPU clock as CUPTI reports it).
    pub start: u64,
    /// End timestamp.
    pub end: u64,
    /// One value per metric, in the metric order.
    pub values: Vec<f64>,
}

/// Recorded decodes as a [`SampleSource`]: one image per `decode`, all but the last full.
struct Recorded {
    images: Vec<Vec<RecordedSample>>,
    at: usize,
}

impl SampleSource for Recorded {
    fn decode(&mut self) -> (i32, i32, bool) {
        self.at += 1;
        let stop = if self.at < self.images.len() {
            pm::STOP_COUNTER_DATA_FULL
        } else {
            pm::STOP_END_OF_RECORDS
        };
        (CUPTI_SUCCESS, stop, false)
    }
    fn completed(&mut self) -> Result<usize, String> {
        Ok(self.images.get(self.at - 1).map_or(0, Vec::len))
    }
    fn times(&mut self, i: usize) -> Result<(u64, u64), String> {
        let s = &self.images[self.at - 1][i];
        Ok((s.start, s.end))
    }
    fn values(&mut self, i: usize, out: &mut [f64]) -> Result<(), String> {
        let v = &self.images[self.at - 1][i].values;
        if v.len() != out.len() {
            return Err(format!("{} values for {} metrics", v.len(), out.len()));
        }
        out.copy_from_slice(v);
        Ok(())
    }
    fn reset(&mut self) {}
}

/// Feeds recorded PM samples through the decode path of a real run ([`drain`]: the time base,
/// one counter record per sample and metric, the preallocated batch) into the sinks, and
/// registers the end-of-run summary (`gpu_pm_sampling.csv`) for `metrics` on `device`: for
/// testing the outputs without a GPU. `images`: the samples as successive `DecodeData` calls
/// returned them; `clocks`: `(CLOCK_MONOTONIC, CLOCK_REALTIME)` at the first decode (which
/// clock the timestamps follow is decided from them). Call it after `metron::init`; it does
/// nothing when PM sampling runs for real. Returns the counts a run puts in `metadata.json`.
pub fn replay(
    device: u32,
    metrics: &[String],
    images: Vec<Vec<RecordedSample>>,
    clocks: (u64, u64),
) -> Counts {
    let mut counts = Counts::default();
    if SAMPLER.lock().unwrap_or_else(|e| e.into_inner()).is_some() {
        return counts;
    }
    *ACTIVE_METRICS.lock().unwrap_or_else(|e| e.into_inner()) = metrics.to_vec();
    metron::add_sink(Box::new(PmSink::default()));
    let names: Vec<Arc<str>> = metrics.iter().map(|m| Arc::from(m.as_str())).collect();
    let most = images.iter().map(Vec::len).max().unwrap_or(0);
    let mut batch = Vec::with_capacity(most * metrics.len());
    let mut values = vec![0.0; metrics.len()];
    let mut base = None;
    let mut src = Recorded { images, at: 0 };
    drain(
        &mut src,
        device,
        &names,
        &mut base,
        &mut || clocks,
        &mut values,
        &mut batch,
        &mut counts,
        &mut |b| metron::gpu::submit(b),
        &|_| false,
    );
    counts
}

/// A kernel execution as the aggregation sees it.
#[derive(Clone, Debug)]
pub struct KernelSpan {
    /// Kernel name.
    pub name: Arc<str>,
    /// The Metron region open at its launch.
    pub region: String,
    /// Device index.
    pub device: u32,
    /// Start, Metron's clock.
    pub start: u64,
    /// End, Metron's clock.
    pub end: u64,
}

/// One metric sample on Metron's clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Device index.
    pub device: u32,
    /// Index into the metric list.
    pub metric: usize,
    /// Sample start, Metron's clock.
    pub start: u64,
    /// Sample end, Metron's clock.
    pub end: u64,
    /// The metric's value over the sample.
    pub value: f64,
}

/// One output row: a kernel name or region, a metric, the mean and max over its GPU time.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// `kernel` or `region`.
    pub scope: &'static str,
    /// Kernel name or region name.
    pub name: String,
    /// Metric name.
    pub metric: String,
    /// Kernel executions that had samples.
    pub launches: u64,
    /// GPU time covered by samples, ns.
    pub covered_ns: u64,
    /// Mean over the covered time (each sample weighted by its overlap with the kernel).
    pub mean: f64,
    /// Largest sample overlapping a kernel.
    pub max: f64,
}

#[derive(Default, Clone, Copy)]
struct Acc {
    launches: u64,
    weight: u64,
    sum: f64,
    max: f64,
}

/// Per kernel name and per region (of the launch), the mean and max of each metric over the
/// time the GPU spent in those kernels. Samples are sorted per (device, metric) by start.
pub fn aggregate(kernels: &[KernelSpan], samples: &[Sample], metrics: &[String]) -> Vec<Row> {
    let mut by: HashMap<(u32, usize), Vec<Sample>> = HashMap::new();
    for s in samples {
        by.entry((s.device, s.metric)).or_default().push(*s);
    }
    for v in by.values_mut() {
        v.sort_by_key(|s| s.start);
    }
    let mut acc: HashMap<(&'static str, String, usize), Acc> = HashMap::new();
    for k in kernels {
        for m in 0..metrics.len() {
            let Some(list) = by.get(&(k.device, m)) else {
                continue;
            };
            // First sample that may overlap: the one before the first starting at/after k.start.
            let from = list
                .partition_point(|s| s.start < k.start)
                .saturating_sub(1);
            let mut a = Acc {
                max: f64::MIN,
                ..Acc::default()
            };
            for s in &list[from..] {
                if s.start >= k.end {
                    break;
                }
                let lo = s.start.max(k.start);
                let hi = s.end.min(k.end);
                if hi <= lo {
                    continue;
                }
                let w = hi - lo;
                a.weight += w;
                a.sum += s.value * w as f64;
                a.max = a.max.max(s.value);
            }
            if a.weight == 0 {
                continue;
            }
            for key in [
                ("kernel", k.name.to_string(), m),
                ("region", k.region.clone(), m),
            ] {
                let e = acc.entry(key).or_insert(Acc {
                    max: f64::MIN,
                    ..Acc::default()
                });
                e.launches += 1;
                e.weight += a.weight;
                e.sum += a.sum;
                e.max = e.max.max(a.max);
            }
        }
    }
    let mut rows: Vec<Row> = acc
        .into_iter()
        .map(|((scope, name, m), a)| Row {
            scope,
            name,
            metric: metrics[m].clone(),
            launches: a.launches,
            covered_ns: a.weight,
            mean: a.sum / a.weight as f64,
            max: a.max,
        })
        .collect();
    rows.sort_by(|a, b| (a.scope, &a.name, &a.metric).cmp(&(b.scope, &b.name, &b.metric)));
    rows
}

/// `gpu_pm_sampling.csv`.
pub fn csv(rows: &[Row]) -> String {
    let mut s = String::from("scope,name,metric,launches,covered_ns,mean,max\n");
    for r in rows {
        let q = |x: &str| {
            if x.contains([',', '"', '\n']) {
                format!("\"{}\"", x.replace('"', "\"\""))
            } else {
                x.to_string()
            }
        };
        s.push_str(&format!(
            "{},{},{},{},{},{:.4},{:.4}\n",
            r.scope,
            q(&r.name),
            q(&r.metric),
            r.launches,
            r.covered_ns,
            r.mean,
            r.max
        ));
    }
    s
}

/// Collects kernels and counter samples; writes `gpu_pm_sampling.csv` at the end.
#[derive(Default)]
struct PmSink {
    kernels: Vec<(Arc<str>, u32, u32, u64, u64)>,
    samples: Vec<(u32, Arc<str>, u64, u64, f64)>,
}

impl metron::Sink for PmSink {
    fn name(&self) -> &str {
        "gpu_pm_sampling"
    }

    fn events(&mut self, _thread: &metron::ThreadInfo, _events: &[metron::Event<'_>]) {}

    fn gpu_records(&mut self, records: &[GpuRecord]) {
        for r in records {
            match r.kind {
                GpuKind::Kernel => self.kernels.push((
                    r.name.clone(),
                    r.correlation,
                    r.device,
                    r.start_ns,
                    r.end_ns,
                )),
                GpuKind::Counter => {
                    self.samples
                        .push((r.device, r.name.clone(), r.start_ns, r.end_ns, r.value))
                }
                _ => {}
            }
        }
    }

    fn finish(&mut self, run: &metron::RunInfo) -> std::io::Result<Vec<PathBuf>> {
        let metrics = ACTIVE_METRICS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if metrics.is_empty() {
            return Ok(Vec::new());
        }
        let kernels: Vec<KernelSpan> = self
            .kernels
            .iter()
            .map(|(n, c, d, s, e)| KernelSpan {
                name: n.clone(),
                region: metron::gpu::region_of(*c)
                    .map_or("(no region)", |(r, _)| r)
                    .to_string(),
                device: *d,
                start: *s,
                end: *e,
            })
            .collect();
        let samples: Vec<Sample> = self
            .samples
            .iter()
            .filter_map(|(d, n, s, e, v)| {
                Some(Sample {
                    device: *d,
                    metric: metrics.iter().position(|m| **m == **n)?,
                    start: *s,
                    end: *e,
                    value: *v,
                })
            })
            .collect();
        let rows = aggregate(&kernels, &samples, &metrics);
        let path = run.output_dir.join("gpu_pm_sampling.csv");
        std::fs::write(&path, csv(&rows))?;
        let json_rows: Vec<Value> = rows
            .iter()
            .map(|r| {
                json!({"scope": r.scope, "name": r.name, "metric": r.metric, "launches": r.launches,
                       "covered_ns": r.covered_ns, "mean": r.mean, "max": r.max})
            })
            .collect();
        add_to_summaries(&run.output_dir, &metrics, &rows)?;
        *FINAL.lock().unwrap_or_else(|e| e.into_inner()) = Some(json!({
            "samples_in_trace": self.samples.len() / metrics.len().max(1),
            "kernels": kernels.len(),
            "rows": json_rows,
        }));
        Ok(vec![path])
    }
}

/// A metric value for `summary.txt`: large rates in scientific notation, percentages as such.
fn value_text(v: f64) -> String {
    if v.abs() >= 1e5 {
        format!("{v:.3e}")
    } else {
        format!("{v:.2}")
    }
}

/// The `summary.txt` section: per kernel name and per region, each metric's mean / max.
pub fn summary_text(rows: &[Row]) -> String {
    let mut s = String::from(
        "\nGPU metrics over time (PM sampling): mean / max of each metric over the GPU time spent in each kernel and region\n",
    );
    let width = rows.iter().map(|r| r.metric.len()).max().unwrap_or(0);
    let mut last: Option<(&str, &str)> = None;
    for r in rows {
        if last != Some((r.scope, r.name.as_str())) {
            s.push_str(&format!("  {} {}\n", r.scope, r.name));
            last = Some((r.scope, r.name.as_str()));
        }
        s.push_str(&format!(
            "    {:width$}  {} / {}\n",
            r.metric,
            value_text(r.mean),
            value_text(r.max)
        ));
    }
    s
}

/// Adds the rows to the `summary.txt` / `summary.json` the summary sink wrote in `dir` before
/// (it is registered first): a section in the text, `gpu_pm_sampling` (`metrics`, `by_kernel`,
/// `by_region`) in the JSON.
fn add_to_summaries(
    dir: &std::path::Path,
    metrics: &[String],
    rows: &[Row],
) -> std::io::Result<()> {
    let txt = dir.join("summary.txt");
    if txt.is_file() && !rows.is_empty() {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&txt)?;
        f.write_all(summary_text(rows).as_bytes())?;
    }
    let js = dir.join("summary.json");
    if let Ok(text) = std::fs::read_to_string(&js) {
        if let Ok(mut v) = serde_json::from_str::<Value>(&text) {
            let of = |scope: &str| -> Vec<Value> {
                rows.iter()
                    .filter(|r| r.scope == scope)
                    .map(|r| {
                        json!({"name": r.name, "metric": r.metric, "launches": r.launches,
                               "covered_ns": r.covered_ns, "mean": r.mean, "max": r.max})
                    })
                    .collect()
            };
            v["gpu_pm_sampling"] = json!({
                "metrics": metrics,
                "by_kernel": of("kernel"),
                "by_region": of("region"),
            });
            std::fs::write(&js, serde_json::to_string_pretty(&v)? + "\n")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_and_refuse_clearly() {
        assert_eq!(parse_settings(None, None), Ok(None));
        assert_eq!(parse_settings(Some("off"), Some("junk")), Ok(None));
        let on = parse_settings(Some("on"), None).unwrap().unwrap();
        assert_eq!(on.metrics.len(), DEFAULT_METRICS.len());
        assert_eq!(on.interval, Interval::Ns(DEFAULT_INTERVAL_NS));
        let l = parse_settings(Some(" pmsampling:a.sum, b.avg ,a.sum"), Some("20us"))
            .unwrap()
            .unwrap();
        assert_eq!(l.metrics, vec!["a.sum", "b.avg"]);
        assert_eq!(l.interval, Interval::Ns(20_000));
        assert_eq!(parse_interval(Some("1500")), Ok(Interval::Ns(1500)));
        assert_eq!(parse_interval(Some("2ms")), Ok(Interval::Ns(2_000_000)));
        assert_eq!(
            parse_interval(Some("4096cycles")),
            Ok(Interval::Cycles(4096))
        );
        for bad in ["0", "ten", "5 s", "-3"] {
            let e = parse_interval(Some(bad)).unwrap_err();
            assert!(e.contains("accepted"), "{e}");
        }
        assert!(parse_settings(Some("a b"), None)
            .unwrap_err()
            .contains("accepted"));
        assert!(conflict(false, false).is_none());
        assert!(conflict(true, false)
            .unwrap()
            .contains("METRON_GPU_METRICS"));
        assert!(conflict(false, true)
            .unwrap()
            .contains("METRON_GPU_PC_SAMPLING"));
    }

    #[test]
    fn timestamps_are_put_on_the_monotonic_clock() {
        let mono = 5_000_000_000_000u64; // 5000 s since boot
        let real = 1_795_317_845_342_000_842u64; // 2026
                                                 // Already monotonic (CUPTI's timestamp callback applied): unchanged.
        let tb = TimeBase::detect(mono - 3_000_000, mono, real);
        assert_eq!(tb.domain, "monotonic");
        assert_eq!(tb.convert(mono - 10), mono - 10);
        // CLOCK_REALTIME timestamps: shifted by the clocks' difference.
        let tb = TimeBase::detect(real - 3_000_000, mono, real);
        assert_eq!(tb.domain, "realtime");
        assert_eq!(tb.convert(real - 3_000_000), mono - 3_000_000);
    }

    /// A fake CUPTI: images of samples, decoded one image per `decode`, the first ones full.
    struct Fake {
        images: Vec<Vec<(u64, u64, [f64; 2])>>,
        at: usize,
        current: Vec<(u64, u64, [f64; 2])>,
        overflow_at: Option<usize>,
        resets: usize,
    }

    impl SampleSource for Fake {
        fn decode(&mut self) -> (i32, i32, bool) {
            self.current = self.images.get(self.at).cloned().unwrap_or_default();
            self.at += 1;
            let full = self.at < self.images.len();
            let stop = if full {
                pm::STOP_COUNTER_DATA_FULL
            } else {
                pm::STOP_END_OF_RECORDS
            };
            (0, stop, self.overflow_at == Some(self.at - 1))
        }
        fn completed(&mut self) -> Result<usize, String> {
            Ok(self.current.len())
        }
        fn times(&mut self, i: usize) -> Result<(u64, u64), String> {
            if self.current[i].0 == 0 {
                return Err("bad".into());
            }
            Ok((self.current[i].0, self.current[i].1))
        }
        fn values(&mut self, i: usize, out: &mut [f64]) -> Result<(), String> {
            out.copy_from_slice(&self.current[i].2);
            Ok(())
        }
        fn reset(&mut self) {
            self.resets += 1;
        }
    }

    #[test]
    fn drain_reads_full_images_again_counts_losses_and_does_not_grow_its_batch() {
        let real = 1_800_000_000_000_000_000u64;
        let mono = 1_000_000_000u64;
        let mut fake = Fake {
            images: vec![
                vec![
                    (real, real + 100, [1.0, 2.0]),
                    (real + 100, real + 200, [3.0, 4.0]),
                ],
                vec![(0, 0, [0.0, 0.0]), (real + 200, real + 300, [5.0, 6.0])],
            ],
            at: 0,
            current: Vec::new(),
            overflow_at: Some(1),
            resets: 0,
        };
        let names: Vec<Arc<str>> = vec!["a".into(), "b".into()];
        let mut base = None;
        let mut values = vec![0.0; 2];
        let mut batch = Vec::with_capacity(4);
        let cap = batch.capacity();
        let mut counts = Counts::default();
        let mut got: Vec<GpuRecord> = Vec::new();
        drain(
            &mut fake,
            3,
            &names,
            &mut base,
            &mut || (mono, real + 400),
            &mut values,
            &mut batch,
            &mut counts,
            &mut |b| got.extend_from_slice(b),
            &|_| false,
        );
        assert_eq!(batch.capacity(), cap, "the batch is reused, never grown");
        assert_eq!(fake.resets, 2);
        assert_eq!(
            counts,
            Counts {
                samples: 3,
                decodes: 2,
                overflows: 1,
                image_full: 1,
                sample_errors: 1,
                decode_errors: 0,
                last_end_ns: mono - 100,
            }
        );
        assert_eq!(base.unwrap().domain, "realtime");
        assert_eq!(got.len(), 6);
        assert!(got
            .iter()
            .all(|r| r.kind == GpuKind::Counter && r.device == 3));
        // Sample 0 ended 300 ns before "now": on the monotonic clock, 300 ns before mono.
        assert_eq!((got[0].start_ns, got[0].end_ns), (mono - 400, mono - 300));
        assert_eq!((&*got[3].name, got[3].value), ("b", 4.0));
        assert_eq!(
            (&*got[5].name, got[5].value, got[5].end_ns),
            ("b", 6.0, mono - 100)
        );
    }

    #[test]
    fn per_kernel_and_region_means_weigh_samples_by_overlap() {
        let metrics = vec!["dram".to_string(), "sm".to_string()];
        let mut samples = Vec::new();
        // 10 ns samples from 0 to 100: dram 80 in [10, 40), sm 90 in [50, 90), else 0..1.
        for i in 0..10u64 {
            let (dram, sm) = match i {
                1..=3 => (80.0, 5.0),
                5..=8 => (2.0, 90.0),
                _ => (0.0, 0.0),
            };
            samples.push(Sample {
                device: 0,
                metric: 0,
                start: i * 10,
                end: i * 10 + 10,
                value: dram,
            });
            samples.push(Sample {
                device: 0,
                metric: 1,
                start: i * 10,
                end: i * 10 + 10,
                value: sm,
            });
        }
        // A sample on another device never counts.
        samples.push(Sample {
            device: 1,
            metric: 0,
            start: 10,
            end: 20,
            value: 1e9,
        });
        let k = |name: &str, region: &str, s, e| KernelSpan {
            name: name.into(),
            region: region.into(),
            device: 0,
            start: s,
            end: e,
        };
        let kernels = vec![
            k("copy", "r1", 10, 40),
            k("fma", "r1", 50, 90),
            k("copy", "r2", 15, 25),
        ];
        let rows = aggregate(&kernels, &samples, &metrics);
        let find = |scope: &str, name: &str, metric: &str| {
            rows.iter()
                .find(|r| r.scope == scope && r.name == name && r.metric == metric)
                .unwrap()
                .clone()
        };
        let c = find("kernel", "copy", "dram");
        assert_eq!(
            (c.launches, c.covered_ns, c.mean, c.max),
            (2, 40, 80.0, 80.0)
        );
        let f = find("kernel", "fma", "sm");
        assert_eq!((f.mean, f.max), (90.0, 90.0));
        assert_eq!(find("kernel", "fma", "dram").mean, 2.0);
        // A kernel straddling samples: [5, 15) is half of sample 0 (0) and half of 1 (80).
        let rows = aggregate(&[k("half", "r", 5, 15)], &samples, &metrics);
        let h = rows
            .iter()
            .find(|r| r.metric == "dram" && r.scope == "kernel")
            .unwrap();
        assert_eq!((h.covered_ns, h.mean, h.max), (10, 40.0, 80.0));
        // Region r1 holds copy (30 ns of dram 80) and fma (40 ns of dram 2).
        let r1 = find("region", "r1", "dram");
        assert_eq!(r1.covered_ns, 70);
        assert!((r1.mean - (80.0 * 30.0 + 2.0 * 40.0) / 70.0).abs() < 1e-9);
        let text = csv(&rows);
        assert!(text.starts_with("scope,name,metric,launches,covered_ns,mean,max\n"));
        let summary = summary_text(&rows);
        assert!(
            summary.ends_with("  kernel half\n    dram  40.00 / 80.00\n    sm    2.50 / 5.00\n  region r\n    dram  40.00 / 80.00\n    sm    2.50 / 5.00\n"),
            "{summary}"
        );
        assert!(text.contains("kernel,half,dram,1,10,40.0000,80.0000"));
    }
}
