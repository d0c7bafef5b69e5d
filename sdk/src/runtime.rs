//! The process-wide runtime: settings, the slot service and its flusher pipeline, the run
//! folder, and the end of the run (flush, outputs, the one stderr line).
//!
//! It starts before `main`, from the lifecycle layer's ELF constructor, so that no
//! application thread ever waits for it: settings, the clock's reference point, the sinks and the
//! flusher are ready when the program's first thread records. Where the constructor did not run
//! (a record made by another library's constructor that ran first) the first record starts it.
//! It finishes once, at normal exit (`atexit`) or on [`crate::finish`]; at exit it writes the run
//! folder only if the run was used (a thread recorded, a sink was added, [`crate::init`] or
//! [`crate::finish`] was called), so a program that links Metron and records nothing writes
//! nothing, as before.

use crate::buffer::{BufferConfig, BufferedService, CallbackThread};
use crate::output_path::{self, PathKeys};
use crate::pipeline::Pipeline;
use crate::record::Slot;
use crate::settings::Settings;
use crate::sink::{MetadataNeed, RunInfo, Sink};
use crate::sinks::perfetto::{Categories, PerfettoConfig, PerfettoSink};
use crate::sinks::summary::{SummaryConfig, SummarySink};
use crate::sys;
use metron_components::clock;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

// The recording state the hot path reads lives in the hot path layer (`run_state`); the
// runtime writes it.
pub(crate) use crate::run_state::collecting;
static RUNTIME: OnceLock<Runtime> = OnceLock::new();
/// What the lifecycle layer installs when an enabled runtime starts (the fork and signal
/// handlers): registered by it with [`on_start`], so that the runtime does not reach up into it.
static ON_START: OnceLock<fn(&Settings)> = OnceLock::new();

/// Registers `hook`, called with the settings when an enabled runtime starts, or now if it
/// already started (a record made by another library's constructor that ran first). The
/// lifecycle layer registers it from its constructor before it starts the runtime; first call
/// wins, and `hook` must tolerate a second call.
pub(crate) fn on_start(hook: fn(&Settings)) {
    if ON_START.set(hook).is_err() {
        return;
    }
    if let Some(rt) = RUNTIME.get() {
        if rt.settings.enabled {
            hook(&rt.settings);
        }
    }
}

pub(crate) use crate::first_use::say;

/// Notes that the run is used, so that the exit handler writes it (and held messages print).
/// Called on cold paths only (a thread's first record, `init`, `add_sink`, `finish`).
pub(crate) fn mark_used() {
    if let Some(owner) = crate::shared_runtime::owner() {
        return (owner.mark_used)();
    }
    if crate::first_use::note_use() {
        // After `main` began, usually: the program's own handlers (and Rust's stack-overflow
        // handler) are in place by then, and Metron's chain to them.
        crate::crash::install_handlers(crash_site());
    }
}

/// The id of the instant a crash records.
fn crash_site() -> u32 {
    crate::callsite::intern("crash", crate::callsite::CallsiteKind::Instant)
}

/// How long after the runtime's start the Perfetto session's set-up waits (see
/// `PerfettoSink::session_set_up`): past a program's start-up burst, where its threads would
/// share the CPU with the SDK's 1 to 3 ms of set-up, and past the whole of a short run, which
/// then starts no session.
const SESSION_SETTLE: std::time::Duration = std::time::Duration::from_millis(200);

pub(crate) struct Runtime {
    pub(crate) settings: Settings,
    pub(crate) service: BufferedService<Slot>,
    pipeline: Arc<Mutex<Pipeline>>,
    run: Mutex<RunInfo>,
    path_warnings: Vec<String>,
    finished: AtomicBool,
    /// The process that started the runtime: a forked child has another pid.
    pid: u32,
}

/// Starts the runtime if needed and says whether recording is on.
pub(crate) fn started_and_collecting() -> bool {
    if let Some(owner) = crate::shared_runtime::owner() {
        return (owner.collecting)();
    }
    get();
    collecting()
}

/// The runtime, started on first use; `None` in a copy of Metron that joined another (see
/// `crate::shared_runtime`), which has none.
pub(crate) fn get() -> Option<&'static Runtime> {
    if crate::shared_runtime::owner().is_some() {
        return None;
    }
    Some(RUNTIME.get_or_init(start))
}

