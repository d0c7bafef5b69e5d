//! The sampler's bookkeeping: which threads are sampled, by which event, and the
//! `metron-sampler` manager thread that keeps that up to date.
//!
//! Every 20 ms the manager lists `/proc/self/task`: a thread it has not seen gets a slot and
//! its events (opened for that thread id from outside: no cooperation from the thread is
//! needed), a thread that is gone has its events closed and its slot drained, then freed. It
//! also rebuilds the unwinder's module list when the loader's counters change (`dlopen`,
//! `dlclose`) and re-reads the mappings before arming a new thread (so its stack is known).
//! Threads that record regions are registered at once, by themselves, when they attach their
//! region buffer ([`super::on_thread_attach`]), so even a thread that lives a few
//! milliseconds is sampled from its first region.
//!
//! Events per thread:
//! - CPU time: a software perf event (`PERF_COUNT_SW_TASK_CLOCK`, `sample_period` = the
//!   period in ns, `pid` = the thread, any CPU) whose overflow notification is routed to that
//!   thread as the sampling signal (`O_ASYNC`, `F_SETSIG`, `F_SETOWN_EX`/`F_OWNER_TID`); the
//!   handler finds the slot through `si_fd`. When perf events are not allowed, a POSIX timer on
//!   the thread's CPU clock is used instead, which the kernel only fires on its tick (250 Hz
//!   here): `metadata.json` reports the method and the achieved rate.
//! - Real time: a POSIX timer on `CLOCK_MONOTONIC` with `SIGEV_THREAD_ID`, whose `si_value`
//!   carries the slot index.

use super::config::SamplingConfig;
use super::handler::{TRIGGER_CPU, TRIGGER_REAL};
use super::slot::{self, MAX_SLOTS};
use super::sys::{self, Timer};
use super::unwind::View;
use super::{OPEN, VIEW};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

/// How the CPU-time events are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CpuMethod {
    /// Software perf event `task-clock`, overflow routed to the thread.
    PerfTaskClock,
    /// POSIX timer on the thread's CPU clock (fires on the kernel tick).
    ThreadCpuTimer,
}

/// A thread being sampled (or gone and not yet drained).
pub(crate) struct Tracked {
    pub(crate) index: usize,
    pub(crate) tid: u32,
    /// Order in which the sampler first saw the thread (0: the main thread).
    pub(crate) order: u64,
    pub(crate) name: String,
    fd: Option<i32>,
    cpu_timer: Option<Timer>,
    real_timer: Option<Timer>,
    realtime: bool,
    pub(crate) method: Option<CpuMethod>,
    armed_ns: u64,
    /// Thread CPU time while armed (perf count), set when its events close.
    pub(crate) cpu_ns: u64,
    /// Wall time while armed, set when its events close.
    pub(crate) wall_ns: u64,
    pub(crate) gone: bool,
    /// Ring drops already reported to the pipeline.
    pub(crate) dropped_reported: u64,
}

/// Per-thread numbers for `metadata.json`.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct ThreadReport {
    pub(crate) tid: u32,
    /// Order in which the sampler first saw the thread (what `METRON_SAMPLING_TIDS` selects).
    pub(crate) order: u64,
    pub(crate) name: String,
    pub(crate) cpu_samples: u64,
    pub(crate) real_samples: u64,
    pub(crate) cpu_time_s: f64,
    pub(crate) wall_time_s: f64,
    pub(crate) cpu_samples_per_cpu_s: Option<f64>,
    pub(crate) real_samples_per_s: Option<f64>,
    pub(crate) skipped_outside_window: u64,
    /// Timer expirations merged into pending signals (`si_overrun`): samples not delivered.
    pub(crate) timer_overruns: u64,
    pub(crate) dropped: u64,
    pub(crate) pc_only: u64,
    pub(crate) truncated: u64,
    pub(crate) busy: u64,
}

