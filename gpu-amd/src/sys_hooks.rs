//! The C entry points Metron puts into the runtime's API table and hands to the runtime as
//! callbacks. Each one turns the runtime's raw pointers into safe values, calls the runtime's
//! own entry, and leaves the logic to `intercept.rs`. None unwinds: a panic would cross into
//! C, so each body runs under `catch_unwind` where it can fail.

use crate::api_calls;
use crate::clock::monotonic_ns;
use crate::intercept::{self, runtime};
use crate::records::ApiCall;
use crate::sys::{self, Handle, PacketWriter, Queue, SignalValue, Status};
use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `f`, turning a panic into `fallback` (never unwinds into the runtime).
fn guarded<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// Replaces `hsa_queue_create`: the queue is made with `hsa_amd_queue_intercept_create`, so
/// its packets reach [`on_packets`].
///
/// # Safety
/// Called by the application through the runtime's table, with `hsa_queue_create`'s contract.
pub unsafe extern "C" fn queue_create(
    agent: Handle,
    size: u32,
    kind: u32,
    callback: Option<unsafe extern "C" fn(Status, *mut Queue, *mut c_void)>,
    data: *mut c_void,
    private_segment_size: u32,
    group_segment_size: u32,
    queue: *mut *mut Queue,
) -> Status {
    let Some(rt) = runtime() else {
        return sys::ERROR;
    };
    let traced = intercept::tracing();
    let start = monotonic_ns();
    let create = if traced {
        rt.intercept_create
    } else {
        rt.queue_create
    };
    // SAFETY: the application's arguments, passed on unchanged to an entry of the same
    // signature.
    let status = unsafe {
        create(
            agent,
            size,
            kind,
            callback,
            data,
            private_segment_size,
            group_segment_size,
            queue,
        )
    };
    if traced && status == sys::SUCCESS && !queue.is_null() {
        // SAFETY: on success the runtime wrote a live queue pointer to `*queue`.
        let q = unsafe { *queue };
        if !q.is_null() {
            // SAFETY: a live queue.
            let id = unsafe { sys::queue_id(q) };
            guarded((), || intercept::queue_created(rt, agent, q, id));
        }
    }
    if traced {
        guarded((), || {
            api_calls::record(ApiCall::QUEUE_CREATE, start, status, 0)
        });
    }
    status
}

/// Replaces `hsa_queue_destroy` (recorded as an API call).
///
/// # Safety
/// `hsa_queue_destroy`'s contract.
pub unsafe extern "C" fn queue_destroy(queue: *mut Queue) -> Status {
    let Some(rt) = runtime() else {
        return sys::ERROR;
    };
    let start = monotonic_ns();
    // SAFETY: the application's argument, passed on.
    let status = unsafe { (rt.queue_destroy)(queue) };
    if intercept::tracing() {
        guarded((), || {
            api_calls::record(ApiCall::QUEUE_DESTROY, start, status, 0)
        });
    }
    status
}

/// Replaces `hsa_executable_freeze`: afterwards the executable's kernel symbols give the kernel
/// names and descriptors.
///
/// # Safety
/// `hsa_executable_freeze`'s contract.
pub unsafe extern "C" fn executable_freeze(executable: Handle, options: *const c_char) -> Status {
    let Some(rt) = runtime() else {
        return sys::ERROR;
    };
    let start = monotonic_ns();
    // SAFETY: the application's arguments, passed on.
    let status = unsafe { (rt.executable_freeze)(executable, options) };
    if status == sys::SUCCESS {
        guarded((), || crate::learn_kernels(rt, executable));
    }
    if intercept::tracing() {
        guarded((), || {
            api_calls::record(ApiCall::EXECUTABLE_FREEZE, start, status, 0)
        });
    }
    status
}

/// Replaces `hsa_memory_copy` (a synchronous copy: recorded as an API call).
///
/// # Safety
/// `hsa_memory_copy`'s contract.
pub unsafe extern "C" fn memory_copy(dst: *mut c_void, src: *const c_void, size: usize) -> Status {
    let Some(rt) = runtime() else {
        return sys::ERROR;
    };
    let start = monotonic_ns();
    // SAFETY: the application's arguments, passed on.
    let status = unsafe { (rt.memory_copy)(dst, src, size) };
    if intercept::tracing() {
        guarded((), || {
            api_calls::record(ApiCall::MEMORY_COPY, start, status, 0)
        });
    }
    status
}

/// Replaces `hsa_amd_memory_async_copy`: the copy completes Metron's signal, whose handler
/// reads the copy's times and then completes the application's.
///
/// # Safety
/// `hsa_amd_memory_async_copy`'s contract.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn async_copy(
    dst: *mut c_void,
    dst_agent: Handle,
    src: *const c_void,
    src_agent: Handle,
    size: usize,
    num_dep_signals: u32,
    dep_signals: *const Handle,
    completion_signal: Handle,
) -> Status {
    let Some((rt, original)) = runtime().and_then(|rt| Some((rt, rt.async_copy?))) else {
        return sys::ERROR;
    };
    let traced = intercept::tracing();
    let start = monotonic_ns();
    let ours = if traced {
        guarded(None, || {
            intercept::copy_submitted(rt, src_agent, dst_agent, size, completion_signal)
        })
    } else {
        None
    };
    let signal = ours.map_or(completion_signal, |o| o.signal);
    // SAFETY: the application's arguments, with Metron's signal (same contract) in place of
    // the completion signal when the copy is timed.
    let status = unsafe {
        original(
            dst,
            dst_agent,
            src,
            src_agent,
            size,
            num_dep_signals,
            dep_signals,
            signal,
        )
    };
    if !traced {
        return status;
    }
    if status != sys::SUCCESS {
        if let Some(copy) = ours {
            guarded((), || intercept::copy_refused(rt, &copy));
        }
    }
    let correlation = ours.map_or(0, |o| o.correlation);
    guarded((), || {
        api_calls::record(ApiCall::ASYNC_COPY, start, status, correlation)
    });
    status
}

/// The intercept callback of every queue Metron made: `data` is the queue's slot.
///
/// # Safety
/// Called by the runtime with `hsa_amd_queue_intercept_handler`'s contract.
pub unsafe extern "C" fn on_packets(
    packets: *const c_void,
    count: u64,
    _user_packet_index: u64,
    data: *mut c_void,
    writer: PacketWriter,
) {
    // SAFETY: the runtime passes `count` packets alive for the callback.
    let packets = unsafe { sys::packets(packets, count) };
    let done = catch_unwind(AssertUnwindSafe(|| {
        intercept::packets_written(data as usize, packets, writer)
    }));
    if done.is_err() {
        // The packets must still reach the queue, unchanged.
        sys::write_packets(writer, packets);
    }
}

/// The async handler of Metron's signals: `arg` is the slot. Returns false (handled once).
///
/// # Safety
/// Called by the runtime with `hsa_amd_signal_handler`'s contract.
pub unsafe extern "C" fn on_completion(_value: SignalValue, arg: *mut c_void) -> bool {
    guarded((), || intercept::completed(arg as usize));
    false
}
