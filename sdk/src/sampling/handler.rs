//! The sample signal handler.
//!
//! What it may do, and does: atomic loads and stores, one `gettid` system call, `rdtsc`, reads
//! of the interrupted thread's stack inside its bounds, the framehop unwind (no allocation
//! under `MustNotAllocateDuringUnwind`), stores into the thread's preallocated ring, and an
//! `unpark` of the flusher (an atomic and a futex wake) when the ring is half full; in a causal
//! run, the line lookup and the delay step (atomics, and `nanosleep` to take a delay: see
//! `causal::delays`). What it
//! never does: allocate, take a lock, touch lazily-initialised thread-local storage, format,
//! or panic. It saves and restores `errno`.

use super::causal;
use super::slot::{self, ThreadSlot};
use super::sys;
use super::unwind::{self, MAX_FRAMES};
use super::{ARMED, FLUSHER, OPEN, STRAY, VIEW};
use crate::record::{header, kind, Slot};
use std::ffi::{c_int, c_void};
use std::sync::atomic::Ordering;

/// Sample trigger codes (low bits of a `SAMPLE` record's `aux`).
pub(crate) const TRIGGER_CPU: u16 = 0;
pub(crate) const TRIGGER_REAL: u16 = 1;
pub(crate) const TRIGGER_REGION: u16 = 2;

/// The handler installed for the sampling signal. Async-signal-safe (see the module docs):
/// no allocation, no lock, no lazy thread-local, no panic; saves and restores `errno`.
pub(crate) extern "C" fn on_sample(_sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    let saved = sys::errno();
    take_sample(info, ctx);
    sys::set_errno(saved);
}

#[inline]
fn take_sample(info: *mut libc::siginfo_t, ctx: *mut c_void) {
    if !ARMED.load(Ordering::Relaxed) {
        return;
    }
    let (code, word) = sys::siginfo_code_and_word(info);
    let (index, trigger) = if code == libc::SI_TIMER {
        // `sampler::timer_value`: the slot index, and the low bit set for CPU time.
        let trigger = if word & 1 == 1 {
            TRIGGER_CPU
        } else {
            TRIGGER_REAL
        };
        (Some(word >> 1), trigger)
    } else {
        (slot::index_of_fd(sys::fd_of(word)), TRIGGER_CPU)
    };
    let Some(slot) = index.and_then(slot::get) else {
        STRAY.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let owner = slot.tid.load(Ordering::Acquire);
    if owner == 0 || owner != sys::gettid() {
        STRAY.fetch_add(1, Ordering::Relaxed);
        return;
    }
    if !crate::run_state::collecting() || !OPEN.load(Ordering::Relaxed) {
        slot.skipped.fetch_add(1, Ordering::Relaxed);
        return;
    }
    if code == libc::SI_TIMER {
        let merged = sys::timer_overrun(info);
        if merged > 0 {
            slot.overruns
                .fetch_add(u64::from(merged), Ordering::Relaxed);
        }
    }
    let Some(regs) = sys::interrupted_registers(ctx) else {
        return;
    };
    let ticks = metron_components::clock::now_ticks();
    capture(slot, ticks, regs, trigger);
    if trigger == TRIGGER_CPU && causal::engaged() {
        // Causal profiling's safe point: pay or publish this thread's delays.
        causal::in_handler(slot);
    }
}

/// Unwinds from `regs` and stores the stack into `slot`'s ring. Async-signal-safe. Also the
/// function the benchmark times directly.
#[inline]
pub(crate) fn capture(slot: &ThreadSlot, ticks: u64, regs: (u64, u64, u64), trigger: u16) -> bool {
    let Some(mut scratch) = slot.scratch.try_take() else {
        slot.busy.fetch_add(1, Ordering::Relaxed);
        return false;
    };
    let scratch = &mut *scratch;
    let stack = slot.stack();
    let n = VIEW.read(|view| match view {
        Some(view) if view.is_current() => {
            unwind::unwind(view, &mut scratch.cache, regs, stack, &mut scratch.frames)
        }
        _ => {
            scratch.frames[0] = regs.0;
            1
        }
    });
    if trigger == TRIGGER_CPU && causal::engaged() {
        causal::on_sample(slot, &scratch.frames[..n]);
    }
    if n == MAX_FRAMES {
        slot.truncated.fetch_add(1, Ordering::Relaxed);
    } else if n == 1 {
        slot.pc_only.fetch_add(1, Ordering::Relaxed);
    }
    let stored = store(slot, ticks, &scratch.frames[..n], trigger);
    if stored {
        let counter = if trigger == TRIGGER_REAL {
            &slot.real_samples
        } else {
            &slot.cpu_samples
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
    if slot.ring.used() > (slot::RING_SLOTS / 2) as u64 {
        if let Some(flusher) = FLUSHER.get() {
            flusher.unpark();
        }
    }
    stored
}

/// Writes one `SAMPLE` record of `frames` into the slot's ring.
#[inline]
fn store(slot: &ThreadSlot, ticks: u64, frames: &[u64], trigger: u16) -> bool {
    let payload = frames.len().div_ceil(2);
    let aux = trigger | (frames.len() as u16) << 2;
    slot.ring.push(
        Slot {
            ticks,
            header: header(0, kind::SAMPLE, payload as u8, aux),
        },
        payload,
        |i| Slot {
            ticks: frames[2 * i],
            header: frames.get(2 * i + 1).copied().unwrap_or(0),
        },
    )
}
