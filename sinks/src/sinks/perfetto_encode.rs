//! A protozero-style writer of `TracePacket`s: the trace sink encodes its packets itself into
//! one reusable buffer, framed as `Trace.packet` (field 1, length-delimited), and appends the
//! buffer straight to `trace.pftrace` (the Perfetto session only adds the service's packets:
//! clock snapshots, trace config, trace stats).
//!
//! Nested messages are written in place: [`Encoder::open`] writes the tag and a one-byte
//! length, [`Encoder::close`] patches it. The hot packets are far below 128 bytes, so the
//! length stays one byte and nothing moves; a longer message shifts its body by the extra
//! length bytes (only long names do). Every length is the minimal varint, no allocation
//! happens once the buffer has grown to its working size.
//!
//! The field numbers below are those of the official protos (`perfetto_trace.proto`); the
//! independent validator (`tests/perfetto/validate_trace.py`) decodes the result with them.

/// `trusted_packet_sequence_id` of the packets Metron encodes that belong to no one thread's
/// slices (process and counter tracks, instants, samples, GPU work, async slices). The
/// in-process service numbers its own sequence 1 and its writers' sequences from 2 upwards;
/// nothing writes through the SDK's data source, and the scan of the service's packets checks
/// that none uses one of Metron's ids ([`is_metron_sequence`]).
pub(crate) const METRON_SEQUENCE_ID: u64 = 8;

/// A thread's slices go on a sequence of their own, `THREAD_SEQUENCE_BASE + thread index`,
/// whose packets take their track from the sequence's defaults and their timestamps from an
/// incremental clock (see [`Encoder::start_thread_sequence`]). Below 128 the id is one byte.
pub(crate) const THREAD_SEQUENCE_BASE: u64 = 16;

/// The sequence-scoped clock of a thread's sequence: each packet's `timestamp` is the
/// nanoseconds since the previous packet's (Perfetto's `kClockIdIncremental`).
pub(crate) const INCREMENTAL_CLOCK_ID: u64 = 64;

/// The first seven GPU tracks (streams, API threads) are sequences 9 to 15, whose ids take
/// one byte like a thread's (see `perfetto_gpu.rs`); later ones count up from
/// [`GPU_SEQUENCE_OVERFLOW`].
pub(crate) const GPU_SEQUENCE_FIRST: u64 = METRON_SEQUENCE_ID + 1;
/// The last one-byte GPU sequence.
pub(crate) const GPU_SEQUENCE_LAST: u64 = THREAD_SEQUENCE_BASE - 1;
/// GPU sequences past the seventh: far above any thread's.
pub(crate) const GPU_SEQUENCE_OVERFLOW: u64 = 1 << 40;

/// `BuiltinClock.MONOTONIC`.
pub(crate) const CLOCK_MONOTONIC: u64 = 3;

/// `BuiltinClock.REALTIME`.
const CLOCK_REALTIME: u64 = 1;

/// `BuiltinClock.BOOTTIME`, the trace clock of Perfetto's traces.
const CLOCK_BOOTTIME: u64 = 6;

/// True for the sequence ids Metron writes (the service must use none of them): its main
/// sequence, the GPU tracks' and the threads'.
pub(crate) fn is_metron_sequence(id: u64) -> bool {
    id >= METRON_SEQUENCE_ID
}

/// `Trace`.
pub(crate) const TRACE_PACKET: u32 = 1;

/// `TracePacket`.
pub(crate) mod packet {
    pub(crate) const TIMESTAMP: u32 = 8;
    pub(crate) const TRUSTED_PACKET_SEQUENCE_ID: u32 = 10;
    pub(crate) const TRACK_EVENT: u32 = 11;
    pub(crate) const INTERNED_DATA: u32 = 12;
    pub(crate) const SEQUENCE_FLAGS: u32 = 13;
    pub(crate) const PREVIOUS_PACKET_DROPPED: u32 = 42;
    pub(crate) const TIMESTAMP_CLOCK_ID: u32 = 58;
    pub(crate) const TRACE_PACKET_DEFAULTS: u32 = 59;
    pub(crate) const CLOCK_SNAPSHOT: u32 = 6;
    pub(crate) const TRACK_DESCRIPTOR: u32 = 60;
    pub(crate) const FIRST_PACKET_ON_SEQUENCE: u32 = 87;
}

