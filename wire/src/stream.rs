//! Reading a trace file's top level: a `Trace` is a sequence of `packet` fields (field 1,
//! length-delimited), read here one at a time from a `BufRead` so that only one packet is in
//! memory. A file that ends inside a packet (a run killed while writing) is told apart from
//! one that ends between packets.

use crate::{LEN, TRACE_PACKET};
use std::fmt;
use std::io::{self, BufRead, Read};

/// What [`PacketReader::next_frame`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame {
    /// A `Trace.packet`: its bytes are in the buffer.
    Packet,
    /// Another length-delimited top-level field (not a packet): its bytes are in the buffer.
    Other {
        /// Its field number.
        field: u64,
    },
    /// A top-level field that is not length-delimited: the input is not a `Trace`. Nothing
    /// past the tag was read.
    NotLengthDelimited {
        /// The field's tag (field number << 3 | wire type).
        tag: u64,
    },
    /// The input ends between two fields.
    End,
    /// The input ends inside a field.
    Truncated {
        /// The bytes of the cut field that were read (tag, length and body).
        bytes: u64,
    },
}

/// The input could not be read, or its framing is malformed.
#[derive(Debug)]
pub enum StreamError {
    /// Reading failed.
    Io {
        /// The error.
        error: io::Error,
        /// The offset in the input where the read started.
        at: u64,
    },
    /// A tag or length varint whose tenth byte still has its continuation bit.
    VarintTooLong {
        /// The offset of the varint in the input.
        at: u64,
    },
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::Io { error, at } => write!(f, "reading the trace at byte {at}: {error}"),
            StreamError::VarintTooLong { at } => write!(
                f,
                "a varint longer than 10 bytes at the top level of the trace (byte {at})"
            ),
        }
    }
}

impl std::error::Error for StreamError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StreamError::Io { error, .. } => Some(error),
            StreamError::VarintTooLong { .. } => None,
        }
    }
}

impl From<StreamError> for io::Error {
    fn from(e: StreamError) -> io::Error {
        match e {
            StreamError::Io { error, .. } => error,
            e @ StreamError::VarintTooLong { .. } => io::Error::new(io::ErrorKind::InvalidData, e),
        }
    }
}

/// Reads the top-level fields of a `Trace` from `input`.
#[derive(Debug)]
pub struct PacketReader<R> {
    input: R,
    /// Bytes consumed so far.
    offset: u64,
}

impl<R: BufRead> PacketReader<R> {
    /// A reader at the start of `input` (which should be buffered: varints are read a byte at
    /// a time from its buffer).
    pub fn new(input: R) -> Self {
        PacketReader { input, offset: 0 }
    }

    /// Bytes of the input consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads the next top-level field; the bytes of a length-delimited one replace `body`'s.
    pub fn next_frame(&mut self, body: &mut Vec<u8>) -> Result<Frame, StreamError> {
        let start = self.offset;
        let Some(tag) = self.varint()? else {
            let bytes = self.offset - start;
            return Ok(if bytes == 0 {
                Frame::End
            } else {
                Frame::Truncated { bytes }
            });
        };
        if tag & 7 != u64::from(LEN) {
            return Ok(Frame::NotLengthDelimited { tag });
        }
        let Some(len) = self.varint()? else {
            return Ok(Frame::Truncated {
                bytes: self.offset - start,
            });
        };
        body.clear();
        let at = self.offset;
        let got = (&mut self.input)
            .take(len)
            .read_to_end(body)
            .map_err(|error| StreamError::Io { error, at })? as u64;
        self.offset += got;
        if got < len {
            return Ok(Frame::Truncated {
                bytes: self.offset - start,
            });
        }
        Ok(if tag >> 3 == u64::from(TRACE_PACKET) {
            Frame::Packet
        } else {
            Frame::Other { field: tag >> 3 }
        })
    }