/// What a thread's first record asks of the runtime (see `thread_buffer`).
static RECORDING_HOOKS: crate::thread_buffer::RecordingHooks =
    crate::thread_buffer::RecordingHooks {
        owner: crate::shared_runtime::owner,
        service: recording_service,
        attached: mark_used,
    };

/// Lets threads record into this runtime. Allocation-free: called from the first constructor
/// (`lifecycle`), before any of the program's, and again at start.
pub(crate) fn install_recording_hooks() {
    crate::thread_buffer::install_hooks(&RECORDING_HOOKS);
}

/// The region service a thread attaches to: starts the runtime if needed; `None` while
/// recording is off or when this copy joined another.
fn recording_service() -> Option<&'static std::sync::Arc<crate::buffer::service::ServiceInner<Slot>>>
{
    let rt = get()?;
    collecting().then_some(&rt.service.inner)
}

/// Turns recording on or off for the whole process (no effect when `METRON_ENABLED` is off
/// or the run finished).
pub(crate) fn set_collecting(on: bool) {
    if let Some(owner) = crate::shared_runtime::owner() {
        return (owner.set_collecting)(on);
    }
    let Some(rt) = get() else { return };
    if !rt.settings.enabled || rt.finished.load(Ordering::Acquire) {
        return;
    }
    crate::run_state::set(on);
}

