//! Call-stack samples in `trace.pftrace`, on the thread tracks.
//!
//! A timer sample is a `TracePacket.perf_sample` (`PerfSample { pid, tid, callstack_iid }`)
//! at the sample's timestamp; Perfetto attaches it to the thread by pid/tid, so the UI shows
//! it on the thread's track (and in its flame graph). The callstack it names is interned on
//! Metron's sequence, in the `interned_data` of the packet that first uses it:
//! - `mapping_paths` + `mappings`: one mapping per module (executable, shared object), with
//!   its runtime start and end;
//! - `function_names`, `source_paths`: demangled function names and source files;
//! - `frames`: one per (function, mapping, file address, file, line); `rel_pc` is the file
//!   address (the ELF virtual address, what `addr2line -e module` takes); an address with
//!   inlined frames gives one frame per inlined function, all at the same `rel_pc`;
//! - `callstacks`: `frame_ids` outermost first (Perfetto's order), inlined frames expanded.
//!
//! A backtrace taken at a region's start (`SampleTrigger::RegionBegin`) is not a timer
//! sample: it is written as an instant `metron: backtrace` on the thread's track at the
//! region's begin, with the interned callstack as `TrackEvent.callstack_iid` and the region's
//! name as the `region` debug annotation (the slice itself was written already when the
//! backtrace arrives).
//!
//! Every address is symbolized once (the process-wide symbolizer, shared with the summary),
//! when the first stack that holds it arrives on the flusher thread.

use super::perfetto_encode::{annotation, event, packet, Encoder, FastMap};
use super::perfetto_session::{SeqState, FIXED_IID_BASE};
use crate::sink::{SampleTrigger, ThreadInfo};
use metron_symbols::Symbolizer;
use std::collections::HashMap;
use std::sync::Arc;

/// `TracePacket.perf_sample`.
const PERF_SAMPLE: u32 = 66;
/// `PerfSample`.
const SAMPLE_PID: u32 = 2;
const SAMPLE_TID: u32 = 3;
const SAMPLE_CALLSTACK_IID: u32 = 4;
/// `InternedData`.
const INTERNED_FUNCTION_NAMES: u32 = 5;
const INTERNED_FRAMES: u32 = 6;
const INTERNED_CALLSTACKS: u32 = 7;
const INTERNED_MAPPING_PATHS: u32 = 17;
const INTERNED_SOURCE_PATHS: u32 = 18;
const INTERNED_MAPPINGS: u32 = 19;
/// `InternedString`.
const STRING_IID: u32 = 1;
const STRING_STR: u32 = 2;
/// `Frame`.
const FRAME_IID: u32 = 1;
const FRAME_FUNCTION_NAME_ID: u32 = 2;
const FRAME_MAPPING_ID: u32 = 3;
const FRAME_REL_PC: u32 = 4;
const FRAME_SOURCE_PATH_IID: u32 = 5;
const FRAME_LINE_NUMBER: u32 = 6;
/// `Callstack`.
const CALLSTACK_IID: u32 = 1;
const CALLSTACK_FRAME_IDS: u32 = 2;
/// `Mapping`.
const MAPPING_IID: u32 = 1;
const MAPPING_START: u32 = 4;
const MAPPING_END: u32 = 5;
const MAPPING_PATH_STRING_IDS: u32 = 7;
/// `TrackEvent.callstack_iid`.
const EVENT_CALLSTACK_IID: u32 = 56;

/// The `metron: backtrace` instant's event name (Metron's own names are above the call-site
/// ids; the trace sink uses the first few, async slices theirs).
const IID_BACKTRACE: u64 = FIXED_IID_BASE + 0x500;
const NAME_BACKTRACE: &str = "metron: backtrace";
const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;

/// What [`SampleEncoder`] wrote, for `metadata.json`.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub(crate) struct SampleCounts {
    /// `PerfSample` packets (timer samples).
    pub(crate) samples: u64,
    /// `metron: backtrace` instants (backtraces at region starts).
    pub(crate) region_backtraces: u64,
    /// Distinct callstacks interned.
    pub(crate) callstacks: u64,
    /// Frames interned (inlined frames count one each).
    pub(crate) frames: u64,
    /// Distinct addresses symbolized.
    pub(crate) addresses: u64,
}

/// What makes a frame distinct: (function, mapping, rel_pc, source path, line).
type FrameKey = (u64, u64, u64, Option<u64>, Option<u32>);

