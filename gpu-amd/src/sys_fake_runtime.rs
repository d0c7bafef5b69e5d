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
const CPU: Handle = 0x100;
const POOL: Handle = 0x500;
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
    unsafe {
        callback(CPU, data);
        callback(GPU, data)
    }
}

unsafe extern "C" fn agent_get_info(agent: Handle, attribute: u32, value: *mut c_void) -> Status {
    if attribute == crate::sys::AGENT_INFO_DEVICE {
        let kind = if agent == GPU {
            crate::sys::DEVICE_TYPE_GPU
        } else {
            0
        };
        // SAFETY: the attribute is a 32-bit enum.
        unsafe { *value.cast::<u32>() = kind };
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

// AQLprofile and the memory pool, for counted dispatches: every event is valid, the packets
// are empty vendor packets, each event reads 1.
use crate::sys_aqlprofile::{AqlprofileTable, Event, InfoData, Profile};

unsafe extern "C" fn aql_validate(_agent: Handle, _event: *const Event, ok: *mut bool) -> Status {
    // SAFETY: a valid out-pointer from Metron.
    unsafe { *ok = true };
    SUCCESS
}

unsafe extern "C" fn aql_info(_p: *const Profile, _attribute: u32, value: *mut c_void) -> Status {
    // SAFETY: both attributes Metron asks for are uint32_t.
    unsafe { *value.cast::<u32>() = 64 };
    SUCCESS
}

unsafe extern "C" fn aql_start(_p: *mut Profile, packet: *mut DispatchPacket) -> Status {
    // SAFETY: a valid out-packet from Metron.
    unsafe { *packet = DispatchPacket::default() };
    SUCCESS
}

unsafe extern "C" fn aql_stop(_p: *const Profile, packet: *mut DispatchPacket) -> Status {
    // SAFETY: a valid out-packet from Metron.
    unsafe { *packet = DispatchPacket::default() };
    SUCCESS
}

unsafe extern "C" fn aql_iterate(
    p: *const Profile,
    callback: unsafe extern "C" fn(u32, *mut InfoData, *mut c_void) -> Status,
    data: *mut c_void,
) -> Status {
    // SAFETY: Metron's complete profile.
    let p = unsafe { &*p };
    for i in 0..p.event_count as usize {
        let mut info = InfoData {
            sample_id: 0,
            _union_align: 0,
            // SAFETY: `events` holds `event_count` events.
            event: unsafe { *p.events.add(i) },
            result: 1,
        };
        // SAFETY: Metron's callback and data.
        unsafe { callback(crate::sys_aqlprofile::INFO_PMC_DATA, &mut info, data) };
    }
    SUCCESS
}

unsafe extern "C" fn major_extension_table(
    extension: u16,
    _major: u16,
    size: usize,
    table: *mut c_void,
) -> Status {
    if extension != crate::sys_aqlprofile::EXTENSION_AMD_AQLPROFILE
        || size < std::mem::size_of::<AqlprofileTable>()
    {
        return crate::sys::ERROR;
    }
    let t = AqlprofileTable {
        version_major: None,
        version_minor: None,
        error_string: None,
        validate_event: Some(aql_validate),
        start: Some(aql_start),
        stop: Some(aql_stop),
        read: None,
        legacy_get_pm4: None,
        get_info: Some(aql_info),
        iterate_data: Some(aql_iterate),
    };
    // SAFETY: Metron passes room for the whole table.
    unsafe { *table.cast::<AqlprofileTable>() = t };
    SUCCESS
}

unsafe extern "C" fn iterate_pools(
    agent: Handle,
    callback: unsafe extern "C" fn(Handle, *mut c_void) -> Status,
    data: *mut c_void,
) -> Status {
    if agent == CPU {
        // SAFETY: Metron's callback and data.
        unsafe { callback(POOL, data) };
    }
    SUCCESS
}

unsafe extern "C" fn pool_info(_pool: Handle, attribute: u32, value: *mut c_void) -> Status {
    use crate::sys_aqlprofile as a;
    // SAFETY: SEGMENT and GLOBAL_FLAGS are 32-bit, RUNTIME_ALLOC_ALLOWED a bool.
    unsafe {
        match attribute {
            a::POOL_INFO_SEGMENT => *value.cast::<u32>() = a::SEGMENT_GLOBAL,
            a::POOL_INFO_GLOBAL_FLAGS => *value.cast::<u32>() = a::GLOBAL_FLAG_FINE_GRAINED,
            _ => *value.cast::<bool>() = true,
        }
    }
    SUCCESS
}

unsafe extern "C" fn pool_allocate(
    _pool: Handle,
    size: usize,
    _flags: u32,
    ptr: *mut *mut c_void,
) -> Status {
    // SAFETY: a valid out-pointer; the memory lives for the process (as a profile's does).
    unsafe {
        *ptr = Box::leak(vec![0u8; size].into_boxed_slice())
            .as_mut_ptr()
            .cast()
    };
    SUCCESS
}

unsafe extern "C" fn allow_access(
    _n: u32,
    _agents: *const Handle,
    _flags: *const u32,
    _ptr: *const c_void,
) -> Status {
    SUCCESS
}

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
    core.hsa_system_get_major_extension_table_fn = raw(major_extension_table as *const ());
    amd.hsa_amd_agent_iterate_memory_pools_fn = raw(iterate_pools as *const ());
    amd.hsa_amd_memory_pool_get_info_fn = raw(pool_info as *const ());
    amd.hsa_amd_memory_pool_allocate_fn = raw(pool_allocate as *const ());
    amd.hsa_amd_agents_allow_access_fn = raw(allow_access as *const ());
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
    TABLE.store(root.core as usize, Ordering::Release);
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

/// The fake's core table after `OnLoad` (0 before [`install`]).
static TABLE: AtomicUsize = AtomicUsize::new(0);

/// `hsa_signal_store_relaxed(signal, value)` as an application calls it: through the table,
/// so through Metron's wrapper when `METRON_GPU_AMD_HSA_API` selects it. The fake's entry
/// does nothing.
pub fn signal_store_relaxed(signal: u64, value: i64) {
    call_signal_entry(|t| t.hsa_signal_store_relaxed_fn, signal, value);
}

/// `hsa_signal_subtract_screlease(signal, value)` through the table (the same do-nothing entry
/// as [`signal_store_relaxed`], for comparing a traced call with one left alone).
pub fn signal_subtract_screlease(signal: u64, value: i64) {
    call_signal_entry(|t| t.hsa_signal_subtract_screlease_fn, signal, value);
}

fn call_signal_entry(entry: fn(&CoreApiTable) -> RawFn, signal: u64, value: i64) {
    let core = TABLE.load(Ordering::Acquire) as *const CoreApiTable;
    if core.is_null() {
        return;
    }
    // SAFETY: the leaked table of `install`, whose entries are only written during `OnLoad`.
    let Some(f) = entry(unsafe { &*core }) else {
        return;
    };
    // SAFETY: both entries have the C signature `void (hsa_signal_t, hsa_signal_value_t)`.
    let f =
        unsafe { std::mem::transmute::<unsafe extern "C" fn(), unsafe extern "C" fn(u64, i64)>(f) };
    // SAFETY: plain values; the fake's entry and Metron's wrapper accept any.
    unsafe { f(signal, value) };
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
