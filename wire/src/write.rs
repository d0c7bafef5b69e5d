//! Appending fields to a message buffer. Every function is `#[inline]`: the trace sink's encoder
//! calls them for every region, and a call across the crate boundary would cost more than the
//! bytes it writes.

use crate::{Value, FIXED32, FIXED64, LEN, VARINT};

/// The tag of field `field` with wire type `wire_type` (the varint before each value).
#[inline]
pub const fn tag(field: u32, wire_type: u32) -> u64 {
    (field as u64) << 3 | wire_type as u64
}

/// Appends `v` as a varint: seven bits a byte, low bits first, the top bit set on all bytes
/// but the last (1 to 10 bytes).
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Writes `v` as a varint at `b[at..]` and returns the position after it, for packets built
/// in a fixed array. Panics if `b` is too short: callers size the array for the longest case.
#[inline(always)]
pub fn put_varint_at(b: &mut [u8], mut at: usize, mut v: u64) -> usize {
    while v >= 0x80 {
        b[at] = v as u8 | 0x80;
        v >>= 7;
        at += 1;
    }
    b[at] = v as u8;
    at + 1
}

/// Writes `v` (below 2^14) as a varint of one or two bytes at `b[at..]` and returns the
/// position after it: the trace encoder's deltas and lengths of a region pair, with no loop.
#[inline(always)]
pub fn put_short_varint_at(b: &mut [u8], at: usize, v: u64) -> usize {
    debug_assert!(v < 0x4000);
    if v < 0x80 {
        b[at] = v as u8;
        at + 1
    } else {
        b[at] = v as u8 | 0x80;
        b[at + 1] = (v >> 7) as u8;
        at + 2
    }
}

/// Appends the tag of field `field` with wire type `wire_type`.
#[inline]
pub fn put_tag(out: &mut Vec<u8>, field: u32, wire_type: u32) {
    put_varint(out, tag(field, wire_type));
}

/// Appends a varint field (`uint64`/`uint32`/`bool`/enum; an `int64` as `v as u64`, which
/// takes ten bytes when negative, as in protobuf).
#[inline]
pub fn put_uint(out: &mut Vec<u8>, field: u32, v: u64) {
    put_tag(out, field, VARINT);
    put_varint(out, v);
}

/// Appends a fixed64 field (a `double` as `v.to_bits()`).
#[inline]
pub fn put_fixed64(out: &mut Vec<u8>, field: u32, v: u64) {
    put_tag(out, field, FIXED64);
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a fixed32 field.
#[inline]
pub fn put_fixed32(out: &mut Vec<u8>, field: u32, v: u32) {
    put_tag(out, field, FIXED32);
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a length-delimited field holding `b` (a string, bytes, a whole message).
#[inline]
pub fn put_bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    put_tag(out, field, LEN);
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Appends field `field` with `value`, in its own wire type.
#[inline]
pub fn put_field(out: &mut Vec<u8>, field: u32, value: Value<'_>) {
    match value {
        Value::Varint(v) => put_uint(out, field, v),
        Value::Fixed64(v) => put_fixed64(out, field, v),
        Value::Len(b) => put_bytes(out, field, b),
        Value::Fixed32(v) => put_fixed32(out, field, v),
    }
}

/// Starts a nested message (a length-delimited field written in place): appends the tag and
/// one reserved length byte, and returns the reserved byte's position for [`close_len`].
#[inline]
pub fn open_len(out: &mut Vec<u8>, field: u32) -> usize {
    put_tag(out, field, LEN);
    out.push(0);
    out.len() - 1
}

/// Ends the nested message whose length byte [`open_len`] reserved at `at`: writes its length
/// as a minimal varint. Below 128 bytes (every hot packet) that is the one reserved byte;
/// a longer body moves by the extra length bytes.
#[inline]
pub fn close_len(out: &mut Vec<u8>, at: usize) {
    let len = out.len() - at - 1;
    if len < 0x80 {
        out[at] = len as u8;
        return;
    }
    let mut n = 1;
    while len >> (7 * n) != 0 {
        n += 1;
    }
    let old = out.len();
    out.resize(old + n - 1, 0);
    out.copy_within(at + 1..old, at + n);
    put_varint_at(out, at, len as u64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_take_seven_bits_a_byte_low_bits_first() {
        let cases: [(u64, &[u8]); 6] = [
            (0, &[0]),
            (1, &[1]),
            (127, &[0x7f]),
            (128, &[0x80, 0x01]),
            (300, &[0xac, 0x02]),
            (
                u64::MAX,
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ),
        ];
        for (v, bytes) in cases {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out, bytes, "{v}");
            let mut b = [0u8; 12];
            assert_eq!(put_varint_at(&mut b, 1, v), 1 + bytes.len());
            assert_eq!(&b[1..1 + bytes.len()], bytes);
        }
    }

    #[test]
    fn fields_encode_as_protobuf_does() {
        let mut out = Vec::new();
        put_uint(&mut out, 4, -1i64 as u64);
        assert_eq!(
            out,
            [0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
        out.clear();
        put_fixed64(&mut out, 5, 1.5f64.to_bits());
        assert_eq!(out, [0x29, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f]);
        out.clear();
        put_fixed32(&mut out, 1, 7);
        assert_eq!(out, [0x0d, 7, 0, 0, 0]);
        out.clear();
        put_uint(&mut out, 87, 1);
        assert_eq!(out, [0xb8, 0x05, 0x01]);
        out.clear();
        put_bytes(&mut out, 2, b"ab");
        assert_eq!(out, [0x12, 2, b'a', b'b']);
    }

    #[test]
    fn a_closed_message_has_a_minimal_length_and_its_body_intact() {
        for len in [0usize, 1, 127, 128, 300, 16383, 16384, 70000] {
            let mut out = vec![0xaa];
            let at = open_len(&mut out, 2);
            let body: Vec<u8> = (0..len).map(|i| i as u8).collect();
            out.extend_from_slice(&body);
            close_len(&mut out, at);
            put_uint(&mut out, 3, 1);
            let mut expected = vec![0xaa];
            put_bytes(&mut expected, 2, &body);
            put_uint(&mut expected, 3, 1);
            assert_eq!(out, expected, "body of {len} bytes");
        }
    }
}
