//! A reader of Metron's `trace.pftrace`, at the protocol-buffer wire level (no schema, no
//! generated code): the track descriptors, the slices of every track (begin/end pairs, with
//! their names and debug annotations), the instants, and the interned call stacks of the
//! `metron: backtrace` instants. It reads what Metron's trace sink writes
//! (`sinks/src/sinks/perfetto*.rs`, field numbers of `perfetto_trace.proto`); the service's
//! packets (clock snapshots, trace config, stats) are skipped.

pub use crate::args::{Arg, Args};
use metron_wire::{
    packed_varints, Frame as WireFrame, PacketReader, StreamError, Value, WireError,
};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::io::{BufReader, Read};
use std::sync::Arc;

/// A trace that does not decode: what is wrong.
#[derive(Debug)]
pub struct TraceError(pub String);

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<WireError> for TraceError {
    fn from(e: WireError) -> TraceError {
        TraceError(e.to_string())
    }
}

impl From<StreamError> for TraceError {
    fn from(e: StreamError) -> TraceError {
        TraceError(e.to_string())
    }
}

/// The fields of one message, in order.
fn fields(buf: &[u8]) -> Result<Vec<(u32, Value<'_>)>, TraceError> {
    Ok(metron_wire::fields(buf).collect::<Result<_, _>>()?)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

impl Arg {
    /// As an unsigned integer (a non-negative `I` too).
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Arg::U(v) => Some(v),
            Arg::I(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }
}

/// A track of the trace.
#[derive(Clone, Debug, Default)]
pub struct Track {
    /// `TrackDescriptor.name`, or the thread's name for a thread track.
    pub name: String,
    /// The parent track's uuid (0: none).
    pub parent: u64,
    /// The thread of a thread track: (pid, tid).
    pub thread: Option<(u32, u32)>,
    /// The process of a process track: (pid, name).
    pub process: Option<(u32, String)>,
}

/// A slice: a begin and its end on one track.
#[derive(Clone, Debug)]
pub struct Slice {
    /// The track's uuid.
    pub track: u64,
    /// Its name.
    pub name: Arc<str>,
    /// Begin, ns (Metron's `CLOCK_MONOTONIC`).
    pub start_ns: u64,
    /// End, ns; `None` when the trace holds no end for it (a run cut short).
    pub end_ns: Option<u64>,
    /// Nesting depth on its track (0: outermost).
    pub depth: usize,
    /// The debug annotations of its begin and end events.
    pub args: Args,
}

/// A frame of an interned call stack.
#[derive(Clone, Debug, Default)]
pub struct Frame {
    /// Function name ("" when not symbolized).
    pub function: String,
    /// The address in its file (`rel_pc`).
    pub rel_pc: u64,
    /// The source file, when known.
    pub file: Option<String>,
    /// The line, when known.
    pub line: Option<u64>,
}

/// An instant event on a track.
#[derive(Clone, Debug)]
pub struct Instant {
    /// The track's uuid.
    pub track: u64,
    /// Its name.
    pub name: Arc<str>,
    /// When, ns.
    pub ts_ns: u64,
    /// Its debug annotations.
    pub args: Args,
    /// Its call stack (outermost frame first), when it has one.
    pub callstack: Vec<Frame>,
}

/// What happened on a track, in the order of the trace: `Begin(i)`/`End(i)` of `slices[i]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Slice `i` begins.
    Begin(usize),
    /// Slice `i` ends.
    End(usize),
}

/// A decoded trace.
#[derive(Debug, Default)]
pub struct Trace {
    /// Tracks by uuid.
    pub tracks: BTreeMap<u64, Track>,
    /// Every slice, in the order their begins are in the trace.
    pub slices: Vec<Slice>,
    /// Every instant.
    pub instants: Vec<Instant>,
    /// Per track, its begins and ends in trace order (properly nested).
    pub steps: BTreeMap<u64, Vec<Step>>,
}

