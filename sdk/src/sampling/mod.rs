//! Call-stack sampling, backtraces at region begin, and time windows.
//!
//! With `METRON_SAMPLING=on`, every thread of the process (or those `METRON_SAMPLING_TIDS`
//! selects) is interrupted `METRON_SAMPLING_FREQ` times per second of its CPU time
//! (`METRON_SAMPLING_CPUTIME`, default) and/or of wall time (`METRON_SAMPLING_REALTIME`); the
//! signal handler unwinds the interrupted stack and stores it in the thread's preallocated
//! ring; the flusher decodes the rings into [`crate::Event::Sample`]s of the right thread.
//! Threads created later are sampled too. See the user guide's *Sampling* chapter (`docs/src/sampling.md`) for the
//! numbers.
//!
//! The pieces, one per file:
//! - [`config`]: the settings and their grammars;
//! - `sampler`: which threads are sampled by which event; the `metron-sampler` manager thread;
//! - `handler`: the async-signal-safe handler;
//! - `unwind`: framehop over the loaded modules' `.eh_frame`, and why;
//! - `slot`, `ring`: per-thread preallocated storage the handler finds without TLS;
//! - [`window`]: `METRON_TRACE_PERIODS` and friends;
//! - [`Backtrace`]: the component that takes a stack at region begin through the same unwinder;
//! - `sys`: every `unsafe` call.
//!
//! # The signal
//! Samples arrive as one real-time signal, by default the first from `SIGRTMIN+4` up whose
//! action is the default when sampling starts (`METRON_SAMPLING_SIGNAL`): a program's own
//! `SIGPROF` handler (or `setitimer(ITIMER_PROF)` profiling) is never replaced or fed by
//! Metron. If the program later installs a handler for Metron's signal, that handler receives
//! Metron's ticks instead of Metron (no crash, samples stop): pick another signal with
//! `METRON_SAMPLING_SIGNAL`. Choosing `SIGPROF` explicitly replaces the program's handler.
//! The handler is installed with `SA_RESTART`, so interrupted system calls resume.
//!
//! # fork
//! In a forked child (see [`crate::lifecycle`]) sampling is off: the handler ignores every
//! signal, the child closes its copies of the parent's perf-event descriptors (without
//! disabling them: they still sample the parent), and POSIX timers are not inherited.

pub(crate) mod backtrace;
pub mod causal;
pub mod config;
mod handler;
mod ring;
mod sampler;
mod slot;
mod sys;
mod unload;
mod unwind;
pub mod window;

pub use backtrace::Backtrace;
pub use config::{Grammar, SamplingConfig, SignalChoice};
pub use unload::around_module_unload;
pub use window::{parse_periods, Period, PeriodError, WindowClock};