fn start() -> Runtime {
    install_recording_hooks();
    let settings = Settings::from_env();
    for error in &settings.errors {
        say(error.to_string());
    }
    if settings.enabled {
        if let Some(plan) = crate::counters::configure(&settings.counters) {
            for m in &plan.messages {
                say(m.clone());
            }
            crate::metadata::add_section("perf_counters", crate::counters::metadata);
        }
    }
    // The clock's reference point, not its rate: the rate is measured later, off this thread.
    clock::reference();
    let start_realtime_ns = clock::realtime_ns();
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "unknown".into());
    let hostname = sys::hostname();
    let pid = sys::getpid();
    let (output_dir, path_warnings) = run_folder(
        &settings.output_path,
        pid,
        &exe,
        &hostname,
        start_realtime_ns,
    );
    for w in &path_warnings {
        say(w.clone());
    }
    if let Some(reason) = crate::shared_runtime::separate_reason() {
        say(format!(
            "{reason}: this copy records separately, into its own run folder"
        ));
    }

    // Lent before any sink exists, trace setting or not: a program may add a Perfetto sink of
    // its own (`add_sink`), and its muxer thread must not take a program thread's sampling
    // number either.
    crate::sinks::perfetto::on_library_thread_starting(crate::sys::library_thread_starting);
    let mut sinks: Vec<Box<dyn Sink>> = Vec::new();
    if settings.summary {
        sinks.push(Box::new(SummarySink::with_config(summary_config(
            &settings,
        ))));
    }
    // `stacks.folded`, written only when the run has call-stack samples.
    sinks.push(Box::new(crate::sinks::folded::FoldedSink::per_thread(
        settings.sampling_per_thread,
    )));
    if settings.trace {
        let config = PerfettoConfig {
            file_name: settings.trace_file.clone(),
            buffer_bytes: settings.trace_buffer_bytes,
            fill_policy: settings.trace_fill_policy,
            categories: Categories::ALL,
            write_interval: settings.flush_interval,
            segment_bytes: settings.buffer_bytes,
            max_file_bytes: settings.trace_max_bytes,
        };
        let mut trace = PerfettoSink::with_category_list(
            config,
            &settings.trace_categories,
            output_dir.clone(),
        )
        .with_gpu_context(crate::gpu::context());
        if settings.enabled {
            // The SDK's session starts on a thread of Metron's own (its muxer thread inherits
            // the blocked timer signals), neither at the flusher's first batch nor during the
            // program's start-up burst: after the trace's first batch, once SESSION_SETTLE has
            // passed; a run that ends before then has none.
            let set_up = trace.session_set_up(SESSION_SETTLE);
            crate::buffer::spawn_own_thread_soon("metron-trace-start", move || {
                set_up();
            });
        }
        sinks.push(Box::new(trace));
    }
    // `flamegraph.svg`, `regions.svg`, `report.html`: last, from the files the others wrote.
    if settings.report {
        sinks.push(Box::new(crate::sinks::late_files::LateFilesSink::pictures()));
    }
    // session.atp, session.occupancy, api.log (METRON_EXPORT): from the files the others wrote.
    if !settings.export.is_empty() {
        sinks.push(Box::new(crate::sinks::late_files::LateFilesSink::export(
            settings.export.clone(),
        )));
    }
    // The GPU glue adds its sinks and delivers its records through these hooks; a backend that
    // registered before now has its sinks added here, after the others (as `add_sink` would).
    let gpu_sinks = crate::gpu::wire(crate::gpu::GpuHooks {
        add_sink,
        deliver: deliver_gpu,
    });
    if !gpu_sinks.is_empty() {
        mark_used();
        sinks.extend(gpu_sinks);
    }
    let pipeline = Arc::new(Mutex::new(
        Pipeline::new(sinks, output_dir.clone()).with_backend_threads(settings.backend_threads),
    ));
    let flusher = CallbackThread::shared();
    // Disabled: no periodic wake-ups of the flusher for a run that records nothing.
    flusher.set_interval(settings.flush_interval.filter(|_| settings.enabled));
    let feed = Arc::clone(&pipeline);
    let service = BufferedService::new(
        "regions",
        BufferConfig {
            bytes: settings.buffer_bytes,
            watermark_percent: settings.watermark_percent,
            policy: settings.policy,
        },
        flusher.clone(),
        move |batch| {
            feed.lock()
                .unwrap_or_else(|e| e.into_inner())
                .consume(batch)
        },
    );
    // A program that records faster than the flusher writes waits for it (or drops, counted)
    // at the backlog limit, instead of growing its memory until exit.
    if settings.policy == crate::buffer::Policy::Lossless {
        service.set_backlog_limit(crate::buffer::BacklogLimit {
            bytes: settings.backlog_bytes.unwrap_or(0) as usize,
            policy: settings.backlog_policy,
        });
    }
    // The first threads of the program attach without mapping memory (see `keep_free`).
    if settings.enabled {
        service.keep_free(crate::buffer::KEEP_FREE_BY_CPUS);
    }
    let run = RunInfo {
        output_dir,
        pid,
        exe,
        argv: std::env::args().collect(),
        hostname,
        start_realtime_ns,
        start_ns: clock::monotonic_ns(),
        end_ns: 0,
    };
    let enabled = settings.enabled;
    // Time windows may start with recording off; the sampler starts here when asked for.
    let open = !enabled || {
        // The sampler hands its batches to the pipeline through `deliver` and switches
        // recording with the time windows through `set_collecting`.
        let feed = Arc::clone(&pipeline);
        let hooks = crate::sampling::SamplingHooks {
            deliver: Box::new(move |batches| {
                let mut pipeline = feed.lock().unwrap_or_else(|e| e.into_inner());
                for b in batches {
                    pipeline.consume_samples(b.tid, &b.name, &b.records, b.dropped);
                }
            }),
            set_collecting,
            add_sink,
        };
        let (open, sampling) = crate::sampling::start(&settings.sampling, hooks, &flusher);
        if sampling {
            crate::metadata::add_section("sampling", crate::sampling::metadata);
        }
        open
    };
    let runtime = Runtime {
        settings,
        service,
        pipeline,
        run: Mutex::new(run),
        path_warnings,
        finished: AtomicBool::new(false),
        pid: sys::getpid(),
    };
    if enabled {
        sys::at_exit(finish_at_exit);
    }
    if enabled {
        if let Some(hook) = ON_START.get() {
            hook(&runtime.settings);
        }
        if runtime.settings.crash {
            crate::crash::start(crate::crash::CrashHooks {
                ticks_to_ns,
                finish_at_crash: |crash_ns| {
                    finish_at_crash(crash_ns);
                },
            });
            // Used before the runtime existed (`init` from a constructor): install now.
            if crate::first_use::used() {
                crate::crash::install_handlers(crash_site());
            }
        }
    }
    crate::run_state::set(enabled && open);
    runtime
}

