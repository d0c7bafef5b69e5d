//! The byte layout of region storage.
//!
//! Storage is a sequence of 16-byte [`Slot`]s. A record is one header slot, optionally
//! followed by `extra` payload slots that lie in the same segment:
//!
//! ```text
//! header slot:  bytes 0..8   ticks (u64, hot-path clock)
//!               bytes 8..12  id    (u32, call site; 0 for records without one)
//!               byte  12     kind  (u8, see `kind`)
//!               byte  13     extra (u8, payload slots that follow)
//!               bytes 14..16 aux   (u16, meaning depends on kind)
//! payload slot: 16 bytes: two little-endian u64/f64 words, or raw string bytes
//! ```
//!
//! | kind | id | aux | payload |
//! | --- | --- | --- | --- |
//! | `BEGIN` | region | 0 | none |
//! | `END` | region | 0 | none |
//! | `BUNDLE_END` | region | number of f64 words | the bundle's fields, f64 each |
//! | `INSTANT` | mark | 0 | none |
//! | `COUNTER` | counter | 0 | word 0: the value, f64 |
//! | `ANNOTATION` | key | value type \| (string length << 4) | the value (word 0) or string bytes |
//! | `THREAD_NAME` | 0 | string length | string bytes |
//! | `SAMPLE` | 0 | trigger (bits 0..2: 0 CPU time, 1 real time, 2 region begin) \| (frames << 2) | the frames, one u64 address per word, innermost first |
//! | `ASYNC_BEGIN` | range | 0 | word 0: the cookie that pairs begin and end, u64 |
//! | `ASYNC_END` | range | 0 | word 0: the cookie of its `ASYNC_BEGIN`, u64 |

use static_assertions::const_assert_eq;

/// One 16-byte storage slot.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Slot {
    /// Hot-path clock ticks (header) or payload word 0.
    pub ticks: u64,
    /// Packed id/kind/extra/aux (header) or payload word 1.
    pub header: u64,
}

const_assert_eq!(std::mem::size_of::<Slot>(), SLOT_BYTES);

/// Bytes per slot.
pub const SLOT_BYTES: usize = 16;

/// Most f64 values one bundle record can hold (16 payload slots).
pub const MAX_BUNDLE_WORDS: usize = 32;

/// Longest string payload (annotation values, thread names), in bytes; longer ones are cut.
pub const MAX_STRING_BYTES: usize = 240;

/// Record kinds.
pub mod kind {
    /// Region begin.
    pub const BEGIN: u8 = 1;
    /// Region end (default bundle).
    pub const END: u8 = 2;
    /// Region end carrying bundle values.
    pub const BUNDLE_END: u8 = 3;
    /// Instant mark.
    pub const INSTANT: u8 = 4;
    /// Counter value.
    pub const COUNTER: u8 = 5;
    /// Annotation of the innermost open region.
    pub const ANNOTATION: u8 = 6;
    /// The thread was (re)named.
    pub const THREAD_NAME: u8 = 7;
    /// A call stack (timer sample or backtrace at a region's begin); see `crate::sampling`.
    pub const SAMPLE: u8 = 8;
    /// An async slice began (may end on another thread); payload word 0 is its cookie.
    pub const ASYNC_BEGIN: u8 = 9;
    /// An async slice ended; payload word 0 is the cookie of its begin.
    pub const ASYNC_END: u8 = 10;
}

/// Annotation value types (low 4 bits of `aux`).
pub mod value_type {
    /// i64.
    pub const I64: u16 = 1;
    /// u64.
    pub const U64: u16 = 2;
    /// f64.
    pub const F64: u16 = 3;
    /// bool (word 0 is 0 or 1).
    pub const BOOL: u16 = 4;
    /// UTF-8 string in the payload; length in the upper 12 bits of `aux`.
    pub const STR: u16 = 5;
}

const_assert_eq!(MAX_BUNDLE_WORDS % 2, 0);
// A region's END header is its BEGIN header plus `END_FROM_BEGIN` (one add on the hot path).
const_assert_eq!(kind::END, kind::BEGIN + 1);

/// Added to a region's `BEGIN` header word, gives its `END` header word.
pub const END_FROM_BEGIN: u64 = 1 << 32;
static_assertions::const_assert!(MAX_STRING_BYTES < (1 << 12));
static_assertions::const_assert!(MAX_BUNDLE_WORDS / 2 + MAX_STRING_BYTES / SLOT_BYTES < 255);

/// Packs a header word.
#[inline(always)]
pub const fn header(id: u32, kind: u8, extra: u8, aux: u16) -> u64 {
    id as u64 | (kind as u64) << 32 | (extra as u64) << 40 | (aux as u64) << 48
}

/// The fields of a header word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Call-site id.
    pub id: u32,
    /// Record kind.
    pub kind: u8,
    /// Payload slots that follow.
    pub extra: u8,
    /// Kind-specific.
    pub aux: u16,
}

impl Header {
    /// Unpacks a header word.
    #[inline]
    pub const fn unpack(word: u64) -> Header {
        Header {
            id: word as u32,
            kind: (word >> 32) as u8,
            extra: (word >> 40) as u8,
            aux: (word >> 48) as u16,
        }
    }
}

/// Payload slots needed for `words` f64 values.
pub const fn slots_for_words(words: usize) -> usize {
    words.div_ceil(2)
}

/// Payload slots needed for `bytes` string bytes.
pub const fn slots_for_bytes(bytes: usize) -> usize {
    bytes.div_ceil(SLOT_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips() {
        let word = header(0xDEAD_BEEF, kind::ANNOTATION, 7, 0x1234);
        assert_eq!(
            Header::unpack(word),
            Header {
                id: 0xDEAD_BEEF,
                kind: kind::ANNOTATION,
                extra: 7,
                aux: 0x1234
            }
        );
    }
}
