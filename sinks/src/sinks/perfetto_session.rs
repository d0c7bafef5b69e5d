//! The Perfetto side of the trace sink: the in-process producer and tracing session, the
//! `dev.metron.trace` data source, and the output that `trace.pftrace` is written through.
//!
//! The sink encodes its own packets (`perfetto_encode`) and appends them to the file through
//! [`Session::write_own`]; the session contributes the service's packets (clock snapshots,
//! trace config, system info, trace stats), which [`Session::drain`] moves from its buffer into
//! the same file while the run goes on.
//!
//! Everything here runs off the hot path (the flusher thread, and at the end of the run the
//! thread that calls `finish`).
//!
//! # Loss detection
//! The sink's own packets are not read back: it counts what it encoded (packets, track
//! events, bytes) and what reached the file in whole writes; a write that fails or that the
//! size limit's backstop leaves out is counted with the packets it held ([`Output::own_lost`]).
//! The service's packets (a few per second) pass through a [`Scan`], which reads the
//! top-level framing and, per packet, the few fields that reveal loss: the service's
//! `TraceStats` (chunks overwritten or discarded, writer packet loss, ABI violations, failed
//! patches) and `previous_packet_dropped` on a packet that is not the first of its sequence;
//! it also counts service packets that claim one of Metron's sequence ids (there must be none).

use perfetto_sdk::data_source::{
    Clear, DataSource, DataSourceArgsBuilder, DataSourceBufferExhaustedPolicy,
};
use perfetto_sdk::heap_buffer::HeapBuffer;
use perfetto_sdk::pb_msg::{PbMsg, PbMsgWriter};
use perfetto_sdk::producer::{Backends, Producer, ProducerInitArgsBuilder};
use perfetto_sdk::protos::config::data_source_config::DataSourceConfig;
use perfetto_sdk::protos::config::trace_config::{
    BufferConfigFillPolicy, TraceConfig, TraceConfigBufferConfig, TraceConfigDataSource,
};
use perfetto_sdk::tracing_session::TracingSession;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use super::perfetto_encode::{is_metron_sequence, FastSet};
use metron_wire::{read_varint, tag as tag_of, Malformed, Value, LEN, TRACE_PACKET};

/// The data source Metron writes its packets through.
pub(crate) const DATA_SOURCE_NAME: &str = "dev.metron.trace";

/// Size of the shared memory between the producer and the in-process service (the SDK's
/// maximum is 32 MiB). Large, so a burst from the flusher does not stall on it.
const SHMEM_KB: u32 = 16 * 1024;

/// How long a flush of the session may take before it is reported as failed.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(10);

/// Event names with ids below this are call-site ids; Metron's own names sit above it.
pub(crate) const FIXED_IID_BASE: u64 = 1 << 24;

/// Interning state of Metron's packet sequence (kept by the sink): which names the sequence
/// has already emitted. A fresh one means the sequence starts over
/// (`SEQ_INCREMENTAL_STATE_CLEARED` and the packet defaults are written first).
pub(crate) struct SeqState {
    /// True until the sequence's first packet (clear + defaults) is written.
    pub(crate) fresh: bool,
    /// Event names (call-site ids) already interned, as a bit per id.
    site_names: Vec<u64>,
    /// Event names above [`FIXED_IID_BASE`] already interned.
    other_names: FastSet<u64>,
    /// Debug annotation names below [`FIXED_IID_BASE`] (annotation keys' call-site ids)
    /// already interned, as a bit per id.
    site_annotation_names: Vec<u64>,
    /// Debug annotation names from [`FIXED_IID_BASE`] (bundle fields, Metron's own) already
    /// interned, as a bit per `iid - FIXED_IID_BASE`.
    fixed_annotation_names: Vec<u64>,
    /// Any other debug annotation names already interned.
    annotation_names: FastSet<u64>,
}

impl Default for SeqState {
    fn default() -> Self {
        SeqState {
            fresh: true,
            site_names: Vec::new(),
            other_names: FastSet::default(),
            site_annotation_names: Vec::new(),
            fixed_annotation_names: Vec::new(),
            annotation_names: FastSet::default(),
        }
    }
}

impl Clear for SeqState {}