use crate::buffer::service::Drainable;
use crate::buffer::CallbackThread;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The handler stores samples only while this is set (off before start, at finish and in a
/// forked child).
pub(crate) static ARMED: AtomicBool = AtomicBool::new(false);
/// Inside `METRON_SAMPLING_DELAY` / `_DURATION`.
pub(crate) static OPEN: AtomicBool = AtomicBool::new(true);
/// Signals that found no slot of the thread they arrived on (late or stray).
pub(crate) static STRAY: AtomicU64 = AtomicU64::new(0);
/// The unwinder and mapping snapshot the handler uses.
static VIEW: sys::Published<unwind::View> = sys::Published::empty();
/// Handlers (and other readers) inside the view now.
fn view_readers() -> usize {
    VIEW.readers()
}
/// The flusher, woken when a ring is half full.
pub(crate) static FLUSHER: OnceLock<std::thread::Thread> = OnceLock::new();

static PLAN: OnceLock<sampler::Plan> = OnceLock::new();
/// Where the batches go (the runtime's pipeline), lent at start.
static DELIVER: OnceLock<Deliver> = OnceLock::new();
static DRAINER: OnceLock<Arc<SampleDrain>> = OnceLock::new();
/// Serialises drains, so a thread's sample batches reach the pipeline in order.
static DRAIN_LOCK: Mutex<()> = Mutex::new(());
/// The `sampling` section of `metadata.json`, computed at finish.
static REPORT: Mutex<Option<Value>> = Mutex::new(None);

/// Drains the sample rings on the flusher thread, with the region buffers.
struct SampleDrain;

impl Drainable for SampleDrain {
    fn drain(&self) {
        drain();
    }
}

/// One thread's samples drained at once, for the pipeline.
pub(crate) struct SampleBatch {
    /// Kernel thread id.
    pub tid: u32,
    /// Thread name.
    pub name: String,
    /// The sample records, in order.
    pub records: Vec<crate::record::Slot>,
    /// Samples lost on this thread since the last batch.
    pub dropped: u64,
}

/// Hands drained batches on (under one lock of the receiver, in order).
pub(crate) type Deliver = Box<dyn Fn(Vec<SampleBatch>) + Send + Sync>;

/// What the runtime lends the sampler and the time windows at start, so that they do not reach
/// up into it.
pub(crate) struct SamplingHooks {
    /// Where drained samples go.
    pub deliver: Deliver,
    /// Turns recording on and off (time windows).
    pub set_collecting: fn(bool),
    /// Adds a sink to the run (causal profiling's latency regions count region events).
    pub add_sink: fn(Box<dyn crate::sink::Sink>),
}

/// Starts the time windows and, when `METRON_SAMPLING` is on, the sampler. Called once by the
/// runtime's start, with its `hooks`. Returns whether collection is on at the start (a window may begin later),
/// and whether the sampler started (the runtime then adds the [`metadata`] section).
pub(crate) fn start(
    config: &SamplingConfig,
    hooks: SamplingHooks,
    flusher: &CallbackThread,
) -> (bool, bool) {
    let open = window::open_at_start(&config.periods);
    window::start(config.periods.clone(), hooks.set_collecting);
    if !config.enabled {
        return (open, false);
    }
    let signal = match choose_signal(config.signal) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("metron: sampling off: {e}");
            return (open, false);
        }
    };
    if let Err(e) = sys::install_handler(signal, handler::on_sample) {
        eprintln!("metron: sampling off: cannot install the handler of signal {signal}: {e}");
        return (open, false);
    }
    VIEW.publish(Box::new(unwind::View::build()));
    if let Some(thread) = flusher.thread_handle() {
        let _ = FLUSHER.set(thread);
    }
    let _ = DELIVER.set(hooks.deliver);
    let drainer = DRAINER.get_or_init(|| Arc::new(SampleDrain));
    let weak = Arc::downgrade(drainer);
    flusher.register(weak as std::sync::Weak<dyn Drainable>);
    OPEN.store(config.delay.is_none(), Ordering::Relaxed);
    let plan = PLAN.get_or_init(|| sampler::Plan {
        config: config.clone(),
        signal,
        start_ns: sys::monotonic_ns(),
    });
    // A thread attaching its buffer registers itself at once (see `on_thread_attach`).
    crate::thread_buffer::on_attach(on_thread_attach);
    ARMED.store(true, Ordering::Release);
    // The starting thread at once; the manager finds the others.
    sampler::lock().add(
        plan,
        sys::gettid(),
        sys::own_stack_range(),
        sampler::Found::Itself,
    );
    let spawned = spawn_own_thread("metron-sampler", move || sampler::run(plan));
    if let Err(e) = spawned {
        eprintln!(
            "metron: threads started later are not sampled (cannot start the sampler thread: {e})"
        );
    }
    if config.causal.enabled {
        if config.cputime {
            causal::start(&config.causal, config.period_ns(), hooks.add_sink);
        } else {
            eprintln!("metron: causal profiling off: it needs CPU-time sampling (METRON_SAMPLING_CPUTIME=on)");
        }
    }
    (open, true)
}

fn choose_signal(choice: SignalChoice) -> Result<i32, String> {
    let (min, max) = sys::realtime_signals();
    match choice {
        SignalChoice::Prof => {
            if !sys::has_default_action(libc::SIGPROF) {
                eprintln!("metron: METRON_SAMPLING_SIGNAL=SIGPROF replaces the program's own SIGPROF handler");
            }
            Ok(libc::SIGPROF)
        }
        SignalChoice::RealTime(n) => {
            let sig = min + n;
            if !sys::has_default_action(sig) {
                eprintln!("metron: METRON_SAMPLING_SIGNAL=SIGRTMIN+{n} replaces the program's own handler of that signal");
            }
            Ok(sig)
        }
        SignalChoice::Auto => (min + 4..=max)
            .find(|s| sys::has_default_action(*s))
            .ok_or_else(|| "every real-time signal from SIGRTMIN+4 has a handler already; set METRON_SAMPLING_SIGNAL".to_string()),
    }
}

/// A thread attaching its region buffer registers itself at once (cold path).
pub(crate) fn on_thread_attach() {
    if !ARMED.load(Ordering::Relaxed) {
        return;
    }
    if let Some(plan) = PLAN.get() {
        sampler::lock().add(
            plan,
            sys::gettid(),
            sys::own_stack_range(),
            sampler::Found::Itself,
        );
    }
}

