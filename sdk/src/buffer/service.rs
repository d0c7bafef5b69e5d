//! The reading side: a service owns its producers' segments, drains them in order and hands
//! batches to its callback.

use super::callback_thread::CallbackThread;
use super::producer::{ProducerShared, RawProducer};
use super::segment::Segment;
use super::{
    BacklogLimit, BacklogPolicy, BacklogStats, Batch, BufferConfig, Policy, ProducerInfo,
    SlotConfig,
};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

/// The callback a service delivers batches to.
pub(crate) type Callback<R> = Box<dyn FnMut(Batch<'_, R>) + Send>;

/// Per-producer bookkeeping of the reader.
struct Tracked<R> {
    shared: Arc<ProducerShared<R>>,
    dropped_reported: u64,
}

/// Everything the drain needs, under one lock so deliveries never interleave.
struct DrainState<R> {
    callback: Callback<R>,
    tracked: Vec<Tracked<R>>,
}

pub(crate) struct ServiceInner<R> {
    pub(crate) name: String,
    pub(crate) config: SlotConfig,
    /// Producers registered since the last drain.
    incoming: Mutex<Vec<Arc<ProducerShared<R>>>>,
    drain: Mutex<DrainState<R>>,
    // Boxed: producers and queues hold raw pointers to segments, so their addresses must not move.
    #[allow(clippy::vec_box)]
    free: Mutex<Vec<Box<Segment<R>>>>,
    thread: CallbackThread,
    /// How many free segments the drain keeps mapped ahead of need (see
    /// [`BufferedService::keep_free`]).
    keep_free: AtomicUsize,
    /// Producers retired since the reader's last drain (see [`ServiceInner::retired_one`]).
    retired_since_drain: AtomicUsize,
    pub(crate) segments_mapped: AtomicU64,
    pub(crate) records_delivered: AtomicU64,
    /// Segments handed to the reader and not yet recycled (the backlog), over all producers.
    backlog: AtomicUsize,
    /// The backlog limit in segments (0: none) and its policy (`true`: drop).
    limit_segments: AtomicUsize,
    limit_drops: AtomicBool,
    /// Signalled when the reader recycles segments (producers waiting at the limit).
    relief: (Mutex<()>, Condvar),
    peak_backlog: AtomicUsize,
    blocked_times: AtomicU64,
    blocked_ns: AtomicU64,
    drops_at_limit: AtomicU64,
    own_threads_past_limit: AtomicU64,
    /// Segments the reader recycled (its progress, seen by producers waiting at the limit).
    recycled: AtomicU64,
    /// Times a waiting producer went past the limit because the reader freed nothing.
    past_limit_stalled: AtomicU64,
}

/// [`BufferedService::keep_free`]'s count for "two segments for each CPU the process may use,
/// 16 to 64", worked out on the callback thread.
pub const KEEP_FREE_BY_CPUS: usize = usize::MAX;

/// How many ended threads' producers wake the reader once (see [`ServiceInner::retired_one`]).
const RETIRED_PER_WAKE: usize = 32;

/// How long a producer waits at the backlog limit for the reader to free a segment, at most.
const STALLED_READER: Duration = Duration::from_secs(10);

impl<R: Copy + Send + 'static> ServiceInner<R> {
    pub(crate) fn new(
        name: String,
        config: SlotConfig,
        thread: CallbackThread,
        callback: Callback<R>,
    ) -> Arc<Self> {
        let inner = Arc::new(ServiceInner {
            name,
            config,
            incoming: Mutex::new(Vec::new()),
            drain: Mutex::new(DrainState {
                callback,
                tracked: Vec::new(),
            }),
            free: Mutex::new(Vec::new()),
            thread,
            keep_free: AtomicUsize::new(0),
            retired_since_drain: AtomicUsize::new(0),
            segments_mapped: AtomicU64::new(0),
            records_delivered: AtomicU64::new(0),
            backlog: AtomicUsize::new(0),
            limit_segments: AtomicUsize::new(0),
            limit_drops: AtomicBool::new(false),
            relief: (Mutex::new(()), Condvar::new()),
            peak_backlog: AtomicUsize::new(0),
            blocked_times: AtomicU64::new(0),
            blocked_ns: AtomicU64::new(0),
            drops_at_limit: AtomicU64::new(0),
            own_threads_past_limit: AtomicU64::new(0),
            recycled: AtomicU64::new(0),
            past_limit_stalled: AtomicU64::new(0),
        });
        let weak: Weak<dyn Drainable> = Arc::downgrade(&inner) as Weak<dyn Drainable>;
        inner.thread.register(weak);
        inner
    }

    /// Called by a producer that is about to hand a segment over (cold): applies the backlog
    /// limit. Returns false when the producer must drop its records instead (policy `drop`,
    /// at the limit); otherwise it may hand the segment over (having waited, under policy
    /// `block`, until the backlog is under the limit). `own` is true for Metron's own threads,
    /// which never wait or drop here (the callback thread waiting for itself would never
    /// wake).
    pub(crate) fn admit(&self, own: bool) -> bool {
        let limit = self.limit_segments.load(Ordering::Relaxed);
        if limit == 0 || self.backlog.load(Ordering::Acquire) < limit {
            return true;
        }
        if own || super::on_callback_thread() {
            self.own_threads_past_limit.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        if self.limit_drops.load(Ordering::Relaxed) {
            self.drops_at_limit.fetch_add(1, Ordering::Relaxed);
            self.wake();
            return false;
        }
        let started = Instant::now();
        let (lock, relief) = &self.relief;
        let mut guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut progress = (self.recycled.load(Ordering::Relaxed), Instant::now());
        while self.backlog.load(Ordering::Acquire) >= limit {
            // A callback thread that stopped freeing segments (a user callback that never
            // returns, a thread that died) must not hang the program: after
            // `STALLED_READER` without one freed, go past the limit, counted.
            let recycled = self.recycled.load(Ordering::Relaxed);
            if recycled != progress.0 {
                progress = (recycled, Instant::now());
            } else if progress.1.elapsed() >= STALLED_READER {
                self.past_limit_stalled.fetch_add(1, Ordering::Relaxed);
                break;
            }
            self.wake();
            // Bounded, so that a wake-up missed between the check and the wait costs at most
            // this long.
            guard = relief
                .wait_timeout(guard, Duration::from_millis(10))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        drop(guard);
        self.blocked_times.fetch_add(1, Ordering::Relaxed);
        self.blocked_ns
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        true
    }

    /// A producer retired (its thread ended): the reader is woken for every
    /// [`RETIRED_PER_WAKE`]th, not for each. A program that runs a thread per task would
    /// otherwise wake the flusher (a context switch and a batch with its own `write`) once per
    /// thread; the others wait for that, a full segment, the flush interval or the end, with
    /// at most that many ended threads' segments held meanwhile.
    pub(crate) fn retired_one(&self) {
        let n = self.retired_since_drain.fetch_add(1, Ordering::AcqRel) + 1;
        if n % RETIRED_PER_WAKE == 0 {
            self.thread.wake();
        }
    }

    /// Counts a segment handed to the reader (the producer sealed it).
    pub(crate) fn sealed_one(&self) {
        let now = self.backlog.fetch_add(1, Ordering::AcqRel) + 1;
        self.peak_backlog.fetch_max(now, Ordering::Relaxed);
    }

    /// A free segment, or a newly mapped one (cold).
    pub(crate) fn take_segment(&self) -> Option<Box<Segment<R>>> {
        if let Some(seg) = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return Some(seg);
        }
        self.segments_mapped.fetch_add(1, Ordering::Relaxed);
        Segment::new(self.config.capacity).ok()
    }

    /// Maps segments until `n` are free, their first pages already faulted in, so that the
    /// threads that attach next (their first record) take a segment without a system call.
    /// Runs on the callback thread, after each of its drains.
    fn stock(&self, n: usize) {
        const FIRST_PAGES: usize = 16 << 10;
        loop {
            if self.free.lock().unwrap_or_else(|e| e.into_inner()).len() >= n {
                return;
            }
            let Ok(segment) = Segment::new(self.config.capacity) else {
                return;
            };
            segment.prefault(0, FIRST_PAGES);
            self.segments_mapped.fetch_add(1, Ordering::Relaxed);
            // At the bottom: recycled segments (their pages already faulted in) are taken
            // first, from the top; a fresh one costs a page fault per page as it fills.
            self.free
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(0, segment);
        }
    }

    pub(crate) fn add_producer(&self, shared: Arc<ProducerShared<R>>) {
        self.incoming
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(shared);
    }

    /// Asks the callback thread to drain soon. No lock, no allocation.
    pub(crate) fn wake(&self) {
        self.thread.wake();
    }

    fn recycle(&self, shared: &ProducerShared<R>, segment: *mut Segment<R>) {
        // SAFETY: the segment was sealed by its producer and is fully consumed; the reader
        // (us, under the drain lock) is now its only owner.
        let segment = unsafe { Box::from_raw(segment) };
        segment.reset();
        self.recycled.fetch_add(1, Ordering::Relaxed);
        if self.backlog.fetch_sub(1, Ordering::AcqRel)
            <= self.limit_segments.load(Ordering::Relaxed)
        {
            // Taking the lock orders this with a producer between its check and its wait.
            drop(self.relief.0.lock().unwrap_or_else(|e| e.into_inner()));
            self.relief.1.notify_all();
        }
        if self.config.policy == Policy::Discard && !shared.retired.load(Ordering::Acquire) {
            let raw = Box::into_raw(segment);
            if shared
                .spare
                .compare_exchange(
                    std::ptr::null_mut(),
                    raw,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
            {
                return;
            }
            // SAFETY: the exchange failed, so `raw` is still ours alone.
            let segment = unsafe { Box::from_raw(raw) };
            self.free
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(segment);
            return;
        }
        self.free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(segment);
    }

    /// Delivers everything published so far, producer by producer, oldest segment first.
    pub(crate) fn drain_all(&self) {
        let mut state = self.drain.lock().unwrap_or_else(|e| e.into_inner());
        let incoming =
            std::mem::take(&mut *self.incoming.lock().unwrap_or_else(|e| e.into_inner()));
        state
            .tracked
            .extend(incoming.into_iter().map(|shared| Tracked {
                shared,
                dropped_reported: 0,
            }));
        self.retired_since_drain.store(0, Ordering::Release);
        let DrainState { callback, tracked } = &mut *state;
        tracked.retain_mut(|t| self.drain_producer(t, callback));
        drop(state);
        // Mapping ahead is the callback thread's work: a program thread that flushes (or ends
        // the run) does not map and fault in segments that nobody may take.
        if super::callback_thread::ON_CALLBACK_THREAD.with(|c| c.get()) {
            let mut n = self.keep_free.load(Ordering::Relaxed);
            if n == KEEP_FREE_BY_CPUS {
                // Read here rather than on the program's first thread: the standard library
                // reads the cgroup's CPU quota files for it (a dozen system calls).
                let cpus = std::thread::available_parallelism().map_or(4, |n| n.get());
                n = (2 * cpus).clamp(16, 64);
                self.keep_free.store(n, Ordering::Relaxed);
            }
            self.stock(n);
        }
    }

    /// Drains one producer; returns false when it is retired and empty (forget it).
    fn drain_producer(&self, tracked: &mut Tracked<R>, callback: &mut Callback<R>) -> bool {
        let shared = Arc::clone(&tracked.shared);
        let (sealed, current, retired) = {
            let mut queue = shared.sealed.lock().unwrap_or_else(|e| e.into_inner());
            let sealed = queue.take_all();
            let current = shared.current.load(Ordering::Acquire);
            (sealed, current, shared.retired.load(Ordering::Acquire))
        };
        for segment in sealed {
            // SAFETY: sealed segments stay alive until we recycle them below.
            self.deliver(tracked, unsafe { &*segment }, callback);
            self.recycle(&shared, segment);
        }
        if !current.is_null() {
            // SAFETY: a current segment is only freed by us (after it is sealed), so it is alive.
            self.deliver(tracked, unsafe { &*current }, callback);
        }
        let dropped = shared.dropped.load(Ordering::Relaxed);
        if dropped != tracked.dropped_reported {
            self.emit(tracked, &[], callback);
        }
        if retired && current.is_null() {
            let spare = shared.spare.swap(std::ptr::null_mut(), Ordering::AcqRel);
            if !spare.is_null() {
                // SAFETY: a retired producer never takes its spare again; it is ours.
                let spare = unsafe { Box::from_raw(spare) };
                self.free
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(spare);
            }
            return false;
        }
        true
    }

    fn deliver(&self, tracked: &mut Tracked<R>, segment: &Segment<R>, callback: &mut Callback<R>) {
        let records = segment.unread();
        if records.is_empty() {
            return;
        }
        self.emit(tracked, records, callback);
        segment.consume(records.len());
        debug_assert!(segment.fully_consumed() || segment.published() > 0);
    }

    fn emit(&self, tracked: &mut Tracked<R>, records: &[R], callback: &mut Callback<R>) {
        let dropped_total = tracked.shared.dropped.load(Ordering::Relaxed);
        let dropped = dropped_total - tracked.dropped_reported;
        tracked.dropped_reported = dropped_total;
        self.records_delivered
            .fetch_add(records.len() as u64, Ordering::Relaxed);
        callback(Batch {
            producer: &tracked.shared.info,
            records,
            dropped,
        });
    }
}

impl<R> Drop for ServiceInner<R> {
    fn drop(&mut self) {
        // Producers hold an Arc to the service, so when it drops, none is attached any more;
        // only segments parked in retired producers' queues may be left.
        let state = self.drain.get_mut().unwrap_or_else(|e| e.into_inner());
        for tracked in state.tracked.drain(..) {
            let mut queue = tracked
                .shared
                .sealed
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            for segment in queue.take_all() {
                // SAFETY: no producer or reader can reach these segments any more.
                drop(unsafe { Box::from_raw(segment) });
            }
            let spare = tracked
                .shared
                .spare
                .swap(std::ptr::null_mut(), Ordering::AcqRel);
            if !spare.is_null() {
                // SAFETY: as above.
                drop(unsafe { Box::from_raw(spare) });
            }
        }
    }
}

/// What a callback thread can drain, whatever the record type.
pub(crate) trait Drainable: Send + Sync {
    fn drain(&self);
}

impl<R: Copy + Send + 'static> Drainable for ServiceInner<R> {
    fn drain(&self) {
        self.drain_all();
    }
}

/// A buffer for records of type `R` with per-thread producers and a callback that receives
/// them in batches on a callback thread. See the [module docs](super).
pub struct BufferedService<R: Copy + Send + 'static> {
    pub(crate) inner: Arc<ServiceInner<R>>,
}