/// What the manager and the drain share.
#[derive(Default)]
pub(crate) struct Registry {
    pub(crate) tracked: Vec<Tracked>,
    free: Vec<usize>,
    next_slot: usize,
    /// tid → order of first sight.
    seen: HashMap<u32, u64>,
    next_order: u64,
    pub(crate) stopped: bool,
    /// Reports of threads whose slots were freed.
    pub(crate) finished: Vec<ThreadReport>,
    pub(crate) not_sampled_no_slot: u64,
    pub(crate) open_errors: Vec<String>,
    pub(crate) view_builds: u64,
}

pub(crate) static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(Default::default);

/// The sampler's fixed parameters for this run.
pub(crate) struct Plan {
    pub(crate) config: SamplingConfig,
    pub(crate) signal: i32,
    pub(crate) start_ns: u64,
}

/// Threads that want the registry to add or find threads (the manager's scan, a thread
/// attaching its buffer), waiting or about to. [`lock_for_drain`] lets them go first.
static WAITING: AtomicUsize = AtomicUsize::new(0);

/// The registry, for a thread that adds or finds threads.
pub(crate) fn lock() -> std::sync::MutexGuard<'static, Registry> {
    WAITING.fetch_add(1, Ordering::AcqRel);
    let guard = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    WAITING.fetch_sub(1, Ordering::AcqRel);
    guard
}

/// The registry, for draining: a program calling `metron::flush()` in a loop takes and
/// releases it millions of times a second, and `std`'s mutex lets the releasing thread take
/// it again before a woken waiter runs, so the manager never got it and threads that did
/// not record regions were never armed (seen in CI: a flushing thread with 0 samples). The
/// drain therefore yields, a bounded number of times, while anyone else waits.
pub(crate) fn lock_for_drain() -> std::sync::MutexGuard<'static, Registry> {
    for _ in 0..1000 {
        if WAITING.load(Ordering::Acquire) == 0 {
            break;
        }
        std::thread::yield_now();
    }
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Who tells the sampler about a thread.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// The thread itself (at start, or when it attaches its buffer): a program's thread, or one
    /// of Metron's already named (they are named before they run any code).
    Itself,
    /// A scan of `/proc/self/task`: maybe one of Metron's threads not named yet.
    Scan,
}

impl Registry {
    /// Starts sampling thread `tid` (no-op if tracked, stopped, or not selected).
    pub(crate) fn add(&mut self, plan: &Plan, tid: u32, stack: Option<(u64, u64)>, found: Found) {
        if self.stopped || self.tracked.iter().any(|t| t.tid == tid && !t.gone) {
            return;
        }
        let name = sys::thread_name(tid).unwrap_or_default();
        if name == crate::sys::LIBRARY_THREAD_NAME {
            crate::sys::library_thread_seen();
        }
        if name.starts_with("metron") || name == crate::sys::LIBRARY_THREAD_NAME {
            // Metron's own threads are never sampled and take no number, so the program's
            // threads are numbered (`METRON_SAMPLING_TIDS`) alike however many Metron runs.
            self.seen.entry(tid).or_insert(u64::MAX);
            return;
        }
        if found == Found::Scan && !self.seen.contains_key(&tid) && super::own_threads_starting() {
            // Maybe one of Metron's threads before it is named: numbered at the next scan. A
            // thread that registers itself is numbered at once, so the main thread, which
            // starts the run, stays number 0 however slowly Metron's threads get their names.
            return;
        }
        let next = self.next_order;
        let order = *self.seen.entry(tid).or_insert(next);
        if order == next {
            self.next_order += 1;
        }
        if let Some(list) = &plan.config.threads {
            if !list.contains(&order) {
                return;
            }
        }
        let index = match self.free.pop() {
            Some(i) => i,
            None if self.next_slot < MAX_SLOTS => {
                self.next_slot += 1;
                self.next_slot - 1
            }
            None => {
                self.not_sampled_no_slot += 1;
                return;
            }
        };
        let slot = slot::make(index);
        slot.assign(tid, stack);
        let period = plan.config.period_ns();
        let mut t = Tracked {
            index,
            tid,
            order,
            name,
            fd: None,
            cpu_timer: None,
            real_timer: None,
            realtime: false,
            method: None,
            armed_ns: sys::monotonic_ns(),
            cpu_ns: 0,
            wall_ns: 0,
            gone: false,
            dropped_reported: 0,
        };
        if plan.config.cputime {
            match open_perf(tid, period, plan.signal, index) {
                Ok(fd) => {
                    t.fd = Some(fd);
                    t.method = Some(CpuMethod::PerfTaskClock);
                }
                Err(perf) => {
                    let clock = thread_cpu_clock(tid);
                    match sys::thread_timer(
                        clock,
                        tid,
                        plan.signal,
                        timer_value(index, TRIGGER_CPU),
                        period,
                    ) {
                        Ok(timer) => {
                            t.cpu_timer = Some(timer);
                            t.method = Some(CpuMethod::ThreadCpuTimer);
                        }
                        Err(e) => self.note_error(format!(
                            "thread {tid}: no CPU-time sampling (perf event: {perf}; CPU-clock timer: {e})"
                        )),
                    }
                }
            }
        }
        if plan.config.realtime {
            match sys::thread_timer(
                libc::CLOCK_MONOTONIC,
                tid,
                plan.signal,
                timer_value(index, TRIGGER_REAL),
                period,
            ) {
                Ok(timer) => {
                    t.real_timer = Some(timer);
                    t.realtime = true;
                }
                Err(e) => self.note_error(format!("thread {tid}: no real-time sampling ({e})")),
            }
        }
        if t.fd.is_none() && t.cpu_timer.is_none() && t.real_timer.is_none() {
            slot.tid.store(0, std::sync::atomic::Ordering::Release);
            self.free.push(index);
            return;
        }
        self.tracked.push(t);
    }

