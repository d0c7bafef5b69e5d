//! The writing side of a buffered service: one producer per thread.
//!
//! [`RawProducer`] is the hot path: a pointer to the current segment's published end (which is
//! also the write cursor) and a limit, kept in `Cell`s so that it can live in a
//! `const`-initialised thread-local with no destructor (one TLS access, no lazy-initialisation
//! check). Pushing a record is a load and compare of the cursor, the stores of the record, and
//! one `Release` store of the new end that both advances the cursor and publishes the record. Everything else (registering,
//! swapping segments at the watermark, the policy when full) is the cold [`RawProducer::advance`].

use super::sealed::SealedQueue;
use super::segment::Segment;
use super::service::ServiceInner;
use super::{Policy, ProducerInfo};
use std::cell::Cell;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// The cursor of a detached producer: never written, always 0.
static DETACHED_END: AtomicUsize = AtomicUsize::new(0);
use std::sync::{Arc, Mutex};

/// The part of a producer the reader sees.
pub(crate) struct ProducerShared<R> {
    pub(crate) info: ProducerInfo,
    /// The segment being written.
    pub(crate) current: AtomicPtr<Segment<R>>,
    /// Segments the producer finished, oldest first.
    pub(crate) sealed: Mutex<SealedQueue<R>>,
    /// Discard policy: an emptied segment the reader returned, ready for the producer.
    pub(crate) spare: AtomicPtr<Segment<R>>,
    /// Records this producer could not store.
    pub(crate) dropped: AtomicU64,
    /// The producer is gone; once drained, the reader forgets it.
    pub(crate) retired: AtomicBool,
    /// The producer's real limit while it is paused (its visible limit is then the cursor);
    /// null when not paused. Its own thread's only: here rather than in the thread-local
    /// producer, which `libmetron.so` keeps small (`user-api/src/thread_block.rs`).
    paused_limit: AtomicPtr<R>,
}

impl<R> ProducerShared<R> {
    /// Counts `n` records that were not stored. Producer thread only (single writer).
    #[inline]
    pub(crate) fn count_drop(&self, n: u64) {
        let now = self.dropped.load(Ordering::Relaxed) + n;
        self.dropped.store(now, Ordering::Relaxed);
    }
}

/// Hot-path state of one producer, usable from a `const` thread-local.
///
/// `repr(C)`, `end` and `limit` first: the C header's inline begin/end (`metron_fast_cursor`
/// in `metron.h`) reads these two words through the address `by_id::ThreadBuffer::cursor`
/// gives, and writes a record as [`RawProducer::push`] does (the slot, then a `Release` store
/// of the new end). Keep the two fields where they are.
#[repr(C)]
pub(crate) struct RawProducer<R> {
    /// The current segment's published end address: the write cursor. Points at
    /// [`DETACHED_END`] while detached, whose value (0) always equals the detached limit (null),
    /// so every push takes the slow path.
    end: Cell<*const AtomicUsize>,
    limit: Cell<*mut R>,
    /// The current segment is `shared.current` (stored by this thread only).
    shared: Cell<*const ProducerShared<R>>,
    service: Cell<*const ServiceInner<R>>,
}

