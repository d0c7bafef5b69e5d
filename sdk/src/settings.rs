//! The one registry of `METRON_*` settings: name, type, default, accepted values, description.
//!
//! [`REGISTRY`] is what `metron avail` prints. [`Settings::from_env`] reads every setting once
//! when the runtime starts; a value that does not parse is reported (stderr and
//! `metadata.json`) with the variable, the value and what is accepted, and the default is used.

use crate::buffer::Policy;
use std::fmt;
use std::time::Duration;

/// The type of a setting, which decides what values it accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`.
    Bool,
    /// Bytes with an optional `K`, `M` or `G` suffix (powers of 1024).
    Size,
    /// `off`, or a size as [`Kind::Size`] of at least [`MIN_TRACE_MAX_BYTES`]
    /// (`METRON_TRACE_MAX_SIZE`).
    SizeOrOff,
    /// An integer from 1 to 100.
    Percent,
    /// A duration with a unit: `ms`, `s`, `us` or `m`; `0` means off.
    Duration,
    /// One of the listed words.
    Choice(&'static [&'static str]),
    /// Free text (paths, templates).
    Text,
    /// A value with a grammar of its own (sampling frequency, thread list, signal, periods).
    Grammar(crate::sampling::Grammar),
}

impl Kind {
    /// What this kind accepts, in words, for error messages and `metron avail`.
    pub fn accepted(self) -> String {
        match self {
            Kind::Bool => "a boolean: 1, 0, true, false, yes, no, on or off".into(),
            Kind::Size => "a size in bytes with an optional K, M or G suffix (e.g. 64K, 4M)".into(),
            Kind::SizeOrOff => format!(
                "off (no limit), or a size in bytes of at least {}K with an optional K, M or G suffix (e.g. 512K, 64M, 1G)",
                MIN_TRACE_MAX_BYTES >> 10
            ),
            Kind::Percent => "an integer percentage from 1 to 100".into(),
            Kind::Duration => {
                "a duration with a unit: ms, s, us or m (e.g. 500ms, 2s); 0 turns it off".into()
            }
            Kind::Choice(words) => format!("one of: {}", words.join(", ")),
            Kind::Text => "any text".into(),
            Kind::Grammar(g) => g.accepted(),
        }
    }
}

/// One entry of the registry.
#[derive(Clone, Copy, Debug)]
pub struct SettingSpec {
    /// The environment variable.
    pub name: &'static str,
    /// What it accepts.
    pub kind: Kind,
    /// The value used when the variable is unset or invalid.
    pub default: &'static str,
    /// One line for `metron avail`.
    pub description: &'static str,
}

/// The smallest buffer Metron accepts: room for the largest record many times over.
pub const MIN_BUFFER_BYTES: usize = 4096;

/// The smallest `METRON_TRACE_MAX_SIZE`: room for the trace's first and last packets.
pub const MIN_TRACE_MAX_BYTES: usize = 64 << 10;

