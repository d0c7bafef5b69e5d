//! GPU activity as the sinks see it: the records a GPU backend (the `metron-gpu` crate, CUPTI
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
//! open there (the annotation's `region`), and [`JoinSink`] keeps `correlation id → region`;
//! the GPU sinks resolve their kernels against it when they write (at the end of the run,
//! when every launch annotation has been seen). The trace and summary do not show these
//! annotations.

use crate::callsite::Callsite;
use crate::sink::{Event, RunInfo, Sink, ThreadInfo};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

/// Name of the annotation a backend records at each kernel launch (value: correlation id).
pub const LAUNCH_KEY: &str = "metron.gpu.launch";

/// The `stream` of device work that belongs to no stream or queue (AMD's async copies run on
/// copy engines): such records share one `copies` track per device.
pub const NO_STREAM: u32 = u32::MAX;

// The record types are the decoding layer's (`sink`), which the sinks see; re-exported here
// where the backends name them.
pub use crate::sink::{GpuKind, GpuRecord};

/// A GPU as the backend found it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GpuDevice {
    /// Index (CUDA device ordinal).
    pub index: u32,
    /// Name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
}

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

static BACKEND: OnceLock<Backend> = OnceLock::new();
static DEVICES: Mutex<Vec<GpuDevice>> = Mutex::new(Vec::new());
/// correlation id → (region name, thread tid), filled by [`JoinSink`].
static JOIN: Mutex<Option<HashMap<u32, (&'static str, u32)>>> = Mutex::new(None);

/// Registers the GPU backend (first call wins) and its devices; adds the join sink and the
/// `gpu` section of `metadata.json`. Returns false if a backend was already registered.
pub fn set_backend(backend: Backend, devices: Vec<GpuDevice>) -> bool {
    if BACKEND.set(backend).is_err() {
        return false;
    }
    *DEVICES.lock().unwrap_or_else(|e| e.into_inner()) = devices;
    crate::metadata::add_section("gpu", || match BACKEND.get() {
        Some(b) => (b.metadata)(),
        None => serde_json::Value::Null,
    });
    crate::runtime::add_sink(Box::new(JoinSink));
    crate::runtime::add_sink(Box::new(crate::sinks::kernels_csv::KernelsCsvSink::new()));
    true
}

/// Replaces the device list (a backend learns it once the driver is initialized).
pub fn set_devices(devices: Vec<GpuDevice>) {
    *DEVICES.lock().unwrap_or_else(|e| e.into_inner()) = devices;
}

/// The devices the backend registered.
pub fn devices() -> Vec<GpuDevice> {
    DEVICES.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The name of device `index` (`GPU <index>` if unknown).
pub fn device_name(index: u32) -> String {
    DEVICES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|d| d.index == index)
        .map_or_else(|| format!("GPU {index}"), |d| d.name.clone())
}

/// What the registered backend calls a record's `stream` (`stream` when none registered).
pub fn stream_word() -> &'static str {
    BACKEND.get().map_or("stream", |b| b.stream_word)
}

/// Hands decoded records to every sink (off the application threads: the backend's own
/// thread). Does nothing after the run ended.
pub fn submit(records: &[GpuRecord]) {
    if !records.is_empty() {
        crate::runtime::deliver_gpu(records);
    }
}

/// A value of a [`GpuNote`] argument.
#[derive(Clone, Debug, PartialEq)]
pub enum NoteValue {
    /// An unsigned integer.
    U64(u64),
    /// A floating-point number.
    F64(f64),
    /// A string.
    Str(String),
}

/// A slice a GPU backend works out at the end of the run, about device work already recorded
/// (PC sampling's stall breakdown of a kernel): the trace draws it on a track named
/// `<stream track's name> <track>` under the stream track of `device`/`stream` (under the
/// process when that stream has no track), from `start_ns` to `end_ns`, with `args` as debug
/// annotations and `correlation_id` when `correlation` is not 0.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuNote {
    /// The note track's name after the stream's (e.g. `PC sampling`).
    pub track: Arc<str>,
    /// Device index.
    pub device: u32,
    /// Stream id.
    pub stream: u32,
    /// Start, `CLOCK_MONOTONIC` ns.
    pub start_ns: u64,
    /// End, `CLOCK_MONOTONIC` ns.
    pub end_ns: u64,
    /// Slice name.
    pub name: Arc<str>,
    /// Correlation id of the work it is about (0: none).
    pub correlation: u32,
    /// Debug annotations, in order.
    pub args: Vec<(String, NoteValue)>,
}

static NOTES: Mutex<Vec<GpuNote>> = Mutex::new(Vec::new());

/// Adds notes for the trace. Call it before the trace finishes: from a sink's
/// [`Sink::finish`] (sinks that do not finish late finish before the trace) or earlier.
pub fn add_notes(notes: Vec<GpuNote>) {
    NOTES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend(notes);
}

/// The notes added so far (the trace takes them when it writes its GPU tracks).
pub(crate) fn take_notes() -> Vec<GpuNote> {
    std::mem::take(&mut *NOTES.lock().unwrap_or_else(|e| e.into_inner()))
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
    JOIN.lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()?
        .get(&correlation)
        .copied()
}

/// True for the launch annotation key (the trace and summary skip it).
pub fn is_launch_key(key: &Callsite) -> bool {
    key.name == LAUNCH_KEY
}

/// Keeps `correlation id → region` from the launch annotations.
struct JoinSink;

impl Sink for JoinSink {
    fn name(&self) -> &str {
        "gpu_join"
    }

    fn events(&mut self, thread: &ThreadInfo, events: &[Event<'_>]) {
        let mut join = None;
        for e in events {
            if let Event::Annotation {
                region, key, value, ..
            } = *e
            {
                if !is_launch_key(key) {
                    // Region-mode GPU counter values (`gpu.<metric>`) for the summary.
                    if let Some(r) = region {
                        crate::sinks::gpu_summary::add_region_annotation(r.name, key.name, &value);
                    }
                    continue;
                }
                let corr = match value {
                    crate::region::AnnotationValue::U64(v) => v as u32,
                    crate::region::AnnotationValue::I64(v) => v as u32,
                    _ => continue,
                };
                let join =
                    join.get_or_insert_with(|| JOIN.lock().unwrap_or_else(|e| e.into_inner()));
                let map = join.get_or_insert_with(HashMap::new);
                map.insert(corr, (region.map_or("(no region)", |r| r.name), thread.tid));
            }
        }
    }

    fn finish(&mut self, _run: &RunInfo) -> std::io::Result<Vec<PathBuf>> {
        Ok(Vec::new())
    }
}

/// A kernel's demangled name (both GPU backends), with integer literals written as `c++filt`
/// (and so PyTorch's profiler) writes them: `(unsigned long)2` → `2ul`. Names that are not
/// Itanium-mangled come back unchanged.
pub fn demangle_kernel(name: &str) -> String {
    let Some(mut s) = cpp_demangle::Symbol::new(name)
        .ok()
        .and_then(|s| s.demangle(&cpp_demangle::DemangleOptions::default()).ok())
    else {
        return name.to_string();
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

/// Demangles nothing, formats launch dimensions: `(x,y,z)`.
pub fn dim3(d: [i32; 3]) -> String {
    format!("({},{},{})", d[0], d[1], d[2])
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
