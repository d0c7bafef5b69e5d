//! The run's state that the hot path reads (hot path layer): whether recording is on. The
//! runtime writes it (start, `set_collecting`, finish, a forked child); the region API, the
//! sampler's handler and the C header's inline path read it, without reaching up into the
//! runtime.

use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

/// Recording is on.
pub const ON: u8 = 1;
/// Recording is off.
pub const OFF: u8 = 2;

/// Starts as `ON`: before the runtime exists, the first record of every thread takes the cold
/// path anyway (its producer is not attached yet), and that path starts the runtime, which turns
/// the state `OFF` if `METRON_ENABLED` says so. So the hot-path check is one load and compare,
/// and collection disabled at run time costs a handful of instructions per region.
pub static STATE: AtomicU8 = AtomicU8::new(ON);

/// True when recording is on (or the runtime has not started yet: see [`STATE`]). One
/// relaxed load on the hot path.
#[inline(always)]
pub fn collecting() -> bool {
    STATE.load(Ordering::Relaxed) == ON
}

/// Turns recording on or off: the state byte, and with it the C header's [`GATE`].
pub fn set(on: bool) {
    STATE.store(if on { ON } else { OFF }, Ordering::Release);
    let map = if on {
        INLINE_IDS.as_ptr()
    } else {
        NO_IDS.as_ptr()
    };
    GATE.store(map.cast::<u8>().cast_mut(), Ordering::Release);
}

/// Ids covered by the C header's inline begin (`METRON_FAST_REGION_IDS`).
pub const INLINE_ID_COUNT: usize = 1 << 16;

/// One byte per id: 1 for a region the C header's inline begin may record.
static INLINE_IDS: [AtomicU8; INLINE_ID_COUNT] = [const { AtomicU8::new(0) }; INLINE_ID_COUNT];

/// All zero: what [`GATE`] points at while recording is off.
static NO_IDS: [AtomicU8; INLINE_ID_COUNT] = [const { AtomicU8::new(0) }; INLINE_ID_COUNT];

/// [`INLINE_IDS`] while recording is on, [`NO_IDS`] while it is off: the C header's inline
/// begin tests `(*gate)[id]`, one test for "a region it may record" and "the run records"
/// (two loads through pointers where a separate state byte would cost four instructions more).
/// Both maps are zero pages (`.bss`) until ids are accepted. Starts open, as [`STATE`] does.
static GATE: AtomicPtr<u8> = AtomicPtr::new(INLINE_IDS.as_ptr().cast::<u8>().cast_mut());

/// Lets the C header's inline begin record region `id` (ids from `INLINE_ID_COUNT` on always
/// go through the library).
pub fn accept_inline(id: u32) {
    if let Some(byte) = INLINE_IDS.get(id as usize) {
        byte.store(1, Ordering::Relaxed);
    }
}

/// The address of [`GATE`], which the C header's inline begin reads with a relaxed load.
pub fn inline_gate() -> *const AtomicPtr<u8> {
    &GATE
}

/// A gate that stays closed (instrumentation compiled out).
static CLOSED: AtomicPtr<u8> = AtomicPtr::new(NO_IDS.as_ptr().cast::<u8>().cast_mut());

/// The address of a gate that never lets the inline begin record.
pub fn closed_gate() -> *const AtomicPtr<u8> {
    &CLOSED
}
