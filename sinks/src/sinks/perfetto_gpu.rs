//! GPU activity in the Perfetto trace (records from the GPU glue, `crate::gpu`), written as it
//! arrives: each delivered batch is encoded at once and nothing per record is kept, so a run
//! of 10⁹ kernels takes the memory of a run of ten.
//!
//! # Layout
//! - **One track per GPU stream**, named `GPU <dev> <device name> stream <n>`, under the
//!   process track (uuids from [`GPU_UUID_BASE`]): kernels, copies and sets as slices.
//! - **One track per host thread and API** (`CUDA runtime API tid <n>`, `CUDA driver API tid
//!   <n>`, `HSA API tid <n>`, `HIP API tid <n>`): the API calls; a call that failed carries
//!   `status`.
//! - The API calls a synchronization or event record names (synchronizes, event records,
//!   stream waits) carry `correlation_id` too, so a reader joins the two.
//! - **One track per CUDA context for what waited for what** (`CUDA synchronization context
//!   <n>`): each synchronizing call as a slice named by its kind (`Stream synchronize`, `Event
//!   synchronize`, `Stream wait event`, `Context synchronize`) with `correlation_id` (the
//!   call's), `stream` (the stream waited for, or made to wait) and `event_record` (the event
//!   record waited for); each event record as an empty slice `Event record` at the time the
//!   event completed on the device, with `correlation_id` (the `cudaEventRecord` call's),
//!   `stream` and `event_record` (its unique id: an event recorded again gets a new one).
//! - A slice that overlaps the previous one on its track (the parallel branches of a CUDA
//!   graph, records delivered out of order) goes on a **lane**, a child track named
//!   `<track> lane <n>`, so every track's slices nest properly.
//! - A kernel, copy or set carries one debug annotation, `launch`: its grid, block,
//!   registers, shared and local memory, occupancy, the Metron region open on the launching
//!   thread and that thread's tid, and its CUDA graph and node (copies: bytes). The text is an
//!   interned string (`debug_annotation_string_values`): a loop that launches the same kernel
//!   the same way writes it once.
//! - **Flow arrows** from the API call that launched device work to the work: the call's begin
//!   has `flow_ids_old = [id]` and the work's begin `terminating_flow_ids_old = [id]`, with
//!   `id = 1 + correlation mod 16383` (two bytes; an id is free again once its work began, and
//!   CUDA queues far fewer launches than that). Only calls that launch work carry an id
//!   (launches, copies, sets: by name), so no arrow starts from a call that has none. A CUDA
//!   graph launch's id is `16384 + correlation`, and each of its nodes continues the arrow
//!   (`flow_ids_old`): launch → first node → next node.
//! - **Counter tracks** for sampled GPU metrics: one `GPU <n> <name> metrics` group per
//!   device, one counter track per metric under it.
//! - **Note tracks** ([`GpuNote`], e.g. PC sampling's stall breakdowns, worked out at the end
//!   of the run): one track per stream and note kind, named `<stream track> <kind>`, a child
//!   of the stream's track; one slice per note with the note's arguments.
//!
//! # Encoding
//! Each track (lane) is a packet sequence of its own, laid out as a thread's slices are: the
//! first packet sets the track and an incremental clock as the sequence's defaults, so a slice
//! end is 10 or 11 bytes and a begin 12 to 14 plus its annotation and flow. Kernel, API and
//! copy names, the annotation names and the launch texts are interned per sequence. A launch
//! (kernel slice, its API slice, the arrow) measures 55 to 64 bytes: `tests/tests/
//! gpu_long_run.rs` asserts it. Records of a batch are written in start order; a record that
//! starts before what its track already has goes on a lane (at most [`MAX_LANES`] per track;
//! past that it is written with an absolute timestamp and counted in `gpu_out_of_order`).

use super::perfetto::{TraceCounts, GPU_UUID_BASE};
use super::perfetto_encode::{
    annotation, event, interned, packet, track, Encoder, FastMap, GPU_SEQUENCE_FIRST,
    GPU_SEQUENCE_LAST, GPU_SEQUENCE_OVERFLOW,
};
use super::perfetto_session::{set_bit, SeqState};
use crate::sink::gpu::{GpuContext, GpuNote, NoteValue, NO_STREAM};
use crate::sink::{GpuKind, GpuRecord};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::sync::Arc;

