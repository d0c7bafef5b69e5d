//! A minimal in-process stand-in for the HSA runtime, for Metron's own benchmarks and the
//! allocation test of the dispatch path: it hands `OnLoad` a table whose entries do nothing
//! but what the interception needs (one GPU agent, queues, signals, an intercept handler and
//! async handlers kept for the caller to run), so the cost measured is Metron's alone. The
//! contract tests use the C++ double of `tests/tests/amd_support/` instead.

use crate::sys::{
    DispatchPacket, Handle, HsaApiTable, InterceptHandler, PacketWriter, ProfilingTime, Queue,
    SignalHandler, SignalValue, Status, SUCCESS,
};
use crate::sys_tables::{AmdExtTable, ApiTableVersion, CoreApiTable, RawFn};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

const GPU: Handle = 0x200;
static NEXT_SIGNAL: AtomicU64 = AtomicU64::new(0x1000);
static INTERCEPT: AtomicUsize = AtomicUsize::new(0);
static INTERCEPT_DATA: AtomicUsize = AtomicUsize::new(0);
static PENDING_HANDLER: AtomicUsize = AtomicUsize::new(0);
static PENDING_ARG: AtomicUsize = AtomicUsize::new(0);
static WRITTEN: AtomicU64 = AtomicU64::new(0);

unsafe extern "C" fn system_get_info(attribute: u32, value: *mut c_void) -> Status {
    let v: u64 = if attribute == crate::sys::SYSTEM_INFO_TIMESTAMP_FREQUENCY {
        1_000_000_000
    } else {
        crate::clock::monotonic_ns()
    };
    // SAFETY: both attributes Metron asks for are uint64_t.
    unsafe { *value.cast::<u64>() = v };
    SUCCESS
}

unsafe extern "C" fn iterate_agents(
    callback: crate::sys::AgentCallback,
    data: *mut c_void,
) -> Status {
    // SAFETY: the caller's callback and data, as hsa_iterate_agents does.
    unsafe { callback(GPU, data) }
}

unsafe extern "C" fn agent_get_info(_agent: Handle, attribute: u32, value: *mut c_void) -> Status {
    if attribute == crate::sys::AGENT_INFO_DEVICE {
        // SAFETY: the attribute is a 32-bit enum.
        unsafe { *value.cast::<u32>() = crate::sys::DEVICE_TYPE_GPU };
    } else {
        let name = b"gfx90a\0";
        // SAFETY: string attributes are char[64].
        unsafe { std::ptr::copy_nonoverlapping(name.as_ptr(), value.cast::<u8>(), name.len()) };
    }
    SUCCESS
}

unsafe extern "C" fn signal_create(
    _initial: SignalValue,
    _n: u32,
    _consumers: *const Handle,
    signal: *mut Handle,
) -> Status {
    // SAFETY: a valid out-pointer from Metron.
    unsafe { *signal = NEXT_SIGNAL.fetch_add(1, Ordering::Relaxed) };
    SUCCESS
}

unsafe extern "C" fn signal_op(_signal: Handle, _value: SignalValue) {}

unsafe extern "C" fn async_handler(
    _signal: Handle,
    _condition: u32,
    _value: SignalValue,
    handler: SignalHandler,
    arg: *mut c_void,
) -> Status {
    PENDING_HANDLER.store(handler as usize, Ordering::Relaxed);
    PENDING_ARG.store(arg as usize, Ordering::Relaxed);
    SUCCESS
}

unsafe extern "C" fn dispatch_time(_a: Handle, _s: Handle, time: *mut ProfilingTime) -> Status {
    // SAFETY: a valid out-pointer from Metron.
    unsafe { *time = ProfilingTime { start: 1, end: 2 } };
    SUCCESS
}

unsafe extern "C" fn tick_to_system(_a: Handle, tick: u64, system: *mut u64) -> Status {
    // SAFETY: a valid out-pointer from Metron.
    unsafe { *system = tick };
    SUCCESS
}

unsafe extern "C" fn set_profiler_enabled(_q: *mut Queue, _on: i32) -> Status {
    SUCCESS
}

unsafe extern "C" fn queue_create(
    _agent: Handle,
    _size: u32,
    _kind: u32,
    _callback: Option<unsafe extern "C" fn(Status, *mut Queue, *mut c_void)>,
    _data: *mut c_void,
    _private: u32,
    _group: u32,
    queue: *mut *mut Queue,
) -> Status {
    let q = Box::leak(Box::new(Queue {
        kind: 0,
        features: 1,
        base_address: std::ptr::null_mut(),
        doorbell_signal: 0,
        size: 64,
        reserved1: 0,
        id: 3,
    }));
    // SAFETY: a valid out-pointer from the caller.
    unsafe { *queue = q };
    SUCCESS
}

unsafe extern "C" fn intercept_register(
    _q: *mut Queue,
    handler: InterceptHandler,
    data: *mut c_void,
) -> Status {
    INTERCEPT.store(handler as usize, Ordering::Relaxed);
    INTERCEPT_DATA.store(data as usize, Ordering::Relaxed);
    SUCCESS
}

unsafe extern "C" fn writer(_packets: *const c_void, count: u64) {
    WRITTEN.fetch_add(count, Ordering::Relaxed);
}

unsafe extern "C" fn fallback() {}

fn raw(f: *const ()) -> RawFn {
    // SAFETY: every entry is a function pointer; the fake's entries have the signatures the
    // header gives their slots (Metron casts them back to exactly those).
    Some(unsafe { std::mem::transmute::<*const (), unsafe extern "C" fn()>(f) })
}

