//! Rewrites one rank's `trace.pftrace` into the merged trace, packet by packet (one packet in
//! memory at a time): timestamps move from the rank's `CLOCK_MONOTONIC` to `CLOCK_REALTIME`,
//! sequence ids, track uuids and flow ids become unique across ranks, the process track is
//! named `rank N (host, pid)`, and the service's per-run packets (clock snapshots, trace config,
//! service events) are left out: the merged trace has one clock snapshot of its own.

use metron_wire::{
    fields, packed_varints, put_field, put_varint, Frame, PacketReader, Value, WireError,
    TRACE_PACKET,
};
use std::collections::HashMap;
use std::io::{self, BufRead, Write};

/// `BuiltinClock` ids.
pub(crate) const CLOCK_REALTIME: u64 = 1;
const CLOCK_MONOTONIC: u64 = 3;
const CLOCK_BOOTTIME: u64 = 6;
/// The sequence-scoped incremental clock of Metron's thread sequences: declared by a clock
/// snapshot on the sequence equal to `CLOCK_MONOTONIC`, then each packet's timestamp is the
/// nanoseconds since the sequence's previous packet.
const CLOCK_INCREMENTAL: u64 = 64;

/// Why a packet cannot be rewritten (it is counted as unreadable and left out).
#[derive(Debug)]
enum Unreadable {
    /// It does not parse.
    Wire(WireError),
    /// It holds what the merge does not rewrite.
    Unsupported(&'static str),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreadable::Wire(e) => e.fmt(f),
            Unreadable::Unsupported(what) => f.write_str(what),
        }
    }
}

impl From<WireError> for Unreadable {
    fn from(e: WireError) -> Unreadable {
        Unreadable::Wire(e)
    }
}

/// The error for a top-level field with tag `tag` that is not a packet.
fn not_a_trace(tag: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("not a Perfetto trace: top-level field tag {tag} is not a packet"),
    )
}

/// Appends a length-delimited field whose bytes `body` writes (into a scratch buffer taken
/// from and given back to `scratch`, so nested rewrites allocate once).
fn put_nested(
    out: &mut Vec<u8>,
    field: u32,
    scratch: &mut Vec<Vec<u8>>,
    body: impl FnOnce(&mut Vec<u8>, &mut Vec<Vec<u8>>) -> Result<(), Unreadable>,
) -> Result<(), Unreadable> {
    let mut inner = scratch.pop().unwrap_or_default();
    inner.clear();
    let result = body(&mut inner, scratch);
    if result.is_ok() {
        put_field(out, field, Value::Len(&inner));
    }
    scratch.push(inner);
    result
}

mod packet {
    pub(super) const CLOCK_SNAPSHOT: u32 = 6;
    pub(super) const TIMESTAMP: u32 = 8;
    pub(super) const SEQUENCE_ID: u32 = 10;
    pub(super) const TRACK_EVENT: u32 = 11;
    pub(super) const SEQUENCE_FLAGS: u32 = 13;
    pub(super) const TRACE_CONFIG: u32 = 33;
    pub(super) const SYNC_MARKER: u32 = 36;
    pub(super) const SYSTEM_INFO: u32 = 45;
    pub(super) const COMPRESSED: u32 = 50;
    pub(super) const CLOCK_ID: u32 = 58;
    pub(super) const DEFAULTS: u32 = 59;
    pub(super) const TRACK_DESCRIPTOR: u32 = 60;
    pub(super) const PERF_SAMPLE: u32 = 66;
    pub(super) const SERVICE_EVENT: u32 = 69;
    pub(super) const TRACE_UUID: u32 = 89;
}

/// `TracePacketDefaults`.
mod defaults {
    pub(super) const CLOCK_ID: u32 = 58;
    pub(super) const TRACK_EVENT_DEFAULTS: u32 = 11;
}

/// `TrackEvent` and `TrackEventDefaults` fields holding track uuids or flow ids.
mod event {
    pub(super) const TRACK_UUID: u32 = 11;
    pub(super) const EXTRA_COUNTER_UUIDS: u32 = 31;
    pub(super) const EXTRA_DOUBLE_COUNTER_UUIDS: u32 = 45;
    pub(super) const FLOW_IDS_OLD: u32 = 36;
    pub(super) const TERMINATING_FLOW_IDS_OLD: u32 = 42;
    pub(super) const FLOW_IDS: u32 = 47;
    pub(super) const TERMINATING_FLOW_IDS: u32 = 48;
    pub(super) const DEBUG_ANNOTATIONS: u32 = 4;
}

