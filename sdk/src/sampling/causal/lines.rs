//! Which source line a sample is in, answered inside the signal handler.
//!
//! The handler cannot symbolize, so it looks addresses up in a fixed open-addressing table
//! that the controller thread fills: each entry is an address (the interrupted pc, or a return
//! address minus one), the line id the controller resolved it to, and the number of samples
//! attributed to it. An address the table has never seen is inserted by the handler (a
//! compare-and-swap on an empty key) and stays unresolved until the controller's next pass
//! (every few milliseconds), so a line's first sample or two are not attributed; a hot line's
//! handful of addresses are resolved almost at once. Lookups and inserts are lock-free and
//! async-signal-safe: atomics on static arrays, no allocation.
//!
//! A sample belongs to the first frame, innermost first, whose address is in scope (Coz's
//! rule): a sample inside `memcpy` called from line 40 of the program is line 40's. During an
//! experiment it also speeds up the selected line when that line is on *any* in-scope frame
//! of the stack, as Coz's `match_line` does: a line that calls a function in scope is sped up
//! with the time spent in that function (the call costs what its callee costs).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Entries in the table (a power of two).
const SLOTS: usize = 1 << 15;
/// Probes before an insert gives up (the sample is then counted as unattributed).
const PROBES: usize = 64;
/// Frames walked looking for one in scope.
const MAX_WALK: usize = 24;

/// Line id of an address not resolved yet.
pub(crate) const UNRESOLVED: u32 = 0;
/// Line id of an address outside the scopes (or without a line).
pub(crate) const OUT_OF_SCOPE: u32 = 1;
/// The first id of a real line.
pub(crate) const FIRST_LINE: u32 = 2;

static KEYS: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
static LINES: [AtomicU32; SLOTS] = [const { AtomicU32::new(UNRESOLVED) }; SLOTS];
static COUNTS: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
/// Samples whose address could not be placed (table full around its hash).
pub(crate) static TABLE_FULL: AtomicU64 = AtomicU64::new(0);
/// Samples that found no resolved frame yet (first sight of an address).
pub(crate) static UNATTRIBUTED: AtomicU64 = AtomicU64::new(0);

#[inline]
fn home(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize
}

/// The entry of `key`, inserted if new. `None` when the probe sequence is full.
/// Async-signal-safe.
#[inline]
fn entry(key: u64) -> Option<usize> {
    let mut i = home(key);
    for _ in 0..PROBES {
        let k = KEYS[i].load(Ordering::Acquire);
        if k == key {
            return Some(i);
        }
        if k == 0 {
            match KEYS[i].compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(i),
                Err(other) if other == key => return Some(i),
                Err(_) => {}
            }
        }
        i = (i + 1) & (SLOTS - 1);
    }
    None
}

/// Where a sample is: its line and whether it speeds up the selected line.
pub(crate) struct Placed {
    /// The line of the first frame in scope (`None`: no frame in scope resolved yet).
    pub(crate) line: Option<u32>,
    /// The selected line is on one of the stack's frames in scope.
    pub(crate) selected: bool,
}

/// Places a sample's stack (`frames[0]` the pc, the others return addresses): its line, and
/// whether line `selected` (0: none, an experiment is not running) is on one of its frames.
/// Counts the sample on the entry it is attributed to. Async-signal-safe.
#[inline]
pub(crate) fn place_sample(frames: &[u64], selected: u32) -> Placed {
    let mut placed = Placed {
        line: None,
        selected: false,
    };
    // The first frame in scope (or the first unresolved one) has been counted.
    let mut first_done = false;
    for (i, &addr) in frames.iter().take(MAX_WALK).enumerate() {
        if addr == 0 {
            break;
        }
        let key = if i == 0 { addr } else { addr - 1 };
        let Some(e) = entry(key) else {
            if !first_done {
                TABLE_FULL.fetch_add(1, Ordering::Relaxed);
            }
            break;
        };
        let line = LINES[e].load(Ordering::Acquire);
        if line == OUT_OF_SCOPE {
            continue;
        }
        if !first_done {
            first_done = true;
            COUNTS[e].fetch_add(1, Ordering::Relaxed);
            if line == UNRESOLVED {
                UNATTRIBUTED.fetch_add(1, Ordering::Relaxed);
            } else {
                placed.line = Some(line);
            }
        }
        if selected != 0 && line == selected {
            placed.selected = true;
            break;
        }
        // Walked on even when no experiment runs: every in-scope frame's address gets into
        // the table, so a line that only calls (never the innermost) can be named with
        // `--line` and be found.
    }
    placed
}

/// Resolves every unresolved address with `resolve` (controller thread). Returns how many
/// were resolved.
pub(crate) fn resolve_pending(mut resolve: impl FnMut(u64) -> u32) -> usize {
    let mut n = 0;
    for i in 0..SLOTS {
        let key = KEYS[i].load(Ordering::Acquire);
        if key != 0 && LINES[i].load(Ordering::Relaxed) == UNRESOLVED {
            let id = resolve(key).max(OUT_OF_SCOPE);
            LINES[i].store(id, Ordering::Release);
            n += 1;
        }
    }
    n
}

/// Samples per line id so far (index = line id).
pub(crate) fn samples_per_line(lines: usize) -> Vec<u64> {
    let mut counts = vec![0u64; lines + FIRST_LINE as usize];
    for i in 0..SLOTS {
        let id = LINES[i].load(Ordering::Relaxed) as usize;
        if id >= FIRST_LINE as usize && id < counts.len() {
            counts[id] += COUNTS[i].load(Ordering::Relaxed);
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(key: u64, line: u32) {
        let e = entry(key).unwrap();
        LINES[e].store(line, Ordering::Release);
    }

    #[test]
    fn a_sample_is_its_innermost_line_and_speeds_up_a_selected_line_further_out() {
        // Addresses no program of the test binary has: a pc in line 10, a return address
        // out of scope, a return address in line 12 (return addresses are looked up at - 1).
        let (pc, lib, caller, fresh) = (
            0x7e57_0000_1000,
            0x7e57_0000_2001,
            0x7e57_0000_3001,
            0x7e57_0000_4000,
        );
        set(pc, 10);
        set(lib - 1, OUT_OF_SCOPE);
        set(caller - 1, 12);
        let frames = [pc, lib, caller];
        let p = place_sample(&frames, 0);
        assert_eq!((p.line, p.selected), (Some(10), false));
        let p = place_sample(&frames, 12);
        assert_eq!((p.line, p.selected), (Some(10), true));
        let p = place_sample(&frames, 10);
        assert_eq!((p.line, p.selected), (Some(10), true));
        let p = place_sample(&frames, 99);
        assert_eq!((p.line, p.selected), (Some(10), false));
        // An innermost address never seen is not attributed, but a selected caller still is.
        let p = place_sample(&[fresh, caller], 12);
        assert_eq!((p.line, p.selected), (None, true));
    }
}
