//! What the GPU sinks know about the GPUs besides the records (decoding layer): the plain data
//! types a backend describes its devices and notes with, and [`GpuContext`], the handle the
//! runtime and the GPU glue (`crate::gpu`) hand to the sinks as a value when they make them.
//! The glue fills it (devices, the stream word, the launch → region join, notes); the sinks
//! only read it (and take the notes), so no sink reaches into a source's state.

use crate::callsite::Callsite;
use std::sync::{Arc, Mutex, OnceLock};

/// Name of the annotation a backend records at each kernel launch (value: correlation id).
pub const LAUNCH_KEY: &str = "metron.gpu.launch";

/// The `stream` of device work that belongs to no stream or queue (AMD's async copies run on
/// copy engines): such records share one `copies` track per device.
pub const NO_STREAM: u32 = u32::MAX;

/// True for the launch annotation key (the trace and summary skip it).
pub fn is_launch_key(key: &Callsite) -> bool {
    key.name == LAUNCH_KEY
}

/// Demangles nothing, formats launch dimensions: `(x,y,z)`.
pub fn dim3(d: [i32; 3]) -> String {
    format!("({},{},{})", d[0], d[1], d[2])
}

/// A GPU as the backend found it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GpuDevice {
    /// Index (CUDA device ordinal).
    pub index: u32,
    /// Name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
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

/// Launches the join remembers: slot `correlation % JOIN_SLOTS` holds the latest launch with
/// that remainder, so the join takes constant memory (6 MiB once a launch is joined) however
/// long the run. A kernel whose record comes more than this many launches after its own loses
/// its region (`(unknown)`); CUPTI's buffers hold far fewer records than that.
pub const JOIN_SLOTS: usize = 1 << 18;

/// One launch of the join: its correlation id (0: empty), region and launching thread.
#[derive(Clone, Copy, Default)]
struct JoinSlot {
    correlation: u32,
    tid: u32,
    region: &'static str,
}

#[derive(Default)]
struct Shared {
    devices: Mutex<Vec<GpuDevice>>,
    stream_word: OnceLock<&'static str>,
    /// correlation id → (region name, thread tid), the latest [`JOIN_SLOTS`] launches.
    join: Mutex<Vec<JoinSlot>>,
    notes: Mutex<Vec<GpuNote>>,
}

/// The GPU facts of a run that are not records, shared between the GPU glue that fills it and
/// the sinks it is handed to (cloning shares it). A default one is empty: no devices known
/// (`GPU <n>`), `stream`, no joins, no notes.
#[derive(Clone, Default)]
pub struct GpuContext(Arc<Shared>);

impl GpuContext {
    /// Replaces the device list.
    pub fn set_devices(&self, devices: Vec<GpuDevice>) {
        *self.0.devices.lock().unwrap_or_else(|e| e.into_inner()) = devices;
    }

    /// The devices known.
    pub fn devices(&self) -> Vec<GpuDevice> {
        self.0
            .devices
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The name of device `index` (`GPU <index>` if unknown).
    pub fn device_name(&self, index: u32) -> String {
        self.0
            .devices
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|d| d.index == index)
            .map_or_else(|| format!("GPU {index}"), |d| d.name.clone())
    }

    /// Sets what a record's `stream` is called (first call wins).
    pub fn set_stream_word(&self, word: &'static str) {
        let _ = self.0.stream_word.set(word);
    }

    /// What a record's `stream` is called on the backend's tracks (`stream` when not set).
    pub fn stream_word(&self) -> &'static str {
        self.0.stream_word.get().copied().unwrap_or("stream")
    }

    /// Joins the launches of `launches` (correlation id, region, launching tid).
    pub fn join(&self, launches: impl IntoIterator<Item = (u32, &'static str, u32)>) {
        let mut launches = launches.into_iter().peekable();
        if launches.peek().is_none() {
            return;
        }
        let mut join = self.0.join.lock().unwrap_or_else(|e| e.into_inner());
        if join.is_empty() {
            join.resize(JOIN_SLOTS, JoinSlot::default());
        }
        for (correlation, region, tid) in launches {
            join[correlation as usize % JOIN_SLOTS] = JoinSlot {
                correlation,
                tid,
                region,
            };
        }
    }

    /// The region open on the launching thread when the work with this correlation id was
    /// launched, and that thread's tid (known once the flusher saw the launch annotation, for
    /// the latest [`JOIN_SLOTS`] launches).
    pub fn region_of(&self, correlation: u32) -> Option<(&'static str, u32)> {
        if correlation == 0 {
            return None;
        }
        let join = self.0.join.lock().unwrap_or_else(|e| e.into_inner());
        join.get(correlation as usize % JOIN_SLOTS)
            .filter(|s| s.correlation == correlation)
            .map(|s| (s.region, s.tid))
    }

    /// Adds notes for the trace.
    pub fn add_notes(&self, notes: Vec<GpuNote>) {
        self.0
            .notes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(notes);
    }

    /// The notes added so far (the trace takes them when it writes its GPU tracks).
    #[doc(hidden)]
    pub fn take_notes(&self) -> Vec<GpuNote> {
        std::mem::take(&mut *self.0.notes.lock().unwrap_or_else(|e| e.into_inner()))
    }
}
