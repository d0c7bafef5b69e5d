//! GPU activity as the sinks see it: the records a GPU backend (the `metron-gpu-nvidia` crate, CUPTI
//! on NVIDIA; `metron-gpu-amd`, HSA on AMD) hands over, the devices they ran on, and the join of kernel launches with the
//! Metron region open on the launching thread.
//!
//! The SDK does not load any GPU library itself. A backend calls [`set_backend`] once, then
//! [`submit`] with decoded records from its own thread (CUPTI's buffer-completed thread): the
//! records go to every sink's [`crate::Sink::gpu_records`] under the pipeline lock, never on an
//! application thread. At the end of the run the SDK calls the backend's flush hook before it
//! drains its own buffers, so the last GPU records reach the sinks before they write.
//!
//! **Kernel ↔ region.** At each launch (CUPTI's callback on `cudaLaunchKernel`,
//! `cuLaunchKernel`, ...) the backend records an annotation [`LAUNCH_KEY`] with the launch's
//! correlation id on the launching thread. The flusher resolves it to the innermost region
//! open there (the annotation's `region`), and the join sink (`sinks/src/sinks/gpu_join.rs`)
//! keeps `correlation id → region`; the GPU sinks resolve their kernels against it when they
//! write (at the end of the run, when every launch annotation has been seen). The trace and
//! summary do not show these annotations.

use crate::sink::Sink;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, OnceLock};

// The plain GPU data types and the record types are the decoding layer's (`sink`, `sink::gpu`),
// which the sinks see; re-exported here where the backends name them.
pub use crate::sink::gpu::{
    dim3, is_launch_key, GpuContext, GpuDevice, GpuNote, NoteValue, LAUNCH_KEY, NO_STREAM,
};
pub use crate::sink::{GpuKind, GpuRecord};

/// What a backend tells the SDK about itself.
pub struct Backend {
    /// Flushes the backend's pending records through [`submit`] (called before the run ends
    /// and on [`crate::flush`]; `at_end` is true at the end of the run).
    pub flush: fn(at_end: bool),
    /// Its `metadata.json` section `gpu` (status, versions, record and drop counts).
    pub metadata: fn() -> serde_json::Value,
    /// What a record's `stream` is called on this backend's tracks: `stream` (CUDA) or
    /// `queue` (HSA).
    pub stream_word: &'static str,
}

/// What the runtime lends the GPU glue (installed with [`wire`] when it starts), so that this
/// module does not reach up into the runtime.
#[derive(Clone, Copy)]
pub(crate) struct GpuHooks {
    /// Adds a sink to the run (the join and `kernels.csv` sinks, when a backend registers).
    pub add_sink: fn(Box<dyn Sink>),
    /// Hands GPU records to every sink.
    pub deliver: fn(&[GpuRecord]),
}

static BACKEND: OnceLock<Backend> = OnceLock::new();
/// The devices, stream word, launch joins and notes, handed to the GPU sinks.
static CONTEXT: LazyLock<GpuContext> = LazyLock::new(GpuContext::default);
static HOOKS: OnceLock<GpuHooks> = OnceLock::new();
/// The sinks of a backend registered before the runtime wired the GPU glue.
static PENDING: std::sync::Mutex<Vec<Box<dyn Sink>>> = std::sync::Mutex::new(Vec::new());

/// The GPU facts the sinks are handed (the runtime gives it to the trace and the summary).
pub(crate) fn context() -> GpuContext {
    CONTEXT.clone()
}

/// Installs the runtime's hooks (at its start); returns the sinks of a backend that registered
/// before, for the runtime to add.
pub(crate) fn wire(hooks: GpuHooks) -> Vec<Box<dyn Sink>> {
    let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    let _ = HOOKS.set(hooks);
    std::mem::take(&mut *pending)
}