/// `TracePacket.sequence_flags`: `SEQ_NEEDS_INCREMENTAL_STATE`.
const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
/// `TrackEvent.name` (inline string).
const EVENT_NAME: u32 = 23;
/// `TrackEvent.flow_ids_old` (varint: two bytes for an ordinary launch's id).
const FLOW_IDS_OLD: u32 = 36;
/// `TrackEvent.terminating_flow_ids_old` (varint).
const TERMINATING_FLOW_IDS_OLD: u32 = 42;
/// `DebugAnnotation.string_value_iid`.
const STRING_VALUE_IID: u32 = 17;
/// `InternedData.debug_annotation_string_values`.
const INTERNED_STRING_VALUES: u32 = 29;
/// `InternedString.str`.
const INTERNED_STR: u32 = 2;
/// Flow ids of ordinary launches: `1 + correlation % FLOW_WINDOW` (below 16384: two bytes).
const FLOW_WINDOW: u32 = 16383;
/// Flow ids of CUDA graph launches: this plus the correlation id (never reused).
const GRAPH_FLOW_BASE: u64 = 1 << 14;
/// Interned annotation names on a GPU sequence.
const ANN_LAUNCH: u64 = 1;
const ANN_STATUS: u64 = 2;
/// `correlation_id` on device work and on the calls that launched it: what `metron export` and
/// the PC-sampling notes pair a launch with its work by.
const ANN_CORRELATION: u64 = 3;
/// The most lanes a track gets.
pub(crate) const MAX_LANES: usize = 8;
/// The most distinct launch texts interned; past it a text is written inline (memory stays
/// bounded whatever the program launches).
const MAX_LAUNCH_TEXTS: usize = 1 << 16;
/// Uuids of the metric tracks: after [`GPU_UUID_BASE`]'s slice tracks.
const COUNTER_UUID_OFFSET: u64 = 1 << 20;
/// Uuids of the note tracks: after the metric tracks.
const NOTE_UUID_OFFSET: u64 = 2 << 20;

/// Where a record goes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
enum TrackKey {
    Stream { device: u32, stream: u32 },
    Api { tid: u32, driver: bool },
    HsaApi { tid: u32 },
    HipApi { tid: u32 },
    Sync { context: u32 },
}

impl TrackKey {
    fn of(r: &GpuRecord) -> Option<TrackKey> {
        Some(match r.kind {
            GpuKind::Kernel | GpuKind::Memcpy | GpuKind::Memset => TrackKey::Stream {
                device: r.device,
                stream: r.stream,
            },
            GpuKind::RuntimeApi => TrackKey::Api {
                tid: r.tid,
                driver: false,
            },
            GpuKind::DriverApi => TrackKey::Api {
                tid: r.tid,
                driver: true,
            },
            GpuKind::HsaApi => TrackKey::HsaApi { tid: r.tid },
            GpuKind::HipApi => TrackKey::HipApi { tid: r.tid },
            GpuKind::Sync | GpuKind::EventRecord => TrackKey::Sync { context: r.context },
            GpuKind::Counter => return None,
        })
    }
}

/// One track's packet sequence: its slices follow one another (none overlaps the previous).
struct Lane {
    uuid: u64,
    seq: u64,
    state: SeqState,
    /// The incremental clock: the time of the sequence's latest packet (a slice's end).
    clock: u64,
    /// Launch texts already interned on this sequence, a bit per iid.
    texts: Vec<u64>,
}

/// What identifies a launch text: everything it says.
#[derive(Clone, PartialEq, Eq, Hash)]
struct LaunchKey {
    kind: GpuKind,
    grid: [i32; 3],
    block: [i32; 3],
    registers: u16,
    scalar_registers: u16,
    shared: [i32; 2],
    local: u32,
    occupancy: Option<u32>,
    bytes: u64,
    region: Option<(usize, u32)>,
    graph: (u32, u64),
}

