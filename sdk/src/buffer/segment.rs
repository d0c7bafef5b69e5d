//! A segment: one anonymous memory mapping holding `capacity` fixed-size records, written by
//! one producer thread and read by the callback side.
//!
//! Protocol: the producer writes records at its cursor, then publishes the new end address
//! with a `Release` store ([`Segment::publish`]). The reader loads it with `Acquire` and reads
//! the records between its own `consumed` count and the published end; those records are
//! never written again until the segment is [`Segment::reset`], which only the reader does,
//! after the producer has sealed the segment and moved on.

use memmap2::MmapMut;
use std::io;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// Fixed-capacity, memory-mapped storage for records of type `R`.
pub(crate) struct Segment<R> {
    /// Keeps the mapping alive; all access goes through `base`.
    _map: MmapMut,
    base: *mut R,
    capacity: usize,
    /// Address one past the last published record.
    end_addr: AtomicUsize,
    /// Records already delivered to the callback.
    consumed: AtomicUsize,
    /// The next segment of its producer's sealed queue ([`super::sealed::SealedQueue`]), read
    /// and written only under that producer's lock.
    pub(crate) next_sealed: AtomicPtr<Segment<R>>,
    _records: PhantomData<R>,
}

// SAFETY: the segment owns its mapping; `base` points into it. Records are plain `Copy` data
// written by one producer and read by the reader only below the published end (see the module
// protocol), so sharing the segment between those two threads is sound for `R: Send`.
unsafe impl<R: Send> Send for Segment<R> {}
// SAFETY: as above; shared access is limited to the atomics and the published prefix.
unsafe impl<R: Send> Sync for Segment<R> {}

impl<R: Copy> Segment<R> {
    /// Maps a zero-filled segment of `capacity` records.
    pub(crate) fn new(capacity: usize) -> io::Result<Box<Self>> {
        assert!(capacity > 0 && std::mem::size_of::<R>() > 0);
        let bytes = capacity * std::mem::size_of::<R>();
        let mut map = MmapMut::map_anon(bytes)?;
        let base = map.as_mut_ptr().cast::<R>();
        debug_assert_eq!(base as usize % std::mem::align_of::<R>(), 0);
        Ok(Box::new(Segment {
            _map: map,
            base,
            capacity,
            end_addr: AtomicUsize::new(base as usize),
            consumed: AtomicUsize::new(0),
            next_sealed: AtomicPtr::new(std::ptr::null_mut()),
            _records: PhantomData,
        }))
    }

    /// Touches the pages holding the `bytes` after slot `from` (writes a zero byte into each),
    /// so that the records written there next do not take a page fault inside the region they
    /// time: a thread's first region would otherwise include the kernel zero-filling its first
    /// page (~2 µs measured). Producer only, before it writes there; those slots are beyond the
    /// published end, which the reader never reads.
    pub(crate) fn prefault(&self, from: usize, bytes: usize) {
        const PAGE: usize = 4096;
        let size = std::mem::size_of::<R>();
        let end = (from * size + bytes).min(self.capacity * size);
        let base = self.base.cast::<u8>();
        let mut offset = from * size;
        while offset < end {
            // SAFETY: `offset < capacity * size`, inside the mapping; the byte lies beyond the
            // published end (the caller is the producer, before writing there), so no reader
            // looks at it and the record later written over it is unaffected.
            unsafe { base.add(offset).write_volatile(0) };
            offset += PAGE;
        }
    }

    /// Capacity in records.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// The address of slot `index` (`index <= capacity`).
    #[inline]
    pub(crate) fn slot(&self, index: usize) -> *mut R {
        debug_assert!(index <= self.capacity);
        self.base.wrapping_add(index)
    }

    /// The published end address, which the producer also uses as its write cursor: it
    /// stores the address past its last record with `Release` after writing it.
    pub(crate) fn end_word(&self) -> &AtomicUsize {
        &self.end_addr
    }

    /// Number of published records.
    pub(crate) fn published(&self) -> usize {
        (self.end_addr.load(Ordering::Acquire) - self.base as usize) / std::mem::size_of::<R>()
    }

    /// The published records not yet consumed. Reader only.
    pub(crate) fn unread(&self) -> &[R] {
        let end = self.published();
        let start = self.consumed.load(Ordering::Relaxed).min(end);
        // SAFETY:
        // - `start..end` lies inside the mapping (`end <= capacity` because the producer never
        //   publishes past its limit, which is at most the capacity).
        // - Every record below `end` was fully written before the `Release` store of `end`
        //   that our `Acquire` load observed, and the producer never rewrites it (module
        //   protocol); the memory was zero-filled by mmap before that.
        unsafe { std::slice::from_raw_parts(self.base.add(start), end - start) }
    }

    /// Marks `count` more records as delivered. Reader only.
    pub(crate) fn consume(&self, count: usize) {
        self.consumed.fetch_add(count, Ordering::Relaxed);
    }

    /// True when every published record was delivered.
    pub(crate) fn fully_consumed(&self) -> bool {
        self.consumed.load(Ordering::Relaxed) >= self.published()
    }

    /// Empties a sealed, fully consumed segment for reuse. Reader only, after the producer let
    /// go of it.
    pub(crate) fn reset(&self) {
        self.consumed.store(0, Ordering::Relaxed);
        self.end_addr.store(self.base as usize, Ordering::Release);
    }
}
