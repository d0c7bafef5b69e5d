//! The CUPTI activity records Metron reads (`cupti_activity.h`, CUPTI 13: `CUpti_ActivityKernel10`,
//! `CUpti_ActivityMemcpy6`, `CUpti_ActivityMemset4`, `CUpti_ActivityAPI`): the kinds, the
//! hand-written layouts (checked against the header by `tests/gpu_headers.rs` where it exists)
//! and the reads of a record out of a completed buffer. CUPTI writes each kind in its newest
//! layout; a CUPTI older than 13 is refused at start.

use crate::sys::CallbackData;
use std::ffi::c_char;

/// `CUpti_ActivityKind` values.
pub mod kind {
    /// `CUPTI_ACTIVITY_KIND_MEMCPY`.
    pub const MEMCPY: i32 = 1;
    /// `CUPTI_ACTIVITY_KIND_MEMSET`.
    pub const MEMSET: i32 = 2;
    /// `CUPTI_ACTIVITY_KIND_DRIVER`.
    pub const DRIVER: i32 = 4;
    /// `CUPTI_ACTIVITY_KIND_RUNTIME`.
    pub const RUNTIME: i32 = 5;
    /// `CUPTI_ACTIVITY_KIND_KERNEL` (serialized kernels; same record layout).
    pub const KERNEL: i32 = 3;
    /// `CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`.
    pub const CONCURRENT_KERNEL: i32 = 10;
}

/// `CUpti_ActivityKernel10` (216 bytes), the fields Metron reads.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ActivityKernel {
    /// `kind`.
    pub kind: i32,
    /// `cacheConfig`, `sharedMemoryConfig`.
    pub _config: [u8; 2],
    /// `registersPerThread`.
    pub registers_per_thread: u16,
    /// `partitionedGlobalCache*`.
    pub _cache: [u32; 2],
    /// `start`.
    pub start: u64,
    /// `end`.
    pub end: u64,
    /// `completed`.
    pub completed: u64,
    /// `deviceId`.
    pub device_id: u32,
    /// `contextId`.
    pub context_id: u32,
    /// `streamId`.
    pub stream_id: u32,
    /// `gridX/Y/Z`.
    pub grid: [i32; 3],
    /// `blockX/Y/Z`.
    pub block: [i32; 3],
    /// `staticSharedMemory`.
    pub static_shared_memory: i32,
    /// `dynamicSharedMemory`.
    pub dynamic_shared_memory: u32,
    /// `localMemoryPerThread`.
    pub local_memory_per_thread: u32,
    /// `localMemoryTotal`.
    pub local_memory_total: u32,
    /// `correlationId`.
    pub correlation_id: u32,
    /// `gridId`.
    pub grid_id: i64,
    /// `name`.
    pub name: *const c_char,
    /// `reserved0` .. `launchType`, `isSharedMemoryCarveoutRequested`, `padding`, ...
    pub _mid: [u8; 32],
    /// `graphNodeId` (0 when not launched by a graph).
    pub graph_node_id: u64,
    /// `shmemLimitConfig`.
    pub _shmem_limit: u32,
    /// `graphId` (0 when not launched by a graph).
    pub graph_id: u32,
    /// The rest of the record.
    pub _rest: [u8; 56],
}

/// `CUpti_ActivityMemcpy6` (96 bytes), the fields Metron reads.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ActivityMemcpy {
    /// `kind`.
    pub kind: i32,
    /// `copyKind`, `srcKind`, `dstKind`, `flags`.
    pub copy_kind: u8,
    /// `srcKind`, `dstKind`, `flags`.
    pub _kinds: [u8; 3],
    /// `bytes`.
    pub bytes: u64,
    /// `start`.
    pub start: u64,
    /// `end`.
    pub end: u64,
    /// `deviceId`.
    pub device_id: u32,
    /// `contextId`.
    pub context_id: u32,
    /// `streamId`.
    pub stream_id: u32,
    /// `correlationId`.
    pub correlation_id: u32,
    /// `runtimeCorrelationId`, `pad`, `reserved0`.
    pub _mid: [u8; 16],
    /// `graphNodeId` (0 when not launched by a graph).
    pub graph_node_id: u64,
    /// `graphId` (0 when not launched by a graph).
    pub graph_id: u32,
    /// The rest of the record.
    pub _rest: [u8; 20],
}