/// Interned data of one sequence.
#[derive(Default)]
struct Interned {
    event_names: HashMap<u64, String>,
    annotation_names: HashMap<u64, String>,
    functions: HashMap<u64, String>,
    source_paths: HashMap<u64, String>,
    frames: HashMap<u64, (u64, u64, Option<u64>, Option<u64>)>,
    callstacks: HashMap<u64, Vec<u64>>,
    /// The sequence's default track (`TrackEventDefaults.track_uuid`; 0: none).
    track: u64,
    /// The sequence's default clock (`TracePacketDefaults.timestamp_clock_id`; 0: none).
    clock: u64,
    /// The latest value of the sequence's incremental clock (declared in a clock snapshot
    /// on the sequence, equal to `CLOCK_MONOTONIC` there): packets on that clock carry the
    /// nanoseconds since the previous one.
    incremental: Option<u64>,
}

/// `TracePacket` fields.
const TIMESTAMP: u32 = 8;
const SEQUENCE_ID: u32 = 10;
const TRACK_EVENT: u32 = 11;
const INTERNED_DATA: u32 = 12;
const SEQUENCE_FLAGS: u32 = 13;
const TRACK_DESCRIPTOR: u32 = 60;
const CLOCK_SNAPSHOT: u32 = 6;
const TIMESTAMP_CLOCK_ID: u32 = 58;
const TRACE_PACKET_DEFAULTS: u32 = 59;
/// `SEQ_INCREMENTAL_STATE_CLEARED`.
const STATE_CLEARED: u64 = 1;
/// The sequence-scoped incremental clock Metron's thread sequences use.
const INCREMENTAL_CLOCK: u64 = 64;

/// Decodes `bytes`, a whole `Trace`.
pub fn decode(bytes: &[u8]) -> Result<Trace, TraceError> {
    decode_from(bytes)
}

/// Decodes a `Trace` read from `input`, one packet in memory at a time. A last packet cut
/// short (a run killed while writing) ends the trace.
pub fn decode_from(input: impl Read) -> Result<Trace, TraceError> {
    let mut input = PacketReader::new(BufReader::with_capacity(1 << 16, input));
    let mut trace = Trace::default();
    let mut d = Decoder::default();
    let mut packet = Vec::new();
    loop {
        match input.next_frame(&mut packet)? {
            WireFrame::Packet => d.packet(&packet, &mut trace)?,
            WireFrame::Other { .. } => {}
            WireFrame::NotLengthDelimited { tag } => {
                return Err(TraceError(format!(
                    "not a Perfetto trace: field {} of Trace has wire type {}",
                    tag >> 3,
                    tag & 7
                )))
            }
            WireFrame::End | WireFrame::Truncated { .. } => break,
        }
    }
    Ok(trace)
}

/// The decoding state across packets.
#[derive(Default)]
struct Decoder {
    interned: HashMap<u64, Interned>,
    /// Per track: the open slices (indexes into `trace.slices`).
    open: HashMap<u64, Vec<usize>>,
    /// Every name once.
    names: HashSet<Arc<str>>,
}

impl Decoder {
    fn name(&mut self, s: &str) -> Arc<str> {
        if let Some(n) = self.names.get(s) {
            return n.clone();
        }
        let n: Arc<str> = Arc::from(s);
        self.names.insert(n.clone());
        n
    }