impl SeqState {
    /// Marks event name `iid` as emitted; true if it was not yet (the caller emits it now).
    #[inline]
    pub(crate) fn intern_event_name(&mut self, iid: u64) -> bool {
        if iid < FIXED_IID_BASE {
            set_bit(&mut self.site_names, iid)
        } else {
            self.other_names.insert(iid)
        }
    }

    /// True when event name `iid` (a call-site id) was already emitted on this sequence.
    #[inline]
    pub(crate) fn has_event_name(&self, iid: u64) -> bool {
        let (word, bit) = ((iid / 64) as usize, iid % 64);
        iid < FIXED_IID_BASE
            && self
                .site_names
                .get(word)
                .is_some_and(|w| w & (1 << bit) != 0)
    }

    /// Forgets which names were emitted, so that every later packet interns the names it uses
    /// again (the trace's cut at `METRON_TRACE_MAX_SIZE` may leave out a packet that interned
    /// a name; emitting an iid again with the same name is valid).
    pub(crate) fn forget_interned(&mut self) {
        *self = SeqState {
            fresh: self.fresh,
            ..SeqState::default()
        };
    }

    /// Marks debug annotation name `iid` as emitted; true if it was not yet.
    #[inline]
    pub(crate) fn intern_annotation_name(&mut self, iid: u64) -> bool {
        if iid < FIXED_IID_BASE {
            set_bit(&mut self.site_annotation_names, iid)
        } else if iid - FIXED_IID_BASE < FIXED_IID_BASE {
            set_bit(&mut self.fixed_annotation_names, iid - FIXED_IID_BASE)
        } else {
            self.annotation_names.insert(iid)
        }
    }
}

/// Sets bit `i` of `bits` (growing it); true if it was not set.
#[inline]
pub(crate) fn set_bit(bits: &mut Vec<u64>, i: u64) -> bool {
    let (word, bit) = ((i / 64) as usize, i % 64);
    if word >= bits.len() {
        bits.resize(word + 1, 0);
    }
    let new = bits[word] & (1 << bit) == 0;
    bits[word] |= 1 << bit;
    new
}

/// The registered data source (one per process; Perfetto's global state cannot be torn down).
pub(crate) type MetronDataSource = DataSource<'static, SeqState>;

static DATA_SOURCE: OnceLock<Result<MetronDataSource, String>> = OnceLock::new();

/// `perfetto::base::LogMessageCallbackArgs` (perfetto_c.cc: `enum LogLev` is an `int`).
#[repr(C)]
#[derive(Clone, Copy)]
struct LogArgs {
    level: std::ffi::c_int,
    line: std::ffi::c_int,
    filename: *const std::ffi::c_char,
    message: *const std::ffi::c_char,
}

/// `perfetto::base::kLogError`.
const LOG_ERROR: std::ffi::c_int = 3;

extern "C" {
    /// `perfetto::base::SetLogMessageCallback` of the vendored amalgamation (a C++ symbol the
    /// C API does not wrap; linking fails loudly if a new perfetto-sdk-sys renames it).
    #[link_name = "_ZN8perfetto4base21SetLogMessageCallbackEPFvNS0_22LogMessageCallbackArgsEE"]
    fn perfetto_set_log_message_callback(callback: Option<extern "C" fn(LogArgs)>);
}

/// Errors Perfetto logged during the run (each also printed on stderr).
pub(crate) static PERFETTO_ERRORS: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(0);

/// Keeps Perfetto's informational lines ("Configured tracing session ...") off the user's
/// stderr and prints its errors as `metron: perfetto: ...`. Runs on Perfetto's threads; it
/// cannot panic (no formatting that can fail is unwrapped).
extern "C" fn perfetto_log(args: LogArgs) {
    if args.level < LOG_ERROR || args.message.is_null() {
        return;
    }
    PERFETTO_ERRORS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: Perfetto passes a NUL-terminated message that lives for the duration of the
    // call (checked non-null above).
    let message = unsafe { std::ffi::CStr::from_ptr(args.message) }.to_string_lossy();
    let _ = writeln!(std::io::stderr(), "metron: perfetto: {message}");
}

/// What the runtime lent to be called before the Perfetto SDK starts its threads (see
/// [`on_library_thread_starting`]).
static LIBRARY_THREAD_STARTING: OnceLock<fn()> = OnceLock::new();