/// The GPU tracks of the trace, written as records arrive.
#[derive(Default)]
pub(crate) struct GpuTracks {
    /// Device names, the stream word, launch regions and notes (filled by the GPU glue).
    pub(crate) context: GpuContext,
    tracks: HashMap<TrackKey, Vec<Lane>>,
    /// Track uuids handed out (slice tracks and lanes).
    next_uuid: u64,
    /// GPU sequences handed out.
    next_seq: u64,
    /// Event names (kernel, API, copy) → iid, the same on every GPU sequence.
    names: HashMap<(GpuKind, Arc<str>), u64>,
    /// The latest name looked up and its iid: a loop launches one kernel again and again.
    last_name: Option<(GpuKind, Arc<str>, u64)>,
    /// Launch texts → iid.
    texts: FastMap<LaunchKey, u64>,
    /// The texts of `texts`, by iid − 1 (to intern them on another sequence).
    text_of: Vec<Box<str>>,
    /// Device → its metric group's uuid; (device, metric) → counter track uuid.
    counter_groups: HashMap<u32, u64>,
    counter_tracks: HashMap<(u32, Arc<str>), u64>,
    /// Records of the batch, in start order (kept between batches: no allocation per batch).
    order: Vec<u32>,
    scratch: String,
    /// Records written (slices and counter values).
    pub(crate) written: u64,
    /// Records written with an absolute timestamp because every lane of their track was past
    /// their start.
    pub(crate) out_of_order: u64,
}

impl GpuTracks {
    /// Encodes `records` into `e` now (tracks described on first use, under `parent`).
    pub(crate) fn write(
        &mut self,
        e: &mut Encoder,
        counts: &mut TraceCounts,
        parent: u64,
        records: &[GpuRecord],
    ) {
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend(0..records.len() as u32);
        order.sort_by_key(|&i| records[i as usize].start_ns);
        for &i in &order {
            let r = &records[i as usize];
            match TrackKey::of(r) {
                Some(key) => self.slice(e, counts, parent, key, r),
                None => self.counter_value(e, counts, parent, r),
            }
            self.written += 1;
        }
        self.order = order;
    }

    /// Track events of one slice: begin (name, launch text or status, flow) and end.
    fn slice(
        &mut self,
        e: &mut Encoder,
        counts: &mut TraceCounts,
        parent: u64,
        key: TrackKey,
        r: &GpuRecord,
    ) {
        let (start, end) = (r.start_ns, r.end_ns.max(r.start_ns));
        let lane_at = self.lane(e, parent, key, start);
        let name_iid = self.name_iid(r);
        let text = if r.on_device() {
            Some(self.launch_text(r))
        } else {
            None
        };
        let flow = flow_of(r);
        let lane = &mut self.tracks.get_mut(&key).expect("made by lane()")[lane_at];
        if lane.clock > start {
            self.out_of_order += 1;
        }
        let p = e.thread_packet(lane.seq, &mut lane.clock, start);
        let new_name = lane.state.intern_event_name(name_iid);
        let ann = if text.is_some() {
            ANN_LAUNCH
        } else {
            ANN_STATUS
        };
        let with_ann = text.is_some() || r.status != 0;
        let new_ann = with_ann && lane.state.intern_annotation_name(ann);
        let dependency = matches!(r.kind, GpuKind::Sync | GpuKind::EventRecord);
        let with_corr = r.correlation != 0
            && (r.on_device()
                || dependency
                || matches!(flow, Some(Flow::Starts(_)))
                || (!r.on_device() && names_a_dependency(&r.name)));
        let new_corr = with_corr && lane.state.intern_annotation_name(ANN_CORRELATION);
        let new_text = match text {
            Some(Text::Interned(iid)) => set_bit(&mut lane.texts, iid),
            _ => false,
        };
        if new_name || new_ann || new_text || new_corr {
            let d = e.open(packet::INTERNED_DATA);
            if new_name {
                let n = e.open(interned::EVENT_NAMES);
                e.uint(interned::IID, name_iid);
                e.bytes(interned::NAME, event_name(r).as_bytes());
                e.close(n);
            }
            if new_ann {
                let n = e.open(interned::DEBUG_ANNOTATION_NAMES);
                e.uint(interned::IID, ann);
                e.bytes(
                    interned::NAME,
                    if ann == ANN_LAUNCH {
                        b"launch"
                    } else {
                        b"status"
                    },
                );
                e.close(n);
            }
            if new_corr {
                let n = e.open(interned::DEBUG_ANNOTATION_NAMES);
                e.uint(interned::IID, ANN_CORRELATION);
                e.bytes(interned::NAME, b"correlation_id");
                e.close(n);
            }
            if let (true, Some(Text::Interned(iid))) = (new_text, &text) {
                let n = e.open(INTERNED_STRING_VALUES);
                e.uint(interned::IID, *iid);
                e.bytes(INTERNED_STR, self.text_of[*iid as usize - 1].as_bytes());
                e.close(n);
            }
            e.close(d);
        }
        let t = e.open(packet::TRACK_EVENT);
        e.uint(event::TYPE, event::TYPE_SLICE_BEGIN);
        e.uint(event::NAME_IID, name_iid);
        if with_ann {
            let a = e.open(event::DEBUG_ANNOTATIONS);
            e.uint(annotation::NAME_IID, ann);
            match &text {
                Some(Text::Interned(iid)) => e.uint(STRING_VALUE_IID, *iid),
                Some(Text::Inline) => e.bytes(annotation::STRING_VALUE, self.scratch.as_bytes()),
                None => e.uint(annotation::UINT_VALUE, u64::from(r.status)),
            }
            e.close(a);
        }
        if with_corr {
            let a = e.open(event::DEBUG_ANNOTATIONS);
            e.uint(annotation::NAME_IID, ANN_CORRELATION);
            e.uint(annotation::UINT_VALUE, u64::from(r.correlation));
            e.close(a);
        }
        if dependency {
            // Few per run (one per synchronizing call or event record): names inline.
            if r.stream != NO_STREAM {
                arg_u(e, "stream", u64::from(r.stream));
            }
            if r.event_record != 0 {
                arg_u(e, "event_record", r.event_record);
            }
        }
        match flow {
            Some(Flow::Starts(id)) => e.uint(FLOW_IDS_OLD, id),
            Some(Flow::Ends(id)) => e.uint(TERMINATING_FLOW_IDS_OLD, id),
            None => {}
        }
        e.close(t);
        e.end_packet(p);
        if end >= lane.clock {
            e.slice(lane.seq, &mut lane.clock, end, None);
            e.packets += 1;
        } else {
            // Past the lane's clock (written out of order): an absolute end.
            let p = e.thread_packet(lane.seq, &mut lane.clock, end);
            let t = e.open(packet::TRACK_EVENT);
            e.uint(event::TYPE, event::TYPE_SLICE_END);
            e.close(t);
            e.end_packet(p);
        }
        counts.slices_begun += 1;
        counts.slices_ended += 1;
        counts.track_events += 2;
    }

