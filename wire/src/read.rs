//! Reading a message: its fields in order as typed [`Value`]s, borrowed from the message's
//! bytes. A message that does not parse yields one [`WireError`] saying what is malformed and
//! at which byte, then nothing more.

use crate::Value;
use std::fmt;

/// What is malformed in a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// A varint whose last byte still has its continuation bit, at the end of the bytes.
    VarintTruncated,
    /// A varint whose tenth byte still has its continuation bit (a `u64` takes at most ten).
    VarintTooLong,
    /// A length-delimited field of `len` bytes that runs past the end of its message.
    LengthPastEnd {
        /// The length the field declares.
        len: u64,
    },
    /// A fixed-width field (4 or 8 bytes) that runs past the end of its message.
    FixedPastEnd {
        /// Its width in bytes.
        width: u8,
    },
    /// A wire type other than 0, 1, 2 and 5 (3 and 4 are the deprecated groups).
    UnknownWireType(u8),
    /// A field number that does not fit in 32 bits.
    FieldNumberTooLarge(u64),
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Malformed::VarintTruncated => f.write_str("a varint runs past the end of its message"),
            Malformed::VarintTooLong => f.write_str("a varint is longer than 10 bytes"),
            Malformed::LengthPastEnd { len } => write!(
                f,
                "a length-delimited field of {len} bytes runs past the end of its message"
            ),
            Malformed::FixedPastEnd { width } => {
                write!(f, "a fixed{} field runs past the end of its message", width * 8)
            }
            Malformed::UnknownWireType(t) => write!(
                f,
                "unknown wire type {t} (accepted: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32)"
            ),
            Malformed::FieldNumberTooLarge(n) => write!(f, "field number {n} is over 2^32"),
        }
    }
}

/// A message that does not parse: what is wrong, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireError {
    /// What is malformed.
    pub what: Malformed,
    /// The offset in the message of the field, tag or varint that is malformed.
    pub at: usize,
    /// The length of the message (or packed field) read.
    pub len: usize,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (at byte {} of a {}-byte message)",
            self.what, self.at, self.len
        )
    }
}

impl std::error::Error for WireError {}

/// Reads the varint at `buf[*pos..]` and moves `*pos` past it; on an error `*pos` stays at the
/// varint's start.
#[inline]
pub fn read_varint(buf: &[u8], pos: &mut usize) -> Result<u64, WireError> {
    // Most varints of a trace (tags, small ids, deltas) are one byte.
    if let Some(&b) = buf.get(*pos) {
        if b < 0x80 {
            *pos += 1;
            return Ok(u64::from(b));
        }
    }
    read_varint_long(buf, pos)
}

fn read_varint_long(buf: &[u8], pos: &mut usize) -> Result<u64, WireError> {
    let start = *pos;
    let mut value = 0u64;
    for (i, &b) in buf
        .get(start..)
        .unwrap_or_default()
        .iter()
        .take(10)
        .enumerate()
    {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *pos = start + i + 1;
            return Ok(value);
        }
    }
    let what = if buf.len().saturating_sub(start) >= 10 {
        Malformed::VarintTooLong
    } else {
        Malformed::VarintTruncated
    };
    Err(WireError {
        what,
        at: start,
        len: buf.len(),
    })
}

/// The fields of one message, in order: `(field number, value)`.
#[derive(Clone, Debug)]
pub struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// Iterates over the fields of message `buf`.
#[inline]
pub fn fields(buf: &[u8]) -> Fields<'_> {
    Fields { buf, pos: 0 }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>), WireError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let start = self.pos;
        let field = self.read_one();
        if field.is_err() {
            // Nothing after a malformed field can be found: the iteration ends here.
            self.pos = self.buf.len();
        } else {
            debug_assert!(self.pos > start);
        }
        Some(field)
    }
}

impl<'a> Fields<'a> {
    /// The offset of the next field in the message.
    pub fn position(&self) -> usize {
        self.pos
    }