/// Lends the call that tells the sampler a library thread is about to start, so that the
/// Perfetto SDK's muxer thread does not take a program thread's sampling number. The runtime
/// lends it before it makes the trace sink; only the first call counts.
pub fn on_library_thread_starting(hook: fn()) {
    let _ = LIBRARY_THREAD_STARTING.set(hook);
}

/// Starts the in-process backend and registers the data source, once per process.
pub(crate) fn data_source() -> Result<&'static MetronDataSource, String> {
    DATA_SOURCE
        .get_or_init(|| {
            // SAFETY: called once, before the producer starts Perfetto's threads (the
            // callback store is an atomic, but Perfetto asks for it to be set before use);
            // `perfetto_log` has the `void(LogMessageCallbackArgs)` signature, see `LogArgs`.
            unsafe { perfetto_set_log_message_callback(Some(perfetto_log)) };
            let args = ProducerInitArgsBuilder::new()
                .backends(Backends::IN_PROCESS)
                .shmem_size_hint_kb(SHMEM_KB);
            // Its muxer thread must not take a program thread's sampling number.
            if let Some(hook) = LIBRARY_THREAD_STARTING.get() {
                hook();
            }
            Producer::init(args.build());
            let mut ds = MetronDataSource::new_with_incremental_state_type();
            // Stall (then drop, counted) when the shared memory is full rather than drop at
            // once: the flusher can wait, the hot path never writes here.
            let ds_args = DataSourceArgsBuilder::new()
                .buffer_exhausted_policy(DataSourceBufferExhaustedPolicy::StallAndDrop);
            ds.register(DATA_SOURCE_NAME, ds_args.build())
                .map_err(|e| format!("cannot register the Perfetto data source: {e}"))?;
            Ok(ds)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// What to do when the session's buffer is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FillPolicy {
    /// Keep the oldest data, drop new chunks (counted as `chunks_discarded`).
    Discard,
    /// Overwrite the oldest unread data (counted as `chunks_overwritten`).
    RingBuffer,
}

/// Perfetto's own loss counters, as the service reported them in the trace.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PerfettoLoss {
    /// `BufferStats.chunks_overwritten` (ring buffer wrapped over unread data).
    pub chunks_overwritten: u64,
    /// `BufferStats.chunks_discarded` (buffer full, discard policy).
    pub chunks_discarded: u64,
    /// `BufferStats.trace_writer_packet_loss` (writer could not get a chunk).
    pub trace_writer_packet_loss: u64,
    /// `BufferStats.abi_violations`.
    pub abi_violations: u64,
    /// `BufferStats.patches_failed`.
    pub patches_failed: u64,
    /// `TraceStats.chunks_discarded` (service-wide).
    pub service_chunks_discarded: u64,
    /// `TraceStats.flushes_failed`.
    pub flushes_failed: u64,
    /// Packets flagged `previous_packet_dropped` that were not the first of their sequence.
    pub packets_after_a_drop: u64,
}

impl PerfettoLoss {
    /// True when any counter shows loss.
    pub fn any(&self) -> bool {
        self.chunks_overwritten
            + self.chunks_discarded
            + self.trace_writer_packet_loss
            + self.abi_violations
            + self.patches_failed
            + self.service_chunks_discarded
            + self.flushes_failed
            + self.packets_after_a_drop
            > 0
    }
}

/// Streaming reader of the trace bytes the session returns (see the module docs).
#[derive(Default)]
pub(crate) struct Scan {
    carry: Vec<u8>,
    /// Top-level packets seen.
    pub(crate) packets: u64,
    /// Packets with a `track_event`.
    pub(crate) track_events: u64,
    /// Latest `TraceStats` seen.
    pub(crate) loss: PerfettoLoss,
    /// Framing that did not parse.
    pub(crate) malformed: u64,
    /// Packets whose `trusted_packet_sequence_id` is one of Metron's own sequences.
    pub(crate) own_sequence: u64,
}

/// Calls `f(field, varint_value, bytes)` for each varint and length-delimited field of `msg`
/// (fixed-width fields are skipped); false if the message does not parse (the fields before
/// the malformed one have been seen).
#[inline]
fn fields<'m>(msg: &'m [u8], mut f: impl FnMut(u32, u64, &'m [u8])) -> bool {
    for field in metron_wire::fields(msg) {
        match field {
            Ok((n, Value::Varint(v))) => f(n, v, &[]),
            Ok((n, Value::Len(bytes))) => f(n, 0, bytes),
            Ok((_, Value::Fixed64(_) | Value::Fixed32(_))) => {}
            Err(_) => return false,
        }
    }
    true
}