/// The summary's config: the derived metrics of the counter plan (`METRON_METRICS`) and the
/// crash report, handed to it as values rather than read by it from the sources.
fn summary_config(settings: &Settings) -> SummaryConfig {
    let plan = crate::counters::plan().filter(|p| settings.enabled && !p.metrics.is_empty());
    SummaryConfig {
        derived: plan.map(|plan| {
            Box::new(move |total: &dyn Fn(&str) -> Option<f64>| {
                crate::counters::derived(plan, total)
            }) as crate::sinks::summary::DerivedMetrics
        }),
        died: settings.crash.then_some(crate::crash::died as fn() -> _),
        gpu: crate::gpu::context(),
        refused: Some(crate::metadata::refusals),
        sampling_per_thread: settings.sampling_per_thread,
    }
}

/// The run folder for the output-path template `template`, and a warning per unknown key.
fn run_folder(
    template: &str,
    pid: u32,
    exe: &str,
    hostname: &str,
    start_realtime_ns: u64,
) -> (PathBuf, Vec<String>) {
    let time = output_path::utc_stamp(start_realtime_ns / 1_000_000_000);
    // The first call (at start) also reads the start clock pair of metadata.json.
    crate::ranks::start_pair();
    let (rank, size) = PathKeys::this_rank();
    let keys = PathKeys {
        pid,
        exe,
        hostname,
        time: &time,
        rank,
        size,
    };
    let (output_dir, unknown) = output_path::expand(template, &keys, |n| std::env::var(n).ok());
    let warnings = unknown
        .iter()
        .map(|k| {
            format!(
                "METRON_OUTPUT_PATH: unknown key {k} kept as written; accepted: {}",
                output_path::ACCEPTED_KEYS
            )
        })
        .collect();
    (output_dir, warnings)
}

/// `metron::set_output_path`: moves the run folder, printing the warnings on stderr (the
/// facade and the owner copy's entry for other copies both call it).
pub(crate) fn set_output_path_reporting(template: &str) -> Result<PathBuf, String> {
    let (dir, warnings) = set_output_path(template)?;
    for w in &warnings {
        eprintln!("metron: {w}");
    }
    Ok(dir)
}

/// Changes the run folder to the expansion of `template` (the keys of `METRON_OUTPUT_PATH`).
/// Possible until the flusher first hands records to the sinks (the trace is written while
/// the run goes on); then it is refused, with the reason. Returns the folder and a warning per
/// unknown key.
pub(crate) fn set_output_path(template: &str) -> Result<(PathBuf, Vec<String>), String> {
    if let Some(owner) = crate::shared_runtime::owner() {
        // The owner prints its warnings itself.
        return crate::shared_runtime::joined::set_output_path(owner, template)
            .map(|d| (d, Vec::new()));
    }
    let rt = get().ok_or("Metron is not running")?;
    if rt.finished.load(Ordering::Acquire) {
        return Err("the run already finished".into());
    }
    let mut pipeline = rt.pipeline.lock().unwrap_or_else(|e| e.into_inner());
    let mut run = rt.run.lock().unwrap_or_else(|e| e.into_inner());
    let (dir, warnings) = run_folder(
        template,
        run.pid,
        &run.exe,
        &run.hostname,
        run.start_realtime_ns,
    );
    if !pipeline.move_output_dir(&dir) {
        return Err(format!(
            "records were already handed to the outputs in {}; set the output path before the first records are flushed",
            run.output_dir.display()
        ));
    }
    run.output_dir.clone_from(&dir);
    Ok((dir, warnings))
}

extern "C" fn finish_at_exit() {
    if !crate::first_use::used() {
        return;
    }
    // Another thread that crashed is writing the run with its death: exiting now would end
    // the process under it (status 0, nothing on disk), and finishing here would write an
    // ordinary run in its place.
    if crate::crash::wait_for_a_crash_elsewhere() {
        return;
    }
    // A panic must not unwind into libc's exit path.
    let _ = std::panic::catch_unwind(finish);
}

