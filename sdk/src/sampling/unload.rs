//! Keeping the signal handler off modules that `dlclose` is unmapping.
//!
//! The handler unwinds through the published [`View`](super::unwind::View), which points into
//! the loaded modules' `.eh_frame` in place. A module that `dlclose` unmaps stays in the view
//! until the sampler's manager rebuilds it (every 20 ms), and a program that dlopens and
//! dlcloses in a burst (Open MPI's `MPI_Init` probes dozens of components) can map a new
//! module where an old one was: a sample taken in it would read the old module's unwind data,
//! now unmapped or another module's bytes, and fault.
//!
//! So `libmetron.so` defines `dlclose` (see `user-api/src/dlclose.rs`) and brackets the real
//! call with [`around_module_unload`]: it marks an unload in progress, waits until no handler
//! is inside the view (handlers take microseconds), and lets the real `dlclose` run; after it,
//! the view is stale until the manager publishes one built after the unload. Meanwhile a
//! handler keeps only the interrupted program counter (counted as a pc-only sample), never a
//! read of unmapped memory. A view whose build overlapped an unload is stale from the start.
//!
//! A program that loads Metron privately (`dlopen` without `RTLD_GLOBAL`, so its `dlclose` is
//! not the one other modules call) keeps the 20 ms window described in `unwind`.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// `dlclose` calls under way.
static IN_PROGRESS: AtomicUsize = AtomicUsize::new(0);
/// Bumped as each unload starts: a view built before it is stale.
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// Unloads that gave up waiting for a handler to leave the view.
static WAIT_TIMEOUTS: AtomicU64 = AtomicU64::new(0);

/// The generation a view built now belongs to, to pass to [`build_finished`].
pub(crate) fn build_started() -> Option<u64> {
    let g = GENERATION.load(Ordering::SeqCst);
    (IN_PROGRESS.load(Ordering::SeqCst) == 0).then_some(g)
}

/// The generation to stamp on a view whose build began at [`build_started`]: `u64::MAX`
/// (never current) when an unload overlapped the build.
pub(crate) fn build_finished(started: Option<u64>) -> u64 {
    match started {
        Some(g)
            if IN_PROGRESS.load(Ordering::SeqCst) == 0
                && GENERATION.load(Ordering::SeqCst) == g =>
        {
            g
        }
        _ => u64::MAX,
    }
}

/// Whether a view stamped `generation` describes the modules mapped now. Async-signal-safe.
/// Called by a reader inside [`super::sys::Published::read`], whose reader count the unload
/// waits on: an unload that starts after this returns `true` waits for the reader to leave.
#[inline]
pub(crate) fn view_is_current(generation: u64) -> bool {
    IN_PROGRESS.load(Ordering::SeqCst) == 0 && GENERATION.load(Ordering::SeqCst) == generation
}

/// Runs `unload` (the real `dlclose`) once no handler can be reading module memory through
/// the view. Not for signal handlers.
pub fn around_module_unload<R>(unload: impl FnOnce() -> R) -> R {
    IN_PROGRESS.fetch_add(1, Ordering::SeqCst);
    GENERATION.fetch_add(1, Ordering::SeqCst);
    // Readers that loaded the counters before the increments above are counted in the view's
    // reader count; later ones see the unload and leave the module memory alone. Readers
    // never block, so the wait is short; the bound keeps a stopped reader (a thread stopped
    // by a debugger mid-handler) from hanging the program's dlclose.
    let deadline = Instant::now() + Duration::from_millis(100);
    while super::view_readers() != 0 {
        if Instant::now() > deadline {
            WAIT_TIMEOUTS.fetch_add(1, Ordering::Relaxed);
            break;
        }
        std::thread::yield_now();
    }
    let result = unload();
    IN_PROGRESS.fetch_sub(1, Ordering::SeqCst);
    result
}

/// (unloads seen, waits that timed out), for `metadata.json`.
pub(crate) fn counts() -> (u64, u64) {
    (
        GENERATION.load(Ordering::Relaxed),
        WAIT_TIMEOUTS.load(Ordering::Relaxed),
    )
}