impl<R: Copy + Send + 'static> RawProducer<R> {
    /// A producer with no segment: every push goes to the slow path.
    pub(crate) const fn empty() -> Self {
        RawProducer {
            end: Cell::new(&DETACHED_END),
            limit: Cell::new(ptr::null_mut()),
            shared: Cell::new(ptr::null()),
            service: Cell::new(ptr::null()),
        }
    }

    /// True once [`RawProducer::attach`] ran and before [`RawProducer::retire`].
    pub(crate) fn is_attached(&self) -> bool {
        !self.shared.get().is_null()
    }

    /// The shared half, if attached.
    pub(crate) fn shared(&self) -> Option<&ProducerShared<R>> {
        // SAFETY: `shared` is null or comes from `Arc::into_raw` in `attach`, released only in
        // `retire`, which also nulls it.
        unsafe { self.shared.get().as_ref() }
    }

    /// The write cursor (the current segment's published end).
    #[inline(always)]
    fn cursor(&self) -> *mut R {
        // SAFETY: `end` points at `DETACHED_END` or at the live current segment's end word
        // (segments are freed only by the reader after this producer sealed them).
        unsafe { (*self.end.get()).load(Ordering::Relaxed) as *mut R }
    }

    #[inline(always)]
    fn set_cursor(&self, next: *mut R) {
        // SAFETY: only called while attached, so `end` is the live current segment's end word;
        // this thread is its only writer. `Release` publishes the records below `next`.
        unsafe { (*self.end.get()).store(next as usize, Ordering::Release) }
    }

    /// Stores one record if there is room before the limit. Hot path: no call, no lock.
    #[inline(always)]
    pub(crate) fn push(&self, record: R) -> bool {
        // SAFETY: as in `cursor`. Read once: re-reading it after the record is written would be
        // a second load (the compiler cannot tell that the record does not alias the cell).
        let end = unsafe { &*self.end.get() };
        let cursor = end.load(Ordering::Relaxed) as *mut R;
        if cursor == self.limit.get() {
            return false;
        }
        // SAFETY: `cursor < limit <= segment end`, so the slot is inside the current segment's
        // mapping, unpublished, and written only by this (the owning) thread.
        unsafe { cursor.write(record) };
        // Release: publishes the record (see `set_cursor`).
        end.store(cursor.wrapping_add(1) as usize, Ordering::Release);
        true
    }

    /// [`RawProducer::push`] of a 16-byte record whose first word is a time stamp given as its
    /// halves (`lo`, `hi`) and whose second is `word`: two 32-bit stores where the whole time
    /// stamp would cost a shift, an or and a store.
    #[inline(always)]
    pub(crate) fn push_stamped(&self, (lo, hi): (u32, u32), word: u64) -> bool {
        const { assert!(std::mem::size_of::<R>() == 16 && std::mem::align_of::<R>() >= 8) };
        // SAFETY: as in `push`.
        let end = unsafe { &*self.end.get() };
        let cursor = end.load(Ordering::Relaxed) as *mut R;
        if cursor == self.limit.get() {
            return false;
        }
        let at = cursor.cast::<u32>();
        // SAFETY: as in `push`: the 16 bytes at `cursor` are this thread's unpublished slot,
        // aligned to 8; a record of `R` is two little-endian words (asserted size), written as
        // the halves of the first and the whole second.
        unsafe {
            at.write(lo);
            at.add(1).write(hi);
            at.add(2).cast::<u64>().write(word);
        }
        // Release: publishes the record (see `set_cursor`).
        end.store(cursor.wrapping_add(1) as usize, Ordering::Release);
        true
    }

    /// Reserves `n` contiguous slots; the caller writes them through the returned pointer and
    /// then calls [`RawProducer::commit`]. `None` when fewer than `n` are left before the limit.
    #[inline(always)]
    pub(crate) fn reserve(&self, n: usize) -> Option<*mut R> {
        let cursor = self.cursor();
        let room =
            (self.limit.get() as usize).wrapping_sub(cursor as usize) / std::mem::size_of::<R>();
        if room >= n && !cursor.is_null() {
            Some(cursor)
        } else {
            None
        }
    }

    /// Publishes `n` slots written at `at`, which came from [`RawProducer::reserve`].
    #[inline(always)]
    pub(crate) fn commit(&self, at: *mut R, n: usize) {
        self.set_cursor(at.wrapping_add(n));
    }

    /// Connects this producer to `service` (cold). Returns false if no segment could be mapped.
    pub(crate) fn attach(&self, service: &Arc<ServiceInner<R>>, info: ProducerInfo) -> bool {
        let Some(segment) = service.take_segment() else {
            return false;
        };
        let spare = if service.config.policy == Policy::Discard {
            service
                .take_segment()
                .map_or(ptr::null_mut(), Box::into_raw)
        } else {
            ptr::null_mut()
        };
        let segment = Box::into_raw(segment);
        let shared = Arc::new(ProducerShared {
            info,
            current: AtomicPtr::new(segment),
            sealed: Mutex::new(SealedQueue::new()),
            spare: AtomicPtr::new(spare),
            dropped: AtomicU64::new(0),
            retired: AtomicBool::new(false),
            paused_limit: AtomicPtr::new(ptr::null_mut()),
        });
        service.add_producer(Arc::clone(&shared));
        self.shared.set(Arc::into_raw(shared));
        self.service.set(Arc::into_raw(Arc::clone(service)));
        self.start_segment(segment);
        true
    }

    fn start_segment(&self, segment: *mut Segment<R>) {
        /// The first records of a segment land in memory already faulted in (see
        /// [`Segment::prefault`]); later pages fault as they are reached, 4 KiB apart.
        const PREFAULT_BYTES: usize = 16 << 10;
        // SAFETY: `segment` is a live segment this producer now owns as its current one.
        let seg = unsafe { &*segment };
        let service = self.service_ref();
        self.end.set(seg.end_word());
        let start = seg.published();
        seg.prefault(start, PREFAULT_BYTES);
        self.limit
            .set(seg.slot(service.config.watermark.max(start + 1).min(seg.capacity())));
    }

    fn service_ref(&self) -> &ServiceInner<R> {
        // SAFETY: non-null while attached: from `Arc::into_raw` in `attach`, released in `retire`.
        unsafe { &*self.service.get() }
    }

    /// Makes room for `n` more slots (cold): at the watermark, hands the segment to the reader
    /// and continues in a fresh one; when full, applies the policy. Returns false when the
    /// records must be dropped (discard policy, no free segment); the caller counts them.
    #[cold]
    #[inline(never)]
    pub(crate) fn advance(&self, n: usize) -> bool {
        let Some(shared) = self.shared() else {
            return false;
        };
        let service = self.service_ref();
        // Only this thread stores `current` (the reader loads it).
        let current = shared.current.load(Ordering::Relaxed);
        // SAFETY: attached, so `current` is the live current segment.
        let seg = unsafe { &*current };
        let at_capacity = self.limit.get() == seg.slot(seg.capacity());
        let fresh = match service.config.policy {
            Policy::Lossless => {
                let own = shared.info.thread_name.starts_with("metron");
                // At the backlog limit with policy `drop`: no fresh segment, so the records are
                // dropped (and counted) until the reader frees one.
                if service.admit(own) {
                    service.take_segment().map(Box::into_raw)
                } else {
                    None
                }
            }
            Policy::Discard => {
                let spare = shared.spare.swap(ptr::null_mut(), Ordering::AcqRel);
                (!spare.is_null()).then_some(spare)
            }
        };
        match fresh {
            Some(fresh) => {
                {
                    let mut sealed = shared.sealed.lock().unwrap_or_else(|e| e.into_inner());
                    sealed.push_back(current);
                    shared.current.store(fresh, Ordering::Release);
                }
                service.sealed_one();
                self.start_segment(fresh);
                service.wake();
                true
            }
            None if !at_capacity => {
                // Discard with no spare yet: keep filling up to the capacity, and ask the reader
                // to free the other segment meanwhile.
                self.limit.set(seg.slot(seg.capacity()));
                service.wake();
                self.reserve(n).is_some()
            }
            None => false,
        }
    }

    /// Sends every following write to the slow path (which refuses while paused).
    pub(crate) fn pause(&self) {
        let Some(shared) = self.shared() else {
            return;
        };
        if shared.paused_limit.load(Ordering::Relaxed).is_null() {
            shared
                .paused_limit
                .store(self.limit.get(), Ordering::Relaxed);
            self.limit.set(self.cursor());
        }
    }

    /// Undoes [`RawProducer::pause`].
    pub(crate) fn resume(&self) {
        let Some(shared) = self.shared() else {
            return;
        };
        let saved = shared.paused_limit.swap(ptr::null_mut(), Ordering::Relaxed);
        if !saved.is_null() {
            self.limit.set(saved);
        }
    }

    /// Detaches without handing anything over (a forked child: the segments and the shared
    /// state belong to the parent). Leaks this process's copy of them; touches no lock.
    pub(crate) fn forget(&self) {
        self.end.set(&DETACHED_END);
        self.limit.set(ptr::null_mut());
        self.shared.set(ptr::null());
        self.service.set(ptr::null());
    }

    /// Hands the current segment to the reader and detaches (thread exit, producer drop).
    pub(crate) fn retire(&self) {
        let Some(shared) = self.shared() else {
            return;
        };
        shared
            .paused_limit
            .store(ptr::null_mut(), Ordering::Relaxed);
        {
            let mut sealed = shared.sealed.lock().unwrap_or_else(|e| e.into_inner());
            let current = shared.current.swap(ptr::null_mut(), Ordering::AcqRel);
            if !current.is_null() {
                sealed.push_back(current);
                self.service_ref().sealed_one();
            }
            shared.retired.store(true, Ordering::Release);
        }
        let shared_ptr = self.shared.replace(ptr::null());
        let service_ptr = self.service.replace(ptr::null());
        self.end.set(&DETACHED_END);
        self.limit.set(ptr::null_mut());
        // SAFETY: both pointers came from `Arc::into_raw` in `attach` and are released once
        // (the cells were nulled above).
        let service = unsafe { Arc::from_raw(service_ptr) };
        service.retired_one();
        // SAFETY: as above.
        drop(unsafe { Arc::from_raw(shared_ptr) });
    }
}
