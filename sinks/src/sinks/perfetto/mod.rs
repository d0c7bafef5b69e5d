//! `trace.pftrace`: the run's timeline as a Perfetto trace. The sink encodes its
//! `TracePacket`s itself (`perfetto_encode.rs`) on a sequence of its own and appends them
//! straight to the file; an in-process `perfetto-sdk` session adds the service's packets (clock
//! snapshots, trace config, trace stats).
//!
//! # Layout
//! - One **process track** (uuid [`PROCESS_UUID`]) with the pid, executable and command line;
//!   a process counter track `metron: process RSS` (uuid [`RSS_UUID`]) sampled by the flusher,
//!   and the `metron: run end` instant, whose debug annotations are the run's record counts
//!   (written, dropped): the trace's own metadata.
//! - One **thread track** per thread that recorded (uuid `THREAD_UUID_BASE + thread index`)
//!   with the real pid/tid and the thread's name (pthread name, or the latest
//!   `metron::set_thread_name`); Metron's own threads carry the description
//!   `Metron's own thread`.
//! - On a thread track: nested **slices** (regions) with region annotations and bundle values
//!   (`component.field`) as debug annotations; **instants** (marks, and
//!   `metron: dropped records` with the count when the buffer policy dropped records).
//! - One **counter track** per (thread, counter name) (uuid from [`COUNTER_UUID_BASE`]),
//!   child of the thread's track.
//! - Reserved for GPU work: uuids from [`GPU_UUID_BASE`], one track per GPU stream/queue under
//!   the process track; a kernel's slice and the CPU launch slice share a flow id
//!   (`TrackEvent.flow_ids` on the launch, `terminating_flow_ids` on the kernel).
//! - Call-stack samples as `PerfSample` packets (pid/tid of the sampled thread) with interned
//!   callstacks, and region-start backtraces as `metron: backtrace` instants on the thread
//!   track: `perfetto_samples.rs`.
//!
//! # Sequences, time and attribution
//! A thread's slices are a sequence of their own (`THREAD_SEQUENCE_BASE + thread index`), laid
//! out as the Perfetto SDK lays out its track events: the first packet clears the incremental
//! state and sets the defaults (the track: the thread's; the clock: the sequence-scoped
//! incremental clock, declared by a clock snapshot equal to `CLOCK_MONOTONIC`), so each later
//! packet carries the nanoseconds since the previous one and no track: an ordinary begin is 12
//! bytes, an end 10 (`Encoder::slice`). Everything else is on Metron's main sequence
//! (`METRON_SEQUENCE_ID`) with absolute `CLOCK_MONOTONIC` ns
//! (`trace_packet_defaults.timestamp_clock_id = 3`) and explicit track uuids. Events go on
//! the track of the thread that recorded them (never the flusher's). Event and debug
//! annotation names are interned per sequence.
//!
//! # Nothing lost, by counting
//! Nothing written is read back: the sink counts packets, track events and bytes as it hands
//! them to the file, and each write says whether all of it reached the file (`Tally`).
//!
//! # When it runs
//! Only off the hot path: on the flusher thread for every batch, and at the end of the run on
//! the thread that ends it. Metron starts the session on a thread of its own at its start
//! (`session_set_up`); the file is made at the first batch. Each batch's packets go to
//! the file (`write(2)`) as soon as they are encoded (and whenever the packet buffer holds
//! 1 MiB), so a SIGKILL keeps every batch the flusher handed over; the service's
//! packets are moved from the session into the file every half flush interval.

use super::perfetto_encode::{
    annotation, defaults, event, interned, packet, track, Encoder, FastMap, CLOCK_MONOTONIC,
    METRON_SEQUENCE_ID, THREAD_SEQUENCE_BASE,
};
use super::perfetto_session::{
    Ahead, FillPolicy, SeqState, Session, SessionConfig, SessionFrom, SetUpAhead, FIXED_IID_BASE,
};
use crate::annotation::AnnotationValue;
use crate::callsite::Callsite;
use crate::sink::{EmptyRegion, Event, Present, RunInfo, Sink, ThreadInfo};
use metron_components::{clock, Component, PageRss};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod categories;
mod finish;
mod process_tracks;
mod size_cap;
mod track_events;

pub use categories::{Categories, CATEGORY_NAMES};
pub use size_cap::cut_note;
use size_cap::SizeCap;
use track_events::counter;