    /// The lane of `key` for a slice starting at `start` (made and described on first use).
    fn lane(&mut self, e: &mut Encoder, parent: u64, key: TrackKey, start: u64) -> usize {
        let lanes = self.tracks.entry(key).or_default();
        if let Some(i) = lanes.iter().position(|l| l.clock <= start) {
            return i;
        }
        if lanes.len() >= MAX_LANES {
            // Every lane is past `start`: the one that ends earliest, with an absolute time.
            return (0..lanes.len())
                .min_by_key(|&i| lanes[i].clock)
                .unwrap_or(0);
        }
        let n = lanes.len();
        let uuid = GPU_UUID_BASE + self.next_uuid;
        self.next_uuid += 1;
        let seq = match GPU_SEQUENCE_FIRST + self.next_seq {
            s if s <= GPU_SEQUENCE_LAST => s,
            s => GPU_SEQUENCE_OVERFLOW + (s - GPU_SEQUENCE_LAST),
        };
        self.next_seq += 1;
        let mut name = track_name(&self.context, key);
        let under = if n == 0 {
            parent
        } else {
            let _ = write!(name, " lane {n}");
            lanes[0].uuid
        };
        describe(e, start, uuid, under, &name);
        let mut clock = 0;
        e.start_thread_sequence(seq, uuid, &mut clock, start);
        let mut state = SeqState::default();
        state.fresh = false;
        lanes.push(Lane {
            uuid,
            seq,
            state,
            clock,
            texts: Vec::new(),
        });
        n
    }

    /// The event name iid of `r` (the same on every GPU sequence).
    fn name_iid(&mut self, r: &GpuRecord) -> u64 {
        if let Some((kind, name, iid)) = &self.last_name {
            if *kind == r.kind && Arc::ptr_eq(name, &r.name) {
                return *iid;
            }
        }
        let next = self.names.len() as u64 + 1;
        let iid = *self
            .names
            .entry((r.kind, Arc::clone(&r.name)))
            .or_insert(next);
        self.last_name = Some((r.kind, Arc::clone(&r.name), iid));
        iid
    }