/// `CUpti_ActivityMemset4` (88 bytes), the fields Metron reads.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ActivityMemset {
    /// `kind`.
    pub kind: i32,
    /// `value`.
    pub value: u32,
    /// `bytes`.
    pub bytes: u64,
    /// `start`.
    pub start: u64,
    /// `end`.
    pub end: u64,
    /// `deviceId`.
    pub device_id: u32,
    /// `contextId`.
    pub context_id: u32,
    /// `streamId`.
    pub stream_id: u32,
    /// `correlationId`.
    pub correlation_id: u32,
    /// `flags`, `memoryKind`, `pad`, `reserved0`.
    pub _mid: [u8; 16],
    /// `graphNodeId` (0 when not launched by a graph).
    pub graph_node_id: u64,
    /// `graphId` (0 when not launched by a graph).
    pub graph_id: u32,
    /// The rest of the record.
    pub _rest: [u8; 12],
}

/// `CUpti_ActivityAPI` (40 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ActivityApi {
    /// `kind`.
    pub kind: i32,
    /// `cbid`.
    pub cbid: u32,
    /// `start`.
    pub start: u64,
    /// `end`.
    pub end: u64,
    /// `processId`.
    pub process_id: u32,
    /// `threadId`.
    pub thread_id: u32,
    /// `correlationId`.
    pub correlation_id: u32,
    /// `returnValue`.
    pub return_value: u32,
}

/// Reads the record kind and copies the record as `T` (records are 8-byte aligned).
///
/// # Safety
/// `p` must point at a CUPTI activity record whose layout is `T` (checked by kind).
pub unsafe fn read_record<T: Copy>(p: *const u8) -> T {
    // SAFETY: p points at a record of layout T (caller); read_unaligned has no alignment need.
    unsafe { std::ptr::read_unaligned(p.cast::<T>()) }
}

/// The kind field of the record at `p`.
///
/// # Safety
/// `p` must point at a CUPTI activity record.
pub unsafe fn record_kind(p: *const u8) -> i32 {
    // SAFETY: every record starts with its 4-byte kind (caller).
    unsafe { std::ptr::read_unaligned(p.cast::<i32>()) }
}