/// Registers the GPU backend (first call wins) and its devices; adds the join sink and the
/// `kernels.csv` sink (the runtime adds the `gpu` section of `metadata.json` from
/// [`metadata`]). Returns false if a backend was already registered.
pub fn set_backend(backend: Backend, devices: Vec<GpuDevice>) -> bool {
    let word = backend.stream_word;
    if BACKEND.set(backend).is_err() {
        return false;
    }
    CONTEXT.set_stream_word(word);
    CONTEXT.set_devices(devices);
    let sinks = crate::sinks::gpu_join::backend_sinks(context());
    let hooks = {
        let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        match HOOKS.get() {
            Some(hooks) => *hooks,
            None => {
                pending.extend(sinks);
                return true;
            }
        }
    };
    for sink in sinks {
        (hooks.add_sink)(sink);
    }
    true
}

/// The `gpu` section of `metadata.json` (the registered backend's), `None` without a backend.
pub(crate) fn metadata() -> Option<serde_json::Value> {
    BACKEND.get().map(|b| (b.metadata)())
}

/// Replaces the device list (a backend learns it once the driver is initialized).
pub fn set_devices(devices: Vec<GpuDevice>) {
    CONTEXT.set_devices(devices);
}

/// The devices the backend registered.
pub fn devices() -> Vec<GpuDevice> {
    CONTEXT.devices()
}

/// The name of device `index` (`GPU <index>` if unknown).
pub fn device_name(index: u32) -> String {
    CONTEXT.device_name(index)
}

/// What the registered backend calls a record's `stream` (`stream` when none registered).
pub fn stream_word() -> &'static str {
    CONTEXT.stream_word()
}

/// Hands decoded records to every sink (off the application threads: the backend's own
/// thread). Does nothing before the runtime started or after the run ended.
pub fn submit(records: &[GpuRecord]) {
    if !records.is_empty() {
        if let Some(hooks) = HOOKS.get() {
            (hooks.deliver)(records);
        }
    }
}

/// What the backend does when collection is switched off and on ([`crate::set_collecting`]).
static ON_COLLECTING: OnceLock<fn(bool)> = OnceLock::new();

/// Lets the backend follow [`crate::set_collecting`] (e.g. switch its tracing off while the
/// program is not collecting).
pub fn on_collecting(f: fn(bool)) {
    let _ = ON_COLLECTING.set(f);
}

/// Tells the backend that collection was switched on or off.
pub(crate) fn collecting_changed(on: bool) {
    if let Some(f) = ON_COLLECTING.get() {
        f(on);
    }
}

/// Adds notes for the trace. Call it before the trace finishes: from a sink's
/// [`Sink::finish`] (sinks that do not finish late finish before the trace) or earlier.
pub fn add_notes(notes: Vec<GpuNote>) {
    CONTEXT.add_notes(notes);
}

/// Asks the backend to flush its records (called by the runtime).
pub(crate) fn flush_backend(at_end: bool) {
    if let Some(b) = BACKEND.get() {
        (b.flush)(at_end);
    }
}

/// The region open on the launching thread when the work with this correlation id was
/// launched, and that thread's tid (known once the flusher saw the launch annotation).
pub fn region_of(correlation: u32) -> Option<(&'static str, u32)> {
    CONTEXT.region_of(correlation)
}

/// What a backend does at the C API's regions when its counters are region-scoped
/// (`METRON_GPU_COUNTER_MODE=region`): the C API calls these, never the backend crate, so its
/// hot path reads one flag of this crate ([`region_counters_on`]) and depends on no backend.
#[derive(Clone, Copy)]
pub struct RegionCounters {
    /// The C API opened region number `depth` (1 = outermost) on this thread, of call site
    /// `site` (instances of one site share the passes of a metric set that needs several).
    pub begin: fn(depth: usize, site: u32),
    /// The C API is about to close region number `depth` (still open, so annotations go to it).
    pub end: fn(depth: usize),
}

static REGION_COUNTERS: OnceLock<RegionCounters> = OnceLock::new();
/// Set by the backend while its region-scoped counters are on (and its hooks installed).
static REGION_COUNTERS_ON: AtomicBool = AtomicBool::new(false);

/// Installs the backend's region hooks (first call wins) and switches them on or off; the
/// backend calls it again with `on = false` when its counters go off for the rest of the run.
pub fn set_region_counters(hooks: RegionCounters, on: bool) {
    let _ = REGION_COUNTERS.set(hooks);
    REGION_COUNTERS_ON.store(on, Ordering::Release);
}

