//! GPU activity in the Perfetto trace (records from the GPU glue, `crate::gpu`).
//!
//! # Layout
//! - **One track per GPU stream**, named `GPU <dev> <device name> stream <n>`, under the
//!   process track (uuids from [`GPU_UUID_BASE`]): kernels, copies and sets as slices. Kernel
//!   slices carry `grid`, `block`, `registers`, `static_shared`, `dynamic_shared`,
//!   `local_per_thread`, `occupancy`, `correlation_id` and `region` (the Metron region open on
//!   the launching thread, when known); copies and sets carry `bytes` and `correlation_id`.
//! - **One track per host thread and API** (`CUDA runtime API tid <n>`, `CUDA driver API tid
//!   <n>`): the API calls, with `correlation_id` and `status`.
//! - **Flow arrows** from each API call to the device work it launched: the call's slice has
//!   `flow_ids = [id, ...]`, one per piece of work, and each work slice
//!   `terminating_flow_ids = [id]` (only for correlation ids present on both sides). A CUDA
//!   graph launch has one arrow to each kernel, copy and set node it ran; those slices also
//!   carry `graph_id` and `graph_node_id`.
//!
//! - **Note tracks** ([`GpuNote`], e.g. PC sampling's stall breakdowns): one
//!   track per stream and note kind, named `<stream track> <kind>`, a child of the stream's
//!   track; one slice per note with the note's arguments.
//!
//! GPU records arrive late and out of order (CUPTI delivers whole buffers), so they are kept
//! and written at the end of the run, each track's slices sorted and properly nested; names
//! and annotation names are written inline (no interning: GPU events are few next to regions).

use super::perfetto::{TraceCounts, GPU_UUID_BASE};
use super::perfetto_encode::{annotation, event, packet, track, Encoder};
use crate::sink::gpu::{dim3, GpuContext, GpuNote, NoteValue, NO_STREAM};
use crate::sink::{GpuKind, GpuRecord};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

/// `TracePacket.sequence_flags`: `SEQ_NEEDS_INCREMENTAL_STATE`.
const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
/// `TrackEvent.name` (inline string).
const EVENT_NAME: u32 = 23;
/// `TrackEvent.flow_ids` (fixed64).
const FLOW_IDS: u32 = 47;
/// `TrackEvent.terminating_flow_ids` (fixed64).
const TERMINATING_FLOW_IDS: u32 = 48;
/// Flow ids: this bit plus the correlation id (apart from any other flows).
const FLOW_BASE: u64 = 0x6770_0000_0000;

/// Where a record goes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum TrackKey {
    Stream { device: u32, stream: u32 },
    Api { tid: u32, driver: bool },
    HsaApi { tid: u32 },
    HipApi { tid: u32 },
}

/// The GPU records of the run, written at its end.
#[derive(Default)]
pub(crate) struct GpuTracks {
    records: Vec<GpuRecord>,
    notes: Vec<GpuNote>,
    /// Device names, the stream word, launch regions and notes (filled by the GPU glue).
    pub(crate) context: GpuContext,
}

impl GpuTracks {
    /// Keeps `records` for the end of the run.
    pub(crate) fn add(&mut self, records: &[GpuRecord]) {
        self.records.extend_from_slice(records);
    }

    /// Keeps `notes` for the end of the run.
    pub(crate) fn add_notes(&mut self, notes: Vec<GpuNote>) {
        self.notes.extend(notes);
    }

    /// Records and notes kept so far.
    pub(crate) fn len(&self) -> usize {
        self.records.len() + self.notes.len()
    }