/// Adds a sink; it sees the events flushed from now on.
pub(crate) fn add_sink(sink: Box<dyn Sink>) {
    if let Some(owner) = crate::shared_runtime::owner() {
        match crate::shared_runtime::same_build_owner() {
            Some(_) => crate::shared_runtime::joined::add_sink(owner, sink),
            None => eprintln!(
                "metron: add_sink: this copy of Metron records into another copy of a different build, which cannot take a Rust sink; the sink gets no events"
            ),
        }
        return;
    }
    mark_used();
    if let Some(rt) = get() {
        rt.pipeline
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .add_sink(sink);
    }
}

/// In a forked child (see `lifecycle`): recording off and the run marked finished, so the
/// child never flushes or writes the parent's run. Lock-free: one `OnceLock::get`, two stores.
pub(crate) fn disable_after_fork() {
    crate::run_state::set(false);
    if let Some(rt) = RUNTIME.get() {
        rt.finished.store(true, Ordering::Release);
    }
}

/// Delivers everything recorded so far to the sinks.
pub(crate) fn flush() {
    if let Some(owner) = crate::shared_runtime::owner() {
        return (owner.flush)();
    }
    // A forked child must not take the parent's locks (another parent thread may have held
    // them at the fork): it has nothing of its own to deliver anyway.
    if crate::sys::process::disabled_in_child() {
        return;
    }
    if let Some(rt) = RUNTIME.get() {
        crate::gpu::flush_backend(false);
        rt.service.flush();
        crate::sampling::drain();
    }
}

/// Hands GPU records to the sinks (see [`crate::gpu::submit`]).
pub(crate) fn deliver_gpu(records: &[crate::sink::GpuRecord]) {
    if let Some(rt) = RUNTIME.get() {
        // The launch annotations of these records were published before the work ran: drained
        // first, so the sinks, which write the records now, find their regions.
        rt.service.flush();
        rt.pipeline
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .gpu_records(records);
    }
}

pub use crate::run_report::RunReport;

/// Ends the run once: stops recording, drains every buffer, lets the sinks write, writes
/// `metadata.json` and prints where the output went. Later calls return `None`.
pub(crate) fn finish() -> Option<RunReport> {
    if let Some(owner) = crate::shared_runtime::owner() {
        return crate::shared_runtime::joined::finish(owner);
    }
    finish_with(None)
}

/// [`finish`] after a crash at `crash_ns` (`CLOCK_MONOTONIC`): the run ends there, regions
/// still open end there too and are counted as `open_at_crash` (see `crate::crash`).
pub(crate) fn finish_at_crash(crash_ns: u64) -> Option<RunReport> {
    finish_with(Some(crash_ns))
}

/// `ticks` on the run's timeline (`CLOCK_MONOTONIC` ns), with the pipeline's calibration.
pub(crate) fn ticks_to_ns(ticks: u64) -> u64 {
    match RUNTIME.get() {
        Some(rt) => rt
            .pipeline
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .calibration()
            .to_monotonic_ns(ticks),
        None => clock::calibration().to_monotonic_ns(ticks),
    }
}

