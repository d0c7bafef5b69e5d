//! A single-producer single-consumer ring of 16-byte [`Slot`]s: the signal handler of one
//! thread writes whole records, the flusher reads them.
//!
//! Every word is an `AtomicU64`, so the ring needs no `unsafe`: the writer stores a record's
//! words with relaxed stores and then publishes the new head with `Release`; the reader loads
//! the head with `Acquire`, copies the records out and publishes the new tail with `Release`.
//! A record never wraps: when it does not fit before the end of the ring, a padding record
//! (kind 0) fills the rest and the record starts at slot 0. A record that does not fit in the
//! free space is dropped and counted. Pushing is wait-free and async-signal-safe.

use crate::record::{Header, Slot};
use std::sync::atomic::{AtomicU64, Ordering};

/// Kind of the padding record that skips to the start of the ring.
const PAD: u8 = 0;

pub(super) struct Ring {
    words: Box<[AtomicU64]>,
    /// Slots ever written (head) and read (tail); slot `i` lives at `i % capacity`.
    head: AtomicU64,
    tail: AtomicU64,
    /// Records that did not fit.
    pub(super) dropped: AtomicU64,
}

impl Ring {
    /// A ring of `capacity` slots (allocated now, never on the push path; its pages are
    /// faulted in as it fills).
    pub(super) fn new(capacity: usize) -> Ring {
        let capacity = capacity.max(512);
        Ring {
            words: super::sys::zeroed_words(capacity * 2),
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    fn capacity(&self) -> u64 {
        (self.words.len() / 2) as u64
    }

    /// Slots written and not yet read.
    pub(super) fn used(&self) -> u64 {
        self.head.load(Ordering::Relaxed) - self.tail.load(Ordering::Acquire)
    }

    /// Empties the ring for a new owner (only when no writer can be active).
    pub(super) fn reset(&self) {
        let head = self.head.load(Ordering::Acquire);
        self.tail.store(head, Ordering::Release);
        self.dropped.store(0, Ordering::Relaxed);
    }

    /// Writes a record of `1 + payload_slots` slots: `head` then `payload(i)` for each payload
    /// slot. Writer only. Returns false (and counts a drop) when there is no room.
    #[inline]
    pub(super) fn push(
        &self,
        head: Slot,
        payload_slots: usize,
        payload: impl Fn(usize) -> Slot,
    ) -> bool {
        let cap = self.capacity();
        let n = 1 + payload_slots as u64;
        let h = self.head.load(Ordering::Relaxed);
        let t = self.tail.load(Ordering::Acquire);
        let at = h % cap;
        let pad = if at + n > cap { cap - at } else { 0 };
        if n > cap || h + pad + n - t > cap {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        if pad > 0 {
            self.store(
                at,
                Slot {
                    ticks: 0,
                    header: crate::record::header(0, PAD, 0, 0),
                },
            );
        }
        let start = (h + pad) % cap;
        self.store(start, head);
        for i in 0..payload_slots {
            self.store(start + 1 + i as u64, payload(i));
        }
        self.head.store(h + pad + n, Ordering::Release);
        true
    }

    fn store(&self, index: u64, slot: Slot) {
        let i = index as usize * 2;
        self.words[i].store(slot.ticks, Ordering::Relaxed);
        self.words[i + 1].store(slot.header, Ordering::Relaxed);
    }

    fn load(&self, index: u64) -> Slot {
        let i = index as usize * 2;
        Slot {
            ticks: self.words[i].load(Ordering::Relaxed),
            header: self.words[i + 1].load(Ordering::Relaxed),
        }
    }

    /// Appends every published record to `out` (padding left out) and frees their slots.
    /// Reader only.
    pub(super) fn drain_into(&self, out: &mut Vec<Slot>) {
        let cap = self.capacity();
        let h = self.head.load(Ordering::Acquire);
        let mut t = self.tail.load(Ordering::Relaxed);
        while t < h {
            let at = t % cap;
            let first = self.load(at);
            let head = Header::unpack(first.header);
            if head.kind == PAD {
                t += cap - at;
                continue;
            }
            let n = 1 + head.extra as u64;
            out.push(first);
            for i in 1..n {
                out.push(self.load(at + i));
            }
            t += n;
        }
        self.tail.store(h, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{header, kind};

    fn record(ring: &Ring, n: usize, tag: u64) -> bool {
        ring.push(
            Slot {
                ticks: tag,
                header: header(0, kind::SAMPLE, n as u8, 0),
            },
            n,
            |i| Slot {
                ticks: tag,
                header: i as u64,
            },
        )
    }

    #[test]
    fn records_come_out_whole_in_order_across_the_wrap() {
        let ring = Ring::new(512);
        let mut out = Vec::new();
        let mut expected = 0;
        for round in 0..100u64 {
            for k in 0..7 {
                assert!(record(&ring, 30, round * 10 + k));
            }
            out.clear();
            ring.drain_into(&mut out);
            assert_eq!(out.len(), 7 * 31);
            for (k, rec) in out.chunks(31).enumerate() {
                assert_eq!(rec[0].ticks, round * 10 + k as u64);
                assert!(rec[1..].iter().all(|s| s.ticks == rec[0].ticks));
                expected += 1;
            }
        }
        assert_eq!(expected, 700);
        assert_eq!(ring.dropped.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_full_ring_drops_and_counts() {
        let ring = Ring::new(512);
        let mut stored = 0;
        for k in 0..100 {
            stored += record(&ring, 9, k) as u64;
        }
        assert_eq!(stored, 51);
        assert_eq!(ring.dropped.load(Ordering::Relaxed), 49);
    }
}