    #[inline]
    fn read_one(&mut self) -> Result<(u32, Value<'a>), WireError> {
        let buf = self.buf;
        let start = self.pos;
        let error = |what| WireError {
            what,
            at: start,
            len: buf.len(),
        };
        let tag = read_varint(buf, &mut self.pos)?;
        let field =
            u32::try_from(tag >> 3).map_err(|_| error(Malformed::FieldNumberTooLarge(tag >> 3)))?;
        let value = match tag & 7 {
            0 => Value::Varint(read_varint(buf, &mut self.pos)?),
            1 => Value::Fixed64(u64::from_le_bytes(
                self.fixed::<8>()
                    .ok_or(error(Malformed::FixedPastEnd { width: 8 }))?,
            )),
            2 => {
                let len = read_varint(buf, &mut self.pos)?;
                let end = usize::try_from(len)
                    .ok()
                    .and_then(|n| self.pos.checked_add(n))
                    .filter(|&e| e <= buf.len())
                    .ok_or(error(Malformed::LengthPastEnd { len }))?;
                let bytes = &buf[self.pos..end];
                self.pos = end;
                Value::Len(bytes)
            }
            5 => Value::Fixed32(u32::from_le_bytes(
                self.fixed::<4>()
                    .ok_or(error(Malformed::FixedPastEnd { width: 4 }))?,
            )),
            t => return Err(error(Malformed::UnknownWireType(t as u8))),
        };
        Ok((field, value))
    }

    /// The next `N` bytes, moving past them; `None` if the message ends first.
    #[inline]
    fn fixed<const N: usize>(&mut self) -> Option<[u8; N]> {
        let bytes = self.buf.get(self.pos..)?.first_chunk::<N>()?;
        self.pos += N;
        Some(*bytes)
    }
}

/// The varints of a packed repeated field (the bytes of one length-delimited field).
#[derive(Clone, Debug)]
pub struct PackedVarints<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// Iterates over the varints packed in `bytes`.
#[inline]
pub fn packed_varints(bytes: &[u8]) -> PackedVarints<'_> {
    PackedVarints { buf: bytes, pos: 0 }
}