    /// The launch text of device record `r`: interned, or (past [`MAX_LAUNCH_TEXTS`]) in
    /// `self.scratch`, written inline.
    fn launch_text(&mut self, r: &GpuRecord) -> Text {
        let joined = self.context.region_of(r.correlation);
        let key = LaunchKey {
            kind: r.kind,
            grid: r.grid,
            block: r.block,
            registers: r.registers,
            scalar_registers: r.scalar_registers,
            shared: [r.static_shared, r.dynamic_shared],
            local: r.local_per_thread,
            occupancy: r.occupancy.map(f32::to_bits),
            bytes: r.bytes,
            region: joined.map(|(name, tid)| (name.as_ptr() as usize ^ name.len() << 48, tid)),
            graph: (r.graph_id, r.graph_node),
        };
        if let Some(&iid) = self.texts.get(&key) {
            return Text::Interned(iid);
        }
        self.scratch.clear();
        let s = &mut self.scratch;
        if r.kind == GpuKind::Kernel {
            let _ = write!(
                s,
                "grid ({},{},{}) block ({},{},{}) registers {}",
                r.grid[0], r.grid[1], r.grid[2], r.block[0], r.block[1], r.block[2], r.registers
            );
            if r.scalar_registers != 0 {
                let _ = write!(s, " scalar_registers {}", r.scalar_registers);
            }
            let _ = write!(
                s,
                " static_shared {} dynamic_shared {} local_per_thread {}",
                r.static_shared, r.dynamic_shared, r.local_per_thread
            );
            if let Some(o) = r.occupancy {
                let _ = write!(s, " occupancy {o:.3}");
            }
        } else {
            let _ = write!(s, "bytes {}", r.bytes);
        }
        if let Some((region, tid)) = joined {
            let _ = write!(s, " region {region} launch_tid {tid}");
        }
        if r.graph_id != 0 || r.graph_node != 0 {
            let _ = write!(s, " graph_id {} graph_node_id {}", r.graph_id, r.graph_node);
        }
        if self.texts.len() >= MAX_LAUNCH_TEXTS {
            return Text::Inline;
        }
        let iid = self.texts.len() as u64 + 1;
        self.texts.insert(key, iid);
        self.text_of.push(self.scratch.as_str().into());
        Text::Interned(iid)
    }

    /// A metric sample: a value on its counter track (made on first use).
    fn counter_value(
        &mut self,
        e: &mut Encoder,
        counts: &mut TraceCounts,
        parent: u64,
        r: &GpuRecord,
    ) {
        let uuid = match self.counter_tracks.get(&(r.device, Arc::clone(&r.name))) {
            Some(&uuid) => uuid,
            None => {
                let base = GPU_UUID_BASE + COUNTER_UUID_OFFSET;
                let group = match self.counter_groups.get(&r.device) {
                    Some(&g) => g,
                    None => {
                        let uuid = base + u64::from(r.device);
                        let name = format!(
                            "GPU {} {} metrics",
                            r.device,
                            self.context.device_name(r.device)
                        );
                        describe(e, r.start_ns, uuid, parent, &name);
                        self.counter_groups.insert(r.device, uuid);
                        uuid
                    }
                };
                let uuid = base + (1 << 16) + self.counter_tracks.len() as u64;
                let p = e.packet(r.start_ns, SEQ_NEEDS_INCREMENTAL_STATE);
                let t = e.open(packet::TRACK_DESCRIPTOR);
                e.uint(track::UUID, uuid);
                e.uint(track::PARENT_UUID, group);
                e.bytes(track::NAME, r.name.as_bytes());
                let c = e.open(track::COUNTER);
                e.close(c);
                e.close(t);
                e.end_packet(p);
                self.counter_tracks
                    .insert((r.device, Arc::clone(&r.name)), uuid);
                uuid
            }
        };
        let p = e.packet(r.start_ns, SEQ_NEEDS_INCREMENTAL_STATE);
        let t = e.open(packet::TRACK_EVENT);
        e.uint(event::TYPE, event::TYPE_COUNTER);
        e.uint(event::TRACK_UUID, uuid);
        e.double(event::DOUBLE_COUNTER_VALUE, r.value);
        e.close(t);
        e.end_packet(p);
        counts.counter_values += 1;
        counts.track_events += 1;
    }