impl Scan {
    /// Feeds bytes of the serialized `Trace` (any split).
    pub(crate) fn feed(&mut self, data: &[u8]) {
        if self.carry.is_empty() {
            let used = self.packets_in(data);
            self.carry.extend_from_slice(&data[used..]);
        } else {
            let mut buf = std::mem::take(&mut self.carry);
            buf.extend_from_slice(data);
            let used = self.packets_in(&buf);
            buf.drain(..used);
            self.carry = buf;
        }
    }

    /// Bytes left over that never formed a whole packet.
    pub(crate) fn leftover(&self) -> usize {
        self.carry.len()
    }

    /// Reads whole packets from `buf`; returns the bytes consumed.
    fn packets_in(&mut self, buf: &[u8]) -> usize {
        let mut pos = 0;
        loop {
            let start = pos;
            // A varint cut at the end of the piece is completed by the next one; one over ten
            // bytes is as corrupt as a tag that is not `Trace.packet`.
            let tag = match read_varint(buf, &mut pos) {
                Ok(tag) => tag,
                Err(e) if e.what == Malformed::VarintTruncated => return start,
                Err(_) => u64::MAX,
            };
            if tag != tag_of(TRACE_PACKET, LEN) {
                // Not `Trace.packet`: the stream is corrupt; skip the rest of this piece.
                self.malformed += 1;
                return buf.len();
            }
            let len = match read_varint(buf, &mut pos) {
                Ok(len) => len,
                Err(e) if e.what == Malformed::VarintTruncated => return start,
                Err(_) => {
                    self.malformed += 1;
                    return buf.len();
                }
            };
            let end = pos.saturating_add(len as usize);
            if end > buf.len() {
                return start;
            }
            self.packet(&buf[pos..end]);
            pos = end;
        }
    }

    fn packet(&mut self, packet: &[u8]) {
        self.packets += 1;
        let mut track_event = false;
        let mut dropped = false;
        let mut first = false;
        let mut stats: Option<&[u8]> = None;
        let mut own = false;
        let ok = fields(packet, |field, v, bytes| match field {
            10 => own = is_metron_sequence(v),
            11 => track_event = true,
            42 => dropped = v != 0,
            87 => first = v != 0,
            35 => stats = Some(bytes),
            _ => {}
        });
        if !ok {
            self.malformed += 1;
        }
        if track_event {
            self.track_events += 1;
        }
        if own {
            self.own_sequence += 1;
        }
        if dropped && !first {
            self.loss.packets_after_a_drop += 1;
        }
        if let Some(stats) = stats {
            self.trace_stats(stats);
        }
    }

    fn trace_stats(&mut self, stats: &[u8]) {
        let mut loss = PerfettoLoss {
            packets_after_a_drop: self.loss.packets_after_a_drop,
            ..PerfettoLoss::default()
        };
        fields(stats, |field, v, bytes| match field {
            1 => {
                fields(bytes, |f, v, _| match f {
                    3 => loss.chunks_overwritten += v,
                    18 => loss.chunks_discarded += v,
                    19 => loss.trace_writer_packet_loss += v,
                    9 => loss.abi_violations += v,
                    6 => loss.patches_failed += v,
                    _ => {}
                });
            }
            8 => loss.service_chunks_discarded = v,
            14 => loss.flushes_failed = v,
            _ => {}
        });
        self.loss = loss;
    }
}

/// Where the trace's bytes go: the trace file, through the scanners.
pub(crate) struct Output {
    file: BufWriter<File>,
    pub(crate) bytes: u64,
    /// The session's packets (the service's own).
    pub(crate) scan: Scan,
    /// Bytes of the sink's own packets that reached the file.
    pub(crate) own_bytes: u64,
    /// Writes of the sink's own packets that did not reach the file (an I/O error, or the
    /// size limit's backstop).
    pub(crate) own_lost: u64,
    pub(crate) error: Option<String>,
    /// The size limit (`SessionConfig::max_file_bytes`; `u64::MAX`: none).
    max_bytes: u64,
    /// Bytes of whole writes left out because they would have passed the limit.
    pub(crate) cut_bytes: u64,
}