impl Iterator for PackedVarints<'_> {
    type Item = Result<u64, WireError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let v = read_varint(self.buf, &mut self.pos);
        if v.is_err() {
            self.pos = self.buf.len();
        }
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{put_field, put_tag, put_varint};

    fn all(msg: &[u8]) -> Result<Vec<(u32, Value<'_>)>, WireError> {
        fields(msg).collect()
    }

    #[test]
    fn every_value_round_trips() {
        let values = [
            (8, Value::Varint(1_700_000_000_123_456_789)),
            (1, Value::Varint(0)),
            (9, Value::Varint(u64::MAX)),
            (47, Value::Fixed64(u64::MAX)),
            (2, Value::Len(b"name")),
            (12, Value::Len(b"")),
            (3, Value::Fixed32(7)),
            (536_870_911, Value::Varint(5)),
        ];
        let mut msg = Vec::new();
        for (f, v) in values {
            put_field(&mut msg, f, v);
        }
        assert_eq!(all(&msg).unwrap(), values);
        assert_eq!(all(&[]).unwrap(), []);
    }

    #[test]
    fn varints_of_every_length_round_trip() {
        for bits in 0..64 {
            for v in [1u64 << bits, (1u64 << bits) - 1, (1u64 << bits) | 1] {
                let mut buf = vec![0xff];
                put_varint(&mut buf, v);
                buf.push(0x55);
                let mut pos = 1;
                assert_eq!(read_varint(&buf, &mut pos), Ok(v));
                assert_eq!(buf[pos], 0x55, "{v} read to its end");
            }
        }
    }

    #[test]
    fn a_truncated_varint_is_an_error_at_its_start() {
        for buf in [&[0x80u8][..], &[0x08, 0x80, 0x80], &[0x08, 0xff]] {
            let mut pos = 1.min(buf.len() - 1);
            let at = pos;
            let err = read_varint(buf, &mut pos).unwrap_err();
            assert_eq!(err.what, Malformed::VarintTruncated);
            assert_eq!((err.at, pos), (at, at));
        }
        // The tag's value is cut: field 1, varint, no value.
        let err = all(&[0x10, 0x01, 0x08, 0x80]).unwrap_err();
        assert_eq!(
            (err.what, err.at, err.len),
            (Malformed::VarintTruncated, 3, 4)
        );
        assert_eq!(
            err.to_string(),
            "a varint runs past the end of its message (at byte 3 of a 4-byte message)"
        );
        assert_eq!(
            read_varint(&[], &mut 0).unwrap_err().what,
            Malformed::VarintTruncated
        );
    }

    #[test]
    fn a_varint_over_ten_bytes_is_an_error() {
        let mut long = vec![0x80; 10];
        long.push(0x01);
        let err = read_varint(&long, &mut 0).unwrap_err();
        assert_eq!((err.what, err.at), (Malformed::VarintTooLong, 0));
        let mut msg = vec![0x08];
        msg.extend_from_slice(&long);
        let err = all(&msg).unwrap_err();
        assert_eq!((err.what, err.at), (Malformed::VarintTooLong, 1));
        assert!(err.to_string().contains("longer than 10 bytes"));
        // Ten bytes are the most a u64 takes, and are accepted.
        let ten = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(read_varint(&ten, &mut 0), Ok(u64::MAX));
    }

    #[test]
    fn a_length_past_the_end_is_an_error_at_its_field() {
        let mut msg = Vec::new();
        put_field(&mut msg, 1, Value::Varint(3));
        put_field(&mut msg, 2, Value::Len(b"a longer string"));
        msg.truncate(8);
        let mut it = fields(&msg);
        assert_eq!(it.next(), Some(Ok((1, Value::Varint(3)))));
        let err = it.next().unwrap().unwrap_err();
        assert_eq!(
            (err.what, err.at, err.len),
            (Malformed::LengthPastEnd { len: 15 }, 2, 8)
        );
        assert_eq!(it.next(), None, "no field after a malformed one");
        // A length near u64::MAX neither wraps nor panics.
        let mut huge = Vec::new();
        put_tag(&mut huge, 2, 2);
        put_varint(&mut huge, u64::MAX);
        let err = all(&huge).unwrap_err();
        assert_eq!(err.what, Malformed::LengthPastEnd { len: u64::MAX });
    }

    #[test]
    fn a_cut_fixed_width_field_is_an_error() {
        let mut msg = Vec::new();
        put_field(&mut msg, 5, Value::Fixed64(1));
        msg.pop();
        assert_eq!(
            all(&msg).unwrap_err().what,
            Malformed::FixedPastEnd { width: 8 }
        );
        let mut msg = Vec::new();
        put_field(&mut msg, 5, Value::Fixed32(1));
        msg.pop();
        let err = all(&msg).unwrap_err();
        assert_eq!(err.what, Malformed::FixedPastEnd { width: 4 });
        assert!(err.to_string().starts_with("a fixed32 field runs past"));
    }

    #[test]
    fn unknown_wire_types_and_huge_field_numbers_are_errors() {
        for wire_type in [3u8, 4, 6, 7] {
            let msg = [1 << 3 | wire_type, 0, 0, 0, 0, 0, 0, 0, 0];
            let err = all(&msg).unwrap_err();
            assert_eq!(err.what, Malformed::UnknownWireType(wire_type));
            assert!(err.to_string().contains(&format!("wire type {wire_type}")));
        }
        let mut msg = Vec::new();
        put_varint(&mut msg, (1u64 << 32) << 3);
        msg.push(0);
        assert_eq!(
            all(&msg).unwrap_err().what,
            Malformed::FieldNumberTooLarge(1 << 32)
        );
    }

    /// Reads every field of `msg` and of the messages nested in it; the number read.
    fn walk(msg: &[u8], depth: u32) -> usize {
        let mut n = 0;
        for field in fields(msg) {
            n += 1;
            if let Ok((_, Value::Len(inner))) = field {
                if depth < 4 {
                    n += walk(inner, depth + 1);
                    n += packed_varints(inner).count();
                }
            }
        }
        n
    }

    #[test]
    fn any_cut_or_corrupted_byte_gives_values_or_an_error_never_a_panic() {
        let mut inner = Vec::new();
        put_field(&mut inner, 1, Value::Varint(300));
        put_field(&mut inner, 2, Value::Len(b"name"));
        put_field(&mut inner, 5, Value::Fixed64(7));
        let mut msg = Vec::new();
        put_field(&mut msg, 8, Value::Varint(u64::MAX));
        put_field(&mut msg, 11, Value::Len(&inner));
        put_field(&mut msg, 3, Value::Fixed32(9));
        for cut in 0..=msg.len() {
            let fields_read = walk(&msg[..cut], 0);
            assert!(fields_read <= 2 * msg.len(), "cut at {cut}");
        }
        for at in 0..msg.len() {
            for byte in [0x00, 0x01, 0x07, 0x0a, 0x7f, 0x80, 0xff] {
                let mut bad = msg.clone();
                bad[at] = byte;
                walk(&bad, 0);
            }
        }
    }

    #[test]
    fn packed_varints_read_until_their_end_or_an_error() {
        let mut bytes = Vec::new();
        for v in [1u64, 300, u64::MAX, 0] {
            put_varint(&mut bytes, v);
        }
        let got: Result<Vec<_>, _> = packed_varints(&bytes).collect();
        assert_eq!(got.unwrap(), [1, 300, u64::MAX, 0]);
        bytes.push(0x80);
        let got: Vec<_> = packed_varints(&bytes).collect();
        assert_eq!(got.len(), 5);
        let err = got[4].unwrap_err();
        assert_eq!(
            (err.what, err.at),
            (Malformed::VarintTruncated, bytes.len() - 1)
        );
        assert_eq!(packed_varints(&[]).count(), 0);
    }
}
