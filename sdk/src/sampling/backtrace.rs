//! The [`Backtrace`] component: the call stack at the start of a region, taken through the
//! sampler's unwinder and delivered as an [`crate::Event::Sample`] whose trigger is
//! [`crate::SampleTrigger::RegionBegin`] with the region's call site.
//!
//! ```no_run
//! #[derive(Default, metron::Bundle)]
//! struct WithStack {
//!     stack: metron::Backtrace,
//! }
//! fn load() {
//!     let _g = metron::scope!("load", WithStack); // where was `load` called from?
//! }
//! ```
//!
//! Costs an unwind (about a microsecond per 10 frames, no system call) and a record of
//! 16 bytes per two frames in the thread's region buffer. It works with or without
//! `METRON_SAMPLING`; without it, the module list is built on first use and rebuilt when the
//! loader's counters change.

use super::handler::TRIGGER_REGION;
use super::unwind::{self, Cache, View, MAX_FRAMES};
use super::{sys, VIEW};
use crate::record::{header, kind, Slot};
use metron_components::{Component, Field, Unit};
use std::cell::RefCell;

/// Captures the call stack when its region begins. The stack is its own event; the
/// component's one field, `frames`, is the stack's depth (0 when none was taken).
#[derive(Clone, Copy, Debug, Default)]
pub struct Backtrace {
    frames: u32,
}

impl Component for Backtrace {
    const NAME: &'static str = "backtrace";
    const DESCRIPTION: &'static str =
        "call stack at region begin, as a sample event (same unwinder as the sampler)";
    const COST: &'static str = "an unwind: ~1 µs per 10 frames, no syscall";
    const FIELDS: &'static [Field] = &[Field::new("frames", Unit::Count)];
    type Value = u32;

    #[inline(always)]
    fn start(&mut self) {
        self.frames = capture() as u32;
    }

    fn value(&self) -> u32 {
        self.frames
    }

    fn write_fields(&self, out: &mut [f64]) {
        out[0] = f64::from(self.frames);
    }
}

/// This thread's unwinder cache and stack range, made on its first backtrace.
type ThreadState = Option<(Box<Cache>, Option<(u64, u64)>)>;

thread_local! {
    static STATE: RefCell<ThreadState> = const { RefCell::new(None) };
}

/// Unwinds the caller's stack and writes it as a region-begin sample into the thread's
/// buffer; returns the number of frames stored.
#[inline(never)]
fn capture() -> usize {
    // Here, so that frames[0] returns into the code that began the region, whatever the
    // closures below compile to.
    let regs = sys::current_registers();
    if !crate::run_state::collecting() {
        return 0;
    }
    ensure_view();
    let mut frames = [0u64; MAX_FRAMES];
    let n = STATE.with(|state| {
        let Ok(mut state) = state.try_borrow_mut() else {
            return 0;
        };
        let (cache, stack) =
            state.get_or_insert_with(|| (unwind::new_cache(), sys::own_stack_range()));
        VIEW.read(|view| match view {
            Some(view) if view.is_current() => {
                unwind::unwind_from(view, cache, regs, *stack, &mut frames)
            }
            _ => 0,
        })
    });
    if n == 0 {
        return 0;
    }
    let frames = &frames[..n];
    let payload = n.div_ceil(2);
    let aux = TRIGGER_REGION | (n as u16) << 2;
    let stored = crate::thread_buffer::write_with(1 + payload, 1, false, |slots: &mut [Slot]| {
        slots[0] = Slot {
            ticks: metron_components::clock::now_ticks(),
            header: header(0, kind::SAMPLE, payload as u8, aux),
        };
        for (i, s) in slots[1..].iter_mut().enumerate() {
            *s = Slot {
                ticks: frames[2 * i],
                header: frames.get(2 * i + 1).copied().unwrap_or(0),
            };
        }
    });
    if stored {
        n
    } else {
        0
    }
}

/// Builds the view if the sampler has not, or rebuilds it after a `dlopen` when no sampler
/// keeps it fresh.
fn ensure_view() {
    let current = VIEW.read(|v| v.map(|v| (v.counters, v.is_current())));
    let sampler_running = super::ARMED.load(std::sync::atomic::Ordering::Relaxed);
    match current {
        Some((_, true)) if sampler_running => {}
        Some((c, true)) if c == sys::module_counters() => {}
        _ => VIEW.publish(Box::new(View::build())),
    }
}