    /// Encodes every track and slice into `e`.
    pub(crate) fn finish(&mut self, e: &mut Encoder, counts: &mut TraceCounts, parent: u64) {
        if self.records.is_empty() {
            return;
        }
        let mut records = std::mem::take(&mut self.records);
        let gpu = &self.context;
        // Metric samples: one counter track per (device, metric), after the slice tracks.
        let mut counters: Counters = BTreeMap::new();
        records.retain(|r| {
            if r.kind != GpuKind::Counter {
                return true;
            }
            counters
                .entry((r.device, r.name.clone()))
                .or_default()
                .push((r.start_ns, r.value));
            false
        });
        // correlation id → the device records it launched (one flow arrow each).
        let mut device_of: HashMap<u32, Vec<usize>> = HashMap::new();
        for (i, r) in records.iter().enumerate() {
            if r.on_device() {
                device_of.entry(r.correlation).or_default().push(i);
            }
        }
        let device_corr: HashSet<u32> = device_of.keys().copied().collect();
        // One flow per correlation id: from the runtime call if there is one, else the
        // driver call (driver calls made inside a runtime call may share its id).
        let mut flow_source: HashMap<u32, (bool, u64, usize)> = HashMap::new();
        for (i, r) in records.iter().enumerate() {
            if r.on_device() || !device_corr.contains(&r.correlation) {
                continue;
            }
            let key = (r.kind == GpuKind::DriverApi, r.start_ns, i);
            let e = flow_source.entry(r.correlation).or_insert(key);
            if key < *e {
                *e = key;
            }
        }
        let api_corr: HashSet<u32> = flow_source.keys().copied().collect();
        let flow_from: HashSet<usize> = flow_source.values().map(|v| v.2).collect();
        let mut stream_uuids: HashMap<(u32, u32), (u64, String)> = HashMap::new();
        let mut tracks: BTreeMap<TrackKey, Vec<(usize, &GpuRecord)>> = BTreeMap::new();
        for (i, r) in records.iter().enumerate() {
            let key = match r.kind {
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
                GpuKind::Counter => continue,
            };
            tracks.entry(key).or_default().push((i, r));
        }
        for (n, (key, mut slices)) in tracks.into_iter().enumerate() {
            let uuid = GPU_UUID_BASE + n as u64;
            let name = match key {
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
            };
            if let TrackKey::Stream { device, stream } = key {
                stream_uuids.insert((device, stream), (uuid, name.clone()));
            }
            slices.sort_by_key(|(_, r)| (r.start_ns, std::cmp::Reverse(r.end_ns)));
            let first = slices.first().map_or(0, |(_, r)| r.start_ns);
            describe(e, first, uuid, parent, &name);
            let spans: Vec<(u64, u64)> =
                slices.iter().map(|(_, r)| (r.start_ns, r.end_ns)).collect();
            nested(e, counts, uuid, &spans, |e, counts, n| {
                let (i, r) = slices[n];
                let flow = if r.on_device() {
                    api_corr
                        .contains(&r.correlation)
                        .then(|| Flow::Ends(flow_id(i)))
                } else if flow_from.contains(&i) {
                    device_of
                        .get(&r.correlation)
                        .map(|work| Flow::Starts(work.iter().map(|&w| flow_id(w)).collect()))
                } else {
                    None
                };
                slice_begin(e, gpu, r, uuid, flow, counts);
            });
        }
        counter_tracks(e, gpu, counts, parent, counters);
        note_tracks(
            e,
            gpu,
            counts,
            parent,
            &stream_uuids,
            std::mem::take(&mut self.notes),
        );
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

/// Uuids of the note tracks: after the metric tracks.
const NOTE_UUID_OFFSET: u64 = 2 << 20;

/// One track per (stream, note kind), a child of the stream's track, with the notes as slices.
fn note_tracks(
    e: &mut Encoder,
    gpu: &GpuContext,
    counts: &mut TraceCounts,
    parent: u64,
    streams: &HashMap<(u32, u32), (u64, String)>,
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
        let (under, name) = match streams.get(&(device, stream)) {
            Some((u, name)) => (*u, format!("{name} {kind}")),
            None => (
                parent,
                format!(
                    "GPU {device} {} {} {stream} {kind}",
                    gpu.device_name(device),
                    gpu.stream_word()
                ),
            ),
        };
        notes.sort_by_key(|n| (n.start_ns, std::cmp::Reverse(n.end_ns)));
        describe(
            e,
            notes.first().map_or(0, |n| n.start_ns),
            uuid,
            under,
            &name,
        );
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

/// Metric samples per (device, metric): (time, value).
type Counters = BTreeMap<(u32, Arc<str>), Vec<(u64, f64)>>;

/// Uuids of the metric tracks: after [`GPU_UUID_BASE`]'s slice tracks.
const COUNTER_UUID_OFFSET: u64 = 1 << 20;

/// One `GPU <n> <name> metrics` track per device, with one counter track per metric under it;
/// each sample is a counter value at its start (it holds until the next sample).
fn counter_tracks(
    e: &mut Encoder,
    gpu: &GpuContext,
    counts: &mut TraceCounts,
    parent: u64,
    counters: Counters,
) {
    let mut groups: BTreeMap<u32, u64> = BTreeMap::new();
    let base = GPU_UUID_BASE + COUNTER_UUID_OFFSET;
    for (i, ((device, metric), mut values)) in counters.into_iter().enumerate() {
        values.sort_by_key(|v| v.0);
        let first = values.first().map_or(0, |v| v.0);
        // Device groups first (one per device), metric tracks after them.
        let group = *groups.entry(device).or_insert_with(|| {
            let uuid = base + u64::from(device);
            let name = format!("GPU {device} {} metrics", gpu.device_name(device));
            describe(e, first, uuid, parent, &name);
            uuid
        });
        let uuid = base + (1 << 16) + i as u64;
        let p = e.packet(first, SEQ_NEEDS_INCREMENTAL_STATE);
        let t = e.open(packet::TRACK_DESCRIPTOR);
        e.uint(track::UUID, uuid);
        e.uint(track::PARENT_UUID, group);
        e.bytes(track::NAME, metric.as_bytes());
        let c = e.open(track::COUNTER);
        e.close(c);
        e.close(t);
        e.end_packet(p);
        for (ts, v) in values {
            let p = e.packet(ts, SEQ_NEEDS_INCREMENTAL_STATE);
            let t = e.open(packet::TRACK_EVENT);
            e.uint(event::TYPE, event::TYPE_COUNTER);
            e.uint(event::TRACK_UUID, uuid);
            e.double(event::DOUBLE_COUNTER_VALUE, v);
            e.close(t);
            e.end_packet(p);
            counts.track_events += 1;
        }
    }
}

/// The flow arrow of the device record at `index` (unique in the run's GPU records).
fn flow_id(index: usize) -> u64 {
    FLOW_BASE | index as u64
}

/// A slice's flow arrows.
enum Flow {
    /// An API call: one arrow to each piece of work it launched.
    Starts(Vec<u64>),
    /// Device work: the arrow from its API call.
    Ends(u64),
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

fn fixed64(e: &mut Encoder, field: u32, v: u64) {
    metron_wire::put_fixed64(&mut e.buf, field, v);
}

fn arg_u(e: &mut Encoder, name: &str, v: u64) {
    let a = e.open(event::DEBUG_ANNOTATIONS);
    e.bytes(annotation::NAME, name.as_bytes());
    e.uint(annotation::UINT_VALUE, v);
    e.close(a);
}

fn arg_i(e: &mut Encoder, name: &str, v: i64) {
    let a = e.open(event::DEBUG_ANNOTATIONS);
    e.bytes(annotation::NAME, name.as_bytes());
    e.int(annotation::INT_VALUE, v);
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

fn slice_begin(
    e: &mut Encoder,
    gpu: &GpuContext,
    r: &GpuRecord,
    uuid: u64,
    flow: Option<Flow>,
    counts: &mut TraceCounts,
) {
    let p = e.packet(r.start_ns, SEQ_NEEDS_INCREMENTAL_STATE);
    let t = e.open(packet::TRACK_EVENT);
    e.uint(event::TYPE, event::TYPE_SLICE_BEGIN);
    e.uint(event::TRACK_UUID, uuid);
    let name = match r.kind {
        GpuKind::Memcpy => format!("Memcpy {}", r.name),
        GpuKind::Memset => "Memset".to_string(),
        _ => r.name.to_string(),
    };
    e.bytes(EVENT_NAME, name.as_bytes());
    arg_u(e, "correlation_id", u64::from(r.correlation));
    match r.kind {
        GpuKind::Kernel => {
            arg_s(e, "grid", &dim3(r.grid));
            arg_s(e, "block", &dim3(r.block));
            arg_u(e, "registers", u64::from(r.registers));
            arg_i(e, "static_shared", i64::from(r.static_shared));
            arg_i(e, "dynamic_shared", i64::from(r.dynamic_shared));
            arg_u(e, "local_per_thread", u64::from(r.local_per_thread));
            arg_u(e, "device", u64::from(r.device));
            if let Some(o) = r.occupancy {
                arg_f(e, "occupancy", f64::from(o));
            }
            launch_args(e, gpu, r);
        }
        GpuKind::Memcpy | GpuKind::Memset => {
            arg_u(e, "bytes", r.bytes);
            arg_u(e, "device", u64::from(r.device));
            launch_args(e, gpu, r);
        }
        GpuKind::RuntimeApi | GpuKind::DriverApi | GpuKind::HsaApi | GpuKind::HipApi => {
            arg_u(e, "status", u64::from(r.status))
        }
        GpuKind::Counter => {}
    }
    match flow {
        Some(Flow::Starts(ids)) => {
            for id in ids {
                fixed64(e, FLOW_IDS, id);
            }
        }
        Some(Flow::Ends(id)) => fixed64(e, TERMINATING_FLOW_IDS, id),
        None => {}
    }
    e.close(t);
    e.end_packet(p);
    counts.slices_begun += 1;
    counts.track_events += 1;
}

/// Device work's launching region (and thread) and its CUDA graph and node, when known.
fn launch_args(e: &mut Encoder, gpu: &GpuContext, r: &GpuRecord) {
    if let Some((region, tid)) = gpu.region_of(r.correlation) {
        arg_s(e, "region", region);
        arg_u(e, "launch_tid", u64::from(tid));
    }
    if r.graph_id != 0 || r.graph_node != 0 {
        arg_u(e, "graph_id", u64::from(r.graph_id));
        arg_u(e, "graph_node_id", r.graph_node);
    }
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
mod tests {
    use super::*;

    fn rec(kind: GpuKind, start: u64, end: u64, corr: u32) -> GpuRecord {
        let mut r = GpuRecord::new(kind, "k".into());
        r.start_ns = start;
        r.end_ns = end;
        r.correlation = corr;
        r.tid = 7;
        r.stream = 3;
        r
    }

    #[test]
    fn every_slice_begins_and_ends_and_flows_are_written() {
        let mut g = GpuTracks::default();
        g.add(&[
            rec(GpuKind::RuntimeApi, 10, 50, 1),
            rec(GpuKind::DriverApi, 12, 20, 2),
            rec(GpuKind::DriverApi, 14, 18, 1),
            rec(GpuKind::Kernel, 60, 90, 1),
            rec(GpuKind::Memcpy, 91, 95, 9),
        ]);
        let mut e = Encoder::default();
        let mut counts = TraceCounts::default();
        g.finish(&mut e, &mut counts, 1);
        assert_eq!(counts.slices_begun, 5);
        assert_eq!(counts.slices_ended, 5);
        // The kernel is record 3.
        let flow = flow_id(3).to_le_bytes();
        let hits = e.buf.windows(8).filter(|w| *w == flow).count();
        assert_eq!(
            hits, 2,
            "one flow id on the runtime call only, one terminating on the kernel"
        );
    }

    #[test]
    fn metric_samples_become_one_counter_track_per_device_and_metric() {
        let mut g = GpuTracks::default();
        let sample = |device: u32, name: &str, ts: u64, v: f64| {
            let mut r = GpuRecord::new(GpuKind::Counter, name.into());
            r.device = device;
            r.start_ns = ts;
            r.end_ns = ts + 10;
            r.value = v;
            r
        };
        g.add(&[
            rec(GpuKind::Kernel, 60, 90, 1),
            sample(0, "dram_pct", 70, 81.5),
            sample(0, "dram_pct", 60, 12.25),
            sample(0, "sm_pct", 60, 3.0),
            sample(1, "dram_pct", 60, 7.0),
        ]);
        let mut e = Encoder::default();
        let mut counts = TraceCounts::default();
        g.finish(&mut e, &mut counts, 1);
        assert_eq!(counts.slices_begun, 1, "counters are not slices");
        assert_eq!(counts.track_events, 2 + 4);
        let text = String::from_utf8_lossy(&e.buf);
        // Two device groups, three counter tracks.
        assert_eq!(text.matches(" metrics").count(), 2);
        assert_eq!(text.matches("dram_pct").count(), 2);
        assert_eq!(text.matches("sm_pct").count(), 1);
        for v in [81.5f64, 12.25, 3.0, 7.0] {
            // double_counter_value: field 44, wire type 1 (tag varint 0xe1 0x02), then the value.
            assert_eq!(event::DOUBLE_COUNTER_VALUE, 44);
            let mut tagged = vec![0xe1u8, 0x02];
            tagged.extend_from_slice(&v.to_le_bytes());
            assert_eq!(
                e.buf
                    .windows(10)
                    .filter(|w| *w == tagged.as_slice())
                    .count(),
                1,
                "{v}"
            );
        }
        let counter_type = [(9u8 << 3), event::TYPE_COUNTER as u8];
        assert_eq!(e.buf.windows(2).filter(|w| *w == counter_type).count(), 4);
    }

    #[test]
    fn notes_go_on_a_child_track_of_their_stream() {
        let mut g = GpuTracks::default();
        g.add(&[
            rec(GpuKind::Kernel, 60, 90, 1),
            rec(GpuKind::Kernel, 95, 99, 2),
        ]);
        let note = |start, end, stream| GpuNote {
            track: "PC sampling".into(),
            device: 0,
            stream,
            start_ns: start,
            end_ns: end,
            name: "k".into(),
            correlation: 1,
            args: vec![
                ("samples".into(), NoteValue::U64(1234)),
                ("stall_1_percent".into(), NoteValue::F64(61.25)),
                ("stall_1".into(), NoteValue::Str("long_scoreboard".into())),
            ],
        };
        g.add_notes(vec![note(60, 90, 3), note(95, 99, 3), note(5, 6, 9)]);
        assert_eq!(g.len(), 5);
        let mut e = Encoder::default();
        let mut counts = TraceCounts::default();
        g.finish(&mut e, &mut counts, 1);
        assert_eq!(counts.slices_begun, 5);
        assert_eq!(counts.slices_ended, 5);
        let text = String::from_utf8_lossy(&e.buf);
        assert_eq!(text.matches("stream 3 PC sampling").count(), 1, "{text}");
        assert_eq!(text.matches("stream 9 PC sampling").count(), 1, "{text}");
        assert_eq!(text.matches("long_scoreboard").count(), 3);
        // The stream track's uuid is the parent of its note track (parent_uuid, field 5).
        let mut parent = vec![5u8 << 3];
        metron_wire::put_varint(&mut parent, GPU_UUID_BASE);
        assert_eq!(
            e.buf
                .windows(parent.len())
                .filter(|w| *w == parent.as_slice())
                .count(),
            1
        );
    }

    #[test]
    fn a_graph_launch_has_one_arrow_to_each_node() {
        let mut g = GpuTracks::default();
        let mut nodes = Vec::new();
        for n in 0..3u64 {
            let mut k = rec(GpuKind::Kernel, 100 + 10 * n, 105 + 10 * n, 5);
            k.graph_id = 2;
            k.graph_node = 40 + n;
            nodes.push(k);
        }
        let mut set = rec(GpuKind::Memset, 140, 141, 5);
        set.graph_id = 2;
        set.graph_node = 43;
        nodes.push(set);
        let mut all = vec![rec(GpuKind::RuntimeApi, 10, 50, 5)];
        all.extend(nodes);
        g.add(&all);
        let mut e = Encoder::default();
        let mut counts = TraceCounts::default();
        g.finish(&mut e, &mut counts, 1);
        assert_eq!(counts.slices_begun, 5);
        for i in 1..5 {
            let id = flow_id(i).to_le_bytes();
            assert_eq!(
                e.buf.windows(8).filter(|w| *w == id).count(),
                2,
                "node record {i}: one arrow from the graph launch, ending on it"
            );
        }
        let text = String::from_utf8_lossy(&e.buf);
        assert_eq!(text.matches("graph_node_id").count(), 4);
    }
}