    fn packet(&mut self, packet: &[u8], trace: &mut Trace) -> Result<(), TraceError> {
        let f = fields(packet)?;
        let mut ts = 0;
        let mut seq = 0;
        let mut clock = None;
        for (field, v) in &f {
            match (*field, *v) {
                (TIMESTAMP, Value::Varint(t)) => ts = t,
                (SEQUENCE_ID, Value::Varint(s)) => seq = s,
                (TIMESTAMP_CLOCK_ID, Value::Varint(c)) => clock = Some(c),
                _ => {}
            }
        }
        let mut state = self.interned.remove(&seq).unwrap_or_default();
        for (field, v) in &f {
            if let (SEQUENCE_FLAGS, Value::Varint(flags)) = (*field, *v) {
                if flags & STATE_CLEARED != 0 {
                    state = Interned::default();
                }
            }
        }
        for (field, v) in &f {
            match (*field, *v) {
                (INTERNED_DATA, Value::Len(b)) => read_interned(b, &mut state)?,
                (TRACE_PACKET_DEFAULTS, Value::Len(b)) => read_defaults(b, &mut state)?,
                (CLOCK_SNAPSHOT, Value::Len(b)) => read_incremental_clock(b, &mut state)?,
                _ => {}
            }
        }
        // A packet on the sequence's incremental clock carries the time since the previous one.
        if clock.is_none() && state.clock == INCREMENTAL_CLOCK {
            if let Some(last) = state.incremental.as_mut() {
                *last += ts;
                ts = *last;
            }
        }
        let mut result = Ok(());
        for (field, v) in &f {
            match (*field, *v) {
                (TRACK_DESCRIPTOR, Value::Len(b)) => {
                    let (uuid, track) = read_track(b)?;
                    let t = trace.tracks.entry(uuid).or_default();
                    // A later descriptor (a renamed thread) keeps what it leaves out.
                    if !track.name.is_empty() {
                        t.name = track.name;
                    }
                    if track.parent != 0 {
                        t.parent = track.parent;
                    }
                    if track.thread.is_some() {
                        t.thread = track.thread;
                    }
                    if track.process.is_some() {
                        t.process = track.process;
                    }
                }
                (TRACK_EVENT, Value::Len(b)) => {
                    result = read_event(b, ts, &state, trace, self);
                    if result.is_err() {
                        break;
                    }
                }
                _ => {}
            }
        }
        self.interned.insert(seq, state);
        result
    }
}

