//! Protocol buffers at the wire level, the one codec behind every Perfetto trace Metron writes
//! or reads: no schema, no generated code, no dependencies beyond `std`.
//!
//! - [`write`](mod@write): the primitives the trace sink's encoder (`metron-sinks`, once per region) and
//!   `metron merge` append with: varints, tags, fixed-width fields, length-delimited fields,
//!   and a nested message whose length is reserved as one byte and patched when it closes.
//!   Everything is `#[inline]`, so the encoder's hot packets compile to the same stores as
//!   before the codec moved here.
//! - [`read`]: one field reader ([`fields`]) over a message slice, yielding typed [`Value`]s, and
//!   the packed repeated varints ([`packed_varints`]); a malformed message is a [`WireError`]
//!   that says what is wrong and at which byte, never a panic.
//! - [`stream`]: a reader of a `Trace`'s top-level `packet` fields from a `BufRead`, one packet
//!   in memory at a time, that tells a trace cut short (a run killed while writing) from its end.
//!
//! ```
//! use metron_wire::{fields, put_bytes, put_uint, Value};
//! let mut msg = Vec::new();
//! put_uint(&mut msg, 8, 1_000);
//! put_bytes(&mut msg, 2, b"main");
//! let got: Vec<_> = fields(&msg).collect::<Result<_, _>>().unwrap();
//! assert_eq!(got, [(8, Value::Varint(1_000)), (2, Value::Len(b"main"))]);
//! ```

pub mod read;
pub mod stream;
pub mod write;

pub use read::{fields, packed_varints, read_varint, Fields, Malformed, PackedVarints, WireError};
pub use stream::{Frame, PacketReader, StreamError};
pub use write::{
    close_len, open_len, put_bytes, put_field, put_fixed32, put_fixed64, put_short_varint_at,
    put_tag, put_uint, put_varint, put_varint_at, tag,
};

/// Wire type 0: a varint (`uint64`, `int64`, `bool`, enums).
pub const VARINT: u32 = 0;
/// Wire type 1: eight little-endian bytes (`double`, `fixed64`).
pub const FIXED64: u32 = 1;
/// Wire type 2: a varint length, then that many bytes (messages, strings, packed fields).
pub const LEN: u32 = 2;
/// Wire type 5: four little-endian bytes (`float`, `fixed32`).
pub const FIXED32: u32 = 5;

/// A field's value as it is on the wire.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2: a message, a string, bytes or a packed repeated field.
    Len(&'a [u8]),
    /// Wire type 5.
    Fixed32(u32),
}

/// `Trace.packet`: the field every packet of a trace file is framed in.
pub const TRACE_PACKET: u32 = 1;
