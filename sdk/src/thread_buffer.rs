//! The calling thread's region buffer: a producer of the runtime's slot service kept in a
//! `const`-initialised thread-local, so the hot path is one TLS access and no lazy-init check.
//!
//! The first record of a thread takes the cold path: it attaches a producer (allocates its
//! segments and thread info) and arms a second thread-local whose destructor hands the
//! thread's last segment to the flusher when the thread exits.
//!
//! What the cold path needs from the layers above (the runtime to attach to, started on first
//! use; the owning copy of Metron when this one joined another) comes through
//! [`RecordingHooks`], which the runtime installs from a constructor that runs before any
//! program constructor: this module names nothing above it.

use crate::buffer::producer::RawProducer;
use crate::buffer::service::ServiceInner;
use crate::buffer::ProducerInfo;
use crate::record::Slot;
use crate::shared_runtime::abi::OwnerApi;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// The runtime's answers to a thread's cold path.
pub(crate) struct RecordingHooks {
    /// The owner's functions when this copy of Metron joined another (which then records).
    pub(crate) owner: fn() -> Option<&'static OwnerApi>,
    /// Starts the runtime if needed; the region service to attach to, or `None` when this
    /// copy does not record (recording off, a joined copy).
    pub(crate) service: fn() -> Option<&'static Arc<ServiceInner<Slot>>>,
    /// Called once a thread attached: the run has been used.
    pub(crate) attached: fn(),
}

static HOOKS: OnceLock<&'static RecordingHooks> = OnceLock::new();

/// Records a thread tried to write before the hooks were installed (a constructor that ran
/// before Metron's): dropped, counted, reported in `metadata.json`.
static BEFORE_HOOKS: AtomicU64 = AtomicU64::new(0);

/// Installs the runtime's hooks (first call wins; allocation-free, so a constructor may call it).
pub(crate) fn install_hooks(hooks: &'static RecordingHooks) {
    let _ = HOOKS.set(hooks);
}

/// How many records were dropped because they came before the hooks.
pub(crate) fn dropped_before_hooks() -> u64 {
    BEFORE_HOOKS.load(Ordering::Relaxed)
}

/// The owner's functions when this copy joined another.
#[inline]
fn owner() -> Option<&'static OwnerApi> {
    HOOKS.get().and_then(|h| (h.owner)())
}

thread_local! {
    static PRODUCER: RawProducer<Slot> = const { RawProducer::empty() };
    static PAUSED: Cell<bool> = const { Cell::new(false) };
    static EXIT: ExitGuard = const { ExitGuard };
}

/// Hands the thread's buffer over when the thread exits.
struct ExitGuard;

impl Drop for ExitGuard {
    fn drop(&mut self) {
        // PRODUCER has no destructor, so it is still accessible here.
        let _ = PRODUCER.try_with(RawProducer::retire);
    }
}

/// Stores a one-slot record. `drop_weight` is how many records are lost if it is dropped (a
/// dropped region begin also loses its end). `ends_region` records are written even while the
/// thread is paused, so regions opened before a pause still close. Hot path.
#[inline(always)]
pub(crate) fn write(ticks: u64, header: u64, drop_weight: u64, ends_region: bool) -> bool {
    write_to(current(), ticks, header, drop_weight, ends_region)
}

/// The calling thread's producer (also for callers that keep their own per-thread state and so
/// skip the TLS access of [`write`]: [`crate::by_id::ThreadBuffer`]).
#[inline(always)]
pub(crate) fn current() -> &'static RawProducer<Slot> {
    // SAFETY: PRODUCER is `const`-initialised and has no destructor, so it lives as long as
    // this thread; callers use the reference only on this thread (`ThreadBuffer` is !Send).
    unsafe { &*PRODUCER.with(|p| p as *const RawProducer<Slot>) }
}

