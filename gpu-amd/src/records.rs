//! Finished records on their way to Metron's sinks. Application threads (API calls) and the
//! runtime's signal thread (completed dispatches and copies) push fixed-size [`RawRecord`]s
//! into one preallocated lock-free queue; a drain thread (`metron-hsa`, every 10 ms, and the
//! SDK's flush) pops them, pairs the clocks, resolves kernel names and devices, and hands
//! [`GpuRecord`]s to [`metron::gpu::submit`]. A full queue drops the record and counts it.

use crate::api_table::NAMES;
use crate::clock::Calibration;
use crate::kernels;
use crossbeam_queue::ArrayQueue;
use metron::gpu::{GpuKind, GpuRecord};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// An HSA API call recorded as an `HSA API` slice: the entry's index in the API tables
/// (`api_table::NAMES`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApiCall(pub u16);

impl ApiCall {
    pub const QUEUE_CREATE: ApiCall = ApiCall::named("hsa_queue_create");
    pub const QUEUE_DESTROY: ApiCall = ApiCall::named("hsa_queue_destroy");
    pub const EXECUTABLE_FREEZE: ApiCall = ApiCall::named("hsa_executable_freeze");
    pub const MEMORY_COPY: ApiCall = ApiCall::named("hsa_memory_copy");
    pub const ASYNC_COPY: ApiCall = ApiCall::named("hsa_amd_memory_async_copy");

    /// The entry called `name` (a compile-time error when there is none).
    const fn named(name: &str) -> ApiCall {
        let mut i = 0;
        while i < NAMES.len() {
            if same(NAMES[i].as_bytes(), name.as_bytes()) {
                return ApiCall(i as u16);
            }
            i += 1;
        }
        panic!("not an HSA API table entry");
    }

    /// The C function's name.
    pub fn name(self) -> &'static str {
        NAMES
            .get(usize::from(self.0))
            .copied()
            .unwrap_or("hsa_unknown")
    }

    /// The entry's index.
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Direction of a copy, from the agents' device types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyKind {
    /// Host to device.
    HtoD,
    /// Device to host.
    DtoH,
    /// Device to device.
    DtoD,
    /// Host to host (or unknown agents).
    HtoH,
}

impl CopyKind {
    /// From "is the source a GPU" and "is the destination a GPU".
    pub fn of(src_gpu: bool, dst_gpu: bool) -> CopyKind {
        match (src_gpu, dst_gpu) {
            (false, true) => CopyKind::HtoD,
            (true, false) => CopyKind::DtoH,
            (true, true) => CopyKind::DtoD,
            (false, false) => CopyKind::HtoH,
        }
    }

    fn name(self) -> &'static str {
        match self {
            CopyKind::HtoD => "HtoD",
            CopyKind::DtoH => "DtoH",
            CopyKind::DtoD => "DtoD",
            CopyKind::HtoH => "HtoH",
        }
    }
}

/// What a raw record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawKind {
    /// A kernel dispatch: times are system ticks.
    Dispatch,
    /// An async copy: times are system ticks.
    Copy(CopyKind),
    /// A host API call: times are `CLOCK_MONOTONIC` ns.
    Api(ApiCall),
}

/// One finished record, as the producers know it (no strings, no allocation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawRecord {
    pub kind: RawKind,
    pub start: u64,
    pub end: u64,
    /// Device index (dispatches, copies).
    pub device: u32,
    /// HSA queue id (dispatches).
    pub queue: u64,
    pub kernel_object: u64,
    pub correlation: u32,
    /// Calling thread (API calls).
    pub tid: u32,
    pub grid: [u32; 3],
    pub workgroup: [u16; 3],
    /// The dispatch's group segment (LDS) bytes.
    pub group_segment: u32,
    /// The dispatch's private segment (scratch) bytes per work-item.
    pub private_segment: u32,
    /// Bytes copied.
    pub bytes: u64,
    /// API return status.
    pub status: i32,
    /// Counter values of a counted dispatch (the first `counter_count`).
    pub counters: [u64; crate::counters::MAX_COUNTERS],
    pub counter_count: u8,
}

impl RawRecord {
    /// A record of `kind` with every other field zero.
    pub fn new(kind: RawKind) -> RawRecord {
        RawRecord {
            kind,
            start: 0,
            end: 0,
            device: 0,
            queue: 0,
            kernel_object: 0,
            correlation: 0,
            tid: 0,
            grid: [0; 3],
            workgroup: [0; 3],
            group_segment: 0,
            private_segment: 0,
            bytes: 0,
            status: 0,
            counters: [0; crate::counters::MAX_COUNTERS],
            counter_count: 0,
        }
    }
}

static RING: OnceLock<ArrayQueue<RawRecord>> = OnceLock::new();
static DROPPED: AtomicU64 = AtomicU64::new(0);
static DELIVERED: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];
static DRAIN_LOCK: Mutex<()> = Mutex::new(());
static STOP: AtomicBool = AtomicBool::new(false);

/// Allocates the queue (`capacity` records); later calls keep the first.
pub fn init(capacity: usize) {
    let _ = RING.get_or_init(|| ArrayQueue::new(capacity.max(16)));
}