    /// A varint of the input; `None` when the input ends first (inside it or before it).
    fn varint(&mut self) -> Result<Option<u64>, StreamError> {
        let start = self.offset;
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = loop {
                match self.input.fill_buf() {
                    Ok([]) => return Ok(None),
                    Ok(&[b, ..]) => break b,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(error) => {
                        return Err(StreamError::Io {
                            error,
                            at: self.offset,
                        })
                    }
                }
            };
            self.input.consume(1);
            self.offset += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(Some(value));
            }
        }
        Err(StreamError::VarintTooLong { at: start })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{put_bytes, put_uint, put_varint};

    fn frames(input: &[u8]) -> Vec<(Frame, Vec<u8>)> {
        let mut reader = PacketReader::new(input);
        let mut out = Vec::new();
        let mut body = Vec::new();
        loop {
            let frame = reader.next_frame(&mut body).unwrap();
            out.push((frame, body.clone()));
            if matches!(frame, Frame::End | Frame::Truncated { .. }) {
                return out;
            }
        }
    }

    fn trace() -> Vec<u8> {
        let mut t = Vec::new();
        put_bytes(&mut t, 1, b"first");
        put_bytes(&mut t, 3, b"other");
        put_bytes(&mut t, 1, &[7; 200]);
        t
    }

    #[test]
    fn packets_and_other_fields_are_read_in_order() {
        let got = frames(&trace());
        assert_eq!(got.len(), 4);
        assert_eq!(got[0], (Frame::Packet, b"first".to_vec()));
        assert_eq!(got[1], (Frame::Other { field: 3 }, b"other".to_vec()));
        assert_eq!(got[2], (Frame::Packet, vec![7; 200]));
        assert_eq!(got[3].0, Frame::End);
    }

    #[test]
    fn a_trace_cut_anywhere_in_a_field_is_truncated_with_its_bytes() {
        let t = trace();
        let last = t.len() - 203; // tag, a two-byte length, 200 bytes
        for cut in last + 1..t.len() {
            let got = frames(&t[..cut]);
            assert_eq!(got.len(), 3, "cut at {cut}");
            assert_eq!(
                got[2].0,
                Frame::Truncated {
                    bytes: (cut - last) as u64
                },
                "cut at {cut}"
            );
        }
        assert_eq!(frames(&t[..last]).last().unwrap().0, Frame::End);
    }

    #[test]
    fn a_field_that_is_not_length_delimited_ends_the_framing() {
        let mut t = Vec::new();
        put_bytes(&mut t, 1, b"p");
        put_uint(&mut t, 2, 5);
        let mut reader = PacketReader::new(&t[..]);
        let mut body = Vec::new();
        assert_eq!(reader.next_frame(&mut body).unwrap(), Frame::Packet);
        assert_eq!(
            reader.next_frame(&mut body).unwrap(),
            Frame::NotLengthDelimited { tag: 2 << 3 }
        );
        assert_eq!(reader.offset(), 4);
    }

    #[test]
    fn a_top_level_varint_over_ten_bytes_is_an_error_at_its_offset() {
        let mut t = Vec::new();
        put_bytes(&mut t, 1, b"p");
        t.push(0x0a);
        t.extend_from_slice(&[0x80; 10]);
        t.push(0);
        let mut reader = PacketReader::new(&t[..]);
        let mut body = Vec::new();
        assert_eq!(reader.next_frame(&mut body).unwrap(), Frame::Packet);
        let err = reader.next_frame(&mut body).unwrap_err();
        assert!(matches!(err, StreamError::VarintTooLong { at: 4 }), "{err}");
        assert_eq!(io::Error::from(err).kind(), io::ErrorKind::InvalidData);
        // A length of 2^63 is only a cut packet, read without allocating for it.
        let mut t = vec![0x0a];
        put_varint(&mut t, 1 << 63);
        t.push(1);
        let got = frames(&t);
        assert_eq!(got[0].0, Frame::Truncated { bytes: 12 });
    }

    #[test]
    fn read_errors_say_where() {
        struct Failing;
        impl Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other("disk gone"))
            }
        }
        let mut reader = PacketReader::new(io::BufReader::new(Failing));
        let err = reader.next_frame(&mut Vec::new()).unwrap_err();
        assert_eq!(err.to_string(), "reading the trace at byte 0: disk gone");
    }
}