    /// The notes (worked out at the end of the run): one track per (stream, note kind), a
    /// child of the stream's track, with the notes as slices.
    pub(crate) fn write_notes(
        &mut self,
        e: &mut Encoder,
        counts: &mut TraceCounts,
        parent: u64,
        notes: Vec<GpuNote>,
    ) {
        let mut tracks: BTreeMap<(u32, u32, Arc<str>), Vec<GpuNote>> = BTreeMap::new();
        for n in notes {
            tracks
                .entry((n.device, n.stream, n.track.clone()))
                .or_default()
                .push(n);
        }
        for (i, ((device, stream, kind), mut notes)) in tracks.into_iter().enumerate() {
            let uuid = GPU_UUID_BASE + NOTE_UUID_OFFSET + i as u64;
            let key = TrackKey::Stream { device, stream };
            let stream_track = self
                .tracks
                .get(&key)
                .and_then(|l| l.first())
                .map(|l| l.uuid);
            let name = format!("{} {kind}", track_name(&self.context, key));
            notes.sort_by_key(|n| (n.start_ns, std::cmp::Reverse(n.end_ns)));
            let first = notes.first().map_or(0, |n| n.start_ns);
            describe(e, first, uuid, stream_track.unwrap_or(parent), &name);
            let spans: Vec<(u64, u64)> = notes.iter().map(|n| (n.start_ns, n.end_ns)).collect();
            nested(e, counts, uuid, &spans, |e, counts, k| {
                let n = &notes[k];
                let p = e.packet(n.start_ns, SEQ_NEEDS_INCREMENTAL_STATE);
                let t = e.open(packet::TRACK_EVENT);
                e.uint(event::TYPE, event::TYPE_SLICE_BEGIN);
                e.uint(event::TRACK_UUID, uuid);
                e.bytes(EVENT_NAME, n.name.as_bytes());
                if n.correlation != 0 {
                    arg_u(e, "correlation_id", u64::from(n.correlation));
                }
                for (key, v) in &n.args {
                    match v {
                        NoteValue::U64(x) => arg_u(e, key, *x),
                        NoteValue::F64(x) => arg_f(e, key, *x),
                        NoteValue::Str(x) => arg_s(e, key, x),
                    }
                }
                e.close(t);
                e.end_packet(p);
                counts.slices_begun += 1;
                counts.track_events += 1;
            });
        }
    }

    /// Tracks (lanes included) made so far.
    pub(crate) fn track_count(&self) -> usize {
        self.tracks.values().map(Vec::len).sum()
    }
}

/// A launch text as written: an iid, or inline (the text in `GpuTracks::scratch`).
enum Text {
    Interned(u64),
    Inline,
}

/// A slice's flow arrow.
enum Flow {
    /// An API call that launched work (or a graph node, which continues its launch's arrow).
    Starts(u64),
    /// Device work: the arrow from its API call ends here.
    Ends(u64),
}

/// The arrow `r` starts or ends.
fn flow_of(r: &GpuRecord) -> Option<Flow> {
    if r.correlation == 0 {
        return None;
    }
    let window = 1 + u64::from(r.correlation % FLOW_WINDOW);
    let graph = GRAPH_FLOW_BASE + u64::from(r.correlation);
    if r.on_device() {
        return Some(if r.graph_id != 0 {
            Flow::Starts(graph)
        } else {
            Flow::Ends(window)
        });
    }
    let name = &*r.name;
    if name.contains("GraphLaunch") {
        Some(Flow::Starts(graph))
    } else if launches_work(name) {
        Some(Flow::Starts(window))
    } else {
        None
    }
}

/// An API call that puts work on a device: a kernel launch, a copy or a set (CUDA, HIP).
pub(crate) fn launches_work(name: &str) -> bool {
    let has = |word: &str| has_word(name, word);
    (has("launch") && !has("hostfunc") && !has("attribute"))
        || has("memcpy")
        || has("memset")
        || has("memprefetch")
}

/// An API call that a synchronization or event record names by its correlation id: a
/// synchronize, an event record, a stream wait.
pub(crate) fn names_a_dependency(name: &str) -> bool {
    let has = |word: &str| has_word(name, word);
    has("synchronize") || has("eventrecord") || has("streamwaitevent")
}

