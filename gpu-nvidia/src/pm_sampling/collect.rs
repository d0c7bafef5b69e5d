//! Collection: the per-device samplers set up at the first kernel launch through CUPTI's PM
//! Sampling API, the decode thread, and the end of the run.

use super::*;

/// One device's sampler.
pub(super) struct Device {
    pub(super) index: u32,
    pub(super) object: Handle,
    pub(super) image: Vec<u8>,
    pub(super) pristine: Vec<u8>,
}

/// The live sampler: CUPTI, the host object, the devices and the preallocated buffers.
pub(super) struct Sampler {
    pub(super) api: PmApi,
    pub(super) cupti: Cupti,
    pub(super) host: Handle,
    /// Host objects of the metric trials, destroyed at the end (see `setup`).
    pub(super) spare_hosts: Vec<Handle>,
    /// The chip name, counter availability image and config image given to CUPTI at set-up,
    /// alive as long as sampling is: CUPTI may keep pointers to them (NVIDIA's sample keeps
    /// all three for the whole run). Freed after set-up, DecodeData failed with
    /// `CUPTI_ERROR_UNKNOWN` or crashed on the H100.
    pub(super) _given: (std::ffi::CString, Vec<u8>, Vec<u8>),
    pub(super) names: Names,
    pub(super) tracks: Vec<Arc<str>>,
    pub(super) devices: Vec<Device>,
    pub(super) values: Vec<f64>,
    pub(super) batch: Vec<GpuRecord>,
    pub(super) base: Option<TimeBase>,
    pub(super) counts: Counts,
    pub(super) stopped: bool,
}

pub(super) struct CuptiSource<'a> {
    api: &'a PmApi,
    cupti: &'a Cupti,
    host: Handle,
    names: &'a Names,
    dev: &'a mut Device,
}

pub(super) static DEBUG_DECODES: AtomicU64 = AtomicU64::new(0);
/// The decode thread is inside `cuptiPmSamplingDecodeData` (which did not return on the H100).
pub(super) static IN_DECODE: AtomicBool = AtomicBool::new(false);

pub(super) fn debug_decode() -> bool {
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
pub(super) const DECODE_STACK_BYTES: usize = 64 << 20;

/// Settings read at start (`None`: off or refused).
pub(super) static CONFIG: Mutex<Option<(Config, Cupti, String)>> = Mutex::new(None);
/// Set-up still to do at the first launch.
pub(super) static PENDING: AtomicBool = AtomicBool::new(false);
pub(super) static SAMPLER: Mutex<Option<Sampler>> = Mutex::new(None);
pub(super) static THREAD: Mutex<Option<std::thread::JoinHandle<()>>> = Mutex::new(None);
pub(super) static STOP: AtomicBool = AtomicBool::new(false);
/// The end of the run stopped, decoded everything and disabled sampling.
pub(super) static FINISHED_CLEANLY: AtomicBool = AtomicBool::new(false);
pub(super) static SETUP_NS: AtomicU64 = AtomicU64::new(0);
/// Why it is off or what went wrong (refusal, set-up errors, dropped metrics).
pub(super) static NOTES: Mutex<Vec<String>> = Mutex::new(Vec::new());
pub(super) static REFUSED: Mutex<Option<String>> = Mutex::new(None);
pub(super) static FINAL: Mutex<Option<Value>> = Mutex::new(None);
pub(super) static ACTIVE_METRICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

pub(super) fn note(s: String) {
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
pub(super) fn profiler_initialize(api: &PmApi, cupti: &Cupti) -> Result<(), String> {
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

pub(super) fn setup(n_devices: usize, ctx: usize, push: Option<PushCtx>) {
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
    // (CUPTI_ERROR_UNKNOWN) or crashing (tests/cuda/pm_probe.cu reproduces it).
    let mut spare_hosts: Vec<Handle> = Vec::new();
    let try_set =
        |set: &[String], spare: &mut Vec<Handle>| -> Result<(Handle, Vec<u8>, usize), String> {
            let h = api.host_init(&cupti, &chip_c, &avail)?;
            match Names::new(set).and_then(|n| api.config_image(&cupti, h, &n)) {
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
    let names = match Names::new(&metrics) {
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

pub(super) fn profiler_chip(api: &PmApi, cupti: &Cupti) -> Result<String, String> {
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
pub(super) fn debug(what: &str) {
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
pub(super) const FINISH_WAIT_MS: u64 = 3_000;

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