pub use super::perfetto_session::on_library_thread_starting;
pub use super::perfetto_session::FillPolicy as TraceFillPolicy;
pub use super::perfetto_session::PerfettoLoss as TraceLoss;

/// Track uuid of the process.
pub const PROCESS_UUID: u64 = 1;
/// Track uuid of the process RSS counter.
pub const RSS_UUID: u64 = 2;
/// Thread tracks: this plus the thread's index.
pub const THREAD_UUID_BASE: u64 = 0x1_0000;
/// Counter tracks are numbered from here.
pub const COUNTER_UUID_BASE: u64 = 0x100_0000;
/// Reserved for GPU stream/queue tracks.
pub const GPU_UUID_BASE: u64 = 0x1000_0000;

/// `TracePacket.sequence_flags`.
const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;

/// Metron's own event names (interned above the call-site ids).
const IID_DROPPED: u64 = FIXED_IID_BASE + 1;
const IID_RUN_END: u64 = FIXED_IID_BASE + 2;
const NAME_DROPPED: &str = "metron: dropped records";
const NAME_RUN_END: &str = "metron: run end";

/// Debug annotation names: call-site ids for annotation keys; these above them.
const ANN_CLOSED_BY_METRON: u64 = FIXED_IID_BASE + 1;
const ANN_COUNT: u64 = FIXED_IID_BASE + 2;
const ANN_FIELD_BASE: u64 = FIXED_IID_BASE + 16;

/// Events encoded between checks of the packet buffer's size.
const EVENTS_PER_CALL: usize = 4096;
/// The packet buffer is appended to the file once it holds this many bytes.
const WRITE_BYTES: usize = 1 << 20;
/// RSS is sampled at most this often.
const RSS_PERIOD: Duration = Duration::from_millis(10);

/// How the trace is written.
#[derive(Clone, Debug)]
pub struct PerfettoConfig {
    /// File name inside the run folder (`METRON_TRACE_FILE`).
    pub file_name: String,
    /// Size of the Perfetto session buffer in bytes (`METRON_TRACE_BUFFER_SIZE`); raised to
    /// at least 16 × the per-thread segment. It holds only the service's packets.
    pub buffer_bytes: usize,
    /// What the session does when its buffer is full (`METRON_TRACE_FILL_POLICY`).
    pub fill_policy: FillPolicy,
    /// What goes to the trace (`METRON_TRACE_CATEGORIES`).
    pub categories: Categories,
    /// How often the file is brought up to date (`METRON_FLUSH_INTERVAL`; `None`: 1 s).
    pub write_interval: Option<Duration>,
    /// Bytes of one per-thread buffer segment (`METRON_BUFFER_SIZE`).
    pub segment_bytes: usize,
    /// The most bytes the trace file may take (`METRON_TRACE_MAX_SIZE`; `None`: no limit).
    /// Once the next event would leave too little room for the packets that close the trace,
    /// no more events are written: see [`SizeCap`].
    pub max_file_bytes: Option<u64>,
}

/// An annotation waiting for the end of its region.
enum Pending {
    I(i64),
    U(u64),
    F(f64),
    B(bool),
    S(String),
}

struct ThreadTrack {
    uuid: u64,
    name: String,
    described: bool,
    /// The thread's own sequence (`THREAD_SEQUENCE_BASE + index`): its slices, with the track
    /// from the sequence's defaults and delta timestamps.
    seq_id: u64,
    /// Interning state of that sequence (`fresh` until its first packet).
    seq: SeqState,
    /// The incremental clock of that sequence: the time of its latest packet.
    clock: u64,
    depth: u32,
    /// Slices begun and not yet ended in what was written (kept under a size limit only).
    open_written: u32,
    /// The latest timestamp written on the track (kept under a size limit only).
    last_ts: u64,
    /// (depth of the region it belongs to, key iid, key name, value)
    pending: Vec<(u32, u64, &'static str, Pending)>,
    dropped: u64,
}

/// What the sink wrote, for `metadata.json` and the numbers of `docs/src/performance.md`.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct TraceCounts {
    /// Slices begun.
    pub slices_begun: u64,
    /// Slices ended.
    pub slices_ended: u64,
    /// Instant marks.
    pub instants: u64,
    /// Counter values (including process RSS samples).
    pub counter_values: u64,
    /// `metron: dropped records` instants written.
    pub dropped_instants: u64,
    /// Records Metron dropped (sum of those instants' counts).
    pub records_dropped: u64,
    /// Track events written (all of the above and the run-end instant).
    pub track_events: u64,
    /// Times the session's packets were moved into the file.
    pub drains: u64,
    /// Nanoseconds spent encoding events (flusher time in this sink, file writes excluded).
    pub encode_ns: u64,
    /// Nanoseconds spent writing the file (the sink's packets, parsed back as they go, and
    /// the session's).
    pub drain_ns: u64,
}