/// A new interned entry, written into the next packet.
enum New {
    Function(u64, String),
    SourcePath(u64, String),
    MappingPath(u64, Arc<str>),
    Mapping {
        iid: u64,
        path: u64,
        start: u64,
        end: u64,
    },
    Frame {
        iid: u64,
        function: u64,
        mapping: u64,
        rel_pc: u64,
        source: Option<u64>,
        line: Option<u32>,
    },
    Callstack(u64, Vec<u64>),
}

/// Interns and writes samples. One per trace sink (the sequence is never cleared, so what
/// was interned stays valid for the whole trace).
#[derive(Default)]
pub(crate) struct SampleEncoder {
    functions: HashMap<String, u64>,
    sources: HashMap<String, u64>,
    /// Module name → mapping iid.
    mappings: HashMap<Arc<str>, u64>,
    frames: HashMap<FrameKey, u64>,
    /// Lookup address → its frame iids, innermost first.
    addresses: FastMap<u64, Box<[u64]>>,
    callstacks: HashMap<Box<[u64]>, u64>,
    next_iid: u64,
    new: Vec<New>,
    scratch: Vec<u64>,
    pub(crate) counts: SampleCounts,
}

impl SampleEncoder {
    fn iid(&mut self) -> u64 {
        self.next_iid += 1;
        self.next_iid
    }

    /// The frame iids of lookup address `a`, innermost first (symbolized on first use).
    fn address_frames(&mut self, a: u64, symbolizer: &mut Symbolizer) -> Box<[u64]> {
        if let Some(f) = self.addresses.get(&a) {
            return f.clone();
        }
        self.counts.addresses += 1;
        let (bias, start, end) = match symbolizer.module_at(a) {
            Some(m) => (
                m.bias,
                m.segments.iter().map(|s| s.0).min().unwrap_or(0),
                m.segments.iter().map(|s| s.1).max().unwrap_or(0),
            ),
            None => (0, 0, 0),
        };
        let frames = symbolizer.symbolize(a).to_vec();
        let mut iids = Vec::with_capacity(frames.len());
        for f in &frames {
            let mapping = match self.mappings.get(&f.module) {
                Some(&m) => m,
                None => {
                    let path = self.iid();
                    let iid = self.iid();
                    self.new.push(New::MappingPath(path, Arc::clone(&f.module)));
                    self.new.push(New::Mapping {
                        iid,
                        path,
                        start,
                        end,
                    });
                    self.mappings.insert(Arc::clone(&f.module), iid);
                    iid
                }
            };
            let function = match self.functions.get(&f.function) {
                Some(&i) => i,
                None => {
                    let i = self.iid();
                    self.new.push(New::Function(i, f.function.clone()));
                    self.functions.insert(f.function.clone(), i);
                    i
                }
            };
            let source = f.file.as_ref().map(|file| match self.sources.get(file) {
                Some(&i) => i,
                None => {
                    let i = self.iid();
                    self.new.push(New::SourcePath(i, file.clone()));
                    self.sources.insert(file.clone(), i);
                    i
                }
            });
            let rel_pc = a.wrapping_sub(bias);
            let key = (function, mapping, rel_pc, source, f.line);
            let frame = match self.frames.get(&key) {
                Some(&i) => i,
                None => {
                    let iid = self.iid();
                    self.new.push(New::Frame {
                        iid,
                        function,
                        mapping,
                        rel_pc,
                        source,
                        line: f.line,
                    });
                    self.frames.insert(key, iid);
                    self.counts.frames += 1;
                    iid
                }
            };
            iids.push(frame);
        }
        let iids: Box<[u64]> = iids.into();
        self.addresses.insert(a, iids.clone());
        iids
    }

    /// The callstack iid of `stack` (raw addresses, innermost first), interning what is new.
    fn callstack(&mut self, stack: &[u64]) -> u64 {
        if let Some(&i) = self.callstacks.get(stack) {
            return i;
        }
        let mut symbolizer = metron_symbols::shared()
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let mut ids = std::mem::take(&mut self.scratch);
        ids.clear();
        for a in Symbolizer::lookup_addresses(stack) {
            ids.extend_from_slice(&self.address_frames(a, &mut symbolizer));
        }
        drop(symbolizer);
        // Perfetto wants the outermost frame first.
        ids.reverse();
        let iid = self.iid();
        self.new.push(New::Callstack(iid, ids.clone()));
        self.scratch = ids;
        self.callstacks.insert(stack.into(), iid);
        self.counts.callstacks += 1;
        iid
    }