/// [`write`] into `p`, the calling thread's producer ([`current`]).
#[inline(always)]
pub(crate) fn write_to(
    p: &RawProducer<Slot>,
    ticks: u64,
    header: u64,
    drop_weight: u64,
    ends_region: bool,
) -> bool {
    p.push(Slot { ticks, header }) || write_slow(p, ticks, header, drop_weight, ends_region)
}

#[cold]
#[inline(never)]
fn write_slow(
    p: &RawProducer<Slot>,
    ticks: u64,
    header: u64,
    drop_weight: u64,
    ends_region: bool,
) -> bool {
    // Rebuilt here rather than passed in: a 16-byte aligned argument would be spilled to the
    // stack on the hot path just in case this call happens.
    let slot = Slot { ticks, header };
    if !p.is_attached() {
        // A copy of Metron that joined another never attaches: the owner records.
        if let Some(owner) = owner() {
            return (owner.write)(ticks, header, drop_weight, ends_region);
        }
    }
    let store =
        |p: &RawProducer<Slot>| p.push(slot) || (make_room(p, 1, drop_weight) && p.push(slot));
    if PAUSED.with(Cell::get) {
        return ends_region && while_unpaused(p, store);
    }
    if !p.is_attached() {
        // The thread's first record attaches its buffer and may start the runtime (settings,
        // sinks, the run folder): stamp it afterwards, so that this set-up is not
        // counted in the region it begins.
        return make_room(p, 1, drop_weight)
            && p.push(Slot {
                ticks: metron_components::clock::now_ticks(),
                header,
            });
    }
    make_room(p, 1, drop_weight) && p.push(slot)
}

/// Stores a one-slot record from a signal handler (a crash): only into room the thread's
/// current segment already has, never through the cold path (which may map memory or take a
/// lock). Async-signal-safe; false when there was no room or the thread never recorded.
pub(crate) fn write_in_signal_handler(ticks: u64, header: u64) -> bool {
    // `try_with`: the thread-local may already be gone on a thread that is exiting.
    PRODUCER
        .try_with(|p| p.push(Slot { ticks, header }))
        .unwrap_or(false)
}

/// Stores an `n`-slot record written by `fill` into contiguous slots (`n <= 255`); the flags
/// mean what they mean for [`write`].
#[inline(always)]
pub(crate) fn write_with(
    n: usize,
    drop_weight: u64,
    ends_region: bool,
    fill: impl FnOnce(&mut [Slot]),
) -> bool {
    // Outside `with`, so that no closure keeps the whole write from inlining.
    let p = current();
    match p.reserve(n) {
        Some(at) => {
            fill_and_commit(p, at, n, fill);
            true
        }
        None => write_with_slow(p, n, drop_weight, ends_region, fill),
    }
}

#[cold]
#[inline(never)]
fn write_with_slow(
    p: &RawProducer<Slot>,
    n: usize,
    drop_weight: u64,
    ends_region: bool,
    fill: impl FnOnce(&mut [Slot]),
) -> bool {
    if !p.is_attached() {
        if let Some(owner) = owner() {
            return write_through_owner(owner, n, drop_weight, ends_region, fill);
        }
    }
    let store = |p: &RawProducer<Slot>| {
        let at = match p.reserve(n) {
            Some(at) => at,
            None if make_room(p, n, drop_weight) => match p.reserve(n) {
                Some(at) => at,
                None => return false,
            },
            None => return false,
        };
        fill_and_commit(p, at, n, fill);
        true
    };
    if PAUSED.with(Cell::get) {
        return ends_region && while_unpaused(p, store);
    }
    store(p)
}

/// [`write_with`] in a copy of Metron that joined another: the record is filled here and
/// copied into the owner's buffer.
fn write_through_owner(
    owner: &OwnerApi,
    n: usize,
    drop_weight: u64,
    ends_region: bool,
    fill: impl FnOnce(&mut [Slot]),
) -> bool {
    let mut small = [Slot::default(); 8];
    let mut large;
    let slots = if n <= small.len() {
        &mut small[..n]
    } else {
        large = [Slot::default(); 255];
        &mut large[..n.min(255)]
    };
    fill(slots);
    crate::shared_runtime::abi::write_slots(owner, slots, drop_weight, ends_region)
}

