//! The SDK's buffered and callback-tracing records read into plain Rust values, and the two
//! `extern "C"` callbacks that receive them (every `unsafe` of reading a record is here).

use crate::sys_sdk::c_str;
use crate::sys_sdk_types::*;
use std::ffi::{c_int, c_void};

/// A buffered record, as Metron reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Record {
    /// A completed kernel dispatch.
    Dispatch(Dispatch),
    /// A completed memory copy.
    Copy(MemoryCopy),
    /// A HIP runtime or HSA API call.
    Api(ApiCall),
    /// A HIP or HSA API record of a size (layout) Metron does not know.
    UnknownApi,
    /// The header of a dispatch's counter records.
    CounterHeader { dispatch_id: u64, correlation: u64 },
    /// One counter value of one instance (dimension) for a dispatch.
    CounterValue {
        instance: u64,
        value: f64,
        dispatch_id: u64,
    },
    /// A category or kind Metron did not ask for.
    Other,
}

/// The fields Metron uses of a kernel dispatch record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dispatch {
    pub correlation: u64,
    pub thread: u64,
    pub start: u64,
    pub end: u64,
    pub agent: u64,
    pub queue: u64,
    pub kernel_id: u64,
    pub dispatch_id: u64,
    pub private_segment: u32,
    pub group_segment: u32,
    pub workgroup: [u32; 3],
    pub grid: [u32; 3],
}

/// The fields Metron uses of a memory copy record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryCopy {
    pub correlation: u64,
    pub thread: u64,
    /// A `rocprofiler_memory_copy_operation_t`.
    pub direction: c_int,
    pub start: u64,
    pub end: u64,
    pub src_agent: u64,
    pub dst_agent: u64,
    pub bytes: u64,
}

/// The fields Metron uses of a HIP or HSA API record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ApiCall {
    /// `BUFFER_TRACING_HIP_RUNTIME_API`, `BUFFER_TRACING_HSA_CORE_API` or
    /// `BUFFER_TRACING_HSA_AMD_EXT_API`.
    pub kind: c_int,
    /// The internal correlation id, the same as on the dispatches and copies the call made.
    pub correlation: u64,
    pub thread: u64,
    /// The operation id of `kind` (`rocprofiler_hip_runtime_api_id_t`, ...).
    pub operation: c_int,
    pub start: u64,
    pub end: u64,
}

/// The payload of one buffer record header.
///
/// # Safety
/// `header` is null or a record header the SDK passed to a buffer callback, alive for it.
pub(crate) unsafe fn read_record(header: *const RecordHeader) -> Record {
    if header.is_null() {
        return Record::Other;
    }
    // SAFETY: the caller's contract.
    let h = unsafe { &*header };
    if h.payload.is_null() {
        return Record::Other;
    }
    if h.category == BUFFER_CATEGORY_COUNTERS {
        return match h.kind {
            COUNTER_RECORD_DISPATCH_HEADER => {
                // SAFETY: counters + dispatch header: the payload is this record type.
                let r = unsafe { h.payload.cast::<DispatchCountingRecord>().read_unaligned() };
                Record::CounterHeader {
                    dispatch_id: r.dispatch_info.dispatch_id,
                    correlation: r.correlation_id.internal,
                }
            }
            COUNTER_RECORD_VALUE => {
                // SAFETY: counters + value: the payload is this record type.
                let r = unsafe { h.payload.cast::<CounterRecord>().read_unaligned() };
                Record::CounterValue {
                    instance: r.id,
                    value: r.counter_value,
                    dispatch_id: r.dispatch_id,
                }
            }
            _ => Record::Other,
        };
    }
    if h.category != BUFFER_CATEGORY_TRACING {
        return Record::Other;
    }
    match h.kind as c_int {
        BUFFER_TRACING_KERNEL_DISPATCH => {
            // SAFETY: tracing + KERNEL_DISPATCH: the payload is this record type.
            let r = unsafe { h.payload.cast::<KernelDispatchRecord>().read_unaligned() };
            let i = &r.dispatch_info;
            Record::Dispatch(Dispatch {
                correlation: r.correlation_id.internal,
                thread: r.thread_id,
                start: r.start_timestamp,
                end: r.end_timestamp,
                agent: i.agent_id.handle,
                queue: i.queue_id.handle,
                kernel_id: i.kernel_id,
                dispatch_id: i.dispatch_id,
                private_segment: i.private_segment_size,
                group_segment: i.group_segment_size,
                workgroup: [i.workgroup_size.x, i.workgroup_size.y, i.workgroup_size.z],
                grid: [i.grid_size.x, i.grid_size.y, i.grid_size.z],
            })
        }
        BUFFER_TRACING_HIP_RUNTIME_API
        | BUFFER_TRACING_HSA_CORE_API
        | BUFFER_TRACING_HSA_AMD_EXT_API => {
            // SAFETY: tracing + an API kind: the payload is a HIP or HSA API record (the same
            // layout), which starts with its size.
            let size = unsafe { h.payload.cast::<u64>().read_unaligned() };
            if size >= std::mem::size_of::<ApiRecord>() as u64 {
                // SAFETY: a record of at least this layout's size (with `ancestor`).
                let r = unsafe { h.payload.cast::<ApiRecord>().read_unaligned() };
                Record::Api(ApiCall {
                    kind: h.kind as c_int,
                    correlation: r.correlation_id.internal,
                    thread: r.thread_id,
                    operation: r.operation,
                    start: r.start_timestamp,
                    end: r.end_timestamp,
                })
            } else if size == std::mem::size_of::<ApiRecordNoAncestor>() as u64 {
                // SAFETY: a record of the size of the layout before `ancestor`.
                let r = unsafe { h.payload.cast::<ApiRecordNoAncestor>().read_unaligned() };
                Record::Api(ApiCall {
                    kind: h.kind as c_int,
                    correlation: r.correlation_id.internal,
                    thread: r.thread_id,
                    operation: r.operation,
                    start: r.start_timestamp,
                    end: r.end_timestamp,
                })
            } else {
                Record::UnknownApi
            }
        }
        BUFFER_TRACING_MEMORY_COPY => {
            // SAFETY: tracing + MEMORY_COPY: the payload is this record type.
            let r = unsafe { h.payload.cast::<MemoryCopyRecord>().read_unaligned() };
            Record::Copy(MemoryCopy {
                correlation: r.correlation_id.internal,
                thread: r.thread_id,
                direction: r.operation,
                start: r.start_timestamp,
                end: r.end_timestamp,
                src_agent: r.src_agent_id.handle,
                dst_agent: r.dst_agent_id.handle,
                bytes: r.bytes,
            })
        }
        _ => Record::Other,
    }
}