/// `InternedData.debug_annotation_names` and `DebugAnnotation`.
mod interned {
    pub(super) const INTERNED_DATA: u32 = 12;
    pub(super) const DEBUG_ANNOTATION_NAMES: u32 = 3;
    pub(super) const IID: u32 = 1;
    pub(super) const NAME: u32 = 2;
    pub(super) const ANN_NAME_IID: u32 = 1;
    pub(super) const ANN_UINT: u32 = 3;
    pub(super) const ANN_INT: u32 = 4;
    pub(super) const ANN_NAME: u32 = 10;
    pub(super) const EVENT_NAMES: u32 = 2;
}

/// `TrackEvent.type` and `name_iid`.
mod kind {
    pub(super) const TYPE: u32 = 9;
    pub(super) const NAME_IID: u32 = 10;
    pub(super) const SLICE_BEGIN: u64 = 1;
    pub(super) const SLICE_END: u64 = 2;
}

/// The annotations of Metron's MPI interposition (`user-api/src/mpi.rs`) that pair a send
/// with its receive.
#[derive(Clone, Copy, PartialEq, Debug)]
enum MpiKey {
    Bytes,
    Dest,
    Source,
    Tag,
    Msg,
}

fn mpi_key(name: &[u8]) -> Option<MpiKey> {
    match name {
        b"mpi.bytes" => Some(MpiKey::Bytes),
        b"mpi.dest" => Some(MpiKey::Dest),
        b"mpi.source" => Some(MpiKey::Source),
        b"mpi.tag" => Some(MpiKey::Tag),
        b"mpi.msg" => Some(MpiKey::Msg),
        _ => None,
    }
}

/// The flow id of message `msg` from world rank `source` to `dest` with `tag`: both ends
/// compute it from what they recorded, so the merge pairs them while streaming.
pub(crate) fn message_flow(source: i64, dest: i64, tag: i64, msg: i64) -> u64 {
    let mut h = mix(0x6d70_695f_6d73_6700 ^ source as u64);
    h = mix(h ^ dest as u64);
    h = mix(h ^ tag as u64);
    mix(h ^ msg as u64)
}

/// `TrackDescriptor`, `ProcessDescriptor`, `ThreadDescriptor`.
mod track {
    pub(super) const UUID: u32 = 1;
    pub(super) const NAME: u32 = 2;
    pub(super) const PROCESS: u32 = 3;
    pub(super) const THREAD: u32 = 4;
    pub(super) const PARENT_UUID: u32 = 5;
    pub(super) const PID: u32 = 1;
    pub(super) const TID: u32 = 2;
    pub(super) const PROCESS_NAME: u32 = 6;
}

/// `PerfSample`.
mod sample {
    pub(super) const PID: u32 = 2;
    pub(super) const TID: u32 = 3;
}

/// `ClockSnapshot` and its `Clock`.
mod snapshot {
    pub(super) const CLOCKS: u32 = 1;
    pub(super) const PRIMARY_TRACE_CLOCK: u32 = 2;
    pub(super) const CLOCK_ID: u32 = 1;
    pub(super) const TIMESTAMP: u32 = 2;
}

/// SplitMix64's finalizer: a bijection of u64, so ids stay distinct within a rank.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// How one rank's packets are rewritten.
pub(crate) struct RankMap {
    /// Rank number (names, id salts).
    pub(crate) rank: u32,
    /// realtime − monotonic of this rank's host, ns.
    pub(crate) offset_ns: i64,
    /// The process track's new name.
    pub(crate) process_name: String,
    /// Added to pids and tids (0 unless another rank has the same pid).
    pub(crate) pid_base: u32,
    /// The rank in `MPI_COMM_WORLD` (the ends of send→receive flows).
    pub(crate) world_rank: i64,
    /// The run recorded MPI calls (interposition): their bytes are summed per call.
    pub(crate) mpi: bool,
    /// Keep the rank's own clocks: timestamps, clock ids and the service's packets (clock
    /// snapshots included) stay as they are; only ids and names change (the archive's copy,
    /// which Perfetto aligns by the rank's own snapshots).
    pub(crate) keep_clocks: bool,
}

