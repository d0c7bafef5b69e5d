//! The `LD_PRELOAD` runtime: what `libmetron.so` does when `metron run` loads it into a program
//! that may never call Metron.
//!
//! A constructor (an `.init_array` entry, run by the dynamic loader before `main`) checks
//! `METRON_PRELOAD`. When it is on, it starts Metron, begins a region named after the program
//! on the main thread, and ends it when the main thread's thread-locals are destroyed at `exit`;
//! the runtime's `atexit` handler then writes the run folder. The
//! program therefore gets a run folder with its process, its main duration and the threads
//! alive at exit (`metadata.json`, section `process`), even if it never calls Metron.
//! Signals, `fork` and `exec` are handled by `metron::lifecycle`.
//!
//! Without `METRON_PRELOAD` the constructor does nothing, so linking `libmetron` normally
//! costs nothing at load time.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};

#[used]
#[link_section = ".init_array"]
static CONSTRUCTOR: extern "C" fn() = on_load;

/// Runs when the library is loaded. Must not unwind into the loader.
extern "C" fn on_load() {
    STARTED_IN.store(std::process::id(), Ordering::Relaxed);
    let _ = std::panic::catch_unwind(|| {
        let on = std::env::var("METRON_PRELOAD").is_ok_and(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "1" | "true" | "yes" | "on"
            )
        });
        // A copy that joined another Metron of the process (the program links the crate or
        // libmetron.a and loaded this library later) leaves the program region to the owner.
        let joined = matches!(
            metron::process_runtime(),
            metron::ProcessRuntime::Joined { .. }
        );
        if on && !joined {
            crate::cuda_injection::report_in_metadata();
            crate::amd_tools::report_in_metadata();
            start_program_region();
        }
    });
}

/// The parent's pid when the program started (a parent that dies first reparents the process).
static PARENT: AtomicU32 = AtomicU32::new(0);
/// The pid of the process this library started in (0 before).
static STARTED_IN: AtomicU32 = AtomicU32::new(0);

/// False in a child made by `fork` or `vfork` (which shares the parent's memory and thread
/// until it execs or `_exit`s): the `exec` and `_exit` wrappers must not end the parent's
/// program region or write its run from there.
pub(crate) fn in_starting_process() -> bool {
    let started = STARTED_IN.load(Ordering::Relaxed);
    started == 0 || started == std::process::id()
}
fn start_program_region() {
    crate::errors::register_metadata();
    // SAFETY: getppid has no preconditions and cannot fail.
    PARENT.store(unsafe { libc::getppid() } as u32, Ordering::Relaxed);
    metron::add_metadata_section("process", process_section);
    if !metron::init() {
        return;
    }
    let name = program_name();
    if counters_asked() {
        // The whole program measured with the counters of METRON_PERF_EVENTS/METRON_METRICS.
        let leaked: &'static str = Box::leak(name.into_boxed_str());
        let site: &'static metron::Callsite = Box::leak(Box::new(metron::Callsite::new(
            leaked,
            "",
            0,
            "",
            metron::CallsiteKind::Region,
            <ProgramCounters as metron::Bundle>::COMPONENTS,
        )));
        let region = metron::Region::<ProgramCounters>::begin_bundle(site);
        PROGRAM_REGION.with(|open| open.counted.set(Some(Box::new(region))));
        return;
    }
    let id = metron::intern(&name, metron::CallsiteKind::Region);
    if metron::by_id::begin(id) {
        // Armed after the begin, so its destructor is registered after the thread buffer's
        // and runs before it (thread-local destructors run in reverse order, at `exit` on the
        // main thread and before any `atexit` handler).
        PROGRAM_REGION.with(|open| open.id.set(id));
    }
}

/// Ends the program's region when the main thread's thread-locals are destroyed: at `exit`
/// or a return from `main`, before the runtime's `atexit` handler writes the outputs. An
/// `exit` from another thread leaves it to the runtime, which closes it when the run ends
/// (counted as `open_at_exit` in `metadata.json`).
///
/// One thread-local for both kinds of program region (by id, or with a counter group, boxed:
/// the group's values would add about 300 bytes): `libmetron.so`'s thread-local block stays
/// within glibc's spare static TLS (`thread_block`).
struct ProgramRegion {
    id: Cell<u32>,
    counted: Cell<Option<Box<metron::Region<ProgramCounters>>>>,
}

impl ProgramRegion {
    /// Ends whichever region is open (once).
    fn end(&self) {
        if let Some(region) = self.counted.take() {
            region.end();
        }
        let id = self.id.replace(0);
        if id != 0 {
            metron::by_id::end(id);
        }
    }
}

impl Drop for ProgramRegion {
    fn drop(&mut self) {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.end()));
    }
}

thread_local! {
    static PROGRAM_REGION: ProgramRegion = const {
        ProgramRegion { id: Cell::new(0), counted: Cell::new(None) }
    };
}

/// The bundle of the whole-program region when counters are asked for.
#[derive(metron::Bundle, Default)]
struct ProgramCounters {
    perf: metron::components::PerfCounters,
}

/// True when `METRON_PERF_EVENTS` or `METRON_METRICS` is set: then the program region carries
/// a `PerfCounters` group of the main thread.
fn counters_asked() -> bool {
    ["METRON_PERF_EVENTS", "METRON_METRICS"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|v| !v.trim().is_empty()))
}

/// Ends the program's region now (before an `exec`, which runs no destructor).
pub(crate) fn end_program_region() {
    let _ = PROGRAM_REGION.try_with(ProgramRegion::end);
}

/// The program's file name (`/proc/self/exe`), e.g. `python3.11`.
fn program_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "program".into())
}

/// `metadata.json` → `process`: the program and the threads alive when the run ended.
fn process_section() -> serde_json::Value {
    let mut threads = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for entry in dir.flatten() {
            let tid: u64 = entry.file_name().to_string_lossy().parse().unwrap_or(0);
            let name = std::fs::read_to_string(entry.path().join("comm"))
                .map(|s| s.trim_end().to_string())
                .unwrap_or_default();
            threads.push(serde_json::json!({ "tid": tid, "name": name }));
        }
    }
    threads.sort_by_key(|t| t["tid"].as_u64());
    serde_json::json!({
        "preload": true,
        "program": program_name(),
        "argv": std::env::args().collect::<Vec<_>>(),
        "ppid": PARENT.load(Ordering::Relaxed),
        "threads_at_exit": threads,
    })
}
