//! Which ids `metron_region_begin_id` accepts: those of regions interned by the C API (or any
//! registered region without a component bundle).
//!
//! A bitmap of the first [`CAPACITY`] ids answers in one load, without a lock; an id it does
//! not know goes to the sdk's table once (cold), and is remembered when it is a region. An id
//! that names no region (0, a counter's id, a made-up number) is an error, never a record.

use metron::CallsiteKind;
use std::sync::atomic::{AtomicU64, Ordering};

/// Ids covered by the bitmap (8 KiB); larger ids are checked in the sdk's table every time.
const CAPACITY: usize = 1 << 16;

static REGIONS: [AtomicU64; CAPACITY / 64] = [const { AtomicU64::new(0) }; CAPACITY / 64];

/// True when `id` names a region that `metron_region_begin_id` may begin.
#[inline(always)]
pub(crate) fn is_region(id: u32) -> bool {
    let i = id as usize;
    match REGIONS.get(i / 64) {
        Some(word) if word.load(Ordering::Relaxed) & (1 << (i % 64)) != 0 => true,
        _ => is_region_slow(id),
    }
}

/// [`is_region`] for the fast path: true only when the bitmap knows `id` (no cold path).
#[inline(always)]
pub(crate) fn is_region_fast(id: u32) -> bool {
    let i = id as usize;
    REGIONS
        .get(i / 64)
        .is_some_and(|word| word.load(Ordering::Relaxed) & (1 << (i % 64)) != 0)
}

#[cold]
#[inline(never)]
fn is_region_slow(id: u32) -> bool {
    let known = id != 0
        && metron::resolve(id)
            .is_some_and(|site| site.kind == CallsiteKind::Region && site.components.is_empty());
    if known {
        mark_region(id);
    }
    known
}

/// Remembers that `id` is a region interned by the C API.
pub(crate) fn mark_region(id: u32) {
    let i = id as usize;
    if let Some(word) = REGIONS.get(i / 64) {
        word.fetch_or(1 << (i % 64), Ordering::Relaxed);
    }
    metron::by_id::accept_inline(id);
}

/// The name of region `id`, for messages and for an end by name of a region begun by id.
pub(crate) fn name_of(id: u32) -> &'static [u8] {
    metron::resolve(id).map_or(&[][..], |site| site.name.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_interned_regions_are_accepted() {
        let region = metron::intern("ids-test-region", CallsiteKind::Region);
        let counter = metron::intern("ids-test-counter", CallsiteKind::Counter);
        assert!(is_region(region));
        assert!(is_region(region), "remembered");
        assert!(!is_region(counter));
        assert!(!is_region(0));
        assert!(!is_region(u32::MAX));
        assert_eq!(name_of(region), b"ids-test-region");
    }
}