/// The buffer callback: runs on the SDK's callback thread.
pub(crate) unsafe extern "C" fn buffer_callback(
    _context: ContextId,
    _buffer: BufferId,
    headers: *mut *mut RecordHeader,
    count: usize,
    _data: *mut c_void,
    drop_count: u64,
) {
    let records: Vec<Record> = (0..count)
        .filter(|_| !headers.is_null())
        // SAFETY: the SDK passes `count` header pointers, alive for the callback.
        .map(|i| unsafe { read_record(*headers.add(i)) })
        .collect();
    let _ = std::panic::catch_unwind(|| crate::rocprofiler_sdk::on_buffer(&records, drop_count));
}

/// A callback-tracing record, as Metron reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Callback {
    /// A kernel symbol was registered (code object loaded).
    KernelSymbol(KernelSymbol),
    /// A kernel is about to be enqueued, on the launching thread.
    Enqueue {
        /// The internal correlation id, the same as on its buffered dispatch record.
        correlation: u64,
    },
    /// Not one Metron uses (another operation or phase).
    Ignored,
    /// A record whose `kind` is not the configured one: a layout Metron does not know.
    Unrecognized,
}

/// A kernel symbol as the code object describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelSymbol {
    pub kernel_id: u64,
    pub name: String,
    pub group_segment: u32,
    pub private_segment: u32,
    pub sgprs: u32,
    pub arch_vgprs: u32,
    pub accum_vgprs: u32,
}

/// What a callback record says, given the kind configured for it.
///
/// # Safety
/// `record` is one the SDK passed to a tracing callback; its payload is alive for the call.
pub(crate) unsafe fn read_callback(record: &CallbackRecord, configured: c_int) -> Callback {
    if record.kind != configured {
        return Callback::Unrecognized;
    }
    match (record.kind, record.operation, record.phase) {
        (CALLBACK_TRACING_KERNEL_DISPATCH, KERNEL_DISPATCH_ENQUEUE, PHASE_ENTER) => {
            Callback::Enqueue {
                correlation: record.correlation_id.internal,
            }
        }
        (CALLBACK_TRACING_CODE_OBJECT, CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER, PHASE_ENTER)
            if !record.payload.is_null() =>
        {
            // SAFETY: code object + kernel symbol register: the payload is this data type.
            let d = unsafe { record.payload.cast::<KernelSymbolData>().read_unaligned() };
            Callback::KernelSymbol(KernelSymbol {
                kernel_id: d.kernel_id,
                // SAFETY: the SDK's NUL-terminated name, alive for the call; copied.
                name: unsafe { c_str(d.kernel_name) }.unwrap_or_default(),
                group_segment: d.group_segment_size,
                private_segment: d.private_segment_size,
                sgprs: d.sgpr_count,
                arch_vgprs: d.arch_vgpr_count,
                accum_vgprs: d.accum_vgpr_count,
            })
        }
        _ => Callback::Ignored,
    }
}

/// The callback-tracing callback: runs on the thread doing the traced operation (the
/// application's, for an enqueue). The callback data is the configured kind.
pub(crate) unsafe extern "C" fn tracing_callback(
    record: CallbackRecord,
    _user: *mut u64,
    data: *mut c_void,
) {
    // SAFETY: the SDK's record for this call.
    let what = unsafe { read_callback(&record, data as usize as c_int) };
    let _ = std::panic::catch_unwind(|| crate::rocprofiler_sdk::on_callback(what));
}
