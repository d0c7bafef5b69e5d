//! The CUPTI activity records Metron reads (`cupti_activity.h`, CUPTI 13: `CUpti_ActivityKernel10`,
//! `CUpti_ActivityMemcpy6`, `CUpti_ActivityMemset4`, `CUpti_ActivityAPI`,
//! `CUpti_ActivityCudaEvent2`, `CUpti_ActivitySynchronization2`): the kinds, the
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
    /// `CUPTI_ACTIVITY_KIND_CUDA_EVENT`.
    pub const CUDA_EVENT: i32 = 36;
    /// `CUPTI_ACTIVITY_KIND_SYNCHRONIZATION`.
    pub const SYNCHRONIZATION: i32 = 38;
}

/// `CUpti_ActivitySynchronizationType` values.
pub mod sync_type {
    /// `cuEventSynchronize`.
    pub const EVENT_SYNCHRONIZE: u32 = 1;
    /// `cuStreamWaitEvent`.
    pub const STREAM_WAIT_EVENT: u32 = 2;
    /// `cuStreamSynchronize`.
    pub const STREAM_SYNCHRONIZE: u32 = 3;
    /// `cuCtxSynchronize`.
    pub const CONTEXT_SYNCHRONIZE: u32 = 4;
}

/// `CUPTI_SYNCHRONIZATION_INVALID_VALUE`: a field that does not apply to the record.
pub const SYNC_INVALID: u32 = u32::MAX;

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

/// `CUpti_ActivityCudaEvent2` (56 bytes): a `cudaEventRecord`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ActivityCudaEvent {
    /// `kind`.
    pub kind: i32,
    /// `correlationId`: the `cudaEventRecord` call's.
    pub correlation_id: u32,
    /// `contextId`.
    pub context_id: u32,
    /// `streamId`: the stream the event was recorded on.
    pub stream_id: u32,
    /// `eventId` (the event object's: reused when the event is recorded again).
    pub event_id: u32,
    /// `pad`.
    pub _pad: u32,
    /// `deviceId`.
    pub device_id: u32,
    /// `pad2`.
    pub _pad2: u32,
    /// `reserved0`.
    pub _reserved0: u64,
    /// `deviceTimestamp`: when the event completed on the device (0 unless enabled).
    pub device_timestamp: u64,
    /// `cudaEventSyncId`: unique per record, what a synchronization names.
    pub sync_id: u64,
}

/// `CUpti_ActivitySynchronization2` (56 bytes): a synchronizing call and what it waited for.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ActivitySynchronization {
    /// `kind`.
    pub kind: i32,
    /// `type` ([`sync_type`]).
    pub sync_type: u32,
    /// `start`.
    pub start: u64,
    /// `end`.
    pub end: u64,
    /// `correlationId`: the synchronizing call's.
    pub correlation_id: u32,
    /// `contextId`.
    pub context_id: u32,
    /// `streamId` ([`SYNC_INVALID`] for event and context syncs).
    pub stream_id: u32,
    /// `cudaEventId` ([`SYNC_INVALID`] for stream and context syncs).
    pub event_id: u32,
    /// `cudaEventSyncId`: the [`ActivityCudaEvent`] record waited for (event syncs).
    pub sync_id: u64,
    /// `returnValue`.
    pub return_value: u32,
    /// `pad`.
    pub _pad: u32,
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
        (
            "sizeof CUpti_ActivityCudaEvent2",
            size_of::<ActivityCudaEvent>(),
        ),
        (
            "CUpti_ActivityCudaEvent2.correlationId",
            offset_of!(ActivityCudaEvent, correlation_id),
        ),
        (
            "CUpti_ActivityCudaEvent2.streamId",
            offset_of!(ActivityCudaEvent, stream_id),
        ),
        (
            "CUpti_ActivityCudaEvent2.deviceId",
            offset_of!(ActivityCudaEvent, device_id),
        ),
        (
            "CUpti_ActivityCudaEvent2.deviceTimestamp",
            offset_of!(ActivityCudaEvent, device_timestamp),
        ),
        (
            "CUpti_ActivityCudaEvent2.cudaEventSyncId",
            offset_of!(ActivityCudaEvent, sync_id),
        ),
        (
            "sizeof CUpti_ActivitySynchronization2",
            size_of::<ActivitySynchronization>(),
        ),
        (
            "CUpti_ActivitySynchronization2.type",
            offset_of!(ActivitySynchronization, sync_type),
        ),
        (
            "CUpti_ActivitySynchronization2.start",
            offset_of!(ActivitySynchronization, start),
        ),
        (
            "CUpti_ActivitySynchronization2.correlationId",
            offset_of!(ActivitySynchronization, correlation_id),
        ),
        (
            "CUpti_ActivitySynchronization2.streamId",
            offset_of!(ActivitySynchronization, stream_id),
        ),
        (
            "CUpti_ActivitySynchronization2.cudaEventId",
            offset_of!(ActivitySynchronization, event_id),
        ),
        (
            "CUpti_ActivitySynchronization2.cudaEventSyncId",
            offset_of!(ActivitySynchronization, sync_id),
        ),
        (
            "CUpti_ActivitySynchronization2.returnValue",
            offset_of!(ActivitySynchronization, return_value),
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
        assert_eq!(size_of::<ActivityCudaEvent>(), 56);
        assert_eq!(offset_of!(ActivityCudaEvent, device_timestamp), 40);
        assert_eq!(offset_of!(ActivityCudaEvent, sync_id), 48);
        assert_eq!(size_of::<ActivitySynchronization>(), 56);
        assert_eq!(offset_of!(ActivitySynchronization, correlation_id), 24);
        assert_eq!(offset_of!(ActivitySynchronization, sync_id), 40);
        assert_eq!(offset_of!(ActivitySynchronization, return_value), 48);
        assert_eq!(size_of::<CallbackData>(), 72);
        assert_eq!(offset_of!(CallbackData, correlation_id), 64);
    }
}