/// Whether `name` contains `word`, ignoring ASCII case.
fn has_word(name: &str, word: &str) -> bool {
    name.as_bytes()
        .windows(word.len())
        .any(|w| w.eq_ignore_ascii_case(word.as_bytes()))
}

/// The slice name of `r`.
fn event_name(r: &GpuRecord) -> String {
    match r.kind {
        GpuKind::Memcpy => format!("Memcpy {}", r.name),
        GpuKind::Memset => "Memset".to_string(),
        _ => r.name.to_string(),
    }
}

fn track_name(gpu: &GpuContext, key: TrackKey) -> String {
    match key {
        TrackKey::Stream { device, stream } if stream == NO_STREAM => {
            format!("GPU {device} {} copies", gpu.device_name(device))
        }
        TrackKey::Stream { device, stream } => format!(
            "GPU {device} {} {} {stream}",
            gpu.device_name(device),
            gpu.stream_word()
        ),
        TrackKey::Api { tid, driver } => format!(
            "CUDA {} API tid {tid}",
            if driver { "driver" } else { "runtime" }
        ),
        TrackKey::HsaApi { tid } => format!("HSA API tid {tid}"),
        TrackKey::HipApi { tid } => format!("HIP API tid {tid}"),
        TrackKey::Sync { context } => format!("CUDA synchronization context {context}"),
    }
}

/// Writes the slices `spans` (sorted by start, longest first) on track `uuid`, properly
/// nested: a slice that starts inside an open one ends no later than it. `begin` writes the
/// begin event of slice `n`.
fn nested(
    e: &mut Encoder,
    counts: &mut TraceCounts,
    uuid: u64,
    spans: &[(u64, u64)],
    mut begin: impl FnMut(&mut Encoder, &mut TraceCounts, usize),
) {
    let mut open: Vec<u64> = Vec::new();
    for (n, &(start, end)) in spans.iter().enumerate() {
        while let Some(&last) = open.last() {
            if last > start {
                break;
            }
            open.pop();
            slice_end(e, last, uuid, counts);
        }
        let end = match open.last() {
            Some(&outer) => end.max(start).min(outer),
            None => end.max(start),
        };
        begin(e, counts, n);
        open.push(end);
    }
    while let Some(end) = open.pop() {
        slice_end(e, end, uuid, counts);
    }
}

fn describe(e: &mut Encoder, ts: u64, uuid: u64, parent: u64, name: &str) {
    let p = e.packet(ts, SEQ_NEEDS_INCREMENTAL_STATE);
    let t = e.open(packet::TRACK_DESCRIPTOR);
    e.uint(track::UUID, uuid);
    e.uint(track::PARENT_UUID, parent);
    e.bytes(track::NAME, name.as_bytes());
    e.close(t);
    e.end_packet(p);
}

fn arg_u(e: &mut Encoder, name: &str, v: u64) {
    let a = e.open(event::DEBUG_ANNOTATIONS);
    e.bytes(annotation::NAME, name.as_bytes());
    e.uint(annotation::UINT_VALUE, v);
    e.close(a);
}

fn arg_f(e: &mut Encoder, name: &str, v: f64) {
    let a = e.open(event::DEBUG_ANNOTATIONS);
    e.bytes(annotation::NAME, name.as_bytes());
    e.double(annotation::DOUBLE_VALUE, v);
    e.close(a);
}

fn arg_s(e: &mut Encoder, name: &str, v: &str) {
    let a = e.open(event::DEBUG_ANNOTATIONS);
    e.bytes(annotation::NAME, name.as_bytes());
    e.bytes(annotation::STRING_VALUE, v.as_bytes());
    e.close(a);
}

fn slice_end(e: &mut Encoder, ts: u64, uuid: u64, counts: &mut TraceCounts) {
    let p = e.packet(ts, SEQ_NEEDS_INCREMENTAL_STATE);
    let t = e.open(packet::TRACK_EVENT);
    e.uint(event::TYPE, event::TYPE_SLICE_END);
    e.uint(event::TRACK_UUID, uuid);
    e.close(t);
    e.end_packet(p);
    counts.slices_ended += 1;
    counts.track_events += 1;
}

#[cfg(test)]
#[path = "perfetto_gpu_tests.rs"]
mod tests;