/// What one rank's rewrite did.
#[derive(Default, Debug, Clone)]
pub(crate) struct RankCounts {
    pub(crate) packets_in: u64,
    pub(crate) packets_out: u64,
    /// Service packets of the rank's own session left out (clock snapshots, config, ...).
    pub(crate) service_packets_left_out: u64,
    /// Packets whose timestamp could not be put on the realtime clock (kept without it).
    pub(crate) timestamps_dropped: u64,
    /// Compressed or unparsable packets left out.
    pub(crate) packets_unreadable: u64,
    /// Bytes at the end of the file that do not form a whole packet (a killed run).
    pub(crate) truncated_tail_bytes: u64,
    /// MPI sends and receives given a flow id.
    pub(crate) flow_sends: u64,
    pub(crate) flow_receives: u64,
    /// Per MPI call name: calls and the sum of their `mpi.bytes`.
    pub(crate) mpi_calls: std::collections::BTreeMap<String, (u64, u64)>,
    /// Earliest and latest realtime timestamps written, ns.
    pub(crate) first_ts: Option<u64>,
    pub(crate) last_ts: Option<u64>,
}

impl RankCounts {
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "packets_in": self.packets_in,
            "packets_out": self.packets_out,
            "service_packets_left_out": self.service_packets_left_out,
            "timestamps_dropped": self.timestamps_dropped,
            "packets_unreadable": self.packets_unreadable,
            "truncated_tail_bytes": self.truncated_tail_bytes,
            "mpi_flow_sends": self.flow_sends,
            "mpi_flow_receives": self.flow_receives,
            "mpi_calls": self.mpi_calls.iter().map(|(name, (calls, bytes))| {
                serde_json::json!({"name": name, "calls": calls, "bytes": bytes})
            }).collect::<Vec<_>>(),
            "first_realtime_ns": self.first_ts,
            "last_realtime_ns": self.last_ts,
        })
    }
}

/// What [`Rewriter::mpi_event`] found in an event.
#[derive(Default)]
struct MpiEvent {
    kind: Option<u64>,
    name_iid: Option<u64>,
    track: u64,
    bytes: Option<i64>,
    flow: Option<(u32, u64)>,
}

/// Per-sequence state the rewrite needs.
#[derive(Default, Clone, Copy)]
struct SeqState {
    new_id: u32,
    clock: Option<u64>,
    /// The latest `CLOCK_MONOTONIC` time of the sequence's incremental clock, if declared.
    incremental: Option<u64>,
}

/// Rewrites packets of one rank.
pub(crate) struct Rewriter<'m> {
    map: &'m RankMap,
    salt_uuid: u64,
    salt_flow: u64,
    sequences: HashMap<u32, SeqState>,
    /// Per sequence: interned debug annotation names that are MPI keys.
    mpi_names: HashMap<u32, HashMap<u64, MpiKey>>,
    /// Per sequence: interned event names of MPI calls (index into `call_names`).
    call_iids: HashMap<u32, HashMap<u64, usize>>,
    call_names: Vec<String>,
    /// Per (sequence, track): the open slices, MPI calls by index (only for MPI runs).
    open: HashMap<(u32, u64), Vec<Option<usize>>>,
    /// BOOTTIME − MONOTONIC from the rank's latest clock snapshot.
    boot_minus_mono: Option<i64>,
    scratch: Vec<Vec<u8>>,
    pub(crate) counts: RankCounts,
}

/// A rank's packet rewritten: what to do with it.
enum Outcome {
    Write,
    Skip,
}