/// Region-scoped GPU counters are on for the C API's regions: one relaxed load (the C API's
/// fast path asks it on every call and leaves such regions to its checked path).
#[inline(always)]
pub fn region_counters_on() -> bool {
    REGION_COUNTERS_ON.load(Ordering::Relaxed)
}

/// Calls the backend's [`RegionCounters::begin`] (nothing without a backend's hooks).
pub fn region_counters_begin(depth: usize, site: u32) {
    if let Some(h) = REGION_COUNTERS.get() {
        (h.begin)(depth, site);
    }
}

/// Calls the backend's [`RegionCounters::end`] (nothing without a backend's hooks).
pub fn region_counters_end(depth: usize) {
    if let Some(h) = REGION_COUNTERS.get() {
        (h.end)(depth);
    }
}

/// A kernel's demangled name (both GPU backends), written as `c++filt` (and so CUPTI, `ncu` and
/// PyTorch's profiler) writes it: integer literals as `2ul`, not `(unsigned long)2`; the return
/// type of a function template (a kernel's is `void`) before its name, but not before the
/// functions that enclose a local name (a lambda's) among its template arguments, which
/// `cpp_demangle` writes. Names that are not Itanium-mangled come back unchanged.
pub fn demangle_kernel(name: &str) -> String {
    let Ok(symbol) = cpp_demangle::Symbol::new(name) else {
        return name.to_string();
    };
    let no_return_types = cpp_demangle::DemangleOptions::new().no_return_type();
    let Ok(plain) = symbol.demangle(&no_return_types) else {
        return name.to_string();
    };
    let templated = symbol
        .demangle(&cpp_demangle::DemangleOptions::default())
        .is_ok_and(|full| full.starts_with("void ") && !plain.starts_with("void "));
    let mut s = if templated {
        format!("void {plain}")
    } else {
        plain
    };
    for (cast, suffix) in [
        ("(unsigned long long)", "ull"),
        ("(unsigned long)", "ul"),
        ("(unsigned int)", "u"),
        ("(long long)", "ll"),
        ("(long)", "l"),
    ] {
        while let Some(at) = s.find(cast) {
            let digits_at = at + cast.len();
            let rest = &s[digits_at..];
            let n = rest
                .char_indices()
                .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && c == '-')))
                .map_or(rest.len(), |(i, _)| i);
            if n == 0 {
                break;
            }
            let lit = format!("{}{suffix}", &rest[..n]);
            s.replace_range(at..digits_at + n, &lit);
        }
    }
    s
}

/// Whether a library is in the process already, by the start of its file name (`libcuda.so`
/// matches `libcuda.so.1`): what a backend's `metadata.json` section asks at the end of a run
/// to say why it is off, without opening a file (see `sys::object_loaded`).
pub fn object_loaded(prefix: &str) -> bool {
    crate::sys::object_loaded(prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_are_demangled() {
        assert_eq!(
            demangle_kernel("_Z5saxpyifPKfPf"),
            "saxpy(int, float, float const*, float*)"
        );
        assert_eq!(demangle_kernel("plain_c_kernel"), "plain_c_kernel");
        // A lambda of a function template as a template argument (PyTorch's elementwise
        // kernels): `c++filt` writes no return type for the enclosing `impl<float>`.
        assert_eq!(
            demangle_kernel("_Z6kernelIZ4implIfEvT_EUlfE_EvS1_"),
            "void kernel<impl<float>(float)::{lambda(float)#1}>(impl<float>(float)::{lambda(float)#1})"
        );
        assert_eq!(
            demangle_kernel("_Z1fILm2EEvSt5arrayIPcXT_EE"),
            "void f<2ul>(std::array<char*, 2ul>)"
        );
    }

    #[test]
    fn records_know_their_duration_and_place() {
        let mut r = GpuRecord::new(GpuKind::Kernel, "k".into());
        r.start_ns = 10;
        r.end_ns = 25;
        assert_eq!(r.duration_ns(), 15);
        assert!(r.on_device());
        assert!(!GpuRecord::new(GpuKind::RuntimeApi, "a".into()).on_device());
        assert_eq!(dim3([1, 2, 3]), "(1,2,3)");
    }
}