impl Output {
    fn write(&mut self, data: &[u8], own: bool) {
        // The sink keeps its own packets under `METRON_TRACE_MAX_SIZE` (with room for the
        // service's last packets); this is the backstop that makes the limit hard: a whole
        // write (whole packets) that would pass it is left out and counted, so the file stays
        // a valid trace no larger than the limit.
        if self.bytes.saturating_add(data.len() as u64) > self.max_bytes {
            self.cut_bytes += data.len() as u64;
            self.own_lost += u64::from(own);
            return;
        }
        if !own {
            self.scan.feed(data);
        }
        if self.error.is_some() {
            self.own_lost += u64::from(own);
            return;
        }
        // The sink's packets come in large pieces: they go to the file directly (after
        // anything buffered) rather than through a copy into the buffer.
        let result = if own {
            self.file
                .flush()
                .and_then(|()| self.file.get_mut().write_all(data))
        } else {
            self.file.write_all(data)
        };
        match result {
            Ok(()) => {
                self.bytes += data.len() as u64;
                if own {
                    self.own_bytes += data.len() as u64;
                }
            }
            Err(e) => {
                self.error = Some(e.to_string());
                self.own_lost += u64::from(own);
            }
        }
    }
}

/// Settings of one session.
#[derive(Clone, Debug)]
pub(crate) struct SessionConfig {
    pub(crate) buffer_kb: u32,
    pub(crate) fill_policy: FillPolicy,
    pub(crate) max_file_bytes: Option<u64>,
}

/// A tracing session handle that may move to another thread.
struct SendSession(TracingSession);

// SAFETY: the handle is an opaque pointer to a `perfetto::TracingSession` of the C API, whose
// calls post their work to Perfetto's own task runner and may be made from any thread. The
// sink that owns it is used by one thread at a time (behind the pipeline's mutex), so the
// handle is never used concurrently; only moving it between threads is needed.
unsafe impl Send for SendSession {}

/// The trace file of this run, and the in-process tracing session that feeds it the
/// service's packets once it is there (see [`SetUpAhead`]: it may join later, or never).
pub(crate) struct Session {
    session: Option<SendSession>,
    out: Arc<Mutex<Output>>,
    pub(crate) path: PathBuf,
    stopped: bool,
}

/// Where the file's session comes from ([`Session::start`]).
pub(crate) enum SessionFrom {
    /// Started now, on this thread (no set-up ahead was offered).
    Now,
    /// Started ahead on another thread, ready.
    Ahead(PreparedSession),
    /// Not yet: a set-up ahead is under way or waits, and joins with [`Session::attach`].
    Later,
}

/// The Perfetto session's start on a thread of Metron's own, after the program's start-up.
///
/// Starting the SDK's producer and session costs 1 to 3 ms, mostly on its muxer thread; when
/// the program starts several threads at once on a small machine, that CPU time is taken from
/// them. So the set-up waits: until the trace has had its first batch (a process that records
/// nothing starts no session), and until `after` has passed since the set-up was offered (the
/// program's start-up burst is over). The trace file never waits for it: Metron's own clock
/// snapshot leads the file (`Encoder::clock_snapshot`), the sink's packets follow at once, and
/// the service's packets join when the session is ready. A run that ends before the set-up
/// began has no session at all: [`SetUpAhead::finish`] cancels it.
pub(crate) struct SetUpAhead {
    state: Mutex<AheadState>,
    changed: std::sync::Condvar,
    /// When the set-up was offered (the run's start).
    offered: std::time::Instant,
    /// The first batch asked for the session ([`SetUpAhead::want`]).
    wanted: std::sync::atomic::AtomicBool,
}

enum AheadState {
    Waiting,
    Running,
    /// Answered, this long after the offer.
    Done(Option<Result<PreparedSession, String>>, Duration),
    /// Taken by the trace, with how long after the offer it was ready.
    Taken(Option<Duration>),
    Cancelled,
}

/// What a set-up ahead has for the trace.
pub(crate) enum Ahead {
    /// The session, or why it could not start.
    Ready(Result<PreparedSession, String>),
    /// Not yet ready.
    Pending,
    /// The set-up thread ended without running the set-up (it could not start).
    Unrun,
    /// Cancelled before it began, or already taken.
    Gone,
}