/// `TracePacketDefaults` and its `TrackEventDefaults`.
pub(crate) mod defaults {
    pub(crate) const TIMESTAMP_CLOCK_ID: u32 = 58;
    pub(crate) const TRACK_EVENT_DEFAULTS: u32 = 11;
    pub(crate) const TRACK_UUID: u32 = 11;
}

/// `ClockSnapshot` and its `Clock`.
pub(crate) mod clock {
    pub(crate) const CLOCKS: u32 = 1;
    pub(crate) const CLOCK_ID: u32 = 1;
    pub(crate) const TIMESTAMP: u32 = 2;
    pub(crate) const IS_INCREMENTAL: u32 = 3;
    /// `ClockSnapshot.primary_trace_clock`.
    pub(crate) const PRIMARY_TRACE_CLOCK: u32 = 2;
}

/// `InternedData`, and its `EventName` / `DebugAnnotationName` entries.
pub(crate) mod interned {
    pub(crate) const EVENT_NAMES: u32 = 2;
    pub(crate) const DEBUG_ANNOTATION_NAMES: u32 = 3;
    pub(crate) const IID: u32 = 1;
    pub(crate) const NAME: u32 = 2;
}

/// `TrackEvent`.
pub(crate) mod event {
    pub(crate) const DEBUG_ANNOTATIONS: u32 = 4;
    pub(crate) const TYPE: u32 = 9;
    pub(crate) const NAME_IID: u32 = 10;
    pub(crate) const TRACK_UUID: u32 = 11;
    pub(crate) const DOUBLE_COUNTER_VALUE: u32 = 44;
    pub(crate) const TYPE_SLICE_BEGIN: u64 = 1;
    pub(crate) const TYPE_SLICE_END: u64 = 2;
    pub(crate) const TYPE_INSTANT: u64 = 3;
    pub(crate) const TYPE_COUNTER: u64 = 4;
}

/// `DebugAnnotation`.
pub(crate) mod annotation {
    pub(crate) const NAME_IID: u32 = 1;
    pub(crate) const BOOL_VALUE: u32 = 2;
    pub(crate) const UINT_VALUE: u32 = 3;
    pub(crate) const INT_VALUE: u32 = 4;
    pub(crate) const DOUBLE_VALUE: u32 = 5;
    pub(crate) const STRING_VALUE: u32 = 6;
    pub(crate) const NAME: u32 = 10;
}

/// `TrackDescriptor`, `ProcessDescriptor`, `ThreadDescriptor`, `CounterDescriptor`.
pub(crate) mod track {
    pub(crate) const UUID: u32 = 1;
    pub(crate) const NAME: u32 = 2;
    pub(crate) const PROCESS: u32 = 3;
    pub(crate) const THREAD: u32 = 4;
    pub(crate) const PARENT_UUID: u32 = 5;
    pub(crate) const COUNTER: u32 = 8;
    pub(crate) const DESCRIPTION: u32 = 14;
    pub(crate) const PROCESS_PID: u32 = 1;
    pub(crate) const PROCESS_CMDLINE: u32 = 2;
    pub(crate) const PROCESS_NAME: u32 = 6;
    pub(crate) const THREAD_PID: u32 = 1;
    pub(crate) const THREAD_TID: u32 = 2;
    pub(crate) const THREAD_NAME: u32 = 5;
    pub(crate) const COUNTER_UNIT: u32 = 3;
    /// `CounterDescriptor.Unit.UNIT_SIZE_BYTES`.
    pub(crate) const UNIT_SIZE_BYTES: u64 = 3;
}

/// A fast hasher for the sink's small integer keys (thread indexes, call-site ids, interned
/// ids): one multiply per word (the Fx hash), instead of SipHash on every event.
#[derive(Default, Clone, Copy)]
pub(crate) struct FastHasher(u64);

impl std::hash::Hasher for FastHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }

    #[inline]
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

/// A `HashMap` with [`FastHasher`].
pub(crate) type FastMap<K, V> =
    std::collections::HashMap<K, V, std::hash::BuildHasherDefault<FastHasher>>;
/// A `HashSet` with [`FastHasher`].
pub(crate) type FastSet<K> =
    std::collections::HashSet<K, std::hash::BuildHasherDefault<FastHasher>>;

use metron_wire::{
    close_len, open_len, put_fixed64, put_tag, put_varint, put_varint_at, LEN, VARINT,
};

