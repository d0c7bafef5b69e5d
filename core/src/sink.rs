//! What the flusher feeds: decoded events, per thread, in the order the thread recorded them.

pub mod gpu;

use crate::annotation::AnnotationValue;
use crate::callsite::Callsite;
use std::path::PathBuf;
use std::sync::Arc;

/// A thread as the outputs show it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ThreadInfo {
    /// Kernel thread id.
    pub tid: u32,
    /// Thread name (latest known).
    pub name: String,
    /// Order in which threads first recorded, from 0.
    pub index: u64,
    /// True for Metron's own threads (the flusher, callback threads).
    pub is_metron: bool,
}

/// One decoded record. Timestamps are `CLOCK_MONOTONIC` nanoseconds.
#[derive(Clone, Copy, Debug)]
pub enum Event<'a> {
    /// A region began.
    Begin {
        /// When.
        ts_ns: u64,
        /// Which region.
        site: &'static Callsite,
    },
    /// A region ended.
    End {
        /// When it began.
        begin_ns: u64,
        /// When it ended.
        ts_ns: u64,
        /// Which region.
        site: &'static Callsite,
        /// The bundle's fields, in the order of `site.components` (empty for the default).
        values: &'a [f64],
        /// True when Metron closed it (still open when the run finished).
        closed_by_metron: bool,
    },
    /// An instant mark.
    Instant {
        /// When.
        ts_ns: u64,
        /// Which mark.
        site: &'static Callsite,
    },
    /// A counter value.
    Counter {
        /// When.
        ts_ns: u64,
        /// Which counter.
        site: &'static Callsite,
        /// The value.
        value: f64,
    },
    /// An annotation of the innermost open region (`region` is `None` if none was open).
    Annotation {
        /// When.
        ts_ns: u64,
        /// The open region it belongs to.
        region: Option<&'static Callsite>,
        /// The key.
        key: &'static Callsite,
        /// The value.
        value: AnnotationValue<'a>,
    },
    /// The thread was renamed.
    ThreadName {
        /// When.
        ts_ns: u64,
        /// The new name.
        name: &'a str,
    },
    /// A call stack of this thread: a timer sample, or a backtrace taken at a region's start.
    Sample {
        /// When.
        ts_ns: u64,
        /// Instruction addresses, innermost first: `frames[0]` is the interrupted (or calling)
        /// instruction itself, the rest are return addresses (look them up at `addr - 1`).
        frames: &'a [u64],
        /// What took it.
        trigger: SampleTrigger,
    },
    /// An async slice began: a range that may end on another thread (NVTX start/end, `tracing`
    /// spans of async tasks). `cookie` pairs it with its [`Event::AsyncEnd`].
    AsyncBegin {
        /// When.
        ts_ns: u64,
        /// Which range.
        site: &'static Callsite,
        /// Pairs begin and end, unique among the ranges open at once.
        cookie: u64,
    },
    /// An async slice ended (possibly on another thread than its begin).
    AsyncEnd {
        /// When.
        ts_ns: u64,
        /// Which range.
        site: &'static Callsite,
        /// The cookie of its [`Event::AsyncBegin`].
        cookie: u64,
    },
    /// Records of this thread were dropped (discard policy, full buffer).
    Dropped {
        /// When the drop was noticed (the thread's latest timestamp).
        ts_ns: u64,
        /// How many records.
        count: u64,
    },
}

impl Event<'static> {
    /// The end of a region that carries no values, as the program closed it (the decoder's
    /// commonest event).
    #[inline(always)]
    pub const fn plain_end(begin_ns: u64, ts_ns: u64, site: &'static Callsite) -> Event<'static> {
        Event::End {
            begin_ns,
            ts_ns,
            site,
            values: &[],
            closed_by_metron: false,
        }
    }
}

/// A region with nothing inside it: a begin, then its end with no values, as the program
/// closed it (the decoder's commonest pair of records). See [`Sink::empty_regions`].
#[derive(Clone, Copy, Debug)]
pub struct EmptyRegion {
    /// The region's call site.
    pub site: &'static Callsite,
    /// Its begin, `CLOCK_MONOTONIC` ns.
    pub begin_ns: u64,
    /// Its end, `CLOCK_MONOTONIC` ns (never before `begin_ns`).
    pub end_ns: u64,
}

