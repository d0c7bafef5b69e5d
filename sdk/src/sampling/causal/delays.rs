//! Virtual speedups: the delay accounting of an experiment, Coz's rules.
//!
//! During an experiment with line L and delay d (= speedup × sampling period), a sample of
//! a thread in L adds d to that thread's own count of delays (`local`); everyone else owes
//! it. At safe points each thread compares its count with the process-wide count (`GLOBAL`):
//! a thread ahead raises the global count to its own, a thread behind sleeps the difference
//! and adds what it really slept. The experiment's duration is its wall time minus the
//! global delays inserted, so the line looks d faster per sample while every other thread
//! keeps its relative pace.
//!
//! Safe points: the sampler's own signal handler (every sample, after the stack is stored),
//! and around blocking calls (the `pthread` wrappers of the C library, `_coz_pre_block` /
//! `_coz_post_block`). A thread waiting in a lock, a condition variable, a barrier or a join
//! is marked blocked: it is not delayed while it waits, and when it is woken by another thread
//! (which paid its own delays first: `catch_up` before every unlock, signal and barrier) it
//! is credited with the delays inserted while it waited, which it could not have taken.
//! Outside an experiment every thread's count simply follows the global one.
//!
//! Threads: a thread created with `pthread_create` during a causal run is armed by the
//! sampler as it starts and inherits its creator's count (it owes what its creator owed);
//! a thread the sampler finds otherwise (its 20 ms scan) starts even with the global count. A
//! thread that ends takes its count with it. In a forked child the causal state is off.

use super::super::slot::ThreadSlot;
use super::super::sys;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// A causal run is going on in this process (off before start, at finish, in a forked child).
pub(crate) static ENGAGED: AtomicBool = AtomicBool::new(false);
/// An experiment is running.
pub(crate) static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The line id being sped up (0: none).
pub(crate) static SELECTED: AtomicU32 = AtomicU32::new(0);
/// The delay per sample of the selected line, ns.
pub(crate) static DELAY_NS: AtomicU64 = AtomicU64::new(0);
/// Delays inserted process-wide, ns.
pub(crate) static GLOBAL: AtomicU64 = AtomicU64::new(0);
/// Samples of the selected line since the run began.
pub(crate) static SELECTED_SAMPLES: AtomicU64 = AtomicU64::new(0);
/// Sleeps taken and their total, ns (for the overhead report).
pub(crate) static SLEEPS: AtomicU64 = AtomicU64::new(0);
pub(crate) static SLEPT_NS: AtomicU64 = AtomicU64::new(0);

/// Sampled progress points (`--progress FILE:LINE`): line id and the counter a sample in that
/// line visits.
pub(crate) const MAX_SAMPLED_POINTS: usize = 8;
pub(crate) static SAMPLED_POINT_LINE: [AtomicU32; MAX_SAMPLED_POINTS] =
    [const { AtomicU32::new(0) }; MAX_SAMPLED_POINTS];
pub(crate) static SAMPLED_POINT_COUNTER: [std::sync::atomic::AtomicPtr<super::ProgressCounter>;
    MAX_SAMPLED_POINTS] =
    [const { std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()) }; MAX_SAMPLED_POINTS];

/// One thread's delay state, in its sample slot (reachable from the handler without TLS).
pub(crate) struct ThreadDelays {
    /// Delays this thread has taken or been credited with, ns.
    local: AtomicU64,
    /// `GLOBAL` when the thread last blocked.
    pre_block: AtomicU64,
    /// In a blocking call: no delays now.
    blocked: AtomicBool,
    /// Inside a wrapper's own delay step: the handler leaves the delays to it.
    busy: AtomicBool,
}

impl ThreadDelays {
    pub(crate) const fn new() -> ThreadDelays {
        ThreadDelays {
            local: AtomicU64::new(0),
            pre_block: AtomicU64::new(0),
            blocked: AtomicBool::new(false),
            busy: AtomicBool::new(false),
        }
    }

    /// A new owner: even with the global count, not blocked.
    pub(crate) fn reset(&self) {
        self.local
            .store(GLOBAL.load(Ordering::Relaxed), Ordering::Relaxed);
        self.blocked.store(false, Ordering::Relaxed);
        self.busy.store(false, Ordering::Relaxed);
    }
}

/// Is causal profiling going on? One relaxed load.
#[inline]
pub(crate) fn engaged() -> bool {
    ENGAGED.load(Ordering::Relaxed)
}

/// The handler's part for one sample of `frames` (innermost first): which line, the selected
/// line's credit and the sampled progress points. Async-signal-safe (atomics only).
#[inline]
pub(in crate::sampling) fn on_sample(slot: &ThreadSlot, frames: &[u64]) {
    let selected = if ACTIVE.load(Ordering::Acquire) {
        SELECTED.load(Ordering::Relaxed)
    } else {
        0
    };
    let placed = super::lines::place_sample(frames, selected);
    if placed.selected {
        SELECTED_SAMPLES.fetch_add(1, Ordering::Relaxed);
        slot.delays
            .local
            .fetch_add(DELAY_NS.load(Ordering::Relaxed), Ordering::Relaxed);
    }
    let Some(line) = placed.line else {
        return;
    };
    for (i, l) in SAMPLED_POINT_LINE.iter().enumerate() {
        if l.load(Ordering::Relaxed) == line {
            let c = SAMPLED_POINT_COUNTER[i].load(Ordering::Acquire);
            if !c.is_null() {
                // SAFETY: the counter was stored from a leaked `&'static ProgressCounter`.
                unsafe { &*c }.visit();
            }
        }
    }
}