fn finish_with(crash_ns: Option<u64>) -> Option<RunReport> {
    let rt = RUNTIME.get()?;
    // A child never writes the parent's run. A `vfork` child (dash starts every command so)
    // runs in the parent's memory until it execs, and no fork handler runs in it: finishing
    // there wrote the parent's run early from the child (which does not even have the trace
    // file open) and marked it finished for the parent. Nothing may be stored here either.
    if sys::getpid() != rt.pid {
        return None;
    }
    if !rt.settings.enabled || rt.finished.swap(true, Ordering::AcqRel) {
        return None;
    }
    let mut phases = EndPhases::start();
    rt.pipeline
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .run_is_ending();
    // The GPU backend's last records reach the sinks before they write.
    crate::gpu::flush_backend(true);
    phases.done("gpu_records");
    crate::run_state::set(false);
    rt.service.flush();
    phases.done("buffers");
    crate::sampling::finish();
    phases.done("sampling");
    let mut pipeline = rt.pipeline.lock().unwrap_or_else(|e| e.into_inner());
    let run = {
        let mut run = rt.run.lock().unwrap_or_else(|e| e.into_inner());
        run.end_ns =
            crash_ns.unwrap_or_else(|| pipeline.calibration().to_monotonic_ns(clock::now_ticks()));
        run.output_dir = pipeline.claim_output_dir();
        run.clone()
    };
    if let Err(e) = std::fs::create_dir_all(&run.output_dir) {
        eprintln!(
            "metron: cannot create the run folder {}: {e}; no output written",
            run.output_dir.display()
        );
        return None;
    }
    // The small outputs first, into the space the reserve kept; the trace's last part after.
    // With room to spare the reserve's space is not needed, and removing it (0.2 ms on the
    // development VM: the file system frees its blocks) runs beside the outputs instead.
    let room_for_the_end = crate::sinks::space::room_for_the_end(&run.output_dir);
    // (Not after a crash: the crash path starts no thread.)
    let releasing = if room_for_the_end
        && crash_ns.is_none()
        && crate::sinks::space::holds_reserve(&run.output_dir)
    {
        let dir = run.output_dir.clone();
        crate::sys::spawn_own_thread("metron-release", move || crate::sinks::space::release(&dir))
            .ok()
    } else {
        None
    };
    if releasing.is_none() {
        crate::sinks::space::release(&run.output_dir);
    }
    let (mut files, mut errors) = pipeline.finish(&run, crash_ns.is_some());
    phases.done("outputs");
    // Causal profiling's experiments (`profile.coz`), when this was a causal run.
    match crate::sampling::causal::write_profile(&run.output_dir) {
        Some(Ok(path)) => files.push(path),
        Some(Err(e)) => errors.push(e),
        None => {}
    }
    // The reserve is gone (and its thread with it) before `metadata.json` lists the threads
    // alive at the end and says what the folder holds.
    if let Some(releasing) = releasing {
        let _ = releasing.join();
    }
    let metadata_path = run.output_dir.join("metadata.json");
    // `metadata.json` is written before the late outputs (the trace's last part, the pictures)
    // where a late output reads the file or the disk may be short of room (then the first
    // version has its place whatever they take); otherwise once, after them: the pictures take
    // the run's metadata from memory.
    let write_first = pipeline.late_sinks_need(MetadataNeed::File) || !room_for_the_end;
    let mut metadata_error = None;
    let mut first = None;
    if write_first || pipeline.late_sinks_need(MetadataNeed::Given) {
        let built = std::sync::Arc::new(crate::metadata::build(
            &rt.facts(),
            &run,
            &mut pipeline,
            &errors,
        ));
        if write_first {
            metadata_error = write_metadata_value(&built, &metadata_path).err();
        }
        pipeline.give_late_sinks_metadata(&built);
        first = Some(built);
    }
    phases.done("metadata");
    let (late_files, late_errors) = pipeline.finish_late(&run);
    phases.done("late_outputs");
    let late_changed = !late_files.is_empty() || !late_errors.is_empty();
    files.extend(late_files);
    errors.extend(late_errors);
    if !write_first || late_changed {
        // With the late outputs' reports; where this fails after a first version, that one
        // stays in place. The late sinks have let go of the first version: only what they
        // changed (their reports, the errors) is made again.
        let mut metadata = match first.map(std::sync::Arc::try_unwrap) {
            Some(Ok(mut metadata)) => {
                crate::metadata::refresh_outputs(&mut metadata, &pipeline, &errors);
                metadata
            }
            _ => crate::metadata::build(&rt.facts(), &run, &mut pipeline, &errors),
        };
        metadata["end_seconds"] = phases.json();
        if let Err(e) = write_metadata_value(&metadata, &metadata_path) {
            metadata_error.get_or_insert(e);
        }
    }
    for e in &errors {
        eprintln!("metron: {e}");
    }
    match &metadata_error {
        None => files.push(metadata_path),
        Some(e) => {
            eprintln!("metron: {e}");
            errors.push(e.clone());
        }
    }
    pipeline.release_claim();
    let threads = pipeline.thread_stats();
    let written: u64 = threads.iter().map(|t| t.records_written).sum();
    let before_hooks = crate::thread_buffer::dropped_before_hooks();
    let dropped: u64 = threads.iter().map(|t| t.records_dropped).sum::<u64>() + before_hooks;
    // The last line names every output that failed, so a full disk is never reported as a
    // success.
    let failed = if errors.is_empty() {
        String::new()
    } else {
        format!("; FAILED: {}", errors.join("; "))
    };
    let mut cut = crate::sinks::perfetto::cut_note();
    cut.push_str(&backlog_note(&rt.service.backlog_stats()));
    if before_hooks > 0 {
        cut.push_str(&format!(
            "; {before_hooks} records came before Metron's first constructor ran"
        ));
    }
    let refused = crate::metadata::refusals();
    if !refused.is_empty() {
        let list: Vec<String> = refused
            .iter()
            .map(|(what, n)| format!("{n} {what}"))
            .collect();
        cut.push_str(&format!("; refused: {}", list.join(", ")));
    }
    // Under `metron run`'s process tree the launcher writes the last line for the whole tree;
    // a process says only what went wrong.
    let in_tree = std::env::var_os("METRON_RUN_FOLDER")
        .filter(|v| !v.is_empty())
        .is_some_and(|tree| run.output_dir.starts_with(tree));
    if !in_tree || !errors.is_empty() || !cut.is_empty() {
        eprintln!(
            "metron: wrote {} ({} records, {} dropped){cut}{failed}",
            run.output_dir.display(),
            written,
            dropped
        );
    }
    Some(RunReport {
        output_dir: run.output_dir.clone(),
        files,
        records_written: written,
        records_dropped: dropped,
    })
}