/// `(C struct.field, offset)` and `(C struct, size)` of every layout Metron reads, for the
/// header check (`tests/gpu_headers.rs` compiles the same list against `cupti.h`).
pub fn layouts() -> Vec<(&'static str, usize)> {
    use std::mem::{offset_of, size_of};
    vec![
        ("sizeof CUpti_ActivityKernel10", size_of::<ActivityKernel>()),
        (
            "CUpti_ActivityKernel10.registersPerThread",
            offset_of!(ActivityKernel, registers_per_thread),
        ),
        (
            "CUpti_ActivityKernel10.start",
            offset_of!(ActivityKernel, start),
        ),
        (
            "CUpti_ActivityKernel10.end",
            offset_of!(ActivityKernel, end),
        ),
        (
            "CUpti_ActivityKernel10.deviceId",
            offset_of!(ActivityKernel, device_id),
        ),
        (
            "CUpti_ActivityKernel10.contextId",
            offset_of!(ActivityKernel, context_id),
        ),
        (
            "CUpti_ActivityKernel10.streamId",
            offset_of!(ActivityKernel, stream_id),
        ),
        (
            "CUpti_ActivityKernel10.gridX",
            offset_of!(ActivityKernel, grid),
        ),
        (
            "CUpti_ActivityKernel10.blockX",
            offset_of!(ActivityKernel, block),
        ),
        (
            "CUpti_ActivityKernel10.staticSharedMemory",
            offset_of!(ActivityKernel, static_shared_memory),
        ),
        (
            "CUpti_ActivityKernel10.dynamicSharedMemory",
            offset_of!(ActivityKernel, dynamic_shared_memory),
        ),
        (
            "CUpti_ActivityKernel10.localMemoryPerThread",
            offset_of!(ActivityKernel, local_memory_per_thread),
        ),
        (
            "CUpti_ActivityKernel10.correlationId",
            offset_of!(ActivityKernel, correlation_id),
        ),
        (
            "CUpti_ActivityKernel10.name",
            offset_of!(ActivityKernel, name),
        ),
        (
            "CUpti_ActivityKernel10.graphNodeId",
            offset_of!(ActivityKernel, graph_node_id),
        ),
        (
            "CUpti_ActivityKernel10.graphId",
            offset_of!(ActivityKernel, graph_id),
        ),
        ("sizeof CUpti_ActivityMemcpy6", size_of::<ActivityMemcpy>()),
        (
            "CUpti_ActivityMemcpy6.copyKind",
            offset_of!(ActivityMemcpy, copy_kind),
        ),
        (
            "CUpti_ActivityMemcpy6.bytes",
            offset_of!(ActivityMemcpy, bytes),
        ),
        (
            "CUpti_ActivityMemcpy6.start",
            offset_of!(ActivityMemcpy, start),
        ),
        (
            "CUpti_ActivityMemcpy6.deviceId",
            offset_of!(ActivityMemcpy, device_id),
        ),
        (
            "CUpti_ActivityMemcpy6.streamId",
            offset_of!(ActivityMemcpy, stream_id),
        ),
        (
            "CUpti_ActivityMemcpy6.correlationId",
            offset_of!(ActivityMemcpy, correlation_id),
        ),
        (
            "CUpti_ActivityMemcpy6.graphNodeId",
            offset_of!(ActivityMemcpy, graph_node_id),
        ),
        (
            "CUpti_ActivityMemcpy6.graphId",
            offset_of!(ActivityMemcpy, graph_id),
        ),
        ("sizeof CUpti_ActivityMemset4", size_of::<ActivityMemset>()),
        (
            "CUpti_ActivityMemset4.bytes",
            offset_of!(ActivityMemset, bytes),
        ),
        (
            "CUpti_ActivityMemset4.start",
            offset_of!(ActivityMemset, start),
        ),
        (
            "CUpti_ActivityMemset4.deviceId",
            offset_of!(ActivityMemset, device_id),
        ),
        (
            "CUpti_ActivityMemset4.streamId",
            offset_of!(ActivityMemset, stream_id),
        ),
        (
            "CUpti_ActivityMemset4.correlationId",
            offset_of!(ActivityMemset, correlation_id),
        ),
        (
            "CUpti_ActivityMemset4.graphNodeId",
            offset_of!(ActivityMemset, graph_node_id),
        ),
        (
            "CUpti_ActivityMemset4.graphId",
            offset_of!(ActivityMemset, graph_id),
        ),
        ("sizeof CUpti_ActivityAPI", size_of::<ActivityApi>()),
        ("CUpti_ActivityAPI.cbid", offset_of!(ActivityApi, cbid)),
        ("CUpti_ActivityAPI.start", offset_of!(ActivityApi, start)),
        ("CUpti_ActivityAPI.end", offset_of!(ActivityApi, end)),
        (
            "CUpti_ActivityAPI.threadId",
            offset_of!(ActivityApi, thread_id),
        ),
        (
            "CUpti_ActivityAPI.correlationId",
            offset_of!(ActivityApi, correlation_id),
        ),
        (
            "CUpti_ActivityAPI.returnValue",
            offset_of!(ActivityApi, return_value),
        ),
        ("sizeof CUpti_CallbackData", size_of::<CallbackData>()),
        (
            "CUpti_CallbackData.callbackSite",
            offset_of!(CallbackData, callback_site),
        ),
        (
            "CUpti_CallbackData.correlationId",
            offset_of!(CallbackData, correlation_id),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn layouts_match_cupti_13() {
        assert_eq!(size_of::<ActivityKernel>(), 216);
        assert_eq!(offset_of!(ActivityKernel, registers_per_thread), 6);
        assert_eq!(offset_of!(ActivityKernel, start), 16);
        assert_eq!(offset_of!(ActivityKernel, device_id), 40);
        assert_eq!(offset_of!(ActivityKernel, grid), 52);
        assert_eq!(offset_of!(ActivityKernel, block), 64);
        assert_eq!(offset_of!(ActivityKernel, static_shared_memory), 76);
        assert_eq!(offset_of!(ActivityKernel, correlation_id), 92);
        assert_eq!(offset_of!(ActivityKernel, name), 104);
        assert_eq!(offset_of!(ActivityKernel, graph_node_id), 144);
        assert_eq!(offset_of!(ActivityKernel, graph_id), 156);
        assert_eq!(offset_of!(ActivityMemcpy, graph_node_id), 64);
        assert_eq!(offset_of!(ActivityMemcpy, graph_id), 72);
        assert_eq!(offset_of!(ActivityMemset, graph_node_id), 64);
        assert_eq!(offset_of!(ActivityMemset, graph_id), 72);
        assert_eq!(size_of::<ActivityMemcpy>(), 96);
        assert_eq!(offset_of!(ActivityMemcpy, correlation_id), 44);
        assert_eq!(size_of::<ActivityMemset>(), 88);
        assert_eq!(offset_of!(ActivityMemset, correlation_id), 44);
        assert_eq!(size_of::<ActivityApi>(), 40);
        assert_eq!(offset_of!(ActivityApi, thread_id), 28);
        assert_eq!(size_of::<CallbackData>(), 72);
        assert_eq!(offset_of!(CallbackData, correlation_id), 64);
    }
}