    fn note_error(&mut self, e: String) {
        // A thread that exited before its event opened is not an error worth reporting.
        if e.contains("No such process") {
            return;
        }
        if self.open_errors.len() < 16 {
            self.open_errors.push(e);
        }
    }

    /// Closes the events of every tracked thread that `alive` says is gone (all, at stop).
    pub(crate) fn close_where(&mut self, mut gone: impl FnMut(u32) -> bool) {
        for t in self.tracked.iter_mut().filter(|t| !t.gone) {
            if !gone(t.tid) {
                continue;
            }
            if let Some(fd) = t.fd.take() {
                slot::route_fd(fd, None);
                sys::disable_event(fd);
                t.cpu_ns = sys::read_count(fd).unwrap_or(0);
                sys::close(fd);
            }
            for timer in [t.cpu_timer.take(), t.real_timer.take()]
                .into_iter()
                .flatten()
            {
                sys::delete_timer(timer);
            }
            t.wall_ns = sys::monotonic_ns().saturating_sub(t.armed_ns);
            t.gone = true;
            self.seen.remove(&t.tid);
        }
    }

    /// Frees the slots of gone threads (after their rings were drained), keeping their reports.
    pub(crate) fn free_gone(&mut self) {
        let mut i = 0;
        while i < self.tracked.len() {
            if self.tracked[i].gone {
                let t = self.tracked.swap_remove(i);
                if let Some(slot) = slot::get(t.index) {
                    self.finished.push(report(&t));
                    slot.tid.store(0, std::sync::atomic::Ordering::Release);
                    self.free.push(t.index);
                }
            } else {
                i += 1;
            }
        }
    }
}

