//! Per-thread sample slots, preallocated off the signal path, and the tables the handler
//! uses to find its slot without thread-local storage: a perf event's `si_fd` indexes
//! [`FD_SLOT`], a timer's `si_value` is the slot index itself.
//!
//! A slot belongs to one thread at a time (`tid`); the handler writes into it only after
//! checking that the thread it runs on is that owner, so a stray or late signal (a timer of a
//! thread that exited, a recycled descriptor) never writes into another thread's ring.

use super::ring::Ring;
use super::sys::TryCell;
use super::unwind::{new_cache, Cache, MAX_FRAMES};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;

/// Most threads sampled at once.
pub(crate) const MAX_SLOTS: usize = 1024;
/// Descriptors above this are not routed (the event is closed and the thread counted).
pub(crate) const MAX_FD: usize = 1 << 16;
/// Ring size per thread, in 16-byte slots (1 MiB of address space, touched as it fills: ~4 s
/// of 1 kHz samples of 30 frames).
pub(crate) const RING_SLOTS: usize = 1 << 16;

/// What the handler works with: the unwinder cache and the frame buffer.
pub(crate) struct Scratch {
    pub(crate) cache: Box<Cache>,
    pub(crate) frames: [u64; MAX_FRAMES],
}

/// One sampled thread's slot.
pub(crate) struct ThreadSlot {
    /// The owning kernel thread id; 0 while free.
    pub(crate) tid: AtomicU32,
    /// The thread's stack range if it registered it (`lo`, `hi`; 0, 0 when unknown).
    pub(crate) stack_lo: AtomicU64,
    pub(crate) stack_hi: AtomicU64,
    pub(crate) ring: Ring,
    pub(crate) scratch: TryCell<Scratch>,
    /// Samples stored, by trigger.
    pub(crate) cpu_samples: AtomicU64,
    pub(crate) real_samples: AtomicU64,
    /// Timer expirations the kernel merged into a signal still pending (`si_overrun`):
    /// samples a loaded machine did not deliver, counted so the rate can be checked.
    pub(crate) overruns: AtomicU64,
    /// Signals that arrived while collection was off (time window, `set_collecting`).
    pub(crate) skipped: AtomicU64,
    /// Samples that found the scratch busy (a signal during a backtrace on the same thread).
    pub(crate) busy: AtomicU64,
    /// Stacks cut at `MAX_FRAMES`.
    pub(crate) truncated: AtomicU64,
    /// Stacks of one frame (the pc only: unknown stack or no unwind information).
    pub(crate) pc_only: AtomicU64,
    /// Causal profiling: this thread's delay state.
    pub(crate) delays: super::causal::ThreadDelays,
}

impl ThreadSlot {
    fn new() -> ThreadSlot {
        ThreadSlot {
            tid: AtomicU32::new(0),
            stack_lo: AtomicU64::new(0),
            stack_hi: AtomicU64::new(0),
            ring: Ring::new(RING_SLOTS),
            scratch: TryCell::new(Scratch {
                cache: new_cache(),
                frames: [0; MAX_FRAMES],
            }),
            cpu_samples: AtomicU64::new(0),
            real_samples: AtomicU64::new(0),
            overruns: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            busy: AtomicU64::new(0),
            truncated: AtomicU64::new(0),
            pc_only: AtomicU64::new(0),
            delays: super::causal::ThreadDelays::new(),
        }
    }

    /// The registered stack range, if any.
    #[inline]
    pub(crate) fn stack(&self) -> Option<(u64, u64)> {
        let hi = self.stack_hi.load(Ordering::Relaxed);
        (hi != 0).then(|| (self.stack_lo.load(Ordering::Relaxed), hi))
    }

    /// Prepares a free slot for thread `tid` (no writer can be active: the slot is free).
    pub(crate) fn assign(&self, tid: u32, stack: Option<(u64, u64)>) {
        self.ring.reset();
        for c in [
            &self.cpu_samples,
            &self.real_samples,
            &self.overruns,
            &self.skipped,
            &self.busy,
            &self.truncated,
            &self.pc_only,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        self.delays.reset();
        let (lo, hi) = stack.unwrap_or((0, 0));
        self.stack_lo.store(lo, Ordering::Relaxed);
        self.stack_hi.store(hi, Ordering::Relaxed);
        self.tid.store(tid, Ordering::Release);
    }
}

/// Every slot ever made, by index; made by the manager, never freed (reused).
static SLOTS: [OnceLock<ThreadSlot>; MAX_SLOTS] = [const { OnceLock::new() }; MAX_SLOTS];

/// perf event descriptor → slot index + 1 (0: none).
static FD_SLOT: [AtomicU32; MAX_FD] = [const { AtomicU32::new(0) }; MAX_FD];

/// Slot `index`, made now if needed (not from a signal handler: it allocates).
pub(crate) fn make(index: usize) -> &'static ThreadSlot {
    SLOTS[index].get_or_init(ThreadSlot::new)
}

/// Slot `index` if it exists. Async-signal-safe.
#[inline]
pub(crate) fn get(index: usize) -> Option<&'static ThreadSlot> {
    SLOTS.get(index)?.get()
}

/// The slot thread `tid` owns now, with its index. Scans the slots made so far; not for a
/// signal handler (causal profiling's wrappers, during a causal run).
pub(crate) fn find_owned_by(tid: u32) -> Option<(usize, &'static ThreadSlot)> {
    for (i, cell) in SLOTS.iter().enumerate() {
        let Some(s) = cell.get() else {
            // Slots are made in index order, and freed ones are reused, never unmade.
            break;
        };
        if s.tid.load(Ordering::Acquire) == tid {
            return Some((i, s));
        }
    }
    None
}

/// Routes descriptor `fd` to slot `index` (`None`: unroutes it). False if `fd` is too large.
pub(crate) fn route_fd(fd: i32, index: Option<usize>) -> bool {
    match FD_SLOT.get(fd as usize) {
        Some(cell) => {
            cell.store(index.map_or(0, |i| i as u32 + 1), Ordering::Release);
            true
        }
        None => false,
    }
}

/// The slot index descriptor `fd` is routed to. Async-signal-safe.
#[inline]
pub(crate) fn index_of_fd(fd: i32) -> Option<usize> {
    let v = FD_SLOT
        .get(usize::try_from(fd).ok()?)?
        .load(Ordering::Acquire);
    (v as usize).checked_sub(1)
}

/// In a forked child: closes every routed descriptor (the child's copies of the parent's perf
/// events) without disabling the events, which still sample the parent. Async-signal-safe.
pub(crate) fn close_all_routed_in_child() {
    for (fd, cell) in FD_SLOT.iter().enumerate() {
        if cell.swap(0, Ordering::Relaxed) != 0 {
            super::sys::close(fd as i32);
        }
    }
}