impl EmptyRegion {
    /// The two events it stands for.
    pub const fn events(&self) -> [Event<'static>; 2] {
        [
            Event::Begin {
                ts_ns: self.begin_ns,
                site: self.site,
            },
            Event::plain_end(self.begin_ns, self.end_ns, self.site),
        ]
    }
}

/// What took a [`Event::Sample`].
#[derive(Clone, Copy, Debug)]
pub enum SampleTrigger {
    /// The sampler, on the thread's CPU-time clock.
    CpuTime,
    /// The sampler, on the real-time (wall) clock.
    RealTime,
    /// A backtrace component, at the start of this region.
    RegionBegin(&'static Callsite),
}

/// The run, as sinks need it to write their files.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RunInfo {
    /// The run folder (created before `finish` is called).
    pub output_dir: PathBuf,
    /// Process id.
    pub pid: u32,
    /// Executable name.
    pub exe: String,
    /// Command line.
    pub argv: Vec<String>,
    /// Host name.
    pub hostname: String,
    /// Start, Unix epoch nanoseconds.
    pub start_realtime_ns: u64,
    /// Start, `CLOCK_MONOTONIC` ns.
    pub start_ns: u64,
    /// End, `CLOCK_MONOTONIC` ns (set at finish).
    pub end_ns: u64,
}

/// The run's death by a crash signal, as written into `metadata.json` and `summary.txt` (filled
/// by the crash handler of `metron`, handed to the summary as a value).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Died {
    /// `SIGSEGV`, ...
    pub signal: String,
    /// The faulting address (`si_addr`) for faults; 0 for a signal sent by a process.
    pub address: String,
    /// Kernel id of the thread that crashed.
    pub thread: u32,
    /// Its name.
    pub thread_name: String,
    /// When, `CLOCK_MONOTONIC` ns.
    pub ts_ns: u64,
    /// The faulting thread's stack, innermost first: `function (file:line)`.
    pub frames: Vec<String>,
}

/// What kinds of event a batch holds besides region begins and ends, as the decoder counted
/// them: a sink that reads only samples (the folded stacks) skips the batches that have none,
/// instead of looking at every event. A caller that does not know says [`Present::ALL`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Present {
    /// At least one [`Event::Sample`].
    pub samples: bool,
    /// At least one [`Event::AsyncBegin`] or [`Event::AsyncEnd`].
    pub asyncs: bool,
    /// At least one event other than `Begin`, `End`, `Sample`, `AsyncBegin` and `AsyncEnd`.
    pub other: bool,
    /// The thread's batch goes on in the next call: the decoder hands a long batch over in
    /// parts (so that its decoded events stay in the cache), and a sink that writes out once
    /// per batch may wait for the last part.
    pub continues: bool,
}

impl Present {
    /// Anything may be present.
    pub const ALL: Present = Present {
        samples: true,
        asyncs: true,
        other: true,
        continues: false,
    };
    /// Only region begins and ends.
    pub const REGIONS_ONLY: Present = Present {
        samples: false,
        asyncs: false,
        other: false,
        continues: false,
    };

    /// Adds `event`'s kind.
    #[inline]
    pub fn add(&mut self, event: &Event<'_>) {
        match event {
            Event::Begin { .. } | Event::End { .. } => {}
            Event::Sample { .. } => self.samples = true,
            Event::AsyncBegin { .. } | Event::AsyncEnd { .. } => self.asyncs = true,
            _ => self.other = true,
        }
    }