impl<'m> Rewriter<'m> {
    pub(crate) fn new(map: &'m RankMap) -> Rewriter<'m> {
        let rank = u64::from(map.rank);
        Rewriter {
            map,
            salt_uuid: mix(rank.wrapping_mul(2).wrapping_add(0x5eed)),
            salt_flow: mix(rank.wrapping_mul(2).wrapping_add(0xf10e)),
            sequences: HashMap::new(),
            mpi_names: HashMap::new(),
            call_iids: HashMap::new(),
            call_names: Vec::new(),
            open: HashMap::new(),
            boot_minus_mono: None,
            scratch: Vec::new(),
            counts: RankCounts::default(),
        }
    }

    /// The merged trace's uuid of this rank's track `uuid` (0, "no track", stays 0): below
    /// 2^40 (all of Metron's own) the rank + 1 goes into bits 40-63, which keeps the varint
    /// short; larger uuids are hashed with the rank.
    pub(crate) fn uuid(&self, uuid: u64) -> u64 {
        if uuid == 0 {
            0
        } else if uuid < 1 << 40 && self.map.rank < (1 << 23) {
            uuid | (u64::from(self.map.rank) + 1) << 40
        } else {
            mix(uuid ^ self.salt_uuid)
        }
    }

    fn flow(&self, id: u64) -> u64 {
        mix(id ^ self.salt_flow)
    }

    fn pid(&self, pid: u64) -> u64 {
        if self.map.pid_base == 0 {
            pid
        } else {
            pid + u64::from(self.map.pid_base)
        }
    }

    /// Streams every packet of `input` into `out`, rewritten; `next_seq` hands out sequence
    /// ids unique in the merged trace.
    pub(crate) fn copy(
        &mut self,
        input: &mut impl BufRead,
        out: &mut impl Write,
        next_seq: &mut u32,
    ) -> io::Result<()> {
        let mut input = PacketReader::new(input);
        let mut packet = Vec::new();
        let mut rewritten = Vec::new();
        let mut framed = Vec::new();
        loop {
            match input.next_frame(&mut packet)? {
                Frame::Packet => {}
                Frame::End => break,
                Frame::Truncated { bytes } => {
                    self.counts.truncated_tail_bytes = bytes;
                    break;
                }
                Frame::Other { field } => return Err(not_a_trace(field << 3 | 2)),
                Frame::NotLengthDelimited { tag } => return Err(not_a_trace(tag)),
            }
            self.counts.packets_in += 1;
            rewritten.clear();
            match self.packet(&packet, &mut rewritten, next_seq) {
                Ok(Outcome::Write) => {
                    framed.clear();
                    put_field(&mut framed, TRACE_PACKET, Value::Len(&rewritten));
                    out.write_all(&framed)?;
                    self.counts.packets_out += 1;
                }
                Ok(Outcome::Skip) => {}
                Err(_) => self.counts.packets_unreadable += 1,
            }
        }
        Ok(())
    }

    fn packet(
        &mut self,
        raw: &[u8],
        out: &mut Vec<u8>,
        next_seq: &mut u32,
    ) -> Result<Outcome, Unreadable> {
        // First pass: the sequence, the clock and what kind of packet this is.
        let mut seq_id = 0u32;
        let mut clock_id = None;
        let mut default_clock = None;
        let mut cleared = false;
        let mut interned_data = None;
        // A clock snapshot on the sequence that declares its incremental clock: read, left
        // out of the packet, which keeps the rest (the sequence's defaults).
        let mut incremental_base = None;
        for f in fields(raw) {
            match f? {
                (interned::INTERNED_DATA, Value::Len(d)) => interned_data = Some(d),
                (packet::SEQUENCE_ID, Value::Varint(v)) => seq_id = v as u32,
                (packet::CLOCK_ID, Value::Varint(v)) => clock_id = Some(v),
                (packet::SEQUENCE_FLAGS, Value::Varint(v)) => cleared = v & 1 != 0,
                (packet::DEFAULTS, Value::Len(d)) => {
                    for g in fields(d) {
                        if let (defaults::CLOCK_ID, Value::Varint(v)) = g? {
                            default_clock = Some(v);
                        }
                    }
                }
                (packet::CLOCK_SNAPSHOT, Value::Len(s)) if !self.map.keep_clocks => {
                    incremental_base = incremental_clock(s)?;
                    if incremental_base.is_none() {
                        self.read_snapshot(s)?;
                        self.counts.service_packets_left_out += 1;
                        return Ok(Outcome::Skip);
                    }
                }
                (
                    packet::TRACE_CONFIG
                    | packet::SYNC_MARKER
                    | packet::SYSTEM_INFO
                    | packet::SERVICE_EVENT
                    | packet::TRACE_UUID,
                    _,
                ) if !self.map.keep_clocks => {
                    self.counts.service_packets_left_out += 1;
                    return Ok(Outcome::Skip);
                }
                (packet::COMPRESSED, _) => {
                    return Err(Unreadable::Unsupported("compressed packets"))
                }
                _ => {}
            }
        }
        let state = self.sequences.entry(seq_id).or_insert_with(|| {
            *next_seq += 1;
            SeqState {
                new_id: *next_seq,
                clock: None,
                incremental: None,
            }
        });
        if cleared {
            state.clock = None;
            state.incremental = None;
            self.mpi_names.remove(&seq_id);
            self.call_iids.remove(&seq_id);
        }
        if default_clock.is_some() {
            state.clock = default_clock;
        }
        if incremental_base.is_some() {
            state.incremental = incremental_base;
        }
        let mut clock = clock_id.or(state.clock).unwrap_or(CLOCK_BOOTTIME);
        // The incremental clock's deltas become absolute `CLOCK_MONOTONIC` times here.
        let mut absolute = None;
        if clock == CLOCK_INCREMENTAL && !self.map.keep_clocks {
            if let Some(last) = state.incremental.as_mut() {
                for f in fields(raw) {
                    if let (packet::TIMESTAMP, Value::Varint(ts)) = f? {
                        *last += ts;
                        absolute = Some(*last);
                    }
                }
                clock = CLOCK_MONOTONIC;
            }
        }
        let state = *state;
        if let Some(d) = interned_data {
            self.read_interned(seq_id, d)?;
        }

        // Second pass: copy, changing what must change.
        for f in fields(raw) {
            let (field, value) = f?;
            match (field, value) {
                (packet::TIMESTAMP | packet::CLOCK_ID, _) if self.map.keep_clocks => {
                    put_field(out, field, value)
                }
                (packet::CLOCK_SNAPSHOT, _) if incremental_base.is_some() => {}
                (packet::TIMESTAMP, Value::Varint(ts)) => match self
                    .to_realtime(clock, absolute.unwrap_or(ts))
                {
                    Some(t) => {
                        put_field(out, field, Value::Varint(t));
                        self.counts.first_ts = Some(self.counts.first_ts.map_or(t, |f| f.min(t)));
                        self.counts.last_ts = Some(self.counts.last_ts.map_or(t, |l| l.max(t)));
                        if clock_id.is_none() && state.clock.is_none() {
                            // The packet used the trace's default clock: say which it is now.
                            put_field(out, packet::CLOCK_ID, Value::Varint(CLOCK_REALTIME));
                        }
                    }
                    None => self.counts.timestamps_dropped += 1,
                },
                (packet::CLOCK_ID, Value::Varint(_)) => {
                    put_field(out, field, Value::Varint(CLOCK_REALTIME))
                }
                (packet::SEQUENCE_ID, Value::Varint(_)) => {
                    put_field(out, field, Value::Varint(u64::from(state.new_id)))
                }
                (packet::DEFAULTS, Value::Len(d)) => {
                    let mut scratch = std::mem::take(&mut self.scratch);
                    let r = put_nested(out, field, &mut scratch, |o, s| self.defaults(d, o, s));
                    self.scratch = scratch;
                    r?;
                }
                (packet::TRACK_EVENT, Value::Len(e)) => {
                    let mut scratch = std::mem::take(&mut self.scratch);
                    let mut mpi = MpiEvent::default();
                    let r = put_nested(out, field, &mut scratch, |o, _| {
                        self.track_event(e, o)?;
                        mpi = self.mpi_event(seq_id, e)?;
                        if let Some((n, id)) = mpi.flow {
                            put_field(o, n, Value::Fixed64(id));
                        }
                        Ok(())
                    });
                    self.scratch = scratch;
                    r?;
                    if self.map.mpi {
                        self.count_call(seq_id, &mpi);
                    }
                    let flow = mpi.flow;
                    match flow {
                        Some((event::FLOW_IDS, _)) => self.counts.flow_sends += 1,
                        Some(_) => self.counts.flow_receives += 1,
                        None => {}
                    }
                }
                (packet::TRACK_DESCRIPTOR, Value::Len(t)) => {
                    let mut scratch = std::mem::take(&mut self.scratch);
                    let r = put_nested(out, field, &mut scratch, |o, s| self.descriptor(t, o, s));
                    self.scratch = scratch;
                    r?;
                }
                (packet::PERF_SAMPLE, Value::Len(p)) => {
                    let mut scratch = std::mem::take(&mut self.scratch);
                    let r = put_nested(out, field, &mut scratch, |o, _| {
                        for g in fields(p) {
                            match g? {
                                (n @ (sample::PID | sample::TID), Value::Varint(v)) => {
                                    put_field(o, n, Value::Varint(self.pid(v)))
                                }
                                (n, v) => put_field(o, n, v),
                            }
                        }
                        Ok(())
                    });
                    self.scratch = scratch;
                    r?;
                }
                _ => put_field(out, field, value),
            }
        }
        Ok(Outcome::Write)
    }

    /// Sums an MPI call's bytes when its slice ends.
    fn count_call(&mut self, seq_id: u32, e: &MpiEvent) {
        let stack = self.open.entry((seq_id, e.track)).or_default();
        match e.kind {
            Some(kind::SLICE_BEGIN) => {
                let call = e
                    .name_iid
                    .and_then(|iid| self.call_iids.get(&seq_id)?.get(&iid).copied());
                stack.push(call);
            }
            Some(kind::SLICE_END) => {
                if let Some(Some(call)) = stack.pop() {
                    let entry = self
                        .counts
                        .mpi_calls
                        .entry(self.call_names[call].clone())
                        .or_default();
                    entry.0 += 1;
                    entry.1 += e.bytes.unwrap_or(0).max(0) as u64;
                }
            }
            _ => {}
        }
    }

    /// Remembers the interned annotation names that are MPI keys and the event names that
    /// are MPI calls.
    fn read_interned(&mut self, seq_id: u32, d: &[u8]) -> Result<(), Unreadable> {
        for f in fields(d) {
            let (field, value) = f?;
            if let (interned::EVENT_NAMES, Value::Len(n)) = (field, value) {
                let (mut iid, mut name) = (None, None);
                for g in fields(n) {
                    match g? {
                        (interned::IID, Value::Varint(v)) => iid = Some(v),
                        (interned::NAME, Value::Len(b)) if b.starts_with(b"MPI_") => {
                            name = Some(String::from_utf8_lossy(b).into_owned())
                        }
                        _ => {}
                    }
                }
                if let (Some(iid), Some(name)) = (iid, name) {
                    let index = match self.call_names.iter().position(|n| *n == name) {
                        Some(i) => i,
                        None => {
                            self.call_names.push(name);
                            self.call_names.len() - 1
                        }
                    };
                    self.call_iids.entry(seq_id).or_default().insert(iid, index);
                }
            }
            if let (interned::DEBUG_ANNOTATION_NAMES, Value::Len(n)) = (field, value) {
                let (mut iid, mut key) = (None, None);
                for g in fields(n) {
                    match g? {
                        (interned::IID, Value::Varint(v)) => iid = Some(v),
                        (interned::NAME, Value::Len(b)) => key = mpi_key(b),
                        _ => {}
                    }
                }
                if let (Some(iid), Some(key)) = (iid, key) {
                    self.mpi_names.entry(seq_id).or_default().insert(iid, key);
                }
            }
        }
        Ok(())
    }

    /// What an event says about MPI: its type, name, track, `mpi.bytes`, and the flow field
    /// and id when it carries an MPI send's or receive's annotations (`flow_ids` on a send,
    /// `terminating_flow_ids` on a receive). Only MPI runs' events are read.
    fn mpi_event(&self, seq_id: u32, e: &[u8]) -> Result<MpiEvent, Unreadable> {
        let mut out = MpiEvent::default();
        if !self.map.mpi {
            return Ok(out);
        }
        let empty = HashMap::new();
        let names = self.mpi_names.get(&seq_id).unwrap_or(&empty);
        let (mut dest, mut source, mut tag, mut msg) = (None, None, None, None);
        for f in fields(e) {
            let (n, v) = f?;
            match (n, v) {
                (kind::TYPE, Value::Varint(t)) => out.kind = Some(t),
                (kind::NAME_IID, Value::Varint(i)) => out.name_iid = Some(i),
                (event::TRACK_UUID, Value::Varint(u)) => out.track = u,
                _ => {}
            }
            let (event::DEBUG_ANNOTATIONS, Value::Len(a)) = (n, v) else {
                continue;
            };
            let (mut key, mut value) = (None, None);
            for g in fields(a) {
                match g? {
                    (interned::ANN_NAME_IID, Value::Varint(iid)) => key = names.get(&iid).copied(),
                    (interned::ANN_NAME, Value::Len(b)) => key = mpi_key(b),
                    (interned::ANN_INT | interned::ANN_UINT, Value::Varint(v)) => {
                        value = Some(v as i64)
                    }
                    _ => {}
                }
            }
            match (key, value) {
                (Some(MpiKey::Bytes), Some(v)) => out.bytes = Some(v),
                (Some(MpiKey::Dest), Some(v)) => dest = Some(v),
                (Some(MpiKey::Source), Some(v)) => source = Some(v),
                (Some(MpiKey::Tag), Some(v)) => tag = Some(v),
                (Some(MpiKey::Msg), Some(v)) => msg = Some(v),
                _ => {}
            }
        }
        let me = self.map.world_rank;
        out.flow = match (dest, source, tag, msg) {
            (Some(d), None, Some(t), Some(m)) => Some((event::FLOW_IDS, message_flow(me, d, t, m))),
            (None, Some(s), Some(t), Some(m)) => {
                Some((event::TERMINATING_FLOW_IDS, message_flow(s, me, t, m)))
            }
            _ => None,
        };
        Ok(out)
    }

    /// A timestamp of clock `clock` on the merged realtime clock, if it can be placed.
    fn to_realtime(&self, clock: u64, ts: u64) -> Option<u64> {
        let mono = match clock {
            CLOCK_REALTIME => return Some(ts),
            CLOCK_MONOTONIC => i128::from(ts),
            CLOCK_BOOTTIME => i128::from(ts) - i128::from(self.boot_minus_mono?),
            _ => return None,
        };
        u64::try_from(mono + i128::from(self.map.offset_ns)).ok()
    }

    fn read_snapshot(&mut self, s: &[u8]) -> Result<(), Unreadable> {
        let (mut boot, mut mono) = (None, None);
        for f in fields(s) {
            if let (snapshot::CLOCKS, Value::Len(c)) = f? {
                let (mut id, mut ts) = (None, None);
                for g in fields(c) {
                    match g? {
                        (snapshot::CLOCK_ID, Value::Varint(v)) => id = Some(v),
                        (snapshot::TIMESTAMP, Value::Varint(v)) => ts = Some(v),
                        _ => {}
                    }
                }
                match (id, ts) {
                    (Some(CLOCK_BOOTTIME), Some(t)) => boot = Some(t),
                    (Some(CLOCK_MONOTONIC), Some(t)) => mono = Some(t),
                    _ => {}
                }
            }
        }
        if let (Some(b), Some(m)) = (boot, mono) {
            self.boot_minus_mono = Some((i128::from(b) - i128::from(m)) as i64);
        }
        Ok(())
    }

    fn defaults(
        &self,
        d: &[u8],
        out: &mut Vec<u8>,
        scratch: &mut Vec<Vec<u8>>,
    ) -> Result<(), Unreadable> {
        for f in fields(d) {
            match f? {
                (defaults::CLOCK_ID, Value::Varint(_)) if !self.map.keep_clocks => {
                    put_field(out, defaults::CLOCK_ID, Value::Varint(CLOCK_REALTIME))
                }
                (defaults::TRACK_EVENT_DEFAULTS, Value::Len(e)) => {
                    put_nested(out, defaults::TRACK_EVENT_DEFAULTS, scratch, |o, _| {
                        self.track_event(e, o)
                    })?
                }
                (n, v) => put_field(out, n, v),
            }
        }
        Ok(())
    }

    /// A `TrackEvent` (or `TrackEventDefaults`, whose uuid fields have the same numbers).
    fn track_event(&self, e: &[u8], out: &mut Vec<u8>) -> Result<(), Unreadable> {
        for f in fields(e) {
            let (n, v) = f?;
            match (n, v) {
                (
                    event::TRACK_UUID
                    | event::EXTRA_COUNTER_UUIDS
                    | event::EXTRA_DOUBLE_COUNTER_UUIDS,
                    Value::Varint(u),
                ) => put_field(out, n, Value::Varint(self.uuid(u))),
                (event::EXTRA_COUNTER_UUIDS | event::EXTRA_DOUBLE_COUNTER_UUIDS, Value::Len(p)) => {
                    let mut packed = Vec::new();
                    for u in packed_varints(p) {
                        put_varint(&mut packed, self.uuid(u?));
                    }
                    put_field(out, n, Value::Len(&packed));
                }
                (event::FLOW_IDS_OLD | event::TERMINATING_FLOW_IDS_OLD, Value::Varint(id)) => {
                    put_field(out, n, Value::Varint(self.flow(id)))
                }
                (event::FLOW_IDS | event::TERMINATING_FLOW_IDS, Value::Fixed64(id)) => {
                    put_field(out, n, Value::Fixed64(self.flow(id)))
                }
                (event::FLOW_IDS | event::TERMINATING_FLOW_IDS, Value::Len(p)) => {
                    let mut packed = Vec::with_capacity(p.len());
                    for chunk in p.chunks(8) {
                        let id = u64::from_le_bytes(chunk.try_into().map_err(|_| {
                            Unreadable::Unsupported("a packed fixed64 list of odd length")
                        })?);
                        packed.extend_from_slice(&self.flow(id).to_le_bytes());
                    }
                    put_field(out, n, Value::Len(&packed));
                }
                _ => put_field(out, n, v),
            }
        }
        Ok(())
    }

    fn descriptor(
        &self,
        t: &[u8],
        out: &mut Vec<u8>,
        scratch: &mut Vec<Vec<u8>>,
    ) -> Result<(), Unreadable> {
        let is_process = fields(t).any(|f| matches!(f, Ok((track::PROCESS, _))));
        for f in fields(t) {
            match f? {
                (n @ (track::UUID | track::PARENT_UUID), Value::Varint(u)) => {
                    put_field(out, n, Value::Varint(self.uuid(u)))
                }
                (track::NAME, Value::Len(_)) if is_process => put_field(
                    out,
                    track::NAME,
                    Value::Len(self.map.process_name.as_bytes()),
                ),
                (track::PROCESS, Value::Len(p)) => {
                    put_nested(out, track::PROCESS, scratch, |o, _| {
                        for g in fields(p) {
                            match g? {
                                (track::PID, Value::Varint(v)) => {
                                    put_field(o, track::PID, Value::Varint(self.pid(v)))
                                }
                                (track::PROCESS_NAME, _) => {}
                                (n, v) => put_field(o, n, v),
                            }
                        }
                        put_field(
                            o,
                            track::PROCESS_NAME,
                            Value::Len(self.map.process_name.as_bytes()),
                        );
                        Ok(())
                    })?
                }
                (track::THREAD, Value::Len(p)) => {
                    put_nested(out, track::THREAD, scratch, |o, _| {
                        for g in fields(p) {
                            match g? {
                                (n @ (track::PID | track::TID), Value::Varint(v)) => {
                                    put_field(o, n, Value::Varint(self.pid(v)))
                                }
                                (n, v) => put_field(o, n, v),
                            }
                        }
                        Ok(())
                    })?
                }
                (n, v) => put_field(out, n, v),
            }
        }
        Ok(())
    }
}

/// The starting value of the sequence-scoped incremental clock a clock snapshot declares
/// (`CLOCK_INCREMENTAL` with `is_incremental`), if it declares one.
fn incremental_clock(s: &[u8]) -> Result<Option<u64>, Unreadable> {
    let mut found = None;
    for f in fields(s) {
        if let (snapshot::CLOCKS, Value::Len(c)) = f? {
            let (mut id, mut ts, mut incremental) = (None, None, false);
            for g in fields(c) {
                match g? {
                    (snapshot::CLOCK_ID, Value::Varint(v)) => id = Some(v),
                    (snapshot::TIMESTAMP, Value::Varint(v)) => ts = Some(v),
                    (3, Value::Varint(v)) => incremental = v != 0,
                    _ => {}
                }
            }
            if let (Some(CLOCK_INCREMENTAL), Some(t), true) = (id, ts, incremental) {
                found = Some(t);
            }
        }
    }
    Ok(found)
}

/// The merged trace's first packet: a clock snapshot that makes `CLOCK_REALTIME` its trace
/// clock (`primary_trace_clock`), on a sequence of its own.
pub(crate) fn realtime_clock_packet(realtime_ns: u64, seq_id: u32) -> Vec<u8> {
    let mut clock = Vec::new();
    put_field(
        &mut clock,
        snapshot::CLOCK_ID,
        Value::Varint(CLOCK_REALTIME),
    );
    put_field(&mut clock, snapshot::TIMESTAMP, Value::Varint(realtime_ns));
    // A second, sequence-scoped clock (ids 64-127 belong to this packet's sequence and are
    // used nowhere else), so the snapshot relates two clocks as Trace Processor expects.
    let mut own = Vec::new();
    put_field(&mut own, snapshot::CLOCK_ID, Value::Varint(64));
    put_field(&mut own, snapshot::TIMESTAMP, Value::Varint(realtime_ns));
    let mut snap = Vec::new();
    put_field(&mut snap, snapshot::CLOCKS, Value::Len(&clock));
    put_field(&mut snap, snapshot::CLOCKS, Value::Len(&own));
    put_field(
        &mut snap,
        snapshot::PRIMARY_TRACE_CLOCK,
        Value::Varint(CLOCK_REALTIME),
    );
    let mut pkt = Vec::new();
    put_field(&mut pkt, packet::TIMESTAMP, Value::Varint(realtime_ns));
    put_field(&mut pkt, packet::CLOCK_ID, Value::Varint(CLOCK_REALTIME));
    put_field(
        &mut pkt,
        packet::SEQUENCE_ID,
        Value::Varint(u64::from(seq_id)),
    );
    put_field(&mut pkt, packet::CLOCK_SNAPSHOT, Value::Len(&snap));
    let mut framed = Vec::new();
    put_field(&mut framed, TRACE_PACKET, Value::Len(&pkt));
    framed
}

#[cfg(test)]
#[path = "trace_tests.rs"]
mod tests;