    /// Writes the entries interned since the last packet into `interned_data`.
    fn write_interned(&mut self, e: &mut Encoder) {
        if self.new.is_empty() {
            return;
        }
        let d = e.open(packet::INTERNED_DATA);
        for n in self.new.drain(..) {
            match n {
                New::Function(iid, name) => string(e, INTERNED_FUNCTION_NAMES, iid, &name),
                New::SourcePath(iid, path) => string(e, INTERNED_SOURCE_PATHS, iid, &path),
                New::MappingPath(iid, path) => string(e, INTERNED_MAPPING_PATHS, iid, &path),
                New::Mapping {
                    iid,
                    path,
                    start,
                    end,
                } => {
                    let m = e.open(INTERNED_MAPPINGS);
                    e.uint(MAPPING_IID, iid);
                    if end > start {
                        e.uint(MAPPING_START, start);
                        e.uint(MAPPING_END, end);
                    }
                    e.uint(MAPPING_PATH_STRING_IDS, path);
                    e.close(m);
                }
                New::Frame {
                    iid,
                    function,
                    mapping,
                    rel_pc,
                    source,
                    line,
                } => {
                    let f = e.open(INTERNED_FRAMES);
                    e.uint(FRAME_IID, iid);
                    e.uint(FRAME_FUNCTION_NAME_ID, function);
                    e.uint(FRAME_MAPPING_ID, mapping);
                    e.uint(FRAME_REL_PC, rel_pc);
                    if let Some(s) = source {
                        e.uint(FRAME_SOURCE_PATH_IID, s);
                    }
                    if let Some(l) = line {
                        e.uint(FRAME_LINE_NUMBER, u64::from(l));
                    }
                    e.close(f);
                }
                New::Callstack(iid, frames) => {
                    let c = e.open(INTERNED_CALLSTACKS);
                    e.uint(CALLSTACK_IID, iid);
                    for f in frames {
                        e.uint(CALLSTACK_FRAME_IDS, f);
                    }
                    e.close(c);
                }
            }
        }
        e.close(d);
    }

    /// Writes one `Event::Sample` of `thread` (whose track is `track_uuid`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sample(
        &mut self,
        pid: u32,
        thread: &ThreadInfo,
        track_uuid: u64,
        ts_ns: u64,
        frames: &[u64],
        trigger: SampleTrigger,
        e: &mut Encoder,
        seq: &mut SeqState,
    ) -> u64 {
        if frames.is_empty() {
            return 0;
        }
        let callstack = self.callstack(frames);
        match trigger {
            SampleTrigger::CpuTime | SampleTrigger::RealTime => {
                let p = e.packet(ts_ns, SEQ_NEEDS_INCREMENTAL_STATE);
                self.write_interned(e);
                let s = e.open(PERF_SAMPLE);
                e.uint(SAMPLE_PID, u64::from(pid));
                e.uint(SAMPLE_TID, u64::from(thread.tid));
                e.uint(SAMPLE_CALLSTACK_IID, callstack);
                e.close(s);
                e.end_packet(p);
                self.counts.samples += 1;
                0
            }
            SampleTrigger::RegionBegin(site) => {
                let new_name = seq.intern_event_name(IID_BACKTRACE);
                let p = e.packet(ts_ns, SEQ_NEEDS_INCREMENTAL_STATE);
                if new_name {
                    let d = e.open(packet::INTERNED_DATA);
                    let n = e.open(super::perfetto_encode::interned::EVENT_NAMES);
                    e.uint(super::perfetto_encode::interned::IID, IID_BACKTRACE);
                    e.bytes(
                        super::perfetto_encode::interned::NAME,
                        NAME_BACKTRACE.as_bytes(),
                    );
                    e.close(n);
                    e.close(d);
                }
                self.write_interned(e);
                let t = e.open(packet::TRACK_EVENT);
                e.uint(event::TYPE, event::TYPE_INSTANT);
                e.uint(event::TRACK_UUID, track_uuid);
                e.uint(event::NAME_IID, IID_BACKTRACE);
                e.uint(EVENT_CALLSTACK_IID, callstack);
                let a = e.open(event::DEBUG_ANNOTATIONS);
                e.bytes(annotation::NAME, b"region");
                e.bytes(annotation::STRING_VALUE, site.name.as_bytes());
                e.close(a);
                e.close(t);
                e.end_packet(p);
                self.counts.region_backtraces += 1;
                // One track event, for the sink's read-back count.
                1
            }
        }
    }
}

/// An `InternedString` entry of `field`.
fn string(e: &mut Encoder, field: u32, iid: u64, s: &str) {
    let m = e.open(field);
    e.uint(STRING_IID, iid);
    e.bytes(STRING_STR, s.as_bytes());
    e.close(m);
}
