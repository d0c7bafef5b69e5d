//! The run's state that the hot path reads (hot path layer): whether recording is on. The
//! runtime writes it (start, `set_collecting`, finish, a forked child); the region API, the
//! sampler's handler and the C header's inline path read it, without reaching up into the
//! runtime.

use std::sync::atomic::{AtomicU8, Ordering};

/// Recording is on.
pub(crate) const ON: u8 = 1;
/// Recording is off.
pub(crate) const OFF: u8 = 2;

/// Starts as `ON`: before the runtime exists, the first record of every thread takes the cold
/// path anyway (its producer is not attached yet), and that path starts the runtime, which turns
/// the state `OFF` if `METRON_ENABLED` says so. So the hot-path check is one load and compare,
/// and collection disabled at run time costs a handful of instructions per region.
pub(crate) static STATE: AtomicU8 = AtomicU8::new(ON);

/// True when recording is on (or the runtime has not started yet: see [`STATE`]). One
/// relaxed load on the hot path.
#[inline(always)]
pub(crate) fn collecting() -> bool {
    STATE.load(Ordering::Relaxed) == ON
}

/// The state byte [`collecting`] reads and its value while recording is on: the C header's
/// inline path reads it through this address.
pub(crate) fn collecting_flag() -> (*const u8, u8) {
    (STATE.as_ptr().cast_const(), ON)
}