/// `TracePacketDefaults`: the sequence's clock and default track.
fn read_defaults(b: &[u8], state: &mut Interned) -> Result<(), TraceError> {
    for (field, v) in fields(b)? {
        match (field, v) {
            (58, Value::Varint(c)) => state.clock = c,
            (11, Value::Len(d)) => {
                for (f, v) in fields(d)? {
                    if let (11, Value::Varint(uuid)) = (f, v) {
                        state.track = uuid;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// A clock snapshot on the sequence: the incremental clock's starting value.
fn read_incremental_clock(b: &[u8], state: &mut Interned) -> Result<(), TraceError> {
    for (field, v) in fields(b)? {
        let (1, Value::Len(c)) = (field, v) else {
            continue;
        };
        let (mut id, mut ts, mut incremental) = (0, 0, false);
        for (f, v) in fields(c)? {
            match (f, v) {
                (1, Value::Varint(x)) => id = x,
                (2, Value::Varint(x)) => ts = x,
                (3, Value::Varint(x)) => incremental = x != 0,
                _ => {}
            }
        }
        if id == INCREMENTAL_CLOCK && incremental {
            state.incremental = Some(ts);
        }
    }
    Ok(())
}

fn read_interned(b: &[u8], state: &mut Interned) -> Result<(), TraceError> {
    for (field, v) in fields(b)? {
        let Value::Len(entry) = v else { continue };
        let mut iid = 0;
        let mut name = String::new();
        let mut ints: HashMap<u32, u64> = HashMap::new();
        let mut frame_ids = Vec::new();
        for (f, v) in fields(entry)? {
            match (f, v) {
                (1, Value::Varint(i)) => iid = i,
                (2, Value::Len(s)) if field != 7 => name = text(s),
                (2, Value::Varint(id)) if field == 7 => frame_ids.push(id),
                (2, Value::Len(packed)) if field == 7 => {
                    for id in packed_varints(packed) {
                        frame_ids.push(id?);
                    }
                }
                (f, Value::Varint(i)) => {
                    ints.insert(f, i);
                }
                _ => {}
            }
        }
        match field {
            2 => {
                state.event_names.insert(iid, name);
            }
            3 => {
                state.annotation_names.insert(iid, name);
            }
            5 => {
                state.functions.insert(iid, name);
            }
            18 => {
                state.source_paths.insert(iid, name);
            }
            6 => {
                state.frames.insert(
                    iid,
                    (
                        ints.get(&2).copied().unwrap_or(0),
                        ints.get(&4).copied().unwrap_or(0),
                        ints.get(&5).copied(),
                        ints.get(&6).copied(),
                    ),
                );
            }
            7 => {
                state.callstacks.insert(iid, frame_ids);
            }
            _ => {}
        }
    }
    Ok(())
}

fn read_track(b: &[u8]) -> Result<(u64, Track), TraceError> {
    let mut uuid = 0;
    let mut t = Track::default();
    let mut thread_name = None;
    for (f, v) in fields(b)? {
        match (f, v) {
            (1, Value::Varint(u)) => uuid = u,
            (2, Value::Len(s)) => t.name = text(s),
            (5, Value::Varint(p)) => t.parent = p,
            (3, Value::Len(p)) => {
                let mut pid = 0;
                let mut name = String::new();
                for (f, v) in fields(p)? {
                    match (f, v) {
                        (1, Value::Varint(x)) => pid = x as u32,
                        (6, Value::Len(s)) => name = text(s),
                        _ => {}
                    }
                }
                t.process = Some((pid, name));
            }
            (4, Value::Len(p)) => {
                let (mut pid, mut tid) = (0, 0);
                for (f, v) in fields(p)? {
                    match (f, v) {
                        (1, Value::Varint(x)) => pid = x as u32,
                        (2, Value::Varint(x)) => tid = x as u32,
                        (5, Value::Len(s)) => thread_name = Some(text(s)),
                        _ => {}
                    }
                }
                t.thread = Some((pid, tid));
            }
            _ => {}
        }
    }
    if t.name.is_empty() {
        if let Some(n) = thread_name {
            t.name = n;
        }
    }
    Ok((uuid, t))
}

fn read_args(b: &[u8], state: &Interned, args: &mut Args) -> Result<(), TraceError> {
    let mut name = String::new();
    let mut value = None;
    for (f, v) in fields(b)? {
        match (f, v) {
            (1, Value::Varint(iid)) => {
                name = state
                    .annotation_names
                    .get(&iid)
                    .cloned()
                    .unwrap_or_default()
            }
            (10, Value::Len(s)) => name = text(s),
            (2 | 3, Value::Varint(x)) => value = Some(Arg::U(x)),
            (4, Value::Varint(x)) => value = Some(Arg::I(x as i64)),
            (5, Value::Fixed64(x)) => value = Some(Arg::F(f64::from_bits(x))),
            (6, Value::Len(s)) => value = Some(Arg::S(text(s))),
            _ => {}
        }
    }
    if let Some(v) = value {
        args.insert(name, v);
    }
    Ok(())
}

fn read_event(
    b: &[u8],
    ts: u64,
    state: &Interned,
    trace: &mut Trace,
    d: &mut Decoder,
) -> Result<(), TraceError> {
    let mut kind = 0;
    let mut track = state.track;
    let mut name: Option<&str> = None;
    let mut callstack = None;
    let mut args = Args::new();
    for (f, v) in fields(b)? {
        match (f, v) {
            (9, Value::Varint(k)) => kind = k,
            (11, Value::Varint(u)) => track = u,
            (10, Value::Varint(iid)) => name = state.event_names.get(&iid).map(String::as_str),
            (23, Value::Len(s)) => name = std::str::from_utf8(s).ok(),
            (56, Value::Varint(iid)) => callstack = Some(iid),
            (4, Value::Len(a)) => read_args(a, state, &mut args)?,
            _ => {}
        }
    }
    let name = d.name(name.unwrap_or(""));
    let open = &mut d.open;
    match kind {
        1 => {
            let stack = open.entry(track).or_default();
            let i = trace.slices.len();
            trace.slices.push(Slice {
                track,
                name,
                start_ns: ts,
                end_ns: None,
                depth: stack.len(),
                args,
            });
            stack.push(i);
            trace.steps.entry(track).or_default().push(Step::Begin(i));
        }
        2 => {
            if let Some(i) = open.entry(track).or_default().pop() {
                let s = &mut trace.slices[i];
                s.end_ns = Some(ts);
                s.args.extend(args);
                trace.steps.entry(track).or_default().push(Step::End(i));
            }
        }
        3 => {
            let frames = callstack
                .and_then(|iid| state.callstacks.get(&iid))
                .map(|ids| {
                    ids.iter()
                        .map(|id| {
                            let (func, rel_pc, src, line) =
                                state.frames.get(id).copied().unwrap_or_default();
                            Frame {
                                function: state.functions.get(&func).cloned().unwrap_or_default(),
                                rel_pc,
                                file: src.and_then(|s| state.source_paths.get(&s).cloned()),
                                line,
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            trace.instants.push(Instant {
                track,
                name,
                ts_ns: ts,
                args,
                callstack: frames,
            });
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use metron_wire::{put_bytes as len, put_uint as uint};

    #[test]
    fn nested_slices_with_interned_names_and_arguments() {
        let mut trace = Vec::new();
        let mut td = Vec::new();
        uint(&mut td, 1, 7);
        let mut thread = Vec::new();
        uint(&mut thread, 1, 10);
        uint(&mut thread, 2, 11);
        len(&mut thread, 5, b"main");
        len(&mut td, 4, &thread);
        let mut p = Vec::new();
        len(&mut p, 60, &td);
        len(&mut trace, 1, &p);
        let event = |ts: u64, kind: u64, name: Option<u64>, arg: bool| {
            let mut p = Vec::new();
            uint(&mut p, 8, ts);
            uint(&mut p, 10, 100);
            if let Some(iid) = name {
                let mut d = Vec::new();
                let mut n = Vec::new();
                uint(&mut n, 1, iid);
                len(&mut n, 2, format!("r{iid}").as_bytes());
                len(&mut d, 2, &n);
                len(&mut p, 12, &d);
            }
            let mut e = Vec::new();
            uint(&mut e, 9, kind);
            uint(&mut e, 11, 7);
            if let Some(iid) = name {
                uint(&mut e, 10, iid);
            }
            if arg {
                let mut a = Vec::new();
                len(&mut a, 10, b"group");
                len(&mut a, 6, b"g");
                len(&mut e, 4, &a);
            }
            len(&mut p, 11, &e);
            p
        };
        for p in [
            event(100, 1, Some(1), false),
            event(110, 1, Some(2), false),
            event(120, 2, None, true),
            event(130, 2, None, false),
        ] {
            len(&mut trace, 1, &p);
        }
        let t = decode(&trace).unwrap();
        assert_eq!(t.tracks[&7].thread, Some((10, 11)));
        assert_eq!(t.tracks[&7].name, "main");
        assert_eq!(t.slices.len(), 2);
        assert_eq!(&*t.slices[0].name, "r1");
        assert_eq!(t.slices[0].end_ns, Some(130));
        assert_eq!(&*t.slices[1].name, "r2");
        assert_eq!(t.slices[1].depth, 1);
        assert_eq!(t.slices[1].args["group"], Arg::S("g".into()));
        assert_eq!(
            t.steps[&7],
            vec![Step::Begin(0), Step::Begin(1), Step::End(1), Step::End(0)]
        );
        // A trace cut inside its last packet (a killed run) reads up to the cut.
        let cut = decode(&trace[..trace.len() - 3]).unwrap();
        assert_eq!(cut.slices.len(), 2);
        assert_eq!(cut.slices[0].end_ns, None);
        assert_eq!(cut.slices[1].end_ns, Some(120));
    }

    #[test]
    fn a_malformed_packet_is_an_error_that_says_what_and_where() {
        let mut packet = Vec::new();
        uint(&mut packet, 8, 5);
        packet.extend_from_slice(&[0x5a, 0x09, 0x00]); // track_event of 9 bytes, 1 there
        let mut trace = Vec::new();
        len(&mut trace, 1, &packet);
        let err = decode(&trace).unwrap_err().to_string();
        assert_eq!(
            err,
            "a length-delimited field of 9 bytes runs past the end of its message \
             (at byte 2 of a 5-byte message)"
        );
        let err = decode(&[0x08, 0x01]).unwrap_err().to_string();
        assert_eq!(
            err,
            "not a Perfetto trace: field 1 of Trace has wire type 0"
        );
    }
}
