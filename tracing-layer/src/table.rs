//! The span table: what Metron keeps per live span when fields are not recorded, in a fixed
//! static array of 32-byte entries with no allocation and no lock.
//!
//! An entry is found by the span's id: a Fibonacci hash picks the home slot, and up to
//! [`PROBES`] slots from there are tried. Inserting claims a free slot with one
//! compare-and-swap; removing stores 0. Lookups scan all the probe slots on a miss (removal
//! leaves holes), so a span that found no free slot (more than about [`SLOTS`] live spans, or
//! an unlucky cluster) simply is not in the table: its layer or subscriber then keeps its
//! state in the slower, allocating form (`SpanState`), and nothing is lost.

use crate::span::{thread_token, ASYNC, ENTERED, FLAGS};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Entries (a power of two): 16,384 × 32 bytes = 512 KiB of zeroed static memory, touched
/// only where spans land.
const SLOTS: usize = 1 << 14;
/// Slots tried from the home slot.
const PROBES: usize = 8;
/// `key` of an entry being filled.
const BUSY: u64 = u64::MAX;

/// One live span.
pub(crate) struct Entry {
    /// The span id; 0 when free, [`BUSY`] while being filled.
    key: AtomicU64,
    /// `metron::clock::now_ticks()` at creation (0 when async slices are off).
    created_ticks: AtomicU64,
    /// `thread_token()` of the creating thread (an 8-aligned address) with the flags of
    /// `span.rs` in its low bits: [`ENTERED`] once entered, [`ASYNC`] once entered again or
    /// entered on another thread.
    creator: AtomicUsize,
    /// The Metron region id.
    region: AtomicU32,
    /// References (`clone_span` / `try_close`; the standalone subscriber only).
    refs: AtomicU32,
}

#[allow(clippy::declare_interior_mutable_const)] // only used to initialise the static array
const FREE: Entry = Entry {
    key: AtomicU64::new(0),
    created_ticks: AtomicU64::new(0),
    creator: AtomicUsize::new(0),
    region: AtomicU32::new(0),
    refs: AtomicU32::new(0),
};

static TABLE: [Entry; SLOTS] = [FREE; SLOTS];

#[inline(always)]
fn home(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize
}

/// Adds span `key` (unique among live spans; 0 and `u64::MAX` are never stored) of region `region`, created now.
/// False when no probe slot was free.
#[inline]
pub(crate) fn insert(key: u64, region: u32, created_ticks: u64) -> bool {
    if key == 0 || key == BUSY {
        return false;
    }
    let mut i = home(key);
    for _ in 0..PROBES {
        let e = &TABLE[i];
        if e.key.load(Ordering::Relaxed) == 0
            && e.key
                .compare_exchange(0, BUSY, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            e.created_ticks.store(created_ticks, Ordering::Relaxed);
            e.creator.store(thread_token(), Ordering::Relaxed);
            e.region.store(region, Ordering::Relaxed);
            e.refs.store(1, Ordering::Relaxed);
            e.key.store(key, Ordering::Release);
            return true;
        }
        i = (i + 1) & (SLOTS - 1);
    }
    false
}

/// The entry of live span `key`, if it is in the table. `key` is never 0 or `u64::MAX`
/// (callers make keys that cannot be).
#[inline]
pub(crate) fn find(key: u64) -> Option<&'static Entry> {
    debug_assert!(
        key != 0 && key != BUSY,
        "span table keys are never 0 or u64::MAX"
    );
    let mut i = home(key);
    for _ in 0..PROBES {
        let e = &TABLE[i];
        if e.key.load(Ordering::Acquire) == key {
            return Some(e);
        }
        i = (i + 1) & (SLOTS - 1);
    }
    None
}

impl Entry {
    /// The span's region id.
    #[inline(always)]
    pub(crate) fn region(&self) -> u32 {
        self.region.load(Ordering::Relaxed)
    }

    /// The span is entered on this thread: notes a first entry on its creator (a plain
    /// store), or a suspension or move (the async rule of `span.rs`), begins its region.
    #[inline(always)]
    pub(crate) fn enter(&self) {
        let creator = self.creator.load(Ordering::Relaxed);
        if creator == thread_token() {
            self.creator.store(creator | ENTERED, Ordering::Relaxed);
        } else {
            self.entered_again_or_moved();
        }
        metron::by_id::begin(self.region());
    }

    #[cold]
    #[inline(never)]
    fn entered_again_or_moved(&self) {
        self.creator.fetch_or(ASYNC | ENTERED, Ordering::Relaxed);
    }

    /// One more reference to the span.
    #[inline(always)]
    pub(crate) fn add_ref(&self) {
        self.refs.fetch_add(1, Ordering::Relaxed);
    }

    /// Drops a reference; true when it was the last (then call [`Entry::close`]).
    #[inline(always)]
    pub(crate) fn release(&self) -> bool {
        if self.refs.fetch_sub(1, Ordering::Release) != 1 {
            return false;
        }
        std::sync::atomic::fence(Ordering::Acquire);
        true
    }

    /// The span closed on this thread: writes its async slice if it was suspended or moved
    /// (see `span.rs` for the rule), then frees the entry.
    #[inline(always)]
    pub(crate) fn close(&self, async_slices: bool, cookie: u64) {
        let creator = self.creator.load(Ordering::Relaxed);
        if async_slices && (creator & ASYNC != 0 || creator & !FLAGS != thread_token()) {
            crate::span::write_async_slice(
                self.region(),
                cookie,
                self.created_ticks.load(Ordering::Relaxed),
            );
        }
        self.key.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_found_by_key_until_removed_and_colliding_keys_probe_on() {
        let keys: Vec<u64> = (1..=5).map(|k| k << 50).collect();
        for &k in &keys {
            assert!(insert(k, 7, 0));
        }
        for &k in &keys {
            assert_eq!(find(k).unwrap().region(), 7);
        }
        find(keys[0]).unwrap().close(false, keys[0]);
        assert!(find(keys[0]).is_none());
        assert!(find(keys[1]).is_some());
        for &k in &keys[1..] {
            find(k).unwrap().close(false, k);
        }
        assert!(find(keys[4]).is_none());
    }
}