/// The handler's delay step, after the sample is stored. Async-signal-safe: atomics,
/// `clock_gettime` and `nanosleep`.
#[inline]
pub(in crate::sampling) fn in_handler(slot: &ThreadSlot) {
    let d = &slot.delays;
    if d.busy.load(Ordering::Relaxed) || d.blocked.load(Ordering::Relaxed) {
        return;
    }
    add_delays(d);
}

/// Pays or publishes this thread's delays (Coz's `add_delays`).
fn add_delays(d: &ThreadDelays) {
    if !ACTIVE.load(Ordering::Acquire) {
        d.local
            .store(GLOBAL.load(Ordering::Relaxed), Ordering::Relaxed);
        return;
    }
    let global = GLOBAL.load(Ordering::Relaxed);
    let local = d.local.load(Ordering::Relaxed);
    if local > global {
        // Ahead: everyone else owes the difference.
        GLOBAL.fetch_max(local, Ordering::Relaxed);
    } else if local < global {
        let slept = sys::sleep_ns(global - local);
        SLEEPS.fetch_add(1, Ordering::Relaxed);
        SLEPT_NS.fetch_add(slept, Ordering::Relaxed);
        d.local.fetch_add(slept, Ordering::Relaxed);
    }
}

/// The calling thread's slot, if the sampler arms it: found by the kernel thread id (one
/// `gettid` system call and a scan of the slots in use, as Coz finds its thread state by
/// `gettid`). No thread-local storage: `libmetron.so`'s thread-local block must stay within
/// glibc's spare static TLS (`tests/tests/tls_block.rs`). Only called while a causal run is on.
fn current() -> Option<&'static ThreadSlot> {
    super::super::slot::find_owned_by(sys::gettid()).map(|(_, s)| s)
}

/// Before a call that may block (lock, wait, join).
pub fn pre_block() {
    if !engaged() {
        return;
    }
    if let Some(s) = current() {
        s.delays
            .pre_block
            .store(GLOBAL.load(Ordering::Relaxed), Ordering::Relaxed);
        s.delays.blocked.store(true, Ordering::Release);
    }
}

/// After a call that may have blocked. `woken_by_other`: the call returned because another
/// thread released it (a lock acquired, a signal received, a barrier passed, a thread
/// joined), so the delays inserted meanwhile are skipped; `false` for a timeout.
pub fn post_block(woken_by_other: bool) {
    if !engaged() {
        return;
    }
    if let Some(s) = current() {
        let d = &s.delays;
        d.busy.store(true, Ordering::Relaxed);
        if woken_by_other {
            let skipped = GLOBAL
                .load(Ordering::Relaxed)
                .saturating_sub(d.pre_block.load(Ordering::Relaxed));
            d.local.fetch_add(skipped, Ordering::Relaxed);
        }
        d.blocked.store(false, Ordering::Release);
        add_delays(d);
        d.busy.store(false, Ordering::Relaxed);
    }
}

/// Before waking another thread (unlock, signal, broadcast, barrier): pay what this thread
/// owes, so the woken thread does not inherit a head start.
pub fn catch_up() {
    if !engaged() || !ACTIVE.load(Ordering::Relaxed) {
        return;
    }
    if let Some(s) = current() {
        let d = &s.delays;
        d.busy.store(true, Ordering::Relaxed);
        add_delays(d);
        d.busy.store(false, Ordering::Relaxed);
    }
}

/// The calling thread's delay count, for a thread it creates to inherit (Coz's rule: the new
/// thread owes what its creator owes); the global count when the caller is not sampled.
pub fn creator_delays() -> u64 {
    match current() {
        Some(s) => s.delays.local.load(Ordering::Relaxed),
        None => GLOBAL.load(Ordering::Relaxed),
    }
}

/// First thing in a thread created during a causal run (the `pthread_create` wrapper's
/// start routine): the sampler arms the thread at once, rather than at its next 20 ms scan,
/// so a thread that lives a few milliseconds is sampled too, and its delay count starts at
/// `inherited` (its creator's). Metron's own threads, starting unnamed, are left alone.
pub fn thread_started(inherited: u64) {
    if !engaged() || super::super::own_threads_starting() {
        return;
    }
    super::super::on_thread_attach();
    if let Some(s) = current() {
        s.delays.local.store(inherited, Ordering::Relaxed);
    }
}

/// In a forked child: no causal profiling.
pub(crate) fn after_fork_in_child() {
    ENGAGED.store(false, Ordering::Relaxed);
    ACTIVE.store(false, Ordering::Relaxed);
}
