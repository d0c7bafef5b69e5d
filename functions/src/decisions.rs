//! Each function's verdict, decided once on its first call and cached by address in a
//! fixed-size open-addressing table that readers probe without a lock (one writer at a time,
//! on the cold path).
//!
//! A slot is published by storing its value, then its key with `Release`; a reader that sees
//! the key with `Acquire` sees the value. Keys are never removed or changed, so a probe that
//! reaches an empty slot knows the address is not there yet.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;

/// The value of a function that is not made a region.
pub const SKIP: u32 = u32::MAX;

/// One function's address and verdict, side by side so that a hit reads one cache line.
struct Slot {
    key: AtomicUsize,
    value: AtomicU32,
}

/// An address → verdict table of `N` slots (a power of two), filled to three quarters at most.
pub struct DecisionTable<const N: usize> {
    slots: [Slot; N],
    len: AtomicUsize,
    writer: Mutex<()>,
}

impl<const N: usize> Default for DecisionTable<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> DecisionTable<N> {
    const MASK: usize = {
        assert!(N.is_power_of_two(), "the table's size is a power of two");
        N - 1
    };

    /// An empty table (all zero: it lives in `.bss`, and untouched pages cost nothing).
    pub const fn new() -> Self {
        DecisionTable {
            slots: [const {
                Slot {
                    key: AtomicUsize::new(0),
                    value: AtomicU32::new(0),
                }
            }; N],
            len: AtomicUsize::new(0),
            writer: Mutex::new(()),
        }
    }

    #[inline(always)]
    fn home(address: usize) -> usize {
        // Functions are at least 16-byte aligned as a rule; Fibonacci hashing spreads the rest.
        ((address >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) & Self::MASK
    }

    /// The verdict cached for the function at `address` (a region id or [`SKIP`]), or `None`
    /// when it has not been decided. Hot path: no lock, no allocation.
    #[inline(always)]
    pub fn get(&self, address: usize) -> Option<u32> {
        let mut i = Self::home(address);
        loop {
            let slot = &self.slots[i & Self::MASK];
            let key = slot.key.load(Ordering::Acquire);
            if key == address {
                return Some(slot.value.load(Ordering::Relaxed));
            }
            if key == 0 {
                return None;
            }
            i = i.wrapping_add(1);
        }
    }

    /// Caches `value` for `address` (the first verdict stays if two threads decided it);
    /// false when the table is three quarters full and nothing was stored. Cold path.
    pub fn insert(&self, address: usize, value: u32) -> bool {
        let _one_writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if self.get(address).is_some() {
            return true;
        }
        if self.len.load(Ordering::Relaxed) >= N / 4 * 3 {
            return false;
        }
        let mut i = Self::home(address);
        while self.slots[i & Self::MASK].key.load(Ordering::Relaxed) != 0 {
            i = i.wrapping_add(1);
        }
        let slot = &self.slots[i & Self::MASK];
        slot.value.store(value, Ordering::Relaxed);
        slot.key.store(address, Ordering::Release);
        self.len.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// How many functions are decided.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_are_found_again_and_colliding_addresses_kept_apart() {
        let table: DecisionTable<16> = DecisionTable::new();
        assert_eq!(table.get(0x1000), None);
        // Addresses 16 << 20 apart share a home slot.
        let (a, b) = (0x1000usize, 0x1000 + (16 << 24));
        assert!(table.insert(a, 7));
        assert!(table.insert(b, SKIP));
        assert!(
            table.insert(a, 9),
            "a second verdict for the same function is ignored"
        );
        assert_eq!(table.get(a), Some(7));
        assert_eq!(table.get(b), Some(SKIP));
        assert_eq!(table.len(), 2);
    }

    #[test]
    fn a_table_three_quarters_full_refuses_more_and_says_so() {
        let table: DecisionTable<16> = DecisionTable::new();
        for i in 1..=12 {
            assert!(table.insert(i * 0x40, i as u32));
        }
        assert!(!table.insert(13 * 0x40, 13));
        assert_eq!(table.get(13 * 0x40), None);
        for i in 1..=12 {
            assert_eq!(table.get(i * 0x40), Some(i as u32));
        }
    }
}