/// Builds the fake table, calls Metron's `OnLoad` with it, and creates one intercepted queue.
pub fn install() -> Result<(), String> {
    // SAFETY: both tables are plain structs of integers and nullable function pointers, for
    // which all-zero is a valid value (no entry).
    let mut core: Box<CoreApiTable> = Box::new(unsafe { std::mem::zeroed() });
    // SAFETY: as above.
    let mut amd: Box<AmdExtTable> = Box::new(unsafe { std::mem::zeroed() });
    let version = |size: usize| ApiTableVersion {
        major_id: 1,
        minor_id: size as u32,
        step_id: 0,
        reserved: 0,
    };
    core.version = version(std::mem::size_of::<CoreApiTable>());
    amd.version = version(std::mem::size_of::<AmdExtTable>());
    let any = raw(fallback as *const ());
    core.hsa_queue_create_fn = raw(queue_create as *const ());
    core.hsa_queue_destroy_fn = any;
    core.hsa_executable_freeze_fn = any;
    core.hsa_executable_iterate_symbols_fn = any;
    core.hsa_executable_symbol_get_info_fn = any;
    core.hsa_system_get_info_fn = raw(system_get_info as *const ());
    core.hsa_iterate_agents_fn = raw(iterate_agents as *const ());
    core.hsa_agent_get_info_fn = raw(agent_get_info as *const ());
    core.hsa_signal_create_fn = raw(signal_create as *const ());
    core.hsa_signal_store_relaxed_fn = raw(signal_op as *const ());
    core.hsa_signal_subtract_screlease_fn = raw(signal_op as *const ());
    core.hsa_memory_copy_fn = any;
    amd.hsa_amd_profiling_set_profiler_enabled_fn = raw(set_profiler_enabled as *const ());
    amd.hsa_amd_profiling_get_dispatch_time_fn = raw(dispatch_time as *const ());
    amd.hsa_amd_profiling_convert_tick_to_system_domain_fn = raw(tick_to_system as *const ());
    amd.hsa_amd_signal_async_handler_fn = raw(async_handler as *const ());
    amd.hsa_amd_queue_intercept_create_fn = raw(queue_create as *const ());
    amd.hsa_amd_queue_intercept_register_fn = raw(intercept_register as *const ());
    let root = Box::leak(Box::new(HsaApiTable {
        version: version(std::mem::size_of::<HsaApiTable>()),
        core: Box::leak(core),
        amd_ext: Box::leak(amd),
        finalizer_ext: std::ptr::null_mut(),
        image_ext: std::ptr::null_mut(),
    }));
    // SAFETY: a complete table, alive forever (leaked), not yet used by anyone.
    unsafe { crate::on_load((root as *mut HsaApiTable).cast(), 1, 0, std::ptr::null()) }?;
    let mut queue: *mut Queue = std::ptr::null_mut();
    // SAFETY: the table's queue_create is now Metron's wrapper; the arguments are valid.
    let create = unsafe {
        std::mem::transmute::<unsafe extern "C" fn(), crate::sys::QueueCreateFn>(
            (*root.core).hsa_queue_create_fn.ok_or("no queue_create")?,
        )
    };
    // SAFETY: valid arguments for hsa_queue_create.
    let status = unsafe { create(GPU, 64, 0, None, std::ptr::null_mut(), 0, 0, &mut queue) };
    if status != SUCCESS || INTERCEPT.load(Ordering::Relaxed) == 0 {
        return Err("the queue was not intercepted".into());
    }
    Ok(())
}

/// One kernel dispatch as the runtime would deliver it: the packet through Metron's intercept
/// handler, then (as the signal thread would) Metron's completion handler. Returns the packets
/// the writer received so far.
pub fn dispatch() -> u64 {
    let mut packet = DispatchPacket {
        header: crate::sys::PACKET_TYPE_KERNEL_DISPATCH << crate::sys::PACKET_HEADER_TYPE,
        workgroup_size_x: 256,
        workgroup_size_y: 1,
        workgroup_size_z: 1,
        grid_size_x: 1 << 20,
        grid_size_y: 1,
        grid_size_z: 1,
        kernel_object: 0xabc0,
        ..DispatchPacket::default()
    };
    packet.completion_signal = 0;
    let handler = INTERCEPT.load(Ordering::Relaxed);
    if handler == 0 {
        return 0;
    }
    // SAFETY: `handler` is the InterceptHandler Metron registered (stored as usize above).
    let handler = unsafe { std::mem::transmute::<usize, InterceptHandler>(handler) };
    let w: PacketWriter = writer;
    // SAFETY: one valid packet, the data Metron registered, a writer that copies nothing.
    unsafe {
        handler(
            (&raw const packet).cast(),
            1,
            0,
            INTERCEPT_DATA.load(Ordering::Relaxed) as *mut c_void,
            w,
        )
    };
    let pending = PENDING_HANDLER.swap(0, Ordering::Relaxed);
    if pending != 0 {
        // SAFETY: the SignalHandler Metron registered for this dispatch (stored as usize).
        let done = unsafe { std::mem::transmute::<usize, SignalHandler>(pending) };
        // SAFETY: the argument Metron registered with it.
        unsafe { done(0, PENDING_ARG.load(Ordering::Relaxed) as *mut c_void) };
    }
    WRITTEN.load(Ordering::Relaxed)
}