#[inline(always)]
fn fill_and_commit(p: &RawProducer<Slot>, at: *mut Slot, n: usize, fill: impl FnOnce(&mut [Slot])) {
    // SAFETY: `reserve` returned room for `n` slots at `at` in the current segment, which
    // only this thread writes; the memory is initialised (zero-filled map or old records).
    let slots = unsafe { std::slice::from_raw_parts_mut(at, n) };
    fill(slots);
    p.commit(at, n);
}

/// Runs `store` with the producer's real limit restored, then pauses it again.
fn while_unpaused(p: &RawProducer<Slot>, store: impl FnOnce(&RawProducer<Slot>) -> bool) -> bool {
    p.resume();
    let stored = store(p);
    p.pause();
    stored
}

/// Cold path shared by all writes: attach on first use, swap or drop when full. Returns true
/// when `n` slots are now available; otherwise the record is counted as dropped.
#[cold]
#[inline(never)]
fn make_room(p: &RawProducer<Slot>, n: usize, drop_weight: u64) -> bool {
    if FORKED_CHILD.load(Ordering::Relaxed) {
        return false;
    }
    if !p.is_attached() {
        let Some(hooks) = HOOKS.get() else {
            BEFORE_HOOKS.fetch_add(drop_weight, Ordering::Relaxed);
            return false;
        };
        // Starting the runtime may have found METRON_ENABLED off.
        let Some(service) = (hooks.service)() else {
            return false;
        };
        if !p.attach(service, ProducerInfo::of_current_thread()) {
            return false;
        }
        (hooks.attached)();
        // `try_with`: a write after this thread's thread-locals were destroyed (an `atexit`
        // handler on the main thread) still gets its record; the producer is drained at finish.
        let _ = EXIT.try_with(|_| {});
        // Sampled from now on, not only from the sampler's next scan.
        if let Some(hook) = ON_ATTACH.get() {
            hook();
        }
        if p.reserve(n).is_some() {
            return true;
        }
    }
    if p.advance(n) && p.reserve(n).is_some() {
        return true;
    }
    if let Some(shared) = p.shared() {
        shared.count_drop(drop_weight);
    }
    false
}

/// Called when a thread attaches its buffer (cold path): installed by the sampler when it
/// starts, so that it registers the thread at once without the hot path reaching up into it.
static ON_ATTACH: OnceLock<fn()> = OnceLock::new();

/// Installs the hook a thread's first record calls once its buffer is attached (first call
/// wins).
pub(crate) fn on_attach(hook: fn()) {
    let _ = ON_ATTACH.set(hook);
}

/// Set in a forked child (see `lifecycle`): buffers belong to the parent; never attach again.
static FORKED_CHILD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Fork child handler: forgets the forking thread's buffer without touching the parent's
/// shared state (whose locks other parent threads may hold). Lock-free, allocation-free.
pub(crate) fn forget_after_fork() {
    FORKED_CHILD.store(true, Ordering::Relaxed);
    let _ = PRODUCER.try_with(RawProducer::forget);
}

/// Stops recording on this thread until [`resume_thread`]; open regions still close.
pub fn pause_thread() {
    if let Some(owner) = owner() {
        return (owner.pause_thread)();
    }
    PAUSED.with(|c| c.set(true));
    PRODUCER.with(RawProducer::pause);
}

/// Resumes recording on this thread after [`pause_thread`].
pub fn resume_thread() {
    if let Some(owner) = owner() {
        return (owner.resume_thread)();
    }
    PAUSED.with(|c| c.set(false));
    PRODUCER.with(RawProducer::resume);
}

/// True while this thread is paused.
pub fn thread_paused() -> bool {
    if let Some(owner) = owner() {
        return (owner.thread_paused)();
    }
    PAUSED.with(Cell::get)
}