impl SetUpAhead {
    pub(crate) fn new() -> Arc<SetUpAhead> {
        Arc::new(SetUpAhead {
            state: Mutex::new(AheadState::Waiting),
            changed: std::sync::Condvar::new(),
            offered: std::time::Instant::now(),
            wanted: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, AheadState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The set-up, for the thread that runs it: waits for [`SetUpAhead::want`] and `after`,
    /// then starts the session, unless the run ended first.
    pub(crate) fn runner(
        self: &Arc<Self>,
        config: SessionConfig,
        after: Duration,
    ) -> impl FnOnce() + Send + 'static {
        let answer = AnswerOnDrop(Arc::clone(self), None);
        move || {
            let mut answer = answer;
            let ahead = Arc::clone(&answer.0);
            {
                let mut state = ahead.lock();
                loop {
                    if !matches!(*state, AheadState::Waiting) {
                        return;
                    }
                    let wanted = ahead.wanted.load(std::sync::atomic::Ordering::Acquire);
                    let waited = ahead.offered.elapsed();
                    if wanted && waited >= after {
                        break;
                    }
                    state = if wanted {
                        ahead
                            .changed
                            .wait_timeout(state, after - waited)
                            .unwrap_or_else(|e| e.into_inner())
                            .0
                    } else {
                        ahead.changed.wait(state).unwrap_or_else(|e| e.into_inner())
                    };
                }
                *state = AheadState::Running;
            }
            answer.1 = Some(Session::prepare(&config));
        }
    }

    /// Says that the trace has its first batch: the set-up may begin once its delay is over.
    pub(crate) fn want(&self) {
        if !self.wanted.swap(true, std::sync::atomic::Ordering::AcqRel) {
            let _state = self.lock();
            self.changed.notify_all();
        }
    }

    /// The session if it is ready now (never waits).
    pub(crate) fn poll(&self) -> Ahead {
        let mut state = self.lock();
        match &*state {
            AheadState::Waiting | AheadState::Running => Ahead::Pending,
            AheadState::Done(..) => self.take(&mut state),
            AheadState::Taken(_) | AheadState::Cancelled => Ahead::Gone,
        }
    }

    /// At the end of the run: cancels a set-up that has not begun (the run needs no session
    /// any more), waits for one under way.
    pub(crate) fn finish(&self) -> Ahead {
        let mut state = self.lock();
        loop {
            match &*state {
                AheadState::Waiting => {
                    *state = AheadState::Cancelled;
                    self.changed.notify_all();
                    return Ahead::Gone;
                }
                AheadState::Running => {
                    state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
                }
                AheadState::Done(..) => return self.take(&mut state),
                AheadState::Taken(_) | AheadState::Cancelled => return Ahead::Gone,
            }
        }
    }

    fn take(&self, state: &mut AheadState) -> Ahead {
        match std::mem::replace(state, AheadState::Taken(None)) {
            AheadState::Done(Some(result), ready) => {
                *state = AheadState::Taken(result.is_ok().then_some(ready));
                Ahead::Ready(result)
            }
            AheadState::Done(None, _) => Ahead::Unrun,
            other => {
                *state = other;
                Ahead::Gone
            }
        }
    }

    /// How long after the offer the session the trace took was ready (`None`: no session
    /// from here).
    pub(crate) fn ready_after(&self) -> Option<Duration> {
        match &*self.lock() {
            AheadState::Taken(ready) => *ready,
            _ => None,
        }
    }

    /// Waits until the set-up has answered (tests).
    #[cfg(test)]
    pub(crate) fn wait_until_answered(&self) {
        let mut state = self.lock();
        while matches!(*state, AheadState::Waiting | AheadState::Running) {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// How long after the offer `at` was.
    pub(crate) fn since_offer(&self, at: std::time::Instant) -> Duration {
        at.saturating_duration_since(self.offered)
    }
}

/// Gives the set-up's answer when dropped: the session after it ran, or none when the closure
/// was dropped unrun (its thread could not start) or the set-up panicked.
struct AnswerOnDrop(Arc<SetUpAhead>, Option<Result<PreparedSession, String>>);

impl Drop for AnswerOnDrop {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        if matches!(*state, AheadState::Waiting | AheadState::Running) {
            *state = AheadState::Done(self.1.take(), self.0.offered.elapsed());
            self.0.changed.notify_all();
        }
    }
}

fn encode_config(config: &SessionConfig) -> Vec<u8> {
    let writer = PbMsgWriter::new();
    let hb = HeapBuffer::new(writer.stream_writer());
    let mut msg = PbMsg::new(&writer).expect("a heap buffer is a valid output");
    {
        let mut cfg = TraceConfig { msg: &mut msg };
        let size_kb = config.buffer_kb;
        let policy = match config.fill_policy {
            FillPolicy::Discard => BufferConfigFillPolicy::Discard,
            FillPolicy::RingBuffer => BufferConfigFillPolicy::RingBuffer,
        };
        cfg.set_buffers(|b: &mut TraceConfigBufferConfig| {
            b.set_size_kb(size_kb);
            b.set_fill_policy(policy);
        });
        cfg.set_data_sources(|d: &mut TraceConfigDataSource| {
            d.set_config(|c: &mut DataSourceConfig| {
                c.set_name(DATA_SOURCE_NAME);
            });
        });
        cfg.set_flush_timeout_ms(FLUSH_TIMEOUT.as_millis() as u32);
    }
    msg.finalize();
    let size = writer.stream_writer().get_written_size();
    let mut bytes = vec![0u8; size];
    hb.copy_into(&mut bytes);
    bytes
}

/// An in-process tracing session started before it has a file ([`Session::prepare`]).
pub(crate) struct PreparedSession(SendSession);

impl Session {
    /// Starts an in-process session (the SDK's producer, its muxer thread and the session
    /// itself: 1 to 3 ms on the development VM, most of it waiting for the muxer) without a
    /// file, so that this can run on a thread of its own before the first batch needs it
    /// rather than stall the flusher then. Its service packets wait in its buffer until
    /// [`Session::start`] gives it the file.
    pub(crate) fn prepare(config: &SessionConfig) -> Result<PreparedSession, String> {
        data_source()?;
        let mut session = TracingSession::in_process()
            .map_err(|e| format!("cannot create the Perfetto session: {e}"))?;
        session.setup(&encode_config(config));
        session.start_blocking();
        Ok(PreparedSession(SendSession(session)))
    }

    /// Creates `path` and the output into it, with its session from `from`.
    pub(crate) fn start(
        path: &Path,
        config: &SessionConfig,
        from: SessionFrom,
    ) -> Result<Session, String> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let file =
            File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        let session = match from {
            SessionFrom::Now => Some(Session::prepare(config)?),
            SessionFrom::Ahead(prepared) => Some(prepared),
            SessionFrom::Later => None,
        };
        let mut session = Session {
            session: session.map(|PreparedSession(s)| s),
            out: Arc::new(Mutex::new(Output {
                file: BufWriter::with_capacity(1 << 20, file),
                bytes: 0,
                scan: Scan::default(),
                own_bytes: 0,
                own_lost: 0,
                error: None,
                max_bytes: config.max_file_bytes.unwrap_or(u64::MAX),
                cut_bytes: 0,
            })),
            path: path.to_path_buf(),
            stopped: false,
        };
        // The service's first packets (clock snapshot, trace config) lead the file when the
        // session is there; otherwise Metron's own clock snapshot does.
        session.read();
        Ok(session)
    }

    /// Gives the file the session started ahead, which was not ready when the file was made:
    /// its packets (clock snapshot, trace config, stats) go to the file from now on.
    pub(crate) fn attach(&mut self, prepared: PreparedSession) {
        if self.session.is_none() {
            self.session = Some(prepared.0);
            self.read();
        }
    }

    /// Whether the session feeds the file.
    pub(crate) fn has_service(&self) -> bool {
        self.session.is_some()
    }

    /// Appends packets the sink encoded (whole `Trace.packet` fields) to the file and hands
    /// them to the kernel (`write(2)`, so they survive a SIGKILL). False when they did not
    /// all reach the file (an I/O error, or the size limit's backstop).
    pub(crate) fn write_own(&mut self, data: &[u8]) -> bool {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let lost = out.own_lost;
        out.write(data, true);
        if out.error.is_none() {
            if let Err(e) = out.file.flush() {
                out.error = Some(e.to_string());
            }
        }
        out.own_lost == lost
    }

    /// Moves the service's packets from the session's buffer to the file and hands the
    /// file's bytes to the kernel (so they survive a SIGKILL). The caller appends its own
    /// pending packets first ([`Session::write_own`]).
    pub(crate) fn drain(&mut self) {
        self.read();
    }

    fn read(&mut self) {
        let Some(session) = self.session.as_mut() else {
            return;
        };
        let out = Arc::clone(&self.out);
        session.0.read_trace_blocking(move |data, _more| {
            out.lock()
                .unwrap_or_else(|e| e.into_inner())
                .write(data, false);
        });
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if out.error.is_none() {
            if let Err(e) = out.file.flush() {
                out.error = Some(e.to_string());
            }
        }
    }

    /// Stops the session (the service flushes every writer) and writes the rest.
    pub(crate) fn stop(&mut self) {
        if !self.stopped {
            if let Some(session) = self.session.as_mut() {
                session.0.stop_blocking();
            }
            self.stopped = true;
        }
        self.read();
    }

    /// The output state (bytes written, scan results, I/O error).
    pub(crate) fn output(&self) -> std::sync::MutexGuard<'_, Output> {
        self.out.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(body: &[u8]) -> Vec<u8> {
        let mut v = vec![0x0a, body.len() as u8];
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn the_scanner_counts_track_events_across_any_split() {
        // packet { track_event {} } ; packet { timestamp: 5 }
        let mut bytes = packet(&[0x5a, 0x00]);
        bytes.extend(packet(&[0x40, 0x05]));
        bytes.extend(packet(&[0x5a, 0x00]));
        for split in 0..bytes.len() {
            let mut scan = Scan::default();
            scan.feed(&bytes[..split]);
            scan.feed(&bytes[split..]);
            assert_eq!(scan.packets, 3, "split at {split}");
            assert_eq!(scan.track_events, 2);
            assert_eq!(scan.leftover(), 0);
        }
    }

    #[test]
    fn the_scanner_counts_corrupt_framing_and_waits_for_a_cut_length() {
        // A tag whose varint passes ten bytes is corrupt, not waiting for more bytes.
        let mut scan = Scan::default();
        scan.feed(&[0x80; 11]);
        assert_eq!((scan.malformed, scan.leftover()), (1, 0));
        // So is a packet length over ten bytes.
        let mut scan = Scan::default();
        let mut bytes = vec![0x0a];
        bytes.extend_from_slice(&[0xff; 11]);
        scan.feed(&bytes);
        assert_eq!((scan.malformed, scan.leftover()), (1, 0));
        // A length cut at the end of a piece is completed by the next piece.
        let mut scan = Scan::default();
        let body = [0x5a, 0x00].repeat(100);
        let mut bytes = vec![0x0a, 0xc8, 0x01];
        bytes.extend_from_slice(&body);
        scan.feed(&bytes[..2]);
        assert_eq!((scan.packets, scan.leftover()), (0, 2));
        scan.feed(&bytes[2..]);
        assert_eq!((scan.packets, scan.track_events, scan.malformed), (1, 1, 0));
        // A malformed packet body is counted, and its fields before the fault are read.
        let mut scan = Scan::default();
        scan.feed(&packet(&[0x5a, 0x00, 0x0b]));
        assert_eq!((scan.packets, scan.track_events, scan.malformed), (1, 1, 1));
    }

    #[test]
    fn the_scanner_reads_loss_from_trace_stats() {
        // trace_stats (35) { buffer_stats (1) { chunks_overwritten (3): 4, chunks_discarded (18): 2 } }
        let buffer_stats = [0x18, 0x04, 0x90, 0x01, 0x02];
        let mut stats = vec![0x0a, buffer_stats.len() as u8];
        stats.extend_from_slice(&buffer_stats);
        let mut body = vec![0x9a, 0x02, stats.len() as u8];
        body.extend_from_slice(&stats);
        let mut scan = Scan::default();
        scan.feed(&packet(&body));
        assert_eq!(scan.loss.chunks_overwritten, 4);
        assert_eq!(scan.loss.chunks_discarded, 2);
        assert!(scan.loss.any());
    }
}