/// Every setting Metron reads.
pub static REGISTRY: &[SettingSpec] = &[
    SettingSpec {
        name: "METRON_ENABLED",
        kind: Kind::Bool,
        default: "true",
        description: "record anything at all; false makes every region a no-op and writes no output",
    },
    SettingSpec {
        name: "METRON_OUTPUT_PATH",
        kind: Kind::Text,
        default: "metron-output/%exe%-%pid%-%time%",
        description: "the run folder; keys %pid%, %exe%, %hostname%, %time% (UTC), %rank% and %size% (from the launcher: OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE, PMIX_RANK/SIZE, MV2_COMM_WORLD_RANK/SIZE or SLURM_PROCID/NTASKS; 0 and 1 without one), %env{NAME}%; a folder that exists and is not empty gets -2, -3, ...",
    },
    SettingSpec {
        name: "METRON_BUFFER_SIZE",
        kind: Kind::Size,
        default: "1M",
        description: "bytes of each per-thread buffer segment (minimum 4K; 16 bytes per record slot)",
    },
    SettingSpec {
        name: "METRON_BUFFER_WATERMARK",
        kind: Kind::Percent,
        default: "100",
        description: "fill level (% of the buffer) at which a segment is handed to the flusher",
    },
    SettingSpec {
        name: "METRON_BUFFER_POLICY",
        kind: Kind::Choice(&["lossless", "discard"]),
        default: "lossless",
        description: "full buffer: lossless swaps in a fresh segment; discard drops and counts records until the flusher frees one",
    },
    SettingSpec {
        name: "METRON_BUFFER_BACKLOG",
        kind: Kind::SizeOrOff,
        default: "32M",
        description: "lossless policy: the most bytes of full segments waiting for the flusher, over all threads; at the limit METRON_BUFFER_BACKLOG_POLICY applies (off: no limit, memory grows with the backlog)",
    },
    SettingSpec {
        name: "METRON_BUFFER_BACKLOG_POLICY",
        kind: Kind::Choice(&["block", "drop"]),
        default: "block",
        description: "at the backlog limit: block holds the recording thread until the flusher has caught up (nothing lost; the time is reported), drop drops and counts records until it has (the thread is never held)",
    },
    SettingSpec {
        name: "METRON_FLUSH_INTERVAL",
        kind: Kind::Duration,
        default: "1s",
        description: "how often the flusher drains every thread's buffer (0: only when full, on flush() and at exit)",
    },
    SettingSpec {
        name: "METRON_SUMMARY",
        kind: Kind::Bool,
        default: "true",
        description: "write summary.txt and summary.json",
    },
    SettingSpec {
        name: "METRON_REPORT",
        kind: Kind::Bool,
        default: "true",
        description: "write flamegraph.svg (when sampling ran), regions.svg and report.html into the run folder at the end",
    },
    SettingSpec {
        name: "METRON_EXPORT",
        kind: Kind::Text,
        default: "off",
        description: "at the end of the run, also write the run folder in the formats of the GPU profilers Metron's design started from: a comma list of atp (session.atp: API trace, timestamps, kernel timestamps, perf markers), occupancy (session.occupancy: one row per kernel) and apilog (api.log: one line per GPU API call), or all; off (default) writes none. `metron export --format ... DIR` writes them afterwards from the same files",
    },
    SettingSpec {
        name: "METRON_TRACE",
        kind: Kind::Bool,
        default: "true",
        description: "write the Perfetto trace of the run (open it in ui.perfetto.dev)",
    },
    SettingSpec {
        name: "METRON_TRACE_FILE",
        kind: Kind::Text,
        default: "trace.pftrace",
        description: "file name of the Perfetto trace inside the run folder",
    },
    SettingSpec {
        name: "METRON_TRACE_BUFFER_SIZE",
        kind: Kind::Size,
        default: "64M",
        description: "Perfetto session buffer (raised to 16x METRON_BUFFER_SIZE); drained into the file as the run goes",
    },
    SettingSpec {
        name: "METRON_TRACE_FILL_POLICY",
        kind: Kind::Choice(&["discard", "ring_buffer"]),
        default: "discard",
        description: "full Perfetto buffer: discard keeps the oldest data, ring_buffer overwrites it; either loss is reported",
    },
    SettingSpec {
        name: "METRON_TRACE_CATEGORIES",
        kind: Kind::Text,
        default: "all",
        description: "what goes to the trace: all, or a comma list of regions, marks, counters, annotations, values, process (dropped-record marks always)",
    },
    SettingSpec {
        name: "METRON_TRACE_MAX_SIZE",
        kind: Kind::SizeOrOff,
        default: "off",
        description: "the most bytes trace.pftrace may take; past it no more events are written, the trace stays valid and the cut is reported",
    },
    SettingSpec {
        name: "METRON_PRELOAD",
        kind: Kind::Bool,
        default: "false",
        description: "set by `metron run`: start when the program loads and record its whole run as a region named after the program",
    },
    SettingSpec {
        name: "METRON_PROCESSES",
        kind: Kind::Choice(&["tree", "separate"]),
        default: "tree",
        description: "metron run: tree gives the whole process tree one run folder (a subfolder per process that recorded something, trivial ones listed in processes.json, a merged trace and summary when several did, the run folder's own files when one did); separate gives each process its own folder as METRON_OUTPUT_PATH says",
    },
    SettingSpec {
        name: "METRON_RUN_FOLDER",
        kind: Kind::Text,
        default: "",
        description: "set by `metron run` (process tree mode): the run folder the tree writes under; a process writing inside it leaves the last stderr line to metron run",
    },
    SettingSpec {
        name: "METRON_SIGNALS",
        kind: Kind::Choice(&["auto", "on", "off"]),
        default: "auto",
        description: "on SIGINT and SIGTERM write the outputs once, then die by the signal as before (only where the program kept the default action); auto: on under `metron run`",
    },
    SettingSpec {
        name: "METRON_CRASH",
        kind: Kind::Bool,
        default: "true",
        description: "on SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT write the outputs (with the crash site in `died`) before the program's own handler or the default action runs; the process still dies by its signal",
    },
    SettingSpec {
        name: "METRON_MPI",
        kind: Kind::Bool,
        default: "true",
        description: "MPI calls (Init, Finalize, Send, Recv, Isend, Irecv, Wait, Allreduce, Bcast, Barrier) become regions with bytes, peer, tag and communicator size, through PMPI in libmetron.so; false: they go straight to the MPI library",
    },
    SettingSpec {
        name: "METRON_MPI_CLOCK_SYNC",
        kind: Kind::Bool,
        default: "true",
        description: "with MPI interposition, measure each rank's wall clock against rank 0's by ping-pongs inside MPI_Init and MPI_Finalize (for metron merge across hosts); every rank must run under Metron with it on, or rank 0 waits for the others: false where only some ranks are",
    },
    SettingSpec {
        name: "METRON_FORK",
        kind: Kind::Choice(&["disable"]),
        default: "disable",
        description: "what a forked child does: disable turns Metron off in the child cleanly (no deadlock, the parent's run untouched); a child that execs starts afresh",
    },
    SettingSpec {
        name: "METRON_SAMPLING",
        kind: Kind::Bool,
        default: "false",
        description: "sample the call stacks of every thread (see METRON_SAMPLING_*); `metron sample` turns it on",
    },
    SettingSpec {
        name: "METRON_SAMPLING_FREQ",
        kind: Kind::Grammar(crate::sampling::Grammar::Frequency),
        default: "1000",
        description: "samples per second of each thread's CPU time (and of wall time with METRON_SAMPLING_REALTIME)",
    },
    SettingSpec {
        name: "METRON_SAMPLING_CPUTIME",
        kind: Kind::Bool,
        default: "true",
        description: "sample on each thread's CPU time (a perf task-clock event per thread; a POSIX CPU-clock timer at the kernel tick where perf events are not allowed)",
    },
    SettingSpec {
        name: "METRON_SAMPLING_REALTIME",
        kind: Kind::Bool,
        default: "false",
        description: "also sample on wall time (a CLOCK_MONOTONIC timer per thread): blocked and sleeping threads are sampled too",
    },
    SettingSpec {
        name: "METRON_SAMPLING_PYTHON",
        kind: Kind::Choice(&["auto", "on", "off"]),
        default: "auto",
        description: "Python frames in call-stack samples: `metron sample` sets PYTHONPERFSUPPORT=1 for the program (CPython >= 3.12 then gives each Python function a native frame, named from /tmp/perf-<pid>.map as `py::function (file.py:line)`); auto: when the command is Python >= 3.12; on: always; off: never. `metron sample` records the choice here (on or off)",
    },
    SettingSpec {
        name: "METRON_SAMPLING_DELAY",
        kind: Kind::Duration,
        default: "0",
        description: "start sampling this long after the run starts (regions are recorded from the start)",
    },
    SettingSpec {
        name: "METRON_SAMPLING_DURATION",
        kind: Kind::Duration,
        default: "0",
        description: "stop sampling this long after it started (0: at the end of the run)",
    },
    SettingSpec {
        name: "METRON_SAMPLING_TIDS",
        kind: Kind::Grammar(crate::sampling::Grammar::ThreadList),
        default: "all",
        description: "which threads to sample: all, or thread indices in the order the sampler first sees them (0 = the main thread)",
    },
    SettingSpec {
        name: "METRON_SAMPLING_SIGNAL",
        kind: Kind::Grammar(crate::sampling::Grammar::Signal),
        default: "auto",
        description: "the signal that carries samples: auto picks a free real-time signal, so a program's own SIGPROF handler is left alone",
    },
    SettingSpec {
        name: "METRON_CAUSAL",
        kind: Kind::Bool,
        default: "false",
        description: "causal profiling (Coz's virtual speedups) on top of CPU-time sampling: experiments predict how much faster the progress points would go if a line were faster; writes profile.coz; `metron causal` turns it on",
    },
    SettingSpec {
        name: "METRON_CAUSAL_LINES",
        kind: Kind::Grammar(crate::sampling::Grammar::CausalLines),
        default: "",
        description: "causal profiling: experiment only on these lines (FILE:LINE, comma-separated); empty: the lines with the most samples in scope",
    },
    SettingSpec {
        name: "METRON_CAUSAL_PROGRESS",
        kind: Kind::Grammar(crate::sampling::Grammar::CausalLines),
        default: "",
        description: "causal profiling: sampled throughput points, FILE:LINE (each sample in the line counts as a visit), for programs without progress! / metron_progress / COZ_PROGRESS",
    },
    SettingSpec {
        name: "METRON_CAUSAL_SOURCE_SCOPE",
        kind: Kind::Text,
        default: "%",
        description: "causal profiling: source files whose lines may be selected, comma-separated patterns where % is any text (e.g. %/src/%)",
    },
    SettingSpec {
        name: "METRON_CAUSAL_BINARY_SCOPE",
        kind: Kind::Text,
        default: "MAIN",
        description: "causal profiling: modules whose lines may be selected, comma-separated patterns where % is any text; MAIN is the executable",
    },
    SettingSpec {
        name: "METRON_CAUSAL_SPEEDUPS",
        kind: Kind::Grammar(crate::sampling::Grammar::Speedups),
        default: "0-100/5",
        description: "causal profiling: the line speedups tried, percent: a comma list or lo-hi/step; 0 % (the baseline) is always included",
    },
    SettingSpec {
        name: "METRON_CAUSAL_EXPERIMENT",
        kind: Kind::Duration,
        default: "200ms",
        description: "causal profiling: the shortest experiment (lengthened while a progress point sees fewer than 5 visits in one)",
    },
    SettingSpec {
        name: "METRON_TRACE_PERIODS",
        kind: Kind::Grammar(crate::sampling::Grammar::Periods),
        default: "none",
        description: "time windows: regions and samples are recorded only inside them; a comma list of [clock:]delay:duration[:repeat] (clock realtime or cputime, seconds)",
    },
    SettingSpec {
        name: "METRON_TRACE_DELAY",
        kind: Kind::Duration,
        default: "0",
        description: "record nothing for this long after the run starts (one more realtime window, after METRON_TRACE_PERIODS)",
    },
    SettingSpec {
        name: "METRON_TRACE_DURATION",
        kind: Kind::Duration,
        default: "0",
        description: "stop recording this long after METRON_TRACE_DELAY (0: until the end)",
    },
    SettingSpec {
        name: "METRON_PERF_EVENTS",
        kind: Kind::Text,
        default: "task-clock,page-faults,context-switches",
        description: "counters of the PerfCounters component, comma-separated as `perf list` spells them (cycles, instructions, cache-misses, L1-dcache-load-misses, task-clock, page-faults, r<hex>, ...; hardware events count user space only unless suffixed :k or :uk); at most 8; an unknown or refused event is reported and the others counted",
    },
    SettingSpec {
        name: "METRON_METRICS",
        kind: Kind::Text,
        default: "",
        description: "comma-separated derived metrics computed per region, from the built-in file (IPC, CPI, cache_miss_ratio, branch_miss_ratio, L1D_miss_ratio) or METRON_METRICS_FILE; their counters join METRON_PERF_EVENTS",
    },
    SettingSpec {
        name: "METRON_METRICS_FILE",
        kind: Kind::Text,
        default: "",
        description: "an XML metric file whose counters and metrics add to (and override) the built-in ones",
    },
    SettingSpec {
        name: "METRON_PERF_GROUP_SIZE",
        kind: Kind::Text,
        default: "auto",
        description: "hardware counters one pass can count at once: auto (detected; 4 when the machine has no PMU to ask) or a number from 1 to 8",
    },
    SettingSpec {
        name: "METRON_PERF_PASS",
        kind: Kind::Text,
        default: "1",
        description: "which pass of a multi-pass counter plan this run counts (1 to the number of passes); `metron run --passes auto` sets it",
    },
    SettingSpec {
        name: "METRON_GPU",
        kind: Kind::Bool,
        default: "true",
        description: "trace GPU work: NVIDIA through CUPTI (kernels, copies, sets, API calls) in processes that use CUDA, AMD through the HSA tools interface (dispatches, async copies, HSA calls) in processes that use ROCm; off when no driver is found (metadata.json says why)",
    },
    SettingSpec {
        name: "METRON_GPU_AMD_SIGNALS",
        kind: Kind::Text,
        default: "1024",
        description: "AMD: completion signals made once for timing dispatches and copies (the most that can be in flight timed); a dispatch submitted while all are in use runs untimed and is counted in metadata.json",
    },
    SettingSpec {
        name: "METRON_GPU_AMD_BACKEND",
        kind: Kind::Choice(&["auto", "hsa", "rocprofiler-sdk"]),
        default: "auto",
        description: "AMD: which interface traces: hsa (the HSA tools interface, OnLoad), rocprofiler-sdk (rocprofiler_configure, where ROCprofiler-SDK is installed), or auto (the first to start; OnLoad steps aside when ROCprofiler-SDK is already loaded)",
    },
    SettingSpec {
        name: "METRON_GPU_AMD_BUFFER_BYTES",
        kind: Kind::Size,
        default: "4M",
        description: "AMD, ROCprofiler-SDK: size of the SDK buffer Metron's records are delivered from (delivered at 7/8 full and at every flush)",
    },
    SettingSpec {
        name: "METRON_GPU_AMD_BUFFER_POLICY",
        kind: Kind::Choice(&["lossless", "discard"]),
        default: "lossless",
        description: "AMD, ROCprofiler-SDK: when the buffer is full, lossless makes the SDK wait for delivery, discard drops records (counted in metadata.json)",
    },
    SettingSpec {
        name: "METRON_GPU_AMD_HSA_API",
        kind: Kind::Text,
        default: "wrapped",
        description: "AMD: which HSA API calls become slices, a comma-separated list of wrapped (the five calls Metron hooks; on the ROCprofiler-SDK path, unset means none), core (every hsa.h call), amd (every hsa_ext_amd.h call), all, none, or function names such as hsa_signal_create; an unknown name is reported and the rest kept",
    },
    SettingSpec {
        name: "METRON_GPU_AMD_RECORDS",
        kind: Kind::Text,
        default: "65536",
        description: "AMD: finished records held between drains (every 10 ms); a record that finds the queue full is dropped and counted",
    },
    SettingSpec {
        name: "METRON_GPU_ACTIVITY_BUFFER",
        kind: Kind::Size,
        default: "4M",
        description: "size of each CUPTI activity buffer; 8 are preallocated, more are allocated (and counted) only if CUPTI asks while all are in use",
    },
    SettingSpec {
        name: "METRON_GPU_API",
        kind: Kind::Choice(&["runtime", "driver", "both", "none", "activity"]),
        default: "runtime",
        description: "which CUDA API calls are traced as host-side slices, from CUPTI's Callback API into Metron's own buffers: runtime (every runtime call, plus driver launches made outside the runtime), driver, both, none (launches still join kernels to regions), or activity (CUPTI's RUNTIME and DRIVER activity records, the costlier old way); on AMD, none turns off the HSA API slices",
    },
    SettingSpec {
        name: "METRON_GPU_REGION_KERNELS",
        kind: Kind::Text,
        default: "events",
        description: "region counter mode, how kernels of a counted region are recorded while its user range is open: events (the default: CUPTI's kernel activity is off during the range, which keeps the counter values exact; the range's kernels are recorded from their launch callbacks with CUDA events for the device span, and graph launches through CUPTI's serialized KERNEL kind), off (kernels of counted regions are not recorded), serial (CUPTI's serialized KERNEL kind for the whole range: values exact, kernels serialized), on (kernel activity stays on: CUPTI then counts its own WaitNs kernel, +16.8M instructions per range on the H100), edges (same WaitNs effect as on)",
    },
    SettingSpec {
        name: "METRON_NVTX_FOLD",
        kind: Kind::Text,
        default: "pytorch",
        description: "NVTX range names folded so the summary groups by operation: pytorch (drop PyTorch emit_nvtx's ', seq = N', ', op_id = N' and ', sizes = [...]'), off, or a regular expression whose matches are removed; a folded region keeps its raw name as the annotation nvtx.name",
    },
    SettingSpec {
        name: "METRON_GPU_METRICS",
        kind: Kind::Text,
        default: "",
        description: "comma-separated GPU metrics counted per kernel: on NVIDIA CUPTI Range Profiler metrics (e.g. smsp__inst_executed.sum,dram__bytes_read.sum), on AMD counters of metrics/data/amd_gpu.xml (e.g. SQ_WAVES,SQ_INSTS_VALU); derived ones as name=expression; extra columns in kernels.csv and gpu.gpu_counters in summary.json; empty: no GPU counters",
    },
    SettingSpec {
        name: "METRON_GPU_COUNTER_MODE",
        kind: Kind::Choice(&["kernel", "region"]),
        default: "kernel",
        description: "NVIDIA: how GPU counters are scoped: kernel (one range per kernel, kernel replay) or region (each outermost GpuCounters or C API region is one CUPTI user range; single-pass metric sets only: with more passes the run counts per kernel, regions read NaN and metadata.json says why)",
    },
    SettingSpec {
        name: "METRON_GPU_PC_SAMPLING",
        kind: Kind::Text,
        default: "off",
        description: "NVIDIA: CUPTI PC sampling with stall reasons: off, on (CUPTI's period), or the sampling period as an exponent 5..31 (one sample per SM every 2^N cycles); samples go to pc_samples.csv, gpu_stalls.folded and the summary, per kernel and per region",
    },
    SettingSpec {
        name: "METRON_GPU_PC_SAMPLING_MODE",
        kind: Kind::Choice(&["continuous", "serialized"]),
        default: "continuous",
        description: "NVIDIA PC sampling: continuous (kernels run concurrently; a kernel launched from several regions has its samples shared by GPU time) or serialized (CUPTI serializes kernels; each sample joins its own launch, slow)",
    },
    SettingSpec {
        name: "METRON_GPU_PM_SAMPLING",
        kind: Kind::Text,
        default: "off",
        description: "NVIDIA: GPU metrics over time (CUPTI PM sampling) as Perfetto counter tracks: off, on (DRAM bytes read and written per second, SM instruction throughput %, tensor pipe %, DRAM throughput % of peak), or a comma-separated list of PM-sampling metrics (`ncu --query-metrics-collection pmsampling`); per-kernel/region mean and max in gpu_pm_sampling.csv; refused beside METRON_GPU_METRICS or METRON_GPU_PC_SAMPLING",
    },
    SettingSpec {
        name: "METRON_GPU_PM_INTERVAL",
        kind: Kind::Text,
        default: "100us",
        description: "NVIDIA PM sampling interval: N or Nns, Nus, Nms (GPU time) or Ncycles (GPU clock cycles)",
    },
    SettingSpec {
        name: "METRON_GPU_PM_DEBUG",
        kind: Kind::Text,
        default: "",
        description: "NVIDIA PM sampling: set (any value) to print the set-up, decode and end steps on stderr",
    },
    SettingSpec {
        name: "METRON_GPU_WARM_UP",
        kind: Kind::Bool,
        default: "true",
        description: "NVIDIA: when a CUDA context is created, launch a one-instruction kernel of Metron's own (through PC sampling and counters when they are on) so that CUPTI's first-launch work (2.5 ms for tracing, 0.3-0.7 s for PC sampling or counters) lands in a `metron set-up` slice there rather than in the program's first kernel; its records are left out of the run",
    },
    SettingSpec {
        name: "METRON_GPU_DIAG",
        kind: Kind::Text,
        default: "",
        description: "NVIDIA, for Metron's developers bisecting the cost per launch: a comma-separated list of parts to leave out: no_ts (CUPTI's timestamp callback), no_tid (system thread ids), no_cb (every callback: no region join, no API slices), no_copy (copy and memset records), no_annotate (the launch annotation), rt_only (with METRON_GPU_API=activity: RUNTIME records only); the run's data is incomplete",
    },
];