/// Queues a finished record; counts it as dropped when the queue is full or not made.
/// Lock-free, no allocation.
pub fn push(record: RawRecord) {
    match RING.get() {
        Some(ring) if ring.push(record).is_ok() => {}
        _ => {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Records lost because the queue was full.
pub fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// Records delivered: (dispatches, copies, API calls).
pub fn delivered() -> [u64; 3] {
    [0, 1, 2].map(|i| DELIVERED[i].load(Ordering::Relaxed))
}

static DRAINING: AtomicBool = AtomicBool::new(false);

/// Starts the drain thread (once).
pub fn start_drain() {
    if DRAINING.swap(true, Ordering::AcqRel) {
        return;
    }
    let _ = std::thread::Builder::new()
        .name("metron-hsa".into())
        .spawn(|| {
            while !STOP.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(10));
                drain();
            }
        });
}

/// Converts and delivers everything queued so far (the drain thread, and the SDK's flush).
pub fn drain() {
    let Some(ring) = RING.get() else {
        return;
    };
    let _one = DRAIN_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if ring.is_empty() {
        return;
    }
    let calibration = crate::calibrate();
    let mut batch = Vec::with_capacity(ring.len());
    while let Some(raw) = ring.pop() {
        batch.push(convert(&raw, calibration.as_ref()));
    }
    metron::gpu::submit(&batch);
}

/// Stops the drain thread after a last drain (the end of the run).
pub fn stop() {
    STOP.store(true, Ordering::Release);
    drain();
}

/// A raw record as the sinks see it.
pub fn convert(raw: &RawRecord, calibration: Option<&Calibration>) -> GpuRecord {
    let to_ns = |ticks: u64| calibration.map_or(0, |c| c.to_monotonic(ticks));
    match raw.kind {
        RawKind::Dispatch => {
            DELIVERED[0].fetch_add(1, Ordering::Relaxed);
            let kernel = kernels::get(raw.kernel_object);
            let name: Arc<str> = match &kernel {
                Some(k) => k.name.clone(),
                None => format!("kernel@{:#x}", raw.kernel_object).into(),
            };
            let info = kernel.map(|k| k.info).unwrap_or_default();
            let mut r = GpuRecord::new(GpuKind::Kernel, name);
            r.start_ns = to_ns(raw.start);
            r.end_ns = to_ns(raw.end);
            r.device = raw.device;
            r.stream = raw.queue as u32;
            r.correlation = raw.correlation;
            kernels::describe_dispatch(
                &mut r,
                raw.grid,
                raw.workgroup.map(u32::from),
                raw.group_segment,
                raw.private_segment,
                &info,
            );
            if raw.counter_count > 0 {
                if let Some(c) = crate::counters::get() {
                    let mut values: Vec<f64> = raw.counters[..usize::from(raw.counter_count)]
                        .iter()
                        .map(|&v| v as f64)
                        .collect();
                    let derived = c.list.derive(&values);
                    values.extend(derived);
                    metron::sinks::kernels_csv::record_kernel_counters(raw.correlation, values);
                }
            }
            r
        }
        RawKind::Copy(kind) => {
            DELIVERED[1].fetch_add(1, Ordering::Relaxed);
            let mut r = GpuRecord::new(GpuKind::Memcpy, kind.name().into());
            r.start_ns = to_ns(raw.start);
            r.end_ns = to_ns(raw.end);
            r.device = raw.device;
            r.stream = metron::gpu::NO_STREAM;
            r.correlation = raw.correlation;
            r.bytes = raw.bytes;
            r
        }
        RawKind::Api(call) => {
            DELIVERED[2].fetch_add(1, Ordering::Relaxed);
            let mut r = GpuRecord::new(GpuKind::HsaApi, call.name().into());
            r.start_ns = raw.start;
            r.end_ns = raw.end;
            r.tid = raw.tid;
            r.correlation = raw.correlation;
            r.status = raw.status as u32;
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatches_become_kernel_records_in_blocks_on_the_monotonic_clock() {
        let mut raw = RawRecord::new(RawKind::Dispatch);
        raw.start = 1_000;
        raw.end = 1_500;
        raw.grid = [1000, 64, 1];
        raw.workgroup = [256, 16, 1];
        raw.group_segment = 8192;
        raw.private_segment = 32;
        raw.queue = 3;
        raw.correlation = 7;
        raw.kernel_object = 0xdead_0000;
        let c = Calibration {
            system: 1_000,
            monotonic_ns: 50_000,
            frequency: 100_000_000,
            window_ns: 0,
        };
        let r = convert(&raw, Some(&c));
        assert_eq!((r.start_ns, r.end_ns), (50_000, 55_000));
        assert_eq!(
            r.grid,
            [4, 4, 1],
            "1000 work-items in groups of 256 → 4 groups"
        );
        assert_eq!(r.block, [256, 16, 1]);
        assert_eq!(
            &*r.name, "kernel@0xdead0000",
            "an unknown kernel object is named by address"
        );
        assert_eq!((r.stream, r.correlation, r.local_per_thread), (3, 7, 32));
        assert_eq!(r.static_shared + r.dynamic_shared, 8192);
    }

    #[test]
    fn copies_and_api_calls_keep_their_kind() {
        let mut copy = RawRecord::new(RawKind::Copy(CopyKind::of(false, true)));
        copy.bytes = 4096;
        let r = convert(&copy, None);
        assert_eq!((r.kind, &*r.name, r.bytes), (GpuKind::Memcpy, "HtoD", 4096));
        let mut api = RawRecord::new(RawKind::Api(ApiCall::QUEUE_CREATE));
        api.start = 10;
        api.end = 20;
        api.tid = 42;
        let r = convert(&api, None);
        assert_eq!(
            (r.kind, &*r.name, r.start_ns, r.tid),
            (GpuKind::HsaApi, "hsa_queue_create", 10, 42)
        );
        assert_eq!(CopyKind::of(true, false), CopyKind::DtoH);
        assert_eq!(CopyKind::of(true, true), CopyKind::DtoD);
    }
}
