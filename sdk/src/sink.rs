//! What the flusher feeds: decoded events, per thread, in the order the thread recorded them.

use crate::callsite::Callsite;
use crate::region::AnnotationValue;
use std::path::PathBuf;

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

/// A consumer of decoded events (summary, trace, CSV, user callbacks).
///
/// Called on the flusher thread, never on the hot path: allocation and I/O are fine here.
pub trait Sink: Send {
    /// Short name for messages, e.g. `summary`.
    fn name(&self) -> &str;
    /// Events of one thread, in recording order. A thread's events may arrive over many calls.
    fn events(&mut self, thread: &ThreadInfo, events: &[Event<'_>]);
    /// The run is over: write outputs into `run.output_dir` and return the files written.
    fn finish(&mut self, run: &RunInfo) -> std::io::Result<Vec<PathBuf>>;
    /// GPU activity records (kernels, copies, API calls) from a GPU backend, in the order the
    /// backend delivered them (see [`crate::gpu`]); the default ignores them.
    fn gpu_records(&mut self, _records: &[crate::gpu::GpuRecord]) {}
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
}