/// The Perfetto trace sink.
pub struct PerfettoSink {
    config: PerfettoConfig,
    output_dir: PathBuf,
    pid: u32,
    exe: String,
    cmdline: String,
    session: Option<Session>,
    /// The session being started ahead on another thread ([`PerfettoSink::session_set_up`]).
    ahead: Option<Arc<SetUpAhead>>,
    /// The session the trace used was started ahead (`metadata.json`).
    started_ahead: bool,
    /// Why the session started ahead could not start (the trace is written without it).
    session_error: Option<String>,
    /// When the file got its first batch.
    file_started: Option<Instant>,
    failed: Option<String>,
    threads: FastMap<u64, ThreadTrack>,
    counter_tracks: FastMap<(u64, u32), u64>,
    next_counter_uuid: u64,
    process_described: bool,
    field_iids: HashMap<(usize, usize), (u64, &'static str)>,
    /// Per call site (by address): its bundle fields' annotation iids and names.
    site_fields: FastMap<usize, Arc<[(u64, &'static str)]>>,
    counts: TraceCounts,
    enc: Encoder,
    seq: SeqState,
    last_drain: Instant,
    last_rss: Option<Instant>,
    report: Option<Value>,
    scratch_names: Vec<(u64, &'static str)>,
    scratch_values: Vec<(u64, f64)>,
    category_error: Option<String>,
    /// Async slices: pairing across threads and their tracks (`perfetto_async.rs`).
    async_slices: super::perfetto_async::AsyncSlices,
    /// Call-stack samples and region backtraces (`perfetto_samples.rs`).
    samples: super::perfetto_samples::SampleEncoder,
    /// GPU streams, kernels, copies and API calls (`perfetto_gpu.rs`).
    gpu: super::perfetto_gpu::GpuTracks,
    /// `METRON_TRACE_MAX_SIZE` and the cut.
    cap: Option<SizeCap>,
    /// What went to the file, counted as it is written (nothing is read back).
    tally: Tally,
}

/// The sink's count of what it handed to the file: the proof that nothing was lost is that
/// every packet and track event encoded was in a write that reached the file.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    /// Packets and track events in writes so far (reached the file or lost).
    packets: u64,
    track_events: u64,
    bytes: u64,
    /// Those of them in writes that did not reach the file.
    packets_lost: u64,
    track_events_lost: u64,
}

impl PerfettoSink {
    /// A sink that writes `config.file_name` into `output_dir` (the run folder). Nothing
    /// Perfetto happens until the first batch arrives on the flusher thread, unless the
    /// session is started ahead ([`PerfettoSink::session_set_up`]).
    pub fn new(config: PerfettoConfig, output_dir: PathBuf) -> PerfettoSink {
        let cap = config.max_file_bytes.map(|limit| SizeCap {
            limit,
            ..SizeCap::default()
        });
        let exe = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "unknown".into());
        PerfettoSink {
            config,
            output_dir,
            pid: std::process::id(),
            exe,
            cmdline: std::env::args().collect::<Vec<_>>().join(" "),
            session: None,
            ahead: None,
            started_ahead: false,
            session_error: None,
            file_started: None,
            failed: None,
            threads: FastMap::default(),
            counter_tracks: FastMap::default(),
            next_counter_uuid: COUNTER_UUID_BASE,
            process_described: false,
            field_iids: HashMap::new(),
            site_fields: FastMap::default(),
            counts: TraceCounts::default(),
            enc: Encoder::default(),
            seq: SeqState::default(),
            last_drain: Instant::now(),
            last_rss: None,
            report: None,
            scratch_names: Vec::new(),
            scratch_values: Vec::new(),
            category_error: None,
            async_slices: Default::default(),
            samples: Default::default(),
            gpu: Default::default(),
            cap,
            tally: Tally::default(),
        }
    }

    /// The sink describing another process than this one (its pid, name and command line on
    /// the process track): for `metron sample --pid`, which writes the trace of the process it
    /// sampled from outside.
    pub fn for_process(mut self, pid: u32, exe: &str, cmdline: &str) -> PerfettoSink {
        self.pid = pid;
        self.exe = exe.to_string();
        self.cmdline = cmdline.to_string();
        self
    }

    /// The sink naming GPU devices, streams and launch regions, and drawing notes, from `gpu`
    /// (filled by the GPU glue; without it the trace knows none).
    pub fn with_gpu_context(mut self, gpu: crate::sink::gpu::GpuContext) -> PerfettoSink {
        self.gpu.context = gpu;
        self
    }

    /// The sink with `config`, tracing the categories of the list `categories` (the
    /// `METRON_TRACE_CATEGORIES` grammar; `config.categories` is replaced): an unknown category
    /// is reported on stderr (and in `metadata.json`) and everything is traced.
    pub fn with_category_list(
        mut config: PerfettoConfig,
        categories: &str,
        output_dir: PathBuf,
    ) -> Self {
        let (categories, category_error) = match Categories::parse(categories) {
            Ok(c) => (c, None),
            Err(e) => {
                eprintln!("metron: {e}; tracing all categories");
                (Categories::ALL, Some(e))
            }
        };
        config.categories = categories;
        let mut sink = PerfettoSink::new(config, output_dir);
        sink.category_error = category_error;
        sink
    }

    /// The effective session buffer size in bytes.
    fn buffer_bytes(&self) -> usize {
        self.config
            .buffer_bytes
            .max(16 * self.config.segment_bytes)
            .min(u32::MAX as usize / 2 * 1024)
    }

    fn write_interval(&self) -> Duration {
        self.config.write_interval.unwrap_or(Duration::from_secs(1)) / 2
    }

    /// The in-process session's configuration, from the sink's.
    fn session_config(&self) -> SessionConfig {
        SessionConfig {
            buffer_kb: (self.buffer_bytes() / 1024) as u32,
            fill_policy: self.config.fill_policy,
            max_file_bytes: self.config.max_file_bytes,
        }
    }

    /// The Perfetto session's start, to run on a thread the caller makes (Metron's runtime
    /// does at its start): the SDK's set-up (1 to 3 ms on the development VM) is then done off
    /// the flusher, once the trace has its first batch and `after` has passed, when the
    /// program's start-up burst is over (see `SetUpAhead`). Neither the flusher nor the file
    /// waits for it; a run that ends before it began has no session (its trace leads with
    /// Metron's own clock snapshot). Without a call, or if the thread never runs it, the first
    /// batch starts the session as before.
    pub fn session_set_up(&mut self, after: Duration) -> impl FnOnce() + Send + 'static {
        let ahead = SetUpAhead::new();
        self.ahead = Some(Arc::clone(&ahead));
        ahead.runner(self.session_config(), after)
    }

    /// Makes the file on first use, with the session when it is there; false if it cannot
    /// be made (reported once, at finish).
    fn ensure_session(&mut self, output_dir: Option<&Path>) -> bool {
        if self.session.is_some() {
            return true;
        }
        if self.failed.is_some() {
            return false;
        }
        let dir = output_dir.unwrap_or(&self.output_dir).to_path_buf();
        let config = self.session_config();
        let from = match self.ahead.as_ref().map(|a| {
            a.want();
            a.poll()
        }) {
            None | Some(Ahead::Unrun) => SessionFrom::Now,
            Some(Ahead::Ready(Ok(prepared))) => SessionFrom::Ahead(prepared),
            Some(Ahead::Ready(Err(e))) => {
                self.session_error = Some(e);
                SessionFrom::Later
            }
            Some(Ahead::Pending | Ahead::Gone) => SessionFrom::Later,
        };
        self.started_ahead = matches!(from, SessionFrom::Ahead(_));
        crate::sinks::space::reserve_if_short(&dir);
        match Session::start(&dir.join(&self.config.file_name), &config, from) {
            Ok(s) => {
                self.session = Some(s);
                self.file_started = Some(Instant::now());
                self.last_drain = Instant::now();
                // Leads the sink's packets: the service's may come later, or never.
                self.enc.clock_snapshot(METRON_SEQUENCE_ID);
                true
            }
            Err(e) => {
                self.failed = Some(e);
                false
            }
        }
    }

    /// Gives the file the session started ahead once it is ready; at the end of the run
    /// (`last`), waits for a set-up under way and cancels one that has not begun.
    fn join_session(&mut self, last: bool) {
        let Some(ahead) = self.ahead.as_ref() else {
            return;
        };
        let config = self.session_config();
        let Some(session) = self.session.as_mut() else {
            return;
        };
        if session.has_service() {
            return;
        }
        let answer = if last { ahead.finish() } else { ahead.poll() };
        match answer {
            Ahead::Ready(Ok(prepared)) => {
                session.attach(prepared);
                self.started_ahead = true;
            }
            Ahead::Ready(Err(e)) => self.session_error = Some(e),
            // The set-up thread could not run: started here, as without one.
            Ahead::Unrun => match Session::prepare(&config) {
                Ok(prepared) => session.attach(prepared),
                Err(e) => self.session_error = Some(e),
            },
            Ahead::Pending | Ahead::Gone => {}
        }
    }

    /// `metadata.json`'s account of the session: when it was ready and when the file got its
    /// first batch, in ms after the session was offered (the run's start).
    fn session_report(&self) -> Value {
        let ms = |d: Duration| (d.as_secs_f64() * 1e6).round() / 1e3;
        let ahead = self.ahead.as_ref();
        json!({
            "ready_ms": ahead.and_then(|a| a.ready_after()).map(ms),
            "file_started_ms": ahead.zip(self.file_started).map(|(a, at)| ms(a.since_offer(at))),
            "service": self.session.as_ref().is_some_and(Session::has_service),
            "error": self.session_error,
        })
    }

    fn thread_track(&mut self, thread: &ThreadInfo) -> &mut ThreadTrack {
        self.threads
            .entry(thread.index)
            .or_insert_with(|| ThreadTrack {
                uuid: THREAD_UUID_BASE + thread.index,
                name: thread.name.clone(),
                described: false,
                seq_id: THREAD_SEQUENCE_BASE + thread.index,
                seq: SeqState::default(),
                clock: 0,
                depth: 0,
                open_written: 0,
                last_ts: 0,
                pending: Vec::new(),
                dropped: 0,
            })
    }

    /// The (iid, `component.field` name) of every bundle field of `site`, in value order.
    fn site_fields(&mut self, site: &'static Callsite) -> Arc<[(u64, &'static str)]> {
        let key = site as *const Callsite as usize;
        if let Some(fields) = self.site_fields.get(&key) {
            return Arc::clone(fields);
        }
        let mut fields = Vec::new();
        for (c, info) in site.components.iter().enumerate() {
            for f in 0..info.fields.len() {
                fields.push(self.field_iid(c, f, site));
            }
        }
        let fields: Arc<[(u64, &'static str)]> = fields.into();
        self.site_fields.insert(key, Arc::clone(&fields));
        fields
    }

    fn field_iid(
        &mut self,
        component: usize,
        field: usize,
        site: &'static Callsite,
    ) -> (u64, &'static str) {
        let next = ANN_FIELD_BASE + self.field_iids.len() as u64;
        let info = &site.components[component];
        let key = (
            info.name.as_ptr() as usize,
            info.named_fields()[field].name.as_ptr() as usize,
        );
        *self.field_iids.entry(key).or_insert_with(|| {
            let name: &'static str = Box::leak(
                format!("{}.{}", info.name, info.named_fields()[field].name).into_boxed_str(),
            );
            (next, name)
        })
    }

    /// Encodes one thread's events into the packet buffer, `EVENTS_PER_CALL` at a time,
    /// appending the buffer to the file whenever it holds [`WRITE_BYTES`].
    fn write(&mut self, thread: &ThreadInfo, events: &[Event<'_>]) {
        let mut started = Instant::now();
        for chunk in events.chunks(EVENTS_PER_CALL) {
            self.write_chunk(thread, chunk);
            if self.enc.buf.len() >= WRITE_BYTES {
                self.counts.encode_ns += started.elapsed().as_nanos() as u64;
                self.write_out();
                started = Instant::now();
            }
        }
        self.counts.encode_ns += started.elapsed().as_nanos() as u64;
    }

    /// A batch is encoded: the process's memory sampled, and its packets to the kernel.
    fn end_batch(&mut self) {
        self.sample_process(false);
        if self.last_drain.elapsed() >= self.write_interval() {
            self.drain();
        } else {
            // Every batch goes to the kernel as soon as it is encoded.
            self.write_out();
        }
    }

    /// Metron's main sequence is started and the process described (what
    /// [`PerfettoSink::ensure_sequence`] does first).
    fn seq_ready(&self) -> bool {
        !self.seq.fresh && self.process_described
    }

    /// Appends the encoded packets to the file (timed as drain time).
    fn write_out(&mut self) {
        if self.enc.buf.is_empty() {
            return;
        }
        let started = Instant::now();
        let packets = self.enc.packets - self.tally.packets;
        let events = self.counts.track_events - self.tally.track_events;
        self.tally.packets = self.enc.packets;
        self.tally.track_events = self.counts.track_events;
        self.tally.bytes += self.enc.buf.len() as u64;
        let reached = match self.session.as_mut() {
            Some(session) => {
                let reached = session.write_own(&self.enc.buf);
                if let Some(cap) = self.cap.as_mut() {
                    cap.file_bytes = session.output().bytes;
                }
                reached
            }
            None => false,
        };
        if !reached {
            self.tally.packets_lost += packets;
            self.tally.track_events_lost += events;
        }
        self.enc.buf.clear();
        self.counts.drain_ns += started.elapsed().as_nanos() as u64;
    }

    /// Starts Metron's sequence if this is its first packet.
    fn ensure_sequence(&mut self, ts: u64) {
        if self.seq.fresh {
            start_sequence(&mut self.enc, ts);
            self.seq.fresh = false;
        }
        if !self.process_described {
            self.describe_process(ts);
        }
    }

    fn write_chunk(&mut self, thread: &ThreadInfo, events: &[Event<'_>]) {
        if self.is_cut() {
            self.left_out(events.len() as u64);
            return;
        }
        let first_ts = events.iter().map(event_ts).next().unwrap_or(0);
        self.ensure_sequence(first_ts);
        let cats = self.config.categories;
        let track = {
            let t = self.thread_track(thread);
            if t.name != thread.name {
                t.name = thread.name.clone();
                t.described = false;
            }
            t.uuid
        };
        if !self.threads[&thread.index].described {
            self.describe_thread(thread, first_ts);
        }
        {
            let t = self.threads.get_mut(&thread.index).expect("made above");
            if t.seq.fresh {
                self.enc
                    .start_thread_sequence(t.seq_id, t.uuid, &mut t.clock, first_ts);
                t.seq.fresh = false;
            }
        }
        if self.cap.is_none() {
            let mut i = 0;
            while i < events.len() {
                i += self.ordinary_slices(thread, cats, &events[i..]);
                if let Some(event) = events.get(i) {
                    self.event(thread, track, cats, event);
                    i += 1;
                }
            }
            return;
        }
        for (i, event) in events.iter().enumerate() {
            let mut mark = self.mark();
            mark.clock = Some(self.threads[&thread.index].clock);
            self.event(thread, track, cats, event);
            if !self.keep(thread, event, mark) {
                self.left_out((events.len() - i) as u64);
                return;
            }
        }
    }

    /// Encodes the ordinary begins and ends at the start of `events` (one thread's), the
    /// common case, with one lookup of the thread's track for all of them: a begin whose name
    /// the thread's sequence already has, an end with no values, annotations or note. Returns
    /// how many it encoded; the caller hands the next event to [`PerfettoSink::event`].
    fn ordinary_slices(
        &mut self,
        thread: &ThreadInfo,
        cats: Categories,
        events: &[Event<'_>],
    ) -> usize {
        if !cats.regions {
            return 0;
        }
        let Some(t) = self.threads.get_mut(&thread.index) else {
            return 0;
        };
        let enc = &mut self.enc;
        // The thread's state in locals for the run (stored back once): the loop's only
        // stores are the packet bytes.
        let (seq, mut clock, mut depth) = (t.seq_id, t.clock, t.depth);
        // An annotation waiting for a region at this depth or deeper makes that region's end
        // go through `event` (the pending list does not change inside this loop).
        let pending_from = t.pending.last().map_or(u32::MAX, |p| p.0);
        let values_ignored = !cats.values;
        // At most 14 bytes per ordinary slice packet: no capacity check takes a slow turn.
        enc.buf.reserve(events.len() * 14);
        let (mut begun, mut ended) = (0u64, 0u64);
        let mut known = u64::MAX;
        let mut i = 0;
        while i < events.len() {
            match events[i] {
                Event::Begin { ts_ns, site } if ts_ns >= clock => {
                    let iid = u64::from(site.id());
                    // A loop opens the same region again and again: its name was checked.
                    if iid != known {
                        if !t.seq.has_event_name(iid) {
                            break;
                        }
                        known = iid;
                    }
                    // Its end next, ordinary too (a region with nothing inside): both
                    // packets in one write.
                    if let Some(&Event::End {
                        ts_ns: end_ns,
                        values,
                        closed_by_metron: false,
                        ..
                    }) = events.get(i + 1)
                    {
                        if end_ns >= ts_ns
                            && (values.is_empty() || values_ignored)
                            && (pending_from == u32::MAX || pending_from <= depth)
                        {
                            enc.slice_pair(seq, &mut clock, ts_ns, end_ns, iid);
                            begun += 1;
                            ended += 1;
                            i += 2;
                            continue;
                        }
                    }
                    enc.slice(seq, &mut clock, ts_ns, Some(iid));
                    depth += 1;
                    begun += 1;
                }
                Event::End {
                    ts_ns,
                    values,
                    closed_by_metron: false,
                    ..
                } if ts_ns >= clock
                    && (values.is_empty() || values_ignored)
                    && (pending_from == u32::MAX || pending_from < depth) =>
                {
                    enc.slice(seq, &mut clock, ts_ns, None);
                    depth = depth.saturating_sub(1);
                    ended += 1;
                }
                _ => break,
            }
            i += 1;
        }
        t.clock = clock;
        t.depth = depth;
        enc.packets += begun + ended;
        self.counts.slices_begun += begun;
        self.counts.slices_ended += ended;
        self.counts.track_events += begun + ended;
        (begun + ended) as usize
    }

    /// Encodes the empty regions at the start of `regions` (one thread's, under one parent)
    /// as [`PerfettoSink::ordinary_slices`] encodes a begin followed by its end: once the
    /// thread's track and sequence are set up, with no size limit, a name the sequence already
    /// has, no clock step back and no annotation waiting for a region this deep. Returns how
    /// many it encoded; the caller sends the next one through the events' path.
    fn ordinary_regions(&mut self, thread: &ThreadInfo, regions: &[EmptyRegion]) -> usize {
        if self.cap.is_some() || !self.seq_ready() || !self.config.categories.regions {
            return 0;
        }
        let Some(t) = self.threads.get_mut(&thread.index) else {
            return 0;
        };
        if !t.described || t.seq.fresh || t.name != thread.name {
            return 0;
        }
        let enc = &mut self.enc;
        let (seq, mut clock, depth) = (t.seq_id, t.clock, t.depth);
        if t.pending.last().is_some_and(|p| p.0 > depth) {
            return 0;
        }
        // At most 28 bytes per region (two packets with two-byte deltas, or the general
        // writer's longest): no capacity check takes a slow turn.
        enc.buf.reserve(regions.len() * 28);
        let mut known = u64::MAX;
        let mut n = 0;
        for r in regions {
            let iid = u64::from(r.site.id());
            if iid != known {
                if !t.seq.has_event_name(iid) {
                    break;
                }
                known = iid;
            }
            if r.begin_ns < clock || r.end_ns < r.begin_ns {
                break;
            }
            enc.slice_pair(seq, &mut clock, r.begin_ns, r.end_ns, iid);
            n += 1;
        }
        t.clock = clock;
        let n64 = n as u64;
        enc.packets += 2 * n64;
        self.counts.slices_begun += n64;
        self.counts.slices_ended += n64;
        self.counts.track_events += 2 * n64;
        n
    }

    /// Appends the encoded packets and the service's packets to the file, and hands the
    /// file's bytes to the kernel.
    fn drain(&mut self) {
        self.write_out();
        self.join_session(false);
        if let Some(dir) = self.session.as_ref().and_then(|s| s.path.parent()) {
            crate::sinks::space::reserve_if_large(dir, self.tally.bytes);
        }
        let Some(session) = self.session.as_mut() else {
            return;
        };
        let started = Instant::now();
        session.drain();
        if let Some(cap) = self.cap.as_mut() {
            cap.file_bytes = session.output().bytes;
        }
        self.last_drain = Instant::now();
        self.counts.drains += 1;
        self.counts.drain_ns += started.elapsed().as_nanos() as u64;
    }

    /// What the sink reports into `metadata.json` (after `finish`).
    pub fn report(&self) -> Option<&Value> {
        self.report.as_ref()
    }
}

fn event_ts(e: &Event<'_>) -> u64 {
    match *e {
        Event::Begin { ts_ns, .. }
        | Event::End { ts_ns, .. }
        | Event::Instant { ts_ns, .. }
        | Event::Counter { ts_ns, .. }
        | Event::Annotation { ts_ns, .. }
        | Event::ThreadName { ts_ns, .. }
        | Event::Dropped { ts_ns, .. }
        | Event::Sample { ts_ns, .. }
        | Event::AsyncBegin { ts_ns, .. }
        | Event::AsyncEnd { ts_ns, .. } => ts_ns,
    }
}

/// The first packet of Metron's sequence: clears incremental state and declares the clock
/// (with the two flags the service sets on a writer's first packet).
fn start_sequence(e: &mut Encoder, ts: u64) {
    let p = e.packet(ts, SEQ_INCREMENTAL_STATE_CLEARED);
    e.uint(packet::PREVIOUS_PACKET_DROPPED, 1);
    e.uint(packet::FIRST_PACKET_ON_SEQUENCE, 1);
    e.uint(packet::TIMESTAMP_CLOCK_ID, CLOCK_MONOTONIC);
    let d = e.open(packet::TRACE_PACKET_DEFAULTS);
    e.uint(defaults::TIMESTAMP_CLOCK_ID, CLOCK_MONOTONIC);
    e.close(d);
    e.end_packet(p);
}

/// `interned_data { event_names { iid name } }`.
fn intern_event_name(e: &mut Encoder, iid: u64, name: &str) {
    let d = e.open(packet::INTERNED_DATA);
    let n = e.open(interned::EVENT_NAMES);
    e.uint(interned::IID, iid);
    e.bytes(interned::NAME, name.as_bytes());
    e.close(n);
    e.close(d);
}

impl Sink for PerfettoSink {
    fn name(&self) -> &str {
        "trace"
    }

    fn events(&mut self, thread: &ThreadInfo, events: &[Event<'_>]) {
        if events.is_empty() || !self.ensure_session(None) {
            return;
        }
        self.write(thread, events);
        self.end_batch();
    }

    fn batch(&mut self, thread: &ThreadInfo, events: &[Event<'_>], present: Present) {
        if !present.continues {
            if events.is_empty() {
                // The batch's last call, after a run of empty regions: its packets go out.
                if self.session.is_some() {
                    self.end_batch();
                }
                return;
            }
            self.events(thread, events);
        } else if !events.is_empty() && self.ensure_session(None) {
            // A part of a batch: its packets wait in the buffer for the batch's last part
            // (or the buffer's WRITE_BYTES), so a batch is still one write.
            self.write(thread, events);
        }
    }

    fn empty_regions(&mut self, thread: &ThreadInfo, regions: &[EmptyRegion]) {
        if regions.is_empty() || !self.ensure_session(None) {
            return;
        }
        if self.cap.is_some() || !self.config.categories.regions {
            // Under a size limit each packet is checked against it: the events' path.
            let events: Vec<Event<'static>> =
                regions.iter().flat_map(EmptyRegion::events).collect();
            self.write(thread, &events);
            return;
        }
        let mut started = Instant::now();
        let mut done = 0;
        while done < regions.len() {
            done += self.ordinary_regions(thread, &regions[done..]);
            if let Some(r) = regions.get(done) {
                // One the short way does not take (the first of a thread or of a name, ...):
                // through the events' path, which sets up what the next ones need.
                self.write_chunk(thread, &r.events());
                done += 1;
            }
            if self.enc.buf.len() >= WRITE_BYTES {
                self.counts.encode_ns += started.elapsed().as_nanos() as u64;
                self.write_out();
                started = Instant::now();
            }
        }
        self.counts.encode_ns += started.elapsed().as_nanos() as u64;
    }

    fn gpu_records(&mut self, records: &[crate::sink::GpuRecord]) {
        if records.is_empty() || !self.ensure_session(None) {
            return;
        }
        self.write_gpu(records);
        self.end_batch();
    }

    fn writes_while_running(&self) -> bool {
        true
    }

    fn output_dir_changed(&mut self, dir: &Path) {
        if self.session.is_none() {
            self.output_dir = dir.to_path_buf();
        }
    }

    fn finish(&mut self, run: &RunInfo) -> std::io::Result<Vec<PathBuf>> {
        self.finish_trace(run)
    }

    fn metadata(&self) -> Option<Value> {
        self.report.clone()
    }
}

#[cfg(test)]
mod tests;