impl<R: Copy + Send + 'static> Clone for BufferedService<R> {
    fn clone(&self) -> Self {
        BufferedService {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<R: Copy + Send + 'static> BufferedService<R> {
    /// Creates a service delivering to `callback` on `thread` (the shared default
    /// [`CallbackThread::shared`] unless you made a dedicated one).
    pub fn new(
        name: &str,
        config: BufferConfig,
        thread: CallbackThread,
        callback: impl FnMut(Batch<'_, R>) + Send + 'static,
    ) -> Self {
        BufferedService {
            inner: ServiceInner::new(
                name.to_string(),
                config.slots::<R>(),
                thread,
                Box::new(callback),
            ),
        }
    }

    /// A producer for the calling thread (allocates its segments now, not on push).
    pub fn producer(&self) -> Producer<R> {
        let raw = RawProducer::empty();
        raw.attach(&self.inner, ProducerInfo::of_current_thread());
        Producer { raw }
    }

    /// Delivers every record published so far, on the calling thread, and returns when the
    /// callback has seen them.
    pub fn flush(&self) {
        self.inner.drain_all();
    }

    /// Keeps `n` free segments mapped ahead of need, so that a new thread's first record takes
    /// one from the free list instead of mapping memory (an `mmap` and page faults, ~100 µs when
    /// eight threads start at once). The callback thread maps them, woken now and after each of
    /// its drains: the caller (the program's first thread, at Metron's start) does not pay the
    /// 0.3 ms of mapping and faulting 16 segments in. Costs `n` segments of address space, of
    /// which only the first pages are touched until used.
    pub fn keep_free(&self, n: usize) {
        self.inner.keep_free.store(n, Ordering::Relaxed);
        self.inner.thread.wake();
    }

    /// The service's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// How many segments were mapped so far.
    pub fn segments_mapped(&self) -> u64 {
        self.inner.segments_mapped.load(Ordering::Relaxed)
    }

    /// Limits the backlog of a lossless service (see the [module docs](super)): rounded down
    /// to whole segments, at least one; 0 bytes removes the limit.
    pub fn set_backlog_limit(&self, limit: BacklogLimit) {
        let segment = self.inner.config.capacity * std::mem::size_of::<R>().max(1);
        let segments = match limit.bytes {
            0 => 0,
            b => (b / segment).max(1),
        };
        let inner = &self.inner;
        inner.limit_segments.store(segments, Ordering::Relaxed);
        inner
            .limit_drops
            .store(limit.policy == BacklogPolicy::Drop, Ordering::Relaxed);
    }

    /// What the backlog limit did so far.
    pub fn backlog_stats(&self) -> BacklogStats {
        let inner = &self.inner;
        let segment = (inner.config.capacity * std::mem::size_of::<R>()) as u64;
        BacklogStats {
            limit_bytes: inner.limit_segments.load(Ordering::Relaxed) as u64 * segment,
            peak_bytes: inner.peak_backlog.load(Ordering::Relaxed) as u64 * segment,
            blocked_times: inner.blocked_times.load(Ordering::Relaxed),
            blocked_ns: inner.blocked_ns.load(Ordering::Relaxed),
            drops_at_limit: inner.drops_at_limit.load(Ordering::Relaxed),
            own_threads_past_limit: inner.own_threads_past_limit.load(Ordering::Relaxed),
            past_limit_stalled_reader: inner.past_limit_stalled.load(Ordering::Relaxed),
        }
    }
}

/// Writes records into a [`BufferedService`] from one thread. Dropping it hands its last
/// segment to the service.
pub struct Producer<R: Copy + Send + 'static> {
    raw: RawProducer<R>,
}

// SAFETY: a producer is used by one thread at a time (`push` takes `&mut self`); its shared
// half is designed for one writer and one reader.
unsafe impl<R: Copy + Send + 'static> Send for Producer<R> {}

impl<R: Copy + Send + 'static> Producer<R> {
    /// Stores `record`; returns false if it was dropped (discard policy, buffer full), in which
    /// case it is counted and reported with the next batch.
    #[inline]
    pub fn push(&mut self, record: R) -> bool {
        if self.raw.push(record) {
            return true;
        }
        if self.raw.advance(1) && self.raw.push(record) {
            return true;
        }
        if let Some(shared) = self.raw.shared() {
            shared.count_drop(1);
        }
        false
    }

    /// Records dropped by this producer so far.
    pub fn dropped(&self) -> u64 {
        self.raw
            .shared()
            .map_or(0, |s| s.dropped.load(Ordering::Relaxed))
    }
}

impl<R: Copy + Send + 'static> Drop for Producer<R> {
    fn drop(&mut self) {
        self.raw.retire();
    }
}