/// A setting whose value was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingError {
    /// The variable.
    pub name: &'static str,
    /// The value it had.
    pub value: String,
    /// What it accepts.
    pub accepted: String,
    /// The default used instead.
    pub default: &'static str,
}

impl fmt::Display for SettingError {
    /// Quotes the value cut to 80 characters and `…` (`metron_metrics::cut_input`), so a
    /// pasted 40 KB value stays a one-line message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={:?} is not accepted: expected {}; using the default {:?}",
            self.name,
            metron_metrics::cut_input(&self.value),
            self.accepted,
            self.default
        )
    }
}

/// The settings in force for this run.
#[derive(Clone, Debug)]
pub struct Settings {
    /// `METRON_ENABLED`.
    pub enabled: bool,
    /// `METRON_OUTPUT_PATH` (unexpanded template).
    pub output_path: String,
    /// `METRON_BUFFER_SIZE` in bytes.
    pub buffer_bytes: usize,
    /// `METRON_BUFFER_WATERMARK` in percent.
    pub watermark_percent: u8,
    /// `METRON_BUFFER_POLICY`.
    pub policy: Policy,
    /// `METRON_BUFFER_BACKLOG` in bytes; `None` when off.
    pub backlog_bytes: Option<u64>,
    /// `METRON_BUFFER_BACKLOG_POLICY`.
    pub backlog_policy: crate::buffer::BacklogPolicy,
    /// `METRON_FLUSH_INTERVAL`; `None` when off.
    pub flush_interval: Option<Duration>,
    /// `METRON_SUMMARY`.
    pub summary: bool,
    /// `METRON_REPORT`.
    pub report: bool,
    /// `METRON_EXPORT`: the formats written at the end of the run.
    pub export: Vec<metron_export::Format>,
    /// `METRON_TRACE`.
    pub trace: bool,
    /// `METRON_TRACE_FILE`.
    pub trace_file: String,
    /// `METRON_TRACE_BUFFER_SIZE` in bytes.
    pub trace_buffer_bytes: usize,
    /// `METRON_TRACE_FILL_POLICY`.
    pub trace_fill_policy: crate::sinks::perfetto::TraceFillPolicy,
    /// `METRON_TRACE_CATEGORIES` (unparsed; the trace sink reports unknown names).
    pub trace_categories: String,
    /// `METRON_TRACE_MAX_SIZE` in bytes; `None` when off.
    pub trace_max_bytes: Option<u64>,
    /// `METRON_PRELOAD`.
    pub preload: bool,
    /// `METRON_SIGNALS`, with `auto` resolved (on when preloaded).
    pub signals: bool,
    /// `METRON_CRASH`.
    pub crash: bool,
    /// The counter settings, as written (checked by `crate::counters`).
    pub counters: crate::counters::CounterSettings,
    /// `METRON_SAMPLING*` and the time windows (`METRON_TRACE_PERIODS`, `_DELAY`, `_DURATION`).
    pub sampling: crate::sampling::SamplingConfig,
    /// Every registry entry with the value in force and where it came from.
    pub resolved: Vec<ResolvedSetting>,
    /// Values that were rejected.
    pub errors: Vec<SettingError>,
}