    /// What `events` hold (one pass over them).
    pub fn of(events: &[Event<'_>]) -> Present {
        let mut present = Present::REGIONS_ONLY;
        events.iter().for_each(|e| present.add(e));
        present
    }
}

/// A consumer of decoded events (summary, trace, CSV, user callbacks).
///
/// Called on the flusher thread, never on the hot path: allocation and I/O are fine here.
pub trait Sink: Send {
    /// Short name for messages, e.g. `summary`.
    fn name(&self) -> &str;
    /// Events of one thread, in recording order. A thread's events may arrive over many calls.
    fn events(&mut self, thread: &ThreadInfo, events: &[Event<'_>]);
    /// [`Sink::events`] with what the decoder saw in the batch, so that a sink can skip a
    /// pass over events it has no use for (the flusher's pipeline calls this one). The default
    /// hands the events to [`Sink::events`].
    fn batch(&mut self, thread: &ThreadInfo, events: &[Event<'_>], present: Present) {
        let _ = present;
        self.events(thread, events);
    }
    /// A run of regions with nothing inside them, in recording order, each opened directly
    /// under the region open on the thread when the run starts: what [`Sink::batch`] would
    /// get as `Begin`, `End` pairs, handed over without the two events per region (the
    /// flusher's pipeline sends a thread's records as batches of events and runs of these, in
    /// order; the batch's last call is always [`Sink::batch`]). The default hands them to
    /// [`Sink::batch`] as those events; a sink that has no use for regions does nothing.
    fn empty_regions(&mut self, thread: &ThreadInfo, regions: &[EmptyRegion]) {
        let events: Vec<Event<'static>> = regions.iter().flat_map(EmptyRegion::events).collect();
        let present = Present {
            continues: true,
            ..Present::REGIONS_ONLY
        };
        self.batch(thread, &events, present);
    }
    /// The run is over: write outputs into `run.output_dir` and return the files written.
    fn finish(&mut self, run: &RunInfo) -> std::io::Result<Vec<PathBuf>>;
    /// GPU activity records (kernels, copies, API calls) from a GPU backend, in the order the
    /// backend delivered them (see [`crate::gpu`]); the default ignores them.
    fn gpu_records(&mut self, _records: &[GpuRecord]) {}
    /// The run folder was changed ([`crate::set_output_path`]) before this sink was handed
    /// anything; a sink that writes into the folder while the run goes on writes into `dir`.
    /// The default does nothing (`finish` gets the folder in [`RunInfo`]).
    fn output_dir_changed(&mut self, _dir: &std::path::Path) {}
    /// True for a sink that writes into the run folder while the run goes on (the trace):
    /// at the end it finishes after the small outputs and `metadata.json` are written, so a
    /// full disk cannot take their space.
    fn writes_while_running(&self) -> bool {
        false
    }
    /// True for a sink that finishes after `metadata.json` is first written (the trace, and
    /// outputs that show the metadata). Defaults to [`Sink::writes_while_running`].
    fn finishes_late(&self) -> bool {
        self.writes_while_running()
    }
    /// What this sink reports into `metadata.json` under `outputs.<name>` (called after
    /// `finish`); `None` adds nothing.
    fn metadata(&self) -> Option<serde_json::Value> {
        None
    }
    /// What a late sink needs of the run's metadata in its `finish` (default: nothing).
    fn metadata_need(&self) -> MetadataNeed {
        MetadataNeed::Nothing
    }
    /// The run's metadata as it stands before the late sinks finish (what a first
    /// `metadata.json` holds), handed just before `finish` to a late sink whose
    /// [`Sink::metadata_need`] is [`MetadataNeed::Given`].
    fn run_metadata(&mut self, _metadata: &std::sync::Arc<serde_json::Value>) {}
}

/// What a late sink needs of the run's metadata ([`Sink::metadata_need`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetadataNeed {
    /// Nothing (the trace).
    Nothing,
    /// Handed over in memory ([`Sink::run_metadata`]; the pictures): `metadata.json` is then
    /// written once, after the late sinks, where the disk has room.
    Given,
    /// `metadata.json` read from the run folder (the exports): it is written before the late
    /// sinks finish.
    File,
}

/// What a [`GpuRecord`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuKind {
    /// A kernel execution.
    Kernel,
    /// A memory copy.
    Memcpy,
    /// A memory set.
    Memset,
    /// A CUDA runtime API call (host side).
    RuntimeApi,
    /// A CUDA driver API call (host side).
    DriverApi,
    /// An HSA runtime API call (host side, AMD).
    HsaApi,
    /// A HIP runtime API call (host side, AMD, through ROCprofiler-SDK).
    HipApi,
    /// A sampled GPU metric (NVIDIA PM sampling): `name` is the metric, `value` its value over
    /// the sample `start_ns..end_ns` on `device`.
    Counter,
    /// A synchronizing call and what it waited for (NVIDIA): `name` says which (`Stream
    /// synchronize`, `Event synchronize`, `Stream wait event`, `Context synchronize`), the
    /// times are the call's, `correlation` is the call's, `stream` the stream it waited for
    /// (or, for a stream wait event, the stream made to wait; [`gpu::NO_STREAM`] for a context
    /// synchronize), `event_record` the event record waited for (0 when none).
    ///
    /// [`gpu::NO_STREAM`]: crate::sink::gpu::NO_STREAM
    Sync,
    /// A CUDA event recorded on a stream (NVIDIA): `correlation` is the `cudaEventRecord`
    /// call's, `stream` the stream, `event_record` the record's unique id, `start_ns` =
    /// `end_ns` the time the event completed on the device (0 when not known).
    EventRecord,
}

/// One GPU activity record, timestamps on Metron's clock (`CLOCK_MONOTONIC` ns).
#[derive(Clone, Debug, PartialEq)]
pub struct GpuRecord {
    /// What it is.
    pub kind: GpuKind,
    /// Start, `CLOCK_MONOTONIC` ns.
    pub start_ns: u64,
    /// End, `CLOCK_MONOTONIC` ns.
    pub end_ns: u64,
    /// Kernel name (demangled), API name, or copy kind (`HtoD`, ...).
    pub name: Arc<str>,
    /// Device index (kernels, copies, sets).
    pub device: u32,
    /// Context id.
    pub context: u32,
    /// Stream id (kernels, copies, sets).
    pub stream: u32,
    /// Correlation id: the same on an API call and the work it launched.
    pub correlation: u32,
    /// Host thread (API calls): kernel tid.
    pub tid: u32,
    /// Grid size (kernels).
    pub grid: [i32; 3],
    /// Block size (kernels).
    pub block: [i32; 3],
    /// Registers per thread (kernels; VGPRs on AMD).
    pub registers: u16,
    /// Scalar registers per wavefront (AMD kernels; 0 = not known).
    pub scalar_registers: u16,
    /// Static shared memory per block, bytes (kernels).
    pub static_shared: i32,
    /// Dynamic shared memory per block, bytes (kernels).
    pub dynamic_shared: i32,
    /// Local memory per thread, bytes (kernels).
    pub local_per_thread: u32,
    /// Bytes copied or set (copies, sets).
    pub bytes: u64,
    /// Theoretical occupancy in 0..=1 from the device limits (kernels; `None` if unknown).
    pub occupancy: Option<f32>,
    /// API return code (API calls).
    pub status: u32,
    /// The CUDA graph that launched it (kernels, copies, sets; 0 when not launched by a graph).
    pub graph_id: u32,
    /// The graph node it ran as (0 when not launched by a graph).
    pub graph_node: u64,
    /// The metric's value (counter samples).
    pub value: f64,
    /// A CUDA event record's unique id ([`GpuKind::EventRecord`], [`GpuKind::Sync`]; 0
    /// otherwise): an event object recorded again gets a new one.
    pub event_record: u64,
}

impl GpuRecord {
    /// A record of `kind` named `name` with every other field zero.
    pub fn new(kind: GpuKind, name: Arc<str>) -> GpuRecord {
        GpuRecord {
            kind,
            start_ns: 0,
            end_ns: 0,
            name,
            device: 0,
            context: 0,
            stream: 0,
            correlation: 0,
            tid: 0,
            grid: [0; 3],
            block: [0; 3],
            registers: 0,
            scalar_registers: 0,
            static_shared: 0,
            dynamic_shared: 0,
            local_per_thread: 0,
            bytes: 0,
            occupancy: None,
            status: 0,
            graph_id: 0,
            graph_node: 0,
            value: 0.0,
            event_record: 0,
        }
    }

    /// Duration in ns.
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    /// Device work (kernel, copy, set) rather than an API call.
    pub fn on_device(&self) -> bool {
        matches!(
            self.kind,
            GpuKind::Kernel | GpuKind::Memcpy | GpuKind::Memset
        )
    }
}