/// How long each step of the end of the run took (`metadata.json` → `end_seconds`): where a
/// slow end goes, in the run's own folder.
struct EndPhases {
    start: std::time::Instant,
    last: std::time::Instant,
    steps: serde_json::Map<String, serde_json::Value>,
}

impl EndPhases {
    fn start() -> EndPhases {
        let now = std::time::Instant::now();
        EndPhases {
            start: now,
            last: now,
            steps: serde_json::Map::new(),
        }
    }

    /// The step `name` ended now.
    fn done(&mut self, name: &str) {
        let now = std::time::Instant::now();
        self.steps.insert(
            name.into(),
            serde_json::json!((now - self.last).as_secs_f64()),
        );
        self.last = now;
    }

    /// The steps, and the whole end up to now (`total`).
    fn json(&self) -> serde_json::Value {
        let mut steps = self.steps.clone();
        steps.insert(
            "total".into(),
            serde_json::json!(self.start.elapsed().as_secs_f64()),
        );
        serde_json::Value::Object(steps)
    }
}

/// `; recording held 3 times for 0.512 s at the backlog limit, METRON_BUFFER_BACKLOG=32768K`
/// (or the drops there) for the run's
/// last stderr line; empty when the limit was never reached.
fn backlog_note(b: &crate::buffer::BacklogStats) -> String {
    let limit = format!(
        "backlog limit, METRON_BUFFER_BACKLOG={}K",
        b.limit_bytes >> 10
    );
    let mut note = String::new();
    if b.blocked_times > 0 {
        note.push_str(&format!(
            "; recording held {} times for {:.3} s at the {limit}",
            b.blocked_times,
            b.blocked_ns as f64 / 1e9
        ));
    }
    if b.drops_at_limit > 0 {
        note.push_str(&format!(
            "; records dropped {} times at the {limit}",
            b.drops_at_limit
        ));
    }
    note
}

/// Writes `metadata.json` through a temporary file and a rename, so that a failed write (a
/// full disk) never leaves a truncated file in place of a complete one.
fn write_metadata_value(
    metadata: &serde_json::Value,
    path: &std::path::Path,
) -> Result<(), String> {
    let text = serde_json::to_string_pretty(metadata)
        .map_err(|e| format!("cannot encode metadata.json: {e}"))?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text + "\n")
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("cannot write {}: {e}", path.display())
        })
}

impl Runtime {
    /// What `metadata.json` reports of the runtime.
    fn facts(&self) -> crate::metadata::RuntimeFacts<'_> {
        crate::metadata::RuntimeFacts {
            settings: &self.settings,
            path_warnings: &self.path_warnings,
            segments_mapped: self.service.segments_mapped(),
            backlog: self.service.backlog_stats(),
        }
    }
}
