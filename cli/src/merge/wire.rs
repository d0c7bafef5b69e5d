//! Protocol buffers at the wire level: just enough to read a `TracePacket` field by field and
//! write it back with some fields changed, without a schema or a copy of the message tree.

/// A field's value as it is on the wire.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2: a message, a string, bytes or a packed repeated field.
    Len(&'a [u8]),
    /// Wire type 5.
    Fixed32(u32),
}

/// A message that does not parse: where and why.
#[derive(Debug)]
pub(crate) struct WireError(pub(crate) &'static str);

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// Reads a varint at `*pos`, moving `*pos` past it.
pub(crate) fn read_varint(buf: &[u8], pos: &mut usize) -> Result<u64, WireError> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let Some(&b) = buf.get(*pos) else {
            return Err(WireError("a varint runs past the end of its message"));
        };
        *pos += 1;
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(WireError("a varint is longer than 10 bytes"))
}

/// The fields of one message, in order.
pub(crate) struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// Iterates over the fields of message `buf`.
pub(crate) fn fields(buf: &[u8]) -> Fields<'_> {
    Fields { buf, pos: 0 }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>), WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        Some(self.read_one())
    }
}

impl<'a> Fields<'a> {
    fn read_one(&mut self) -> Result<(u32, Value<'a>), WireError> {
        let buf = self.buf;
        let tag = read_varint(buf, &mut self.pos)?;
        let field = u32::try_from(tag >> 3).map_err(|_| WireError("a field number over 2^32"))?;
        let value = match tag & 7 {
            0 => Value::Varint(read_varint(buf, &mut self.pos)?),
            1 => {
                let bytes = buf
                    .get(self.pos..self.pos + 8)
                    .ok_or(WireError("a fixed64 runs past the end of its message"))?;
                self.pos += 8;
                Value::Fixed64(u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
            }
            2 => {
                let len = read_varint(buf, &mut self.pos)? as usize;
                let end = self
                    .pos
                    .checked_add(len)
                    .filter(|&e| e <= buf.len())
                    .ok_or(WireError(
                        "a length-delimited field runs past the end of its message",
                    ))?;
                let bytes = &buf[self.pos..end];
                self.pos = end;
                Value::Len(bytes)
            }
            5 => {
                let bytes = buf
                    .get(self.pos..self.pos + 4)
                    .ok_or(WireError("a fixed32 runs past the end of its message"))?;
                self.pos += 4;
                Value::Fixed32(u32::from_le_bytes(bytes.try_into().expect("4 bytes")))
            }
            _ => return Err(WireError("a group or an unknown wire type")),
        };
        Ok((field, value))
    }
}

/// Appends varint `v`.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends field `field` with `value`.
pub(crate) fn put(out: &mut Vec<u8>, field: u32, value: Value<'_>) {
    let tag = u64::from(field) << 3;
    match value {
        Value::Varint(v) => {
            put_varint(out, tag);
            put_varint(out, v);
        }
        Value::Fixed64(v) => {
            put_varint(out, tag | 1);
            out.extend_from_slice(&v.to_le_bytes());
        }
        Value::Len(bytes) => {
            put_varint(out, tag | 2);
            put_varint(out, bytes.len() as u64);
            out.extend_from_slice(bytes);
        }
        Value::Fixed32(v) => {
            put_varint(out, tag | 5);
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

/// Appends a length-delimited field whose bytes `body` writes (into a scratch buffer taken
/// from and given back to `scratch`, so nested rewrites allocate once).
pub(crate) fn put_nested(
    out: &mut Vec<u8>,
    field: u32,
    scratch: &mut Vec<Vec<u8>>,
    body: impl FnOnce(&mut Vec<u8>, &mut Vec<Vec<u8>>) -> Result<(), WireError>,
) -> Result<(), WireError> {
    let mut inner = scratch.pop().unwrap_or_default();
    inner.clear();
    let result = body(&mut inner, scratch);
    if result.is_ok() {
        put(out, field, Value::Len(&inner));
    }
    scratch.push(inner);
    result
}

/// The varints of a packed repeated field.
pub(crate) fn packed_varints(bytes: &[u8]) -> Result<Vec<u64>, WireError> {
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < bytes.len() {
        out.push(read_varint(bytes, &mut pos)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip() {
        let mut msg = Vec::new();
        put(&mut msg, 8, Value::Varint(1_700_000_000_123_456_789));
        put(&mut msg, 47, Value::Fixed64(u64::MAX));
        put(&mut msg, 2, Value::Len(b"name"));
        put(&mut msg, 3, Value::Fixed32(7));
        let got: Vec<_> = fields(&msg).map(Result::unwrap).collect();
        assert_eq!(
            got,
            vec![
                (8, Value::Varint(1_700_000_000_123_456_789)),
                (47, Value::Fixed64(u64::MAX)),
                (2, Value::Len(b"name")),
                (3, Value::Fixed32(7)),
            ]
        );
    }

    #[test]
    fn cut_messages_are_errors() {
        let mut msg = Vec::new();
        put(&mut msg, 2, Value::Len(b"a longer string"));
        msg.truncate(5);
        assert!(fields(&msg).any(|f| f.is_err()));
        assert!(read_varint(&[0x80, 0x80], &mut 0).is_err());
    }
}