/// Hands every stored sample to the pipeline (flusher thread, `flush()`, finish).
pub(crate) fn drain() {
    if crate::sys::process::disabled_in_child() {
        return;
    }
    let Some(deliver) = DELIVER.get() else {
        return;
    };
    let _serial = DRAIN_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let mut batches = Vec::new();
    {
        let mut reg = sampler::lock_for_drain();
        for t in reg.tracked.iter_mut() {
            let Some(slot) = slot::get(t.index) else {
                continue;
            };
            let mut records = Vec::new();
            slot.ring.drain_into(&mut records);
            let dropped_total = slot.ring.dropped.load(Ordering::Relaxed);
            let dropped = dropped_total - t.dropped_reported;
            t.dropped_reported = dropped_total;
            if records.is_empty() && dropped == 0 {
                continue;
            }
            if !t.gone {
                if let Some(name) = sys::thread_name(t.tid) {
                    t.name = name;
                }
            }
            batches.push(SampleBatch {
                tid: t.tid,
                name: t.name.clone(),
                records,
                dropped,
            });
        }
        reg.free_gone();
    }
    deliver(batches);
}

/// Ends sampling for the run: stops the events, delivers what is left, keeps the report.
/// Called by the runtime's finish before the sinks finish.
pub(crate) fn finish() {
    if PLAN.get().is_none() {
        return;
    }
    // The experiments end while the sampler still runs, so the last one is whole.
    causal::finish();
    ARMED.store(false, Ordering::Release);
    {
        let mut reg = sampler::lock();
        reg.stopped = true;
        reg.close_where(|_| true);
    }
    drain();
    let report = build_report();
    *REPORT.lock().unwrap_or_else(|e| e.into_inner()) = Some(report);
}

/// In a forked child: no sampling, and the parent's perf descriptors closed (not disabled).
/// Async-signal-safe.
pub(crate) use sys::interrupted_registers;

/// Unwinds a thread that is parked in a signal handler (a crash) from its interrupted
/// registers (pc, sp, bp), innermost first. Not async-signal-safe: it builds a fresh view of
/// the loaded modules (allocates) and runs on another thread while the crashed one waits, its
/// stack intact.
pub(crate) fn unwind_parked_thread(regs: (u64, u64, u64)) -> Vec<u64> {
    let view = unwind::View::build();
    let mut cache = unwind::new_cache();
    let mut frames = vec![0u64; unwind::MAX_FRAMES];
    let n = unwind::unwind(&view, &mut cache, regs, None, &mut frames);
    frames.truncate(n);
    frames
}

pub(crate) fn after_fork_in_child() {
    ARMED.store(false, Ordering::Relaxed);
    causal::after_fork_in_child();
    slot::close_all_routed_in_child();
}

/// The `sampling` section of `metadata.json`.
pub(crate) fn metadata() -> Value {
    REPORT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_else(build_report)
}