/// The report of a tracked thread as of now.
pub(crate) fn report(t: &Tracked) -> ThreadReport {
    let Some(slot) = slot::get(t.index) else {
        return ThreadReport::default();
    };
    let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    let cpu_ns = if t.gone {
        t.cpu_ns
    } else {
        t.fd.and_then(sys::read_count).unwrap_or(0)
    };
    let wall_ns = if t.gone {
        t.wall_ns
    } else {
        sys::monotonic_ns().saturating_sub(t.armed_ns)
    };
    let cpu = load(&slot.cpu_samples);
    let real = load(&slot.real_samples);
    ThreadReport {
        tid: t.tid,
        order: t.order,
        name: t.name.clone(),
        cpu_samples: cpu,
        real_samples: real,
        cpu_time_s: cpu_ns as f64 / 1e9,
        wall_time_s: wall_ns as f64 / 1e9,
        cpu_samples_per_cpu_s: (t.method == Some(CpuMethod::PerfTaskClock) && cpu_ns > 0)
            .then(|| cpu as f64 / (cpu_ns as f64 / 1e9)),
        real_samples_per_s: (t.realtime && wall_ns > 0)
            .then(|| real as f64 / (wall_ns as f64 / 1e9)),
        skipped_outside_window: load(&slot.skipped),
        timer_overruns: load(&slot.overruns),
        dropped: load(&slot.ring.dropped),
        pc_only: load(&slot.pc_only),
        truncated: load(&slot.truncated),
        busy: load(&slot.busy),
    }
}

/// `si_value` of a timer: slot index and trigger.
pub(crate) fn timer_value(index: usize, trigger: u16) -> usize {
    index << 1 | (trigger == TRIGGER_CPU) as usize
}

/// The CPU-time clock id of thread `tid` (the kernel's `MAKE_THREAD_CPUCLOCK(tid,
/// CPUCLOCK_SCHED)`).
fn thread_cpu_clock(tid: u32) -> libc::clockid_t {
    (!(tid as libc::clockid_t) << 3) | 2 | 4
}

fn open_perf(tid: u32, period: u64, signal: i32, index: usize) -> std::io::Result<i32> {
    let fd = sys::open_task_clock(tid, period)?;
    if !slot::route_fd(fd, Some(index)) {
        sys::close(fd);
        return Err(std::io::Error::other("descriptor number too large"));
    }
    if let Err(e) = sys::route_and_enable(fd, signal, tid) {
        slot::route_fd(fd, None);
        sys::close(fd);
        return Err(e);
    }
    Ok(fd)
}

/// How often the manager looks for new and gone threads and new modules, ms (a scan costs
/// tens of µs; region-recording threads do not wait for it).
const SCAN_MS: u64 = 20;

/// The manager thread's loop.
pub(crate) fn run(plan: &Plan) {
    let mut counters = VIEW.read(|v| v.map(|v| v.counters)).unwrap_or((0, 0));
    loop {
        let now = sys::monotonic_ns().saturating_sub(plan.start_ns);
        let delay = plan.config.delay.map_or(0, |d| d.as_nanos() as u64);
        let end = plan
            .config
            .duration
            .map_or(u64::MAX, |d| delay.saturating_add(d.as_nanos() as u64));
        OPEN.store(
            now >= delay && now < end,
            std::sync::atomic::Ordering::Relaxed,
        );
        let tids = sys::thread_ids();
        let mut reg = lock();
        if reg.stopped {
            return;
        }
        let known: std::collections::HashSet<u32> = reg
            .tracked
            .iter()
            .filter(|t| !t.gone)
            .map(|t| t.tid)
            .collect();
        let live: std::collections::HashSet<u32> = tids.iter().copied().collect();
        reg.close_where(|tid| !live.contains(&tid));
        let fresh: Vec<u32> = tids
            .iter()
            .copied()
            .filter(|tid| !known.contains(tid) && !reg.seen.contains_key(tid))
            .collect();
        let now_counters = sys::module_counters();
        let stale = !VIEW.read(|v| v.is_some_and(|v| v.is_current()));
        if now_counters != counters || !fresh.is_empty() || stale {
            // New modules, or new threads whose stacks the mapping snapshot must hold.
            let view = View::build();
            counters = view.counters;
            VIEW.publish(Box::new(view));
            reg.view_builds += 1;
        } else {
            VIEW.reclaim();
        }
        for tid in fresh {
            reg.add(plan, tid, None, Found::Scan);
        }
        drop(reg);
        std::thread::sleep(Duration::from_millis(SCAN_MS));
    }
}