/// The packet buffer and what was encoded into it.
#[derive(Default)]
pub(crate) struct Encoder {
    /// Whole `Trace.packet` fields, ready to append to the file.
    pub(crate) buf: Vec<u8>,
    /// Packets encoded (all of them, since the start).
    pub(crate) packets: u64,
}

impl Encoder {
    #[inline]
    fn tag(&mut self, field: u32, wire: u32) {
        put_tag(&mut self.buf, field, wire);
    }

    /// A `uint64`/`uint32`/`bool`/enum field.
    #[inline]
    pub(crate) fn uint(&mut self, field: u32, v: u64) {
        self.tag(field, VARINT);
        put_varint(&mut self.buf, v);
    }

    /// An `int64`/`int32` field (negative values take ten bytes, as in protobuf).
    #[inline]
    pub(crate) fn int(&mut self, field: u32, v: i64) {
        self.uint(field, v as u64);
    }

    /// A `double` field.
    #[inline]
    pub(crate) fn double(&mut self, field: u32, v: f64) {
        put_fixed64(&mut self.buf, field, v.to_bits());
    }

    /// A `string`/`bytes` field.
    #[inline]
    pub(crate) fn bytes(&mut self, field: u32, b: &[u8]) {
        self.tag(field, LEN);
        put_varint(&mut self.buf, b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    /// Starts a nested message; returns where its length goes (for [`Encoder::close`]).
    #[inline]
    pub(crate) fn open(&mut self, field: u32) -> usize {
        open_len(&mut self.buf, field)
    }

    /// Ends the nested message opened at `at`, writing its length as a minimal varint.
    #[inline]
    pub(crate) fn close(&mut self, at: usize) {
        close_len(&mut self.buf, at);
    }

    /// Starts a `Trace.packet` on Metron's sequence with its timestamp and sequence flags.
    #[inline]
    pub(crate) fn packet(&mut self, ts: u64, flags: u64) -> usize {
        let at = self.open(TRACE_PACKET);
        self.uint(packet::TIMESTAMP, ts);
        if flags < 0x80 {
            // Both one-byte fields at once (the id is below 128, checked at compile time).
            const _: () = assert!(METRON_SEQUENCE_ID < 0x80);
            self.buf.extend_from_slice(&[
                (packet::TRUSTED_PACKET_SEQUENCE_ID << 3 | VARINT) as u8,
                METRON_SEQUENCE_ID as u8,
                (packet::SEQUENCE_FLAGS << 3 | VARINT) as u8,
                flags as u8,
            ]);
        } else {
            self.uint(packet::TRUSTED_PACKET_SEQUENCE_ID, METRON_SEQUENCE_ID);
            self.uint(packet::SEQUENCE_FLAGS, flags);
        }
        at
    }

    /// Ends the packet started at `at`.
    #[inline]
    pub(crate) fn end_packet(&mut self, at: usize) {
        self.close(at);
        self.packets += 1;
    }

    /// Starts a `Trace.packet` on a thread's sequence `seq` at `ts`, whose previous packet was
    /// at `*clock` (updated): the timestamp is the delta on the incremental clock, or, for a
    /// time before `*clock` (never from the decoder, which keeps each thread's times in order),
    /// the absolute `CLOCK_MONOTONIC` time with its clock id, as the Perfetto SDK does.
    #[inline]
    pub(crate) fn thread_packet(&mut self, seq: u64, clock: &mut u64, ts: u64) -> usize {
        let at = self.open(TRACE_PACKET);
        if ts >= *clock {
            self.uint(packet::TIMESTAMP, ts - *clock);
            *clock = ts;
        } else {
            self.uint(packet::TIMESTAMP, ts);
            self.uint(packet::TIMESTAMP_CLOCK_ID, CLOCK_MONOTONIC);
        }
        self.uint(packet::TRUSTED_PACKET_SEQUENCE_ID, seq);
        at
    }

    /// A slice begin (`iid: Some`) or end on a thread's sequence, in one write: the packet is
    /// `timestamp` (delta), the sequence id and `track_event { type name_iid }`, 11 to 14
    /// bytes for an ordinary region (the track comes from the sequence's defaults, the clock
    /// from its incremental clock). `ts` must not be before `*clock`. The packet is not
    /// counted in [`Encoder::packets`]: the caller adds the slices it wrote once per run of
    /// them (a count kept in a register, not a store per packet).
    #[inline]
    pub(crate) fn slice(&mut self, seq: u64, clock: &mut u64, ts: u64, iid: Option<u64>) {
        debug_assert!(ts >= *clock);
        let delta = ts - *clock;
        // The common case, every varint one byte: 12 bytes for a begin, 10 for an end.
        if delta < 0x80 && seq < 0x80 {
            const TS: u8 = (packet::TIMESTAMP << 3 | VARINT) as u8;
            const SEQ: u8 = (packet::TRUSTED_PACKET_SEQUENCE_ID << 3 | VARINT) as u8;
            const TE: u8 = (packet::TRACK_EVENT << 3 | LEN) as u8;
            const TYPE: u8 = (event::TYPE << 3 | VARINT) as u8;
            const NAME: u8 = (event::NAME_IID << 3 | VARINT) as u8;
            const PACKET: u8 = (TRACE_PACKET << 3 | LEN) as u8;
            let (d, q) = (delta as u8, seq as u8);
            match iid {
                Some(iid) if iid < 0x80 => {
                    let begin = event::TYPE_SLICE_BEGIN as u8;
                    self.buf.extend_from_slice(&[
                        PACKET, 10, TS, d, SEQ, q, TE, 4, TYPE, begin, NAME, iid as u8,
                    ]);
                }
                Some(_) => return self.slice_any(seq, clock, ts, iid),
                None => {
                    let end = event::TYPE_SLICE_END as u8;
                    self.buf
                        .extend_from_slice(&[PACKET, 8, TS, d, SEQ, q, TE, 2, TYPE, end]);
                }
            }
            *clock = ts;
            return;
        }
        self.slice_any(seq, clock, ts, iid)
    }

    /// A slice begin at `begin` and its end at `end` with nothing between them, as
    /// [`Encoder::slice`] writes them (the same two packets), in one write of 22 bytes when
    /// every varint is one byte. `begin` must not be before `*clock`, nor `end` before `begin`.
    #[inline(always)]
    pub(crate) fn slice_pair(&mut self, seq: u64, clock: &mut u64, begin: u64, end: u64, iid: u64) {
        debug_assert!(begin >= *clock && end >= begin);
        let (d1, d2) = (begin - *clock, end - begin);
        const TS: u8 = (packet::TIMESTAMP << 3 | VARINT) as u8;
        const SEQ: u8 = (packet::TRUSTED_PACKET_SEQUENCE_ID << 3 | VARINT) as u8;
        const TE: u8 = (packet::TRACK_EVENT << 3 | LEN) as u8;
        const TYPE: u8 = (event::TYPE << 3 | VARINT) as u8;
        const NAME: u8 = (event::NAME_IID << 3 | VARINT) as u8;
        const PACKET: u8 = (TRACE_PACKET << 3 | LEN) as u8;
        const B: u8 = event::TYPE_SLICE_BEGIN as u8;
        const E: u8 = event::TYPE_SLICE_END as u8;
        if d1 < 0x80 && d2 < 0x80 && seq < 0x80 && iid < 0x80 {
            let (d1, d2, q, iid) = (d1 as u8, d2 as u8, seq as u8, iid as u8);
            self.buf.extend_from_slice(&[
                PACKET, 10, TS, d1, SEQ, q, TE, 4, TYPE, B, NAME, iid, //
                PACKET, 8, TS, d2, SEQ, q, TE, 2, TYPE, E,
            ]);
            *clock = end;
            return;
        }
        if seq < 0x80 && iid < 0x80 && d1 < 0x4000 && d2 < 0x4000 {
            // Regions a few microseconds long or apart: a delta of two varint bytes, the two
            // packets still written whole as one array of fixed length (no general writer).
            let (q, iid) = (seq as u8, iid as u8);
            let (lo1, hi1) = ((d1 as u8) | 0x80, (d1 >> 7) as u8);
            let (lo2, hi2) = ((d2 as u8) | 0x80, (d2 >> 7) as u8);
            if d1 < 0x80 {
                self.buf.extend_from_slice(&[
                    PACKET, 10, TS, d1 as u8, SEQ, q, TE, 4, TYPE, B, NAME, iid, //
                    PACKET, 9, TS, lo2, hi2, SEQ, q, TE, 2, TYPE, E,
                ]);
            } else if d2 < 0x80 {
                self.buf.extend_from_slice(&[
                    PACKET, 11, TS, lo1, hi1, SEQ, q, TE, 4, TYPE, B, NAME, iid, //
                    PACKET, 8, TS, d2 as u8, SEQ, q, TE, 2, TYPE, E,
                ]);
            } else {
                self.buf.extend_from_slice(&[
                    PACKET, 11, TS, lo1, hi1, SEQ, q, TE, 4, TYPE, B, NAME, iid, //
                    PACKET, 9, TS, lo2, hi2, SEQ, q, TE, 2, TYPE, E,
                ]);
            }
            *clock = end;
            return;
        }
        self.slice(seq, clock, begin, Some(iid));
        self.slice(seq, clock, end, None);
    }

    /// [`Encoder::slice`] with varints of any length.
    #[inline(never)]
    fn slice_any(&mut self, seq: u64, clock: &mut u64, ts: u64, iid: Option<u64>) {
        let mut b = [0u8; 48];
        // b[0] = Trace.packet tag, b[1] = its length (below 128: at most 37 bytes follow).
        b[0] = (TRACE_PACKET << 3 | LEN) as u8;
        let mut n = 2;
        b[n] = (packet::TIMESTAMP << 3 | VARINT) as u8;
        n = put_varint_at(&mut b, n + 1, ts - *clock);
        b[n] = (packet::TRUSTED_PACKET_SEQUENCE_ID << 3 | VARINT) as u8;
        n = put_varint_at(&mut b, n + 1, seq);
        b[n] = (packet::TRACK_EVENT << 3 | LEN) as u8;
        let len_at = n + 1;
        n += 2;
        b[n] = (event::TYPE << 3 | VARINT) as u8;
        match iid {
            Some(iid) => {
                b[n + 1] = event::TYPE_SLICE_BEGIN as u8;
                b[n + 2] = (event::NAME_IID << 3 | VARINT) as u8;
                n = put_varint_at(&mut b, n + 3, iid);
            }
            None => {
                b[n + 1] = event::TYPE_SLICE_END as u8;
                n += 2;
            }
        }
        b[len_at] = (n - len_at - 1) as u8;
        b[1] = (n - 2) as u8;
        self.buf.extend_from_slice(&b[..n]);
        *clock = ts;
    }

    /// A clock snapshot of the builtin clocks on sequence `seq` (`CLOCK_BOOTTIME`, Perfetto's
    /// trace clock, with `CLOCK_MONOTONIC` and `CLOCK_REALTIME`), read now: what the service's
    /// first packet would say, so that a trace whose session started late (or never) still
    /// places `CLOCK_MONOTONIC` timestamps on the trace's timeline. It leads the sink's packets.
    pub(crate) fn clock_snapshot(&mut self, seq: u64) {
        let mono = metron_components::clock::monotonic_ns();
        let boot = metron_components::clock::boottime_ns();
        let real = metron_components::clock::realtime_ns();
        let p = self.open(TRACE_PACKET);
        self.uint(packet::TIMESTAMP, boot);
        self.uint(packet::TIMESTAMP_CLOCK_ID, CLOCK_BOOTTIME);
        self.uint(packet::TRUSTED_PACKET_SEQUENCE_ID, seq);
        let s = self.open(packet::CLOCK_SNAPSHOT);
        for (id, ts) in [
            (CLOCK_BOOTTIME, boot),
            (CLOCK_MONOTONIC, mono),
            (CLOCK_REALTIME, real),
        ] {
            let c = self.open(clock::CLOCKS);
            self.uint(clock::CLOCK_ID, id);
            self.uint(clock::TIMESTAMP, ts);
            self.close(c);
        }
        self.uint(clock::PRIMARY_TRACE_CLOCK, CLOCK_BOOTTIME);
        self.close(s);
        self.end_packet(p);
    }

    /// The first packet of a thread's sequence `seq` (track `track`) at `ts`: clears the
    /// sequence's incremental state, sets its defaults (the incremental clock, the track) and
    /// declares the incremental clock in a clock snapshot, equal to `CLOCK_MONOTONIC` at `ts`
    /// (the Perfetto SDK's own layout, `TrackEventInternal::ResetIncrementalState`). Sets
    /// `*clock` to `ts`.
    pub(crate) fn start_thread_sequence(&mut self, seq: u64, track: u64, clock: &mut u64, ts: u64) {
        let p = self.open(TRACE_PACKET);
        self.uint(packet::TIMESTAMP, ts);
        self.uint(packet::TIMESTAMP_CLOCK_ID, CLOCK_MONOTONIC);
        self.uint(packet::TRUSTED_PACKET_SEQUENCE_ID, seq);
        // SEQ_INCREMENTAL_STATE_CLEARED, and the two flags the service sets on a writer's first
        // packet.
        self.uint(packet::SEQUENCE_FLAGS, 1);
        self.uint(packet::PREVIOUS_PACKET_DROPPED, 1);
        self.uint(packet::FIRST_PACKET_ON_SEQUENCE, 1);
        let d = self.open(packet::TRACE_PACKET_DEFAULTS);
        self.uint(defaults::TIMESTAMP_CLOCK_ID, INCREMENTAL_CLOCK_ID);
        let t = self.open(defaults::TRACK_EVENT_DEFAULTS);
        self.uint(defaults::TRACK_UUID, track);
        self.close(t);
        self.close(d);
        let s = self.open(packet::CLOCK_SNAPSHOT);
        let c = self.open(clock::CLOCKS);
        self.uint(clock::CLOCK_ID, CLOCK_MONOTONIC);
        self.uint(clock::TIMESTAMP, ts);
        self.close(c);
        let c = self.open(clock::CLOCKS);
        self.uint(clock::CLOCK_ID, INCREMENTAL_CLOCK_ID);
        self.uint(clock::TIMESTAMP, ts);
        self.uint(clock::IS_INCREMENTAL, 1);
        self.close(c);
        self.close(s);
        self.end_packet(p);
        *clock = ts;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_is_the_same_bytes_as_its_two_slices_written_by_the_general_writer() {
        // Deltas of one, two and three varint bytes, sequences and names past one byte.
        let deltas = [0u64, 1, 127, 128, 5_000, 16_383, 16_384, 1 << 30];
        for &(seq, iid) in &[(9u64, 3u64), (9, 200), (300, 3)] {
            for &d1 in &deltas {
                for &d2 in &deltas {
                    let (mut pair, mut general) = (Encoder::default(), Encoder::default());
                    let (mut c1, mut c2) = (1_000u64, 1_000u64);
                    pair.slice_pair(seq, &mut c1, 1_000 + d1, 1_000 + d1 + d2, iid);
                    general.slice_any(seq, &mut c2, 1_000 + d1, Some(iid));
                    general.slice_any(seq, &mut c2, 1_000 + d1 + d2, None);
                    assert_eq!(pair.buf, general.buf, "seq {seq} iid {iid} d1 {d1} d2 {d2}");
                    assert_eq!(c1, c2);
                    let mut single = Encoder::default();
                    let mut c3 = 1_000u64;
                    single.slice(seq, &mut c3, 1_000 + d1, Some(iid));
                    single.slice(seq, &mut c3, 1_000 + d1 + d2, None);
                    assert_eq!(
                        single.buf, general.buf,
                        "seq {seq} iid {iid} d1 {d1} d2 {d2}"
                    );
                }
            }
        }
    }

    #[test]
    fn lengths_are_minimal_even_past_one_byte() {
        for len in [0usize, 1, 127, 128, 300, 16383, 16384, 70000] {
            let mut e = Encoder::default();
            e.buf.push(0xaa);
            let at = e.open(2);
            e.buf.extend(std::iter::repeat_n(7u8, len));
            e.close(at);
            e.uint(3, 1);
            // Decode: prefix, tag, length, body, trailing field.
            let b = &e.buf;
            assert_eq!(b[0], 0xaa);
            assert_eq!(b[1], 2 << 3 | 2);
            let mut pos = 2;
            let v = metron_wire::read_varint(b, &mut pos).unwrap();
            assert_eq!(v, len as u64);
            assert!(b[pos..pos + len].iter().all(|&x| x == 7));
            assert_eq!(&b[pos + len..], &[3 << 3, 1]);
            let minimal = if len < 128 {
                1
            } else if len < 16384 {
                2
            } else {
                3
            };
            assert_eq!(pos - 2, minimal, "len {len}");
        }
    }

    #[test]
    fn values_encode_as_protobuf_does() {
        let mut e = Encoder::default();
        e.int(4, -1);
        assert_eq!(
            e.buf,
            [0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
        e.buf.clear();
        e.double(5, 1.5);
        assert_eq!(e.buf, [0x29, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f]);
        e.buf.clear();
        e.uint(87, 1);
        assert_eq!(e.buf, [0xb8, 0x05, 0x01]);
    }
}