fn build_report() -> Value {
    let Some(plan) = PLAN.get() else {
        return json!({ "enabled": false });
    };
    let reg = sampler::lock();
    let mut threads: Vec<sampler::ThreadReport> = reg.finished.clone();
    threads.extend(reg.tracked.iter().map(sampler::report));
    let methods: Vec<_> = reg.tracked.iter().filter_map(|t| t.method).collect();
    let sum = |f: fn(&sampler::ThreadReport) -> u64| threads.iter().map(f).sum::<u64>();
    let cpu_samples = sum(|t| t.cpu_samples);
    let real_samples = sum(|t| t.real_samples);
    let rated: Vec<&sampler::ThreadReport> = threads
        .iter()
        .filter(|t| t.cpu_samples_per_cpu_s.is_some() && t.cpu_time_s >= 0.1)
        .collect();
    let cpu_s: f64 = rated.iter().map(|t| t.cpu_time_s).sum();
    let rated_samples: u64 = rated.iter().map(|t| t.cpu_samples).sum();
    let real_rated: Vec<&sampler::ThreadReport> = threads
        .iter()
        .filter(|t| t.real_samples_per_s.is_some() && t.wall_time_s >= 0.1)
        .collect();
    let wall_s: f64 = real_rated.iter().map(|t| t.wall_time_s).sum();
    let real_rated_samples: u64 = real_rated.iter().map(|t| t.real_samples).sum();
    let real_rated_expirations: u64 = real_rated
        .iter()
        .map(|t| t.real_samples + t.timer_overruns)
        .sum();
    let (min, _) = sys::realtime_signals();
    let signal_name = if plan.signal == libc::SIGPROF {
        "SIGPROF".to_string()
    } else {
        format!("SIGRTMIN+{}", plan.signal - min)
    };
    let mut listed = threads.clone();
    listed.sort_by_key(|t| std::cmp::Reverse(t.cpu_samples));
    listed.truncate(64);
    json!({
        "enabled": true,
        "frequency_hz": plan.config.freq_hz,
        "cputime": plan.config.cputime,
        "realtime": plan.config.realtime,
        "signal": signal_name,
        "signal_number": plan.signal,
        "cpu_method": if methods.contains(&sampler::CpuMethod::ThreadCpuTimer) { "thread_cpu_timer (kernel tick)" } else { "perf_task_clock" },
        "unwinder": "framehop: DWARF CFI of .eh_frame via .eh_frame_hdr, frame pointers where a module has none",
        "max_frames": unwind::MAX_FRAMES,
        "modules": VIEW.read(|v| v.map_or(0, |v| v.modules)),
        "module_list_builds": reg.view_builds + 1,
        "module_unloads_bracketed": unload::counts().0,
        "module_unload_waits_timed_out": unload::counts().1,
        "threads_sampled": threads.len(),
        "threads_not_sampled_no_slot": reg.not_sampled_no_slot,
        "samples": { "cpu_time": cpu_samples, "real_time": real_samples },
        "achieved": {
            "cpu_samples_per_cpu_second": (cpu_s > 0.0).then(|| rated_samples as f64 / cpu_s),
            "real_samples_per_second": (wall_s > 0.0).then(|| real_rated_samples as f64 / wall_s),
            "real_expirations_per_second": (wall_s > 0.0).then(|| real_rated_expirations as f64 / wall_s),
            "note": "over threads with at least 0.1 s of sampled CPU (wall) time; samples skipped outside a time window count against it; expirations add the timer expirations a loaded machine merged into pending signals (timer_overruns)",
        },
        "dropped_ring_full": sum(|t| t.dropped),
        "skipped_outside_window": sum(|t| t.skipped_outside_window),
        "timer_overruns": sum(|t| t.timer_overruns),
        "pc_only_stacks": sum(|t| t.pc_only),
        "truncated_stacks": sum(|t| t.truncated),
        "busy_skips": sum(|t| t.busy),
        "stray_signals": STRAY.load(Ordering::Relaxed),
        "errors": reg.open_errors,
        "threads": listed,
        "causal": causal::metadata(&plan.config.causal),
    })
}

/// Direct access to the handler's capture path, for the benchmarks. Not a stable API.
#[doc(hidden)]
pub mod bench {
    use super::*;

    /// A slot for the calling thread, outside the sampler.
    pub struct Capture {
        slot: &'static slot::ThreadSlot,
    }

    impl Capture {
        /// Builds the unwinder's view (if needed) and a slot owned by the calling thread.
        pub fn new() -> Capture {
            if !VIEW.read(|v| v.is_some()) {
                VIEW.publish(Box::new(unwind::View::build()));
            }
            let slot = slot::make(slot::MAX_SLOTS - 1);
            slot.assign(sys::gettid(), sys::own_stack_range());
            Capture { slot }
        }

        /// What the handler does for one sample, from this call's registers: unwind and store.
        /// Returns false when the ring was full (call [`Capture::clear`]).
        #[inline(never)]
        pub fn capture(&self) -> bool {
            let regs = sys::current_registers();
            handler::capture(
                self.slot,
                metron_components::clock::now_ticks(),
                regs,
                handler::TRIGGER_CPU,
            )
        }

        /// Empties the ring.
        pub fn clear(&self) {
            self.slot.ring.reset();
        }

        /// The number of frames of the latest stored sample (empties the ring).
        pub fn last_depth(&self) -> usize {
            let mut records = Vec::new();
            self.slot.ring.drain_into(&mut records);
            let mut depth = 0;
            let mut i = 0;
            while i < records.len() {
                let head = crate::record::Header::unpack(records[i].header);
                depth = (head.aux >> 2) as usize;
                i += 1 + head.extra as usize;
            }
            depth
        }
    }

    impl Default for Capture {
        fn default() -> Self {
            Capture::new()
        }
    }
}

// Metron's own threads start through `sys` (the buffer's callback thread, the crash and
// signal threads use it too); the sampler asks it whether one is starting.
pub(crate) use crate::sys::{own_threads_starting, spawn_own_thread};