/// A setting's value in force, for `metadata.json`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ResolvedSetting {
    /// The variable.
    pub name: &'static str,
    /// The value in force.
    pub value: String,
    /// `environment` or `default`.
    pub source: &'static str,
}

impl Settings {
    /// Reads every registered setting from the environment.
    pub fn from_env() -> Settings {
        Settings::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads every registered setting through `lookup` (tests pass a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Settings {
        let mut resolved = Vec::new();
        let mut errors = Vec::new();
        let mut value_of = |name: &'static str| -> Value {
            let spec = REGISTRY
                .iter()
                .find(|s| s.name == name)
                .expect("setting is registered");
            let default = parse(spec.kind, spec.default).expect("registry default parses");
            let (value, source) = match lookup(name) {
                Some(raw) if !raw.trim().is_empty() => match parse(spec.kind, raw.trim()) {
                    Some(v) => (v, "environment"),
                    None => {
                        errors.push(SettingError {
                            name,
                            value: raw,
                            accepted: spec.kind.accepted(),
                            default: spec.default,
                        });
                        (default, "default")
                    }
                },
                _ => (default, "default"),
            };
            resolved.push(ResolvedSetting {
                name,
                value: value.to_string(),
                source,
            });
            value
        };
        let enabled = value_of("METRON_ENABLED").bool();
        let output_path = value_of("METRON_OUTPUT_PATH").text();
        let buffer_bytes = value_of("METRON_BUFFER_SIZE").size();
        let watermark_percent = value_of("METRON_BUFFER_WATERMARK").percent();
        let policy = match value_of("METRON_BUFFER_POLICY").text().as_str() {
            "discard" => Policy::Discard,
            _ => Policy::Lossless,
        };
        let backlog_bytes = value_of("METRON_BUFFER_BACKLOG").size_or_off();
        let backlog_policy = match value_of("METRON_BUFFER_BACKLOG_POLICY").text().as_str() {
            "drop" => crate::buffer::BacklogPolicy::Drop,
            _ => crate::buffer::BacklogPolicy::Block,
        };
        let flush_interval = value_of("METRON_FLUSH_INTERVAL").duration();
        let summary = value_of("METRON_SUMMARY").bool();
        let report = value_of("METRON_REPORT").bool();
        let export = value_of("METRON_EXPORT").text();
        let trace = value_of("METRON_TRACE").bool();
        let trace_file = value_of("METRON_TRACE_FILE").text();
        let trace_buffer_bytes = value_of("METRON_TRACE_BUFFER_SIZE").size();
        let trace_fill_policy = match value_of("METRON_TRACE_FILL_POLICY").text().as_str() {
            "ring_buffer" => crate::sinks::perfetto::TraceFillPolicy::RingBuffer,
            _ => crate::sinks::perfetto::TraceFillPolicy::Discard,
        };
        let trace_categories = value_of("METRON_TRACE_CATEGORIES").text();
        let trace_max_bytes = value_of("METRON_TRACE_MAX_SIZE").size_or_off();
        let preload = value_of("METRON_PRELOAD").bool();
        // Read by `metron run` (METRON_PROCESSES) and at the end of the run (METRON_RUN_FOLDER).
        let _ = value_of("METRON_PROCESSES");
        let _ = value_of("METRON_RUN_FOLDER");
        let signals = match value_of("METRON_SIGNALS").text().as_str() {
            "on" => true,
            "off" => false,
            _ => preload,
        };
        let crash = value_of("METRON_CRASH").bool();
        // Read by the MPI interposition of libmetron.so (`user-api/src/mpi.rs`).
        let _ = value_of("METRON_MPI");
        let _ = value_of("METRON_MPI_CLOCK_SYNC");
        // METRON_FORK has one policy so far (disable); read it so a bad value is reported.
        let _ = value_of("METRON_FORK");
        // Read by `metron sample` (it sets PYTHONPERFSUPPORT); reported in metadata.json.
        let _ = value_of("METRON_SAMPLING_PYTHON");
        // Read by the GPU backend (`metron-gpu-nvidia`); checked and reported here like the rest.
        for gpu in [
            "METRON_GPU",
            "METRON_GPU_ACTIVITY_BUFFER",
            "METRON_GPU_API",
            "METRON_GPU_METRICS",
            "METRON_GPU_COUNTER_MODE",
            "METRON_GPU_REGION_KERNELS",
            "METRON_GPU_PC_SAMPLING",
            "METRON_GPU_PC_SAMPLING_MODE",
            "METRON_GPU_PM_SAMPLING",
            "METRON_GPU_PM_INTERVAL",
            "METRON_GPU_PM_DEBUG",
            "METRON_GPU_WARM_UP",
            "METRON_GPU_DIAG",
            "METRON_NVTX_FOLD",
            "METRON_GPU_AMD_SIGNALS",
            "METRON_GPU_AMD_RECORDS",
            "METRON_GPU_AMD_HSA_API",
            "METRON_GPU_AMD_BACKEND",
            "METRON_GPU_AMD_BUFFER_BYTES",
            "METRON_GPU_AMD_BUFFER_POLICY",
        ] {
            let _ = value_of(gpu);
        }
        let sampling = crate::sampling::SamplingConfig::from_values(
            value_of("METRON_SAMPLING").bool(),
            &value_of("METRON_SAMPLING_FREQ").text(),
            value_of("METRON_SAMPLING_CPUTIME").bool(),
            value_of("METRON_SAMPLING_REALTIME").bool(),
            value_of("METRON_SAMPLING_DELAY").duration(),
            value_of("METRON_SAMPLING_DURATION").duration(),
            &value_of("METRON_SAMPLING_TIDS").text(),
            &value_of("METRON_SAMPLING_SIGNAL").text(),
            &value_of("METRON_TRACE_PERIODS").text(),
            value_of("METRON_TRACE_DELAY").duration(),
            value_of("METRON_TRACE_DURATION").duration(),
        );
        let mut sampling = sampling;
        sampling.causal = crate::sampling::causal::CausalConfig {
            enabled: value_of("METRON_CAUSAL").bool(),
            lines: crate::sampling::causal::parse_lines(&value_of("METRON_CAUSAL_LINES").text())
                .unwrap_or_default(),
            progress_lines: crate::sampling::causal::parse_lines(
                &value_of("METRON_CAUSAL_PROGRESS").text(),
            )
            .unwrap_or_default(),
            source_scope: crate::sampling::causal::parse_scopes(
                &value_of("METRON_CAUSAL_SOURCE_SCOPE").text(),
                "%",
            ),
            binary_scope: crate::sampling::causal::parse_scopes(
                &value_of("METRON_CAUSAL_BINARY_SCOPE").text(),
                "MAIN",
            ),
            speedups: crate::sampling::causal::parse_speedups(
                &value_of("METRON_CAUSAL_SPEEDUPS").text(),
            )
            .unwrap_or_else(|| {
                crate::sampling::causal::parse_speedups(crate::sampling::causal::DEFAULT_SPEEDUPS)
                    .unwrap_or_default()
            }),
            experiment: value_of("METRON_CAUSAL_EXPERIMENT")
                .duration()
                .unwrap_or(std::time::Duration::from_millis(200)),
        };
        // Counter settings have grammars of their own, checked by `crate::counters`.
        let counters = crate::counters::CounterSettings {
            events: value_of("METRON_PERF_EVENTS").text(),
            metrics: value_of("METRON_METRICS").text(),
            metrics_file: value_of("METRON_METRICS_FILE").text(),
            group_size: value_of("METRON_PERF_GROUP_SIZE").text(),
            pass: value_of("METRON_PERF_PASS").text(),
        };
        Settings {
            enabled,
            output_path,
            buffer_bytes,
            watermark_percent,
            policy,
            backlog_bytes,
            backlog_policy,
            flush_interval,
            summary,
            report,
            export: export_formats(export, &mut errors),
            trace,
            trace_file,
            trace_buffer_bytes,
            trace_fill_policy,
            trace_categories,
            trace_max_bytes,
            preload,
            signals,
            crash,
            counters,
            sampling,
            resolved,
            errors,
        }
    }
}

/// The formats of `METRON_EXPORT`; a value that is not a list of them is reported in `errors`
/// and none are written.
fn export_formats(raw: String, errors: &mut Vec<SettingError>) -> Vec<metron_export::Format> {
    metron_export::parse_list(&raw).unwrap_or_else(|_| {
        errors.push(SettingError {
            name: "METRON_EXPORT",
            value: raw,
            accepted: "off, all, or a comma list of atp, occupancy and apilog".into(),
            default: "off",
        });
        Vec::new()
    })
}

/// A parsed value of any kind.
#[derive(Clone, Debug)]
enum Value {
    Bool(bool),
    Size(usize),
    Percent(u8),
    Duration(Option<Duration>),
    Text(String),
}

impl Value {
    fn bool(self) -> bool {
        matches!(self, Value::Bool(true))
    }
    fn size(self) -> usize {
        match self {
            Value::Size(n) => n,
            _ => unreachable!("kind checked by the registry"),
        }
    }
    fn size_or_off(self) -> Option<u64> {
        match self {
            Value::Size(n) => Some(n as u64),
            _ => None,
        }
    }
    fn percent(self) -> u8 {
        match self {
            Value::Percent(n) => n,
            _ => unreachable!("kind checked by the registry"),
        }
    }
    fn duration(self) -> Option<Duration> {
        match self {
            Value::Duration(d) => d,
            _ => unreachable!("kind checked by the registry"),
        }
    }
    fn text(self) -> String {
        match self {
            Value::Text(t) => t,
            _ => unreachable!("kind checked by the registry"),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Size(n) => write!(f, "{n}"),
            Value::Percent(p) => write!(f, "{p}"),
            Value::Duration(None) => write!(f, "0"),
            Value::Duration(Some(d)) => write!(f, "{}ms", d.as_millis()),
            Value::Text(t) => write!(f, "{t}"),
        }
    }
}

fn parse(kind: Kind, raw: &str) -> Option<Value> {
    match kind {
        Kind::Bool => parse_bool(raw).map(Value::Bool),
        Kind::Size => parse_size(raw)
            .filter(|n| *n >= MIN_BUFFER_BYTES)
            .map(Value::Size),
        Kind::SizeOrOff if raw.eq_ignore_ascii_case("off") => Some(Value::Text("off".into())),
        Kind::SizeOrOff => parse_size(raw)
            .filter(|n| *n >= MIN_TRACE_MAX_BYTES)
            .map(Value::Size),
        Kind::Percent => raw
            .parse::<u8>()
            .ok()
            .filter(|p| (1..=100).contains(p))
            .map(Value::Percent),
        Kind::Duration => parse_duration(raw).map(Value::Duration),
        Kind::Choice(words) => words
            .iter()
            .find(|w| w.eq_ignore_ascii_case(raw))
            .map(|w| Value::Text((*w).to_string())),
        Kind::Text => Some(Value::Text(raw.to_string())),
        Kind::Grammar(g) => g.check(raw).then(|| Value::Text(raw.to_string())),
    }
}

/// A boolean as the registry's `Bool` settings accept it: `1`/`0`, `true`/`false`, `yes`/`no`,
/// `on`/`off`, any case.
pub fn parse_bool(raw: &str) -> Option<bool> {
    match raw.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// A boolean setting read from the environment where a crate that is not the runtime needs it
/// (the GPU backends start inside driver callbacks): `default` when unset or not a boolean
/// (the registry reports a bad value).
pub fn env_bool(name: &str, default: bool) -> bool {
    std::env::var(name)
        .ok()
        .and_then(|v| parse_bool(v.trim()))
        .unwrap_or(default)
}

/// A size setting read from the environment (as [`env_bool`]).
pub fn env_size(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| parse_size(v.trim()))
        .unwrap_or(default)
}

/// A count setting read from the environment (as [`env_bool`]).
pub fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// A size as the registry's `Size` settings accept it: bytes with an optional `K`, `M` or `G`
/// suffix (powers of 1024; `KB`/`KiB` spellings too).
pub fn parse_size(raw: &str) -> Option<usize> {
    let upper = raw.to_ascii_uppercase();
    let trimmed = upper.trim_end_matches("IB").trim_end_matches('B');
    let (digits, scale) = match trimmed.chars().last()? {
        'K' => (&trimmed[..trimmed.len() - 1], 1usize << 10),
        'M' => (&trimmed[..trimmed.len() - 1], 1 << 20),
        'G' => (&trimmed[..trimmed.len() - 1], 1 << 30),
        _ => (trimmed, 1),
    };
    digits.trim().parse::<usize>().ok()?.checked_mul(scale)
}

fn parse_duration(raw: &str) -> Option<Option<Duration>> {
    if raw == "0" {
        return Some(None);
    }
    let split = raw.find(|c: char| !c.is_ascii_digit() && c != '.')?;
    let (number, unit) = raw.split_at(split);
    let number: f64 = number.parse().ok()?;
    let seconds = match unit.trim() {
        "us" => number / 1e6,
        "ms" => number / 1e3,
        "s" => number,
        "m" => number * 60.0,
        _ => return None,
    };
    if seconds == 0.0 {
        return Some(None);
    }
    Some(Some(Duration::from_secs_f64(seconds)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(pairs: &[(&str, &str)]) -> Settings {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn defaults_apply_when_nothing_is_set() {
        let s = settings(&[]);
        assert!(s.enabled);
        assert_eq!(s.buffer_bytes, 1 << 20);
        assert_eq!(s.watermark_percent, 100);
        assert_eq!(s.policy, Policy::Lossless);
        assert_eq!(s.flush_interval, Some(Duration::from_secs(1)));
        assert!(s.errors.is_empty());
        assert_eq!(s.resolved.len(), REGISTRY.len());
    }

    #[test]
    fn valid_values_are_taken() {
        let s = settings(&[
            ("METRON_ENABLED", "off"),
            ("METRON_BUFFER_SIZE", "64K"),
            ("METRON_BUFFER_WATERMARK", "50"),
            ("METRON_BUFFER_POLICY", "Discard"),
            ("METRON_FLUSH_INTERVAL", "250ms"),
        ]);
        assert!(!s.enabled);
        assert_eq!(s.buffer_bytes, 64 << 10);
        assert_eq!(s.watermark_percent, 50);
        assert_eq!(s.policy, Policy::Discard);
        assert_eq!(s.flush_interval, Some(Duration::from_millis(250)));
        assert_eq!(
            settings(&[("METRON_FLUSH_INTERVAL", "0")]).flush_interval,
            None
        );
    }

    #[test]
    fn a_bad_value_names_the_variable_the_value_and_what_is_accepted_and_keeps_the_default() {
        let s = settings(&[
            ("METRON_BUFFER_SIZE", "12Q"),
            ("METRON_BUFFER_POLICY", "sometimes"),
            ("METRON_FLUSH_INTERVAL", "5 fortnights"),
            ("METRON_BUFFER_WATERMARK", "0"),
            ("METRON_ENABLED", "maybe"),
        ]);
        assert_eq!(s.errors.len(), 5);
        assert_eq!(s.buffer_bytes, 1 << 20);
        assert_eq!(s.policy, Policy::Lossless);
        assert!(s.enabled);
        let text = s.errors[0].to_string();
        assert_eq!(
            text,
            "METRON_ENABLED=\"maybe\" is not accepted: expected a boolean: 1, 0, true, false, yes, no, on or off; using the default \"true\""
        );
        let policy = s
            .errors
            .iter()
            .find(|e| e.name == "METRON_BUFFER_POLICY")
            .unwrap();
        assert!(policy.to_string().contains("one of: lossless, discard"));
    }

    #[test]
    fn a_buffer_smaller_than_the_minimum_is_rejected() {
        let s = settings(&[("METRON_BUFFER_SIZE", "100")]);
        assert_eq!(s.errors.len(), 1);
        assert_eq!(s.buffer_bytes, 1 << 20);
    }
}
