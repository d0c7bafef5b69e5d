//! The HSA runtime as Metron sees it: the C types it passes (from `hsa.h`, `hsa_ext_amd.h`,
//! `hsa_api_trace.h`, `hsa_ven_amd_loader.h`), the original table entries Metron calls, and
//! every `unsafe` call into the runtime. Offsets and constants are checked against the real
//! headers by the `gpu_amd_headers` test.

use crate::sys_tables::{AmdExtTable, ApiTableVersion, CoreApiTable, RawFn};
use std::ffi::{c_char, c_void, CStr};

/// `hsa_status_t`.
pub type Status = i32;
/// `HSA_STATUS_SUCCESS`.
pub const SUCCESS: Status = 0;
/// `HSA_STATUS_INFO_BREAK`: stops an iteration.
pub const INFO_BREAK: Status = 1;
/// `HSA_STATUS_ERROR`.
pub const ERROR: Status = 0x1000;

/// `hsa_agent_t`, `hsa_signal_t`, `hsa_executable_t`, `hsa_executable_symbol_t`: opaque handles.
pub type Handle = u64;
/// `hsa_signal_value_t` (large model).
pub type SignalValue = i64;

/// `HsaApiTable`: the root table `OnLoad` receives.
#[repr(C)]
pub struct HsaApiTable {
    pub version: ApiTableVersion,
    pub core: *mut CoreApiTable,
    pub amd_ext: *mut AmdExtTable,
    pub finalizer_ext: *mut c_void,
    pub image_ext: *mut c_void,
}

/// `hsa_queue_t` (large model).
#[repr(C)]
pub struct Queue {
    pub kind: u32,
    pub features: u32,
    pub base_address: *mut c_void,
    pub doorbell_signal: Handle,
    pub size: u32,
    pub reserved1: u32,
    pub id: u64,
}

/// `hsa_kernel_dispatch_packet_t`: the 64-byte AQL packet; other packet types have the same
/// size and the same `header` and `completion_signal` places.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DispatchPacket {
    pub header: u16,
    pub setup: u16,
    pub workgroup_size_x: u16,
    pub workgroup_size_y: u16,
    pub workgroup_size_z: u16,
    pub reserved0: u16,
    pub grid_size_x: u32,
    pub grid_size_y: u32,
    pub grid_size_z: u32,
    pub private_segment_size: u32,
    pub group_segment_size: u32,
    pub kernel_object: u64,
    pub kernarg_address: u64,
    pub reserved2: u64,
    pub completion_signal: Handle,
}

/// `hsa_amd_profiling_dispatch_time_t` and `hsa_amd_profiling_async_copy_time_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ProfilingTime {
    pub start: u64,
    pub end: u64,
}

/// `hsa_ven_amd_loader_1_01_pfn_t`, the entries Metron uses (a prefix of the table).
#[repr(C)]
pub struct LoaderTable {
    pub query_host_address:
        Option<unsafe extern "C" fn(device: *const c_void, host: *mut *const c_void) -> Status>,
    pub query_segment_descriptors: RawFn,
    pub query_executable: RawFn,
    pub iterate_executables: RawFn,
    pub loaded_code_object_get_info: RawFn,
}

/// `HSA_PACKET_HEADER_TYPE` bit offset and width.
pub const PACKET_HEADER_TYPE: u16 = 0;
/// Width of the packet type field.
pub const PACKET_HEADER_WIDTH_TYPE: u16 = 8;
/// `HSA_PACKET_TYPE_KERNEL_DISPATCH`.
pub const PACKET_TYPE_KERNEL_DISPATCH: u16 = 2;
/// `HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS` bit offset (width 2).
pub const SETUP_DIMENSIONS: u16 = 0;
/// `HSA_SYSTEM_INFO_TIMESTAMP`.
pub const SYSTEM_INFO_TIMESTAMP: u32 = 2;
/// `HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY`.
pub const SYSTEM_INFO_TIMESTAMP_FREQUENCY: u32 = 3;
/// `HSA_EXTENSION_AMD_LOADER`.
pub const EXTENSION_AMD_LOADER: u16 = 0x201;
/// `HSA_AGENT_INFO_NAME` (64 bytes, e.g. `gfx90a`).
pub const AGENT_INFO_NAME: u32 = 0;
/// `HSA_AGENT_INFO_DEVICE` (`hsa_device_type_t`).
pub const AGENT_INFO_DEVICE: u32 = 17;
/// `HSA_DEVICE_TYPE_GPU`.
pub const DEVICE_TYPE_GPU: u32 = 1;
/// `HSA_AMD_AGENT_INFO_PRODUCT_NAME` (64 bytes).
pub const AMD_AGENT_INFO_PRODUCT_NAME: u32 = 0xA009;
/// `HSA_EXECUTABLE_SYMBOL_INFO_TYPE`.
pub const SYMBOL_INFO_TYPE: u32 = 0;
/// `HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH`.
pub const SYMBOL_INFO_NAME_LENGTH: u32 = 1;
/// `HSA_EXECUTABLE_SYMBOL_INFO_NAME`.
pub const SYMBOL_INFO_NAME: u32 = 2;
/// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT`.
pub const SYMBOL_INFO_KERNEL_OBJECT: u32 = 22;
/// `HSA_SYMBOL_KIND_KERNEL`.
pub const SYMBOL_KIND_KERNEL: u32 = 1;
/// `HSA_SIGNAL_CONDITION_LT`.
pub const SIGNAL_CONDITION_LT: u32 = 2;

/// The packet type of an AQL header.
pub fn packet_type(header: u16) -> u16 {
    (header >> PACKET_HEADER_TYPE) & ((1 << PACKET_HEADER_WIDTH_TYPE) - 1)
}

// The C signatures of the entries Metron calls or replaces.
pub type QueueCreateFn = unsafe extern "C" fn(
    agent: Handle,
    size: u32,
    kind: u32,
    callback: Option<unsafe extern "C" fn(Status, *mut Queue, *mut c_void)>,
    data: *mut c_void,
    private_segment_size: u32,
    group_segment_size: u32,
    queue: *mut *mut Queue,
) -> Status;
pub type QueueDestroyFn = unsafe extern "C" fn(queue: *mut Queue) -> Status;
pub type ExecutableFreezeFn =
    unsafe extern "C" fn(executable: Handle, options: *const c_char) -> Status;
pub type SymbolCallback =
    unsafe extern "C" fn(executable: Handle, symbol: Handle, data: *mut c_void) -> Status;
pub type IterateSymbolsFn =
    unsafe extern "C" fn(executable: Handle, callback: SymbolCallback, data: *mut c_void) -> Status;
pub type SymbolGetInfoFn =
    unsafe extern "C" fn(symbol: Handle, attribute: u32, value: *mut c_void) -> Status;
pub type SystemGetInfoFn = unsafe extern "C" fn(attribute: u32, value: *mut c_void) -> Status;
pub type AgentCallback = unsafe extern "C" fn(agent: Handle, data: *mut c_void) -> Status;
pub type IterateAgentsFn =
    unsafe extern "C" fn(callback: AgentCallback, data: *mut c_void) -> Status;
pub type AgentGetInfoFn =
    unsafe extern "C" fn(agent: Handle, attribute: u32, value: *mut c_void) -> Status;
pub type SignalCreateFn = unsafe extern "C" fn(
    initial: SignalValue,
    num_consumers: u32,
    consumers: *const Handle,
    signal: *mut Handle,
) -> Status;
pub type SignalStoreFn = unsafe extern "C" fn(signal: Handle, value: SignalValue);
pub type SignalSubtractFn = unsafe extern "C" fn(signal: Handle, value: SignalValue);
pub type MemoryCopyFn =
    unsafe extern "C" fn(dst: *mut c_void, src: *const c_void, size: usize) -> Status;
pub type MajorExtensionTableFn =
    unsafe extern "C" fn(extension: u16, major: u16, size: usize, table: *mut c_void) -> Status;
pub type SetProfilerEnabledFn = unsafe extern "C" fn(queue: *mut Queue, enable: i32) -> Status;
pub type AsyncCopyEnableFn = unsafe extern "C" fn(enable: bool) -> Status;
pub type GetDispatchTimeFn =
    unsafe extern "C" fn(agent: Handle, signal: Handle, time: *mut ProfilingTime) -> Status;
pub type GetAsyncCopyTimeFn =
    unsafe extern "C" fn(signal: Handle, time: *mut ProfilingTime) -> Status;
pub type TickToSystemFn =
    unsafe extern "C" fn(agent: Handle, agent_tick: u64, system_tick: *mut u64) -> Status;
pub type SignalHandler = unsafe extern "C" fn(value: SignalValue, arg: *mut c_void) -> bool;
pub type AsyncHandlerFn = unsafe extern "C" fn(
    signal: Handle,
    condition: u32,
    value: SignalValue,
    handler: SignalHandler,
    arg: *mut c_void,
) -> Status;
pub type AsyncCopyFn = unsafe extern "C" fn(
    dst: *mut c_void,
    dst_agent: Handle,
    src: *const c_void,
    src_agent: Handle,
    size: usize,
    num_dep_signals: u32,
    dep_signals: *const Handle,
    completion_signal: Handle,
) -> Status;
pub type PacketWriter = unsafe extern "C" fn(packets: *const c_void, count: u64);
pub type InterceptHandler = unsafe extern "C" fn(
    packets: *const c_void,
    count: u64,
    user_packet_index: u64,
    data: *mut c_void,
    writer: PacketWriter,
);
pub type InterceptRegisterFn = unsafe extern "C" fn(
    queue: *mut Queue,
    callback: InterceptHandler,
    data: *mut c_void,
) -> Status;

/// The runtime's own entries, copied out of the table before Metron replaced any.
#[derive(Clone, Copy)]
pub struct Runtime {
    pub queue_create: QueueCreateFn,
    pub queue_destroy: QueueDestroyFn,
    pub executable_freeze: ExecutableFreezeFn,
    pub iterate_symbols: IterateSymbolsFn,
    pub symbol_get_info: SymbolGetInfoFn,
    pub system_get_info: SystemGetInfoFn,
    pub iterate_agents: IterateAgentsFn,
    pub agent_get_info: AgentGetInfoFn,
    pub signal_create: SignalCreateFn,
    pub signal_store_relaxed: SignalStoreFn,
    pub signal_subtract_screlease: SignalSubtractFn,
    pub memory_copy: MemoryCopyFn,
    pub major_extension_table: Option<MajorExtensionTableFn>,
    pub set_profiler_enabled: SetProfilerEnabledFn,
    pub async_copy_enable: Option<AsyncCopyEnableFn>,
    pub get_dispatch_time: GetDispatchTimeFn,
    pub get_async_copy_time: Option<GetAsyncCopyTimeFn>,
    pub tick_to_system: TickToSystemFn,
    pub async_handler: AsyncHandlerFn,
    pub async_copy: Option<AsyncCopyFn>,
    pub intercept_create: QueueCreateFn,
    pub intercept_register: InterceptRegisterFn,
}

/// Reads entry `$field` of `$table` if the runtime filled it (its offset is below the table's
/// `minor_id`, the size the runtime wrote) and it is not null, cast to `$ty`.
macro_rules! entry {
    ($table:expr, $t:ty, $field:ident, $ty:ty) => {{
        let filled = $table.version.minor_id as usize;
        if std::mem::offset_of!($t, $field) + std::mem::size_of::<RawFn>() > filled {
            None
        } else {
            $table.$field.map(|f| {
                // SAFETY: RawFn and every `extern "C" fn` pointer type have the same size and
                // representation (a nullable code pointer); the header declares this entry
                // with the signature `$ty` (checked by the gpu_amd_headers test).
                unsafe { std::mem::transmute::<unsafe extern "C" fn(), $ty>(f) }
            })
        }
    }};
}

/// Writes `$f` into entry `$field` of `$table` (the runtime reads it at the next call).
macro_rules! replace {
    ($table:expr, $field:ident, $f:expr) => {{
        let f: *const () = $f as *const ();
        // SAFETY: a function pointer cast to the untyped entry type; the runtime calls it with
        // the signature the header declares, which `$f` has (the wrapper's type is the one
        // `entry!` read).
        let raw = unsafe { std::mem::transmute::<*const (), unsafe extern "C" fn()>(f) };
        $table.$field = Some(raw);
    }};
}

/// Why a table cannot be used.
pub fn check_table(table: *mut HsaApiTable) -> Result<(), String> {
    if table.is_null() {
        return Err("the runtime passed no API table".into());
    }
    // SAFETY: non-null; the runtime passes a valid HsaApiTable for the duration of OnLoad.
    let root = unsafe { &*table };
    if root.version.major_id != 1 {
        return Err(format!(
            "API table major version {} (Metron knows version 1)",
            root.version.major_id
        ));
    }
    if root.core.is_null() || root.amd_ext.is_null() {
        return Err("the API table has no core or AMD extension table".into());
    }
    Ok(())
}

/// Copies the entries Metron needs out of `table`; names the first missing one.
///
/// # Safety
/// `table` passed [`check_table`] and is the runtime's live table.
pub unsafe fn read_runtime(table: *mut HsaApiTable) -> Result<Runtime, String> {
    // SAFETY: the caller checked the pointers (check_table).
    let (core, amd) = unsafe { (&*(*table).core, &*(*table).amd_ext) };
    macro_rules! need {
        ($t:expr, $ty:ty, $field:ident, $sig:ty) => {
            entry!($t, $ty, $field, $sig).ok_or_else(|| {
                format!(
                    "the runtime's API table has no {} (table size {})",
                    stringify!($field),
                    $t.version.minor_id
                )
            })?
        };
    }
    Ok(Runtime {
        queue_create: need!(core, CoreApiTable, hsa_queue_create_fn, QueueCreateFn),
        queue_destroy: need!(core, CoreApiTable, hsa_queue_destroy_fn, QueueDestroyFn),
        executable_freeze: need!(
            core,
            CoreApiTable,
            hsa_executable_freeze_fn,
            ExecutableFreezeFn
        ),
        iterate_symbols: need!(
            core,
            CoreApiTable,
            hsa_executable_iterate_symbols_fn,
            IterateSymbolsFn
        ),
        symbol_get_info: need!(
            core,
            CoreApiTable,
            hsa_executable_symbol_get_info_fn,
            SymbolGetInfoFn
        ),
        system_get_info: need!(core, CoreApiTable, hsa_system_get_info_fn, SystemGetInfoFn),
        iterate_agents: need!(core, CoreApiTable, hsa_iterate_agents_fn, IterateAgentsFn),
        agent_get_info: need!(core, CoreApiTable, hsa_agent_get_info_fn, AgentGetInfoFn),
        signal_create: need!(core, CoreApiTable, hsa_signal_create_fn, SignalCreateFn),
        signal_store_relaxed: need!(
            core,
            CoreApiTable,
            hsa_signal_store_relaxed_fn,
            SignalStoreFn
        ),
        signal_subtract_screlease: need!(
            core,
            CoreApiTable,
            hsa_signal_subtract_screlease_fn,
            SignalSubtractFn
        ),
        memory_copy: need!(core, CoreApiTable, hsa_memory_copy_fn, MemoryCopyFn),
        major_extension_table: entry!(
            core,
            CoreApiTable,
            hsa_system_get_major_extension_table_fn,
            MajorExtensionTableFn
        ),
        set_profiler_enabled: need!(
            amd,
            AmdExtTable,
            hsa_amd_profiling_set_profiler_enabled_fn,
            SetProfilerEnabledFn
        ),
        async_copy_enable: entry!(
            amd,
            AmdExtTable,
            hsa_amd_profiling_async_copy_enable_fn,
            AsyncCopyEnableFn
        ),
        get_dispatch_time: need!(
            amd,
            AmdExtTable,
            hsa_amd_profiling_get_dispatch_time_fn,
            GetDispatchTimeFn
        ),
        get_async_copy_time: entry!(
            amd,
            AmdExtTable,
            hsa_amd_profiling_get_async_copy_time_fn,
            GetAsyncCopyTimeFn
        ),
        tick_to_system: need!(
            amd,
            AmdExtTable,
            hsa_amd_profiling_convert_tick_to_system_domain_fn,
            TickToSystemFn
        ),
        async_handler: need!(
            amd,
            AmdExtTable,
            hsa_amd_signal_async_handler_fn,
            AsyncHandlerFn
        ),
        async_copy: entry!(amd, AmdExtTable, hsa_amd_memory_async_copy_fn, AsyncCopyFn),
        intercept_create: need!(
            amd,
            AmdExtTable,
            hsa_amd_queue_intercept_create_fn,
            QueueCreateFn
        ),
        intercept_register: need!(
            amd,
            AmdExtTable,
            hsa_amd_queue_intercept_register_fn,
            InterceptRegisterFn
        ),
    })
}

/// Metron's replacements for the table entries it wraps.
pub struct Wrappers {
    pub queue_create: QueueCreateFn,
    pub queue_destroy: QueueDestroyFn,
    pub executable_freeze: ExecutableFreezeFn,
    pub memory_copy: MemoryCopyFn,
    pub async_copy: AsyncCopyFn,
}

/// Installs `w` in the runtime's table (after [`read_runtime`] succeeded on it).
///
/// # Safety
/// `table` passed [`check_table`]; called from `OnLoad`, before the runtime hands the table to
/// the application.
pub unsafe fn install(table: *mut HsaApiTable, w: &Wrappers, with_async_copy: bool) {
    // SAFETY: checked pointers; OnLoad runs before any application call through the table.
    let (core, amd) = unsafe { (&mut *(*table).core, &mut *(*table).amd_ext) };
    replace!(core, hsa_queue_create_fn, w.queue_create);
    replace!(core, hsa_queue_destroy_fn, w.queue_destroy);
    replace!(core, hsa_executable_freeze_fn, w.executable_freeze);
    replace!(core, hsa_memory_copy_fn, w.memory_copy);
    if with_async_copy {
        replace!(amd, hsa_amd_memory_async_copy_fn, w.async_copy);
    }
}

/// The entries of `CoreApiTable` and `AmdExtTable` the runtime filled (by `minor_id`), as
/// slices in table order: index `i` of the core slice is entry `i` of `sys_api_trace`, index
/// `i` of the AMD slice is entry `CORE_ENTRIES + i`.
///
/// # Safety
/// `table` passed [`check_table`]; nothing else reads or writes the tables meanwhile (OnLoad).
pub unsafe fn table_entries<'a>(table: *mut HsaApiTable) -> [&'a mut [RawFn]; 2] {
    let head = std::mem::size_of::<ApiTableVersion>();
    let slot = std::mem::size_of::<RawFn>();
    // SAFETY: checked pointers to the runtime's two tables (the caller's contract).
    let (core, amd) = unsafe { ((*table).core, (*table).amd_ext) };
    let entries = |version: &ApiTableVersion, most: usize| {
        ((version.minor_id as usize).saturating_sub(head) / slot).min(most)
    };
    // SAFETY: each table is `#[repr(C)]`: the 16-byte version, then only `RawFn` entries (8
    // bytes each, no padding); the runtime filled `minor_id` bytes of it, and the count is
    // also capped at the struct's own entries. The slices are the only access while they live.
    unsafe {
        let n_core = entries(&(*core).version, crate::api_table::CORE_ENTRIES);
        let n_amd = entries(
            &(*amd).version,
            crate::api_table::ENTRIES - crate::api_table::CORE_ENTRIES,
        );
        [
            std::slice::from_raw_parts_mut(core.cast::<u8>().add(head).cast::<RawFn>(), n_core),
            std::slice::from_raw_parts_mut(amd.cast::<u8>().add(head).cast::<RawFn>(), n_amd),
        ]
    }
}

impl Runtime {
    /// `hsa_system_get_info` for a `u64` attribute.
    pub fn system_u64(&self, attribute: u32) -> Option<u64> {
        let mut v = 0u64;
        // SAFETY: both attributes Metron asks for are uint64_t; `v` is a valid out-pointer.
        let s = unsafe { (self.system_get_info)(attribute, (&raw mut v).cast()) };
        (s == SUCCESS).then_some(v)
    }

    /// `hsa_agent_get_info` for a 64-byte string attribute.
    pub fn agent_string(&self, agent: Handle, attribute: u32) -> Option<String> {
        let mut buf = [0u8; 64];
        // SAFETY: both string attributes Metron asks for are char[64]; `buf` has 64 bytes.
        let s = unsafe { (self.agent_get_info)(agent, attribute, buf.as_mut_ptr().cast()) };
        if s != SUCCESS {
            return None;
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        Some(String::from_utf8_lossy(&buf[..end]).trim().to_string())
    }

    /// `hsa_agent_get_info(HSA_AGENT_INFO_DEVICE)`.
    pub fn agent_device_type(&self, agent: Handle) -> Option<u32> {
        let mut v = 0u32;
        // SAFETY: the attribute is hsa_device_type_t (a 32-bit enum); valid out-pointer.
        let s = unsafe { (self.agent_get_info)(agent, AGENT_INFO_DEVICE, (&raw mut v).cast()) };
        (s == SUCCESS).then_some(v)
    }

    /// Every agent, in the runtime's order.
    pub fn agents(&self) -> Vec<Handle> {
        unsafe extern "C" fn push(agent: Handle, data: *mut c_void) -> Status {
            // SAFETY: `data` is the Vec passed below, alive for the iteration.
            unsafe { (*data.cast::<Vec<Handle>>()).push(agent) };
            SUCCESS
        }
        let mut out: Vec<Handle> = Vec::new();
        // SAFETY: the callback matches hsa_iterate_agents' and only uses `data` as the Vec.
        unsafe { (self.iterate_agents)(push, (&raw mut out).cast()) };
        out
    }

    /// The kernel symbols of a frozen executable: (name, kernel object).
    pub fn kernel_symbols(&self, executable: Handle) -> Vec<(String, u64)> {
        struct Ctx<'a> {
            rt: &'a Runtime,
            out: Vec<(String, u64)>,
        }
        unsafe extern "C" fn each(_exe: Handle, symbol: Handle, data: *mut c_void) -> Status {
            // SAFETY: `data` is the Ctx passed below, alive for the iteration.
            let ctx = unsafe { &mut *data.cast::<Ctx<'_>>() };
            let rt = ctx.rt;
            let mut kind = 0u32;
            // SAFETY: TYPE is hsa_symbol_kind_t (32-bit); valid out-pointer.
            if unsafe { (rt.symbol_get_info)(symbol, SYMBOL_INFO_TYPE, (&raw mut kind).cast()) }
                != SUCCESS
                || kind != SYMBOL_KIND_KERNEL
            {
                return SUCCESS;
            }
            let mut len = 0u32;
            let mut object = 0u64;
            // SAFETY: NAME_LENGTH is uint32_t, KERNEL_OBJECT uint64_t; valid out-pointers.
            let ok = unsafe {
                (rt.symbol_get_info)(symbol, SYMBOL_INFO_NAME_LENGTH, (&raw mut len).cast())
                    == SUCCESS
                    && (rt.symbol_get_info)(
                        symbol,
                        SYMBOL_INFO_KERNEL_OBJECT,
                        (&raw mut object).cast(),
                    ) == SUCCESS
            };
            if !ok || len > 1 << 16 {
                return SUCCESS;
            }
            let mut name = vec![0u8; len as usize + 1];
            // SAFETY: NAME writes NAME_LENGTH bytes (not NUL-terminated); the buffer has one
            // more.
            if unsafe { (rt.symbol_get_info)(symbol, SYMBOL_INFO_NAME, name.as_mut_ptr().cast()) }
                != SUCCESS
            {
                return SUCCESS;
            }
            name.truncate(len as usize);
            ctx.out
                .push((String::from_utf8_lossy(&name).into_owned(), object));
            SUCCESS
        }
        let mut ctx = Ctx {
            rt: self,
            out: Vec::new(),
        };
        // SAFETY: the callback matches the header's and only uses `data` as the Ctx.
        unsafe { (self.iterate_symbols)(executable, each, (&raw mut ctx).cast()) };
        ctx.out
    }

    /// The loader extension's `query_host_address` (kernel descriptors live in device
    /// memory; the loader keeps a host copy).
    pub fn loader(&self) -> Option<LoaderTable> {
        let get = self.major_extension_table?;
        let mut table = LoaderTable {
            query_host_address: None,
            query_segment_descriptors: None,
            query_executable: None,
            iterate_executables: None,
            loaded_code_object_get_info: None,
        };
        // SAFETY: asks for version 1 of the loader table; `table` is a prefix of
        // hsa_ven_amd_loader_1_01_pfn_t and its size is passed, so the runtime writes no more.
        let s = unsafe {
            get(
                EXTENSION_AMD_LOADER,
                1,
                std::mem::size_of::<LoaderTable>(),
                (&raw mut table).cast(),
            )
        };
        (s == SUCCESS && table.query_host_address.is_some()).then_some(table)
    }
}

impl Runtime {
    /// A new signal with value 1 and no consumer list (any agent may wait on it).
    pub fn create_signal(&self) -> Option<Handle> {
        let mut h: Handle = 0;
        // SAFETY: no consumer list (count 0, null); valid out-pointer.
        let s = unsafe { (self.signal_create)(1, 0, std::ptr::null(), &mut h) };
        (s == SUCCESS && h != 0).then_some(h)
    }

    /// Sets a signal's value (relaxed).
    pub fn store_signal(&self, signal: Handle, value: SignalValue) {
        // SAFETY: a valid signal handle (Metron's own, or the application's completion
        // signal, which the packet made the runtime's contract to decrement).
        unsafe { (self.signal_store_relaxed)(signal, value) };
    }

    /// Decrements a signal by `value` with release ordering: what the packet processor does
    /// to a completion signal when the packet completes.
    pub fn subtract_signal(&self, signal: Handle, value: SignalValue) {
        // SAFETY: as store_signal.
        unsafe { (self.signal_subtract_screlease)(signal, value) };
    }

    /// Calls `handler(value, arg)` on the runtime's signal thread once `signal` drops below 1.
    pub fn on_signal_below_one(&self, signal: Handle, handler: SignalHandler, arg: usize) -> bool {
        // SAFETY: `handler` has the header's signature; `arg` is an index, never dereferenced
        // by the runtime.
        let s = unsafe {
            (self.async_handler)(signal, SIGNAL_CONDITION_LT, 1, handler, arg as *mut c_void)
        };
        s == SUCCESS
    }

    /// Start and end ticks (agent clock) of the dispatch that completed `signal`.
    pub fn dispatch_time(&self, agent: Handle, signal: Handle) -> Option<ProfilingTime> {
        let mut t = ProfilingTime::default();
        // SAFETY: valid handles from the dispatch; valid out-pointer.
        let s = unsafe { (self.get_dispatch_time)(agent, signal, &mut t) };
        (s == SUCCESS).then_some(t)
    }

    /// Start and end (system clock ticks) of the async copy that completed `signal`.
    pub fn copy_time(&self, signal: Handle) -> Option<ProfilingTime> {
        let get = self.get_async_copy_time?;
        let mut t = ProfilingTime::default();
        // SAFETY: a valid signal handle; valid out-pointer.
        let s = unsafe { get(signal, &mut t) };
        (s == SUCCESS).then_some(t)
    }

    /// An agent tick in the system timestamp domain.
    pub fn system_tick(&self, agent: Handle, tick: u64) -> Option<u64> {
        let mut out = 0u64;
        // SAFETY: a valid agent handle; valid out-pointer.
        let s = unsafe { (self.tick_to_system)(agent, tick, &mut out) };
        (s == SUCCESS).then_some(out)
    }

    /// Turns on dispatch timestamps for a queue.
    pub fn enable_queue_profiling(&self, queue: *mut Queue) -> bool {
        // SAFETY: `queue` was just created by the runtime and is alive.
        unsafe { (self.set_profiler_enabled)(queue, 1) == SUCCESS }
    }

    /// Turns on async-copy timestamps (process-wide).
    pub fn enable_copy_profiling(&self) -> bool {
        // SAFETY: no pointer arguments.
        self.async_copy_enable
            .is_some_and(|f| unsafe { f(true) } == SUCCESS)
    }

    /// Routes every packet written to `queue` through `handler` (with `data`).
    pub fn intercept(&self, queue: *mut Queue, handler: InterceptHandler, data: usize) -> bool {
        // SAFETY: `queue` came from hsa_amd_queue_intercept_create; `data` is an index.
        unsafe { (self.intercept_register)(queue, handler, data as *mut c_void) == SUCCESS }
    }
}

/// The packets of an intercept callback.
///
/// # Safety
/// `packets` points at `count` AQL packets alive for the callback (the runtime's contract).
pub unsafe fn packets<'a>(packets: *const c_void, count: u64) -> &'a [DispatchPacket] {
    if packets.is_null() || count == 0 {
        return &[];
    }
    // SAFETY: the caller's contract; every AQL packet is 64 bytes and 64-byte aligned.
    unsafe { std::slice::from_raw_parts(packets.cast::<DispatchPacket>(), count as usize) }
}

/// Packets on their way to the runtime's writer, gathered on the stack without initializing
/// the unused part (a counted dispatch is three packets; 96 initialized packets would cost a
/// 6 KiB `memset` per doorbell write).
pub struct PacketBuf<const N: usize> {
    buf: [std::mem::MaybeUninit<DispatchPacket>; N],
    len: usize,
    writer: PacketWriter,
}

impl<const N: usize> PacketBuf<N> {
    /// An empty buffer that flushes to `writer`.
    pub fn new(writer: PacketWriter) -> Self {
        PacketBuf {
            buf: [const { std::mem::MaybeUninit::uninit() }; N],
            len: 0,
            writer,
        }
    }

    /// Adds packets, flushing first when they would not fit.
    pub fn push(&mut self, packets: &[DispatchPacket]) {
        if self.len + packets.len() > N {
            self.flush();
        }
        for p in packets {
            self.buf[self.len].write(*p);
            self.len += 1;
        }
    }

    /// Hands what is gathered to the writer, in order.
    pub fn flush(&mut self) {
        // SAFETY: the first `len` elements were written by `push` (and not moved out since).
        let gathered = unsafe {
            std::slice::from_raw_parts(self.buf.as_ptr().cast::<DispatchPacket>(), self.len)
        };
        write_packets(self.writer, gathered);
        self.len = 0;
    }
}

/// Hands packets to the queue through the runtime's writer.
pub fn write_packets(writer: PacketWriter, packets: &[DispatchPacket]) {
    if packets.is_empty() {
        return;
    }
    // SAFETY: `writer` is the one the runtime passed to this intercept callback; it copies
    // `count` packets from the pointer before returning.
    unsafe { writer(packets.as_ptr().cast(), packets.len() as u64) };
}

/// The calling thread's kernel tid.
pub fn gettid() -> u32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() as u32 }
}

/// The queue's id.
///
/// # Safety
/// `queue` is null or a live queue.
pub unsafe fn queue_id(queue: *const Queue) -> u64 {
    if queue.is_null() {
        return u64::MAX;
    }
    // SAFETY: the caller's contract.
    unsafe { (*queue).id }
}

impl LoaderTable {
    /// The host copy of `len` bytes at device address `device`.
    pub fn host_bytes<const N: usize>(&self, device: u64) -> Option<[u8; N]> {
        let query = self.query_host_address?;
        let mut host: *const c_void = std::ptr::null();
        // SAFETY: a valid out-pointer; the loader returns a host pointer to the code object
        // copy containing `device`, or an error.
        let s = unsafe { query(device as *const c_void, &mut host) };
        if s != SUCCESS || host.is_null() {
            return None;
        }
        let mut out = [0u8; N];
        // SAFETY: the loader's host copy holds the whole kernel descriptor (N = 64 bytes) at
        // `host`; read without alignment assumptions.
        unsafe { std::ptr::copy_nonoverlapping(host.cast::<u8>(), out.as_mut_ptr(), N) };
        Some(out)
    }
}

/// A C string from the runtime, or `None`.
///
/// # Safety
/// `p` is null or a NUL-terminated string alive for the call.
pub unsafe fn c_str(p: *const c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the caller's contract.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// Whether a library is already loaded in this process (`dlopen` with `RTLD_NOLOAD`).
pub fn library_loaded(name: &str) -> bool {
    let Ok(c) = std::ffi::CString::new(name) else {
        return false;
    };
    // SAFETY: a valid C string; RTLD_NOLOAD loads nothing; the handle is closed again.
    unsafe {
        let h = libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
        if h.is_null() {
            return false;
        }
        libc::dlclose(h);
        true
    }
}

/// Where a library would be found, without loading it (loading ROCr runs its constructors in
/// the probing process): the process's copy if already loaded, else the first of
/// `LD_LIBRARY_PATH`, ROCm's and the system's library folders that has the file.
pub fn find_library(name: &str) -> Option<String> {
    if metron::gpu::object_loaded(name) {
        return Some(name.to_string());
    }
    let mut dirs: Vec<std::path::PathBuf> = std::env::var_os("LD_LIBRARY_PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(
        [
            "/opt/rocm/lib",
            "/opt/rocm/lib64",
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib64",
            "/usr/lib",
            "/lib/x86_64-linux-gnu",
        ]
        .map(std::path::PathBuf::from),
    );
    dirs.into_iter()
        .map(|d| d.join(name))
        .find(|p| p.exists())
        .map(|p| p.display().to_string())
}

/// `(“C.field”, offset)` of the structs above, for the header check.
pub fn layouts() -> Vec<(&'static str, usize)> {
    use std::mem::{offset_of, size_of};
    vec![
        ("sizeof HsaApiTable", size_of::<HsaApiTable>()),
        ("HsaApiTable.core_", offset_of!(HsaApiTable, core)),
        ("HsaApiTable.amd_ext_", offset_of!(HsaApiTable, amd_ext)),
        ("sizeof hsa_queue_t", size_of::<Queue>()),
        ("hsa_queue_t.base_address", offset_of!(Queue, base_address)),
        (
            "hsa_queue_t.doorbell_signal",
            offset_of!(Queue, doorbell_signal),
        ),
        ("hsa_queue_t.size", offset_of!(Queue, size)),
        ("hsa_queue_t.id", offset_of!(Queue, id)),
        (
            "sizeof hsa_kernel_dispatch_packet_t",
            size_of::<DispatchPacket>(),
        ),
        (
            "hsa_kernel_dispatch_packet_t.setup",
            offset_of!(DispatchPacket, setup),
        ),
        (
            "hsa_kernel_dispatch_packet_t.workgroup_size_x",
            offset_of!(DispatchPacket, workgroup_size_x),
        ),
        (
            "hsa_kernel_dispatch_packet_t.grid_size_x",
            offset_of!(DispatchPacket, grid_size_x),
        ),
        (
            "hsa_kernel_dispatch_packet_t.private_segment_size",
            offset_of!(DispatchPacket, private_segment_size),
        ),
        (
            "hsa_kernel_dispatch_packet_t.group_segment_size",
            offset_of!(DispatchPacket, group_segment_size),
        ),
        (
            "hsa_kernel_dispatch_packet_t.kernel_object",
            offset_of!(DispatchPacket, kernel_object),
        ),
        (
            "hsa_kernel_dispatch_packet_t.completion_signal",
            offset_of!(DispatchPacket, completion_signal),
        ),
        (
            "sizeof hsa_amd_profiling_dispatch_time_t",
            size_of::<ProfilingTime>(),
        ),
        (
            "hsa_amd_profiling_dispatch_time_t.end",
            offset_of!(ProfilingTime, end),
        ),
        (
            "hsa_ven_amd_loader_1_01_pfn_t.hsa_ven_amd_loader_query_host_address",
            offset_of!(LoaderTable, query_host_address),
        ),
        (
            "hsa_ven_amd_loader_1_01_pfn_t.hsa_ven_amd_loader_loaded_code_object_get_info",
            offset_of!(LoaderTable, loaded_code_object_get_info),
        ),
    ]
}

/// `("NAME", value)` of the constants above, for the header check.
pub fn constants() -> Vec<(&'static str, u64)> {
    vec![
        ("HSA_STATUS_SUCCESS", SUCCESS as u64),
        ("HSA_STATUS_INFO_BREAK", INFO_BREAK as u64),
        ("HSA_STATUS_ERROR", ERROR as u64),
        ("HSA_PACKET_HEADER_TYPE", u64::from(PACKET_HEADER_TYPE)),
        (
            "HSA_PACKET_HEADER_WIDTH_TYPE",
            u64::from(PACKET_HEADER_WIDTH_TYPE),
        ),
        (
            "HSA_PACKET_TYPE_KERNEL_DISPATCH",
            u64::from(PACKET_TYPE_KERNEL_DISPATCH),
        ),
        (
            "HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS",
            u64::from(SETUP_DIMENSIONS),
        ),
        (
            "HSA_SYSTEM_INFO_TIMESTAMP",
            u64::from(SYSTEM_INFO_TIMESTAMP),
        ),
        (
            "HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY",
            u64::from(SYSTEM_INFO_TIMESTAMP_FREQUENCY),
        ),
        ("HSA_EXTENSION_AMD_LOADER", u64::from(EXTENSION_AMD_LOADER)),
        ("HSA_AGENT_INFO_NAME", u64::from(AGENT_INFO_NAME)),
        ("HSA_AGENT_INFO_DEVICE", u64::from(AGENT_INFO_DEVICE)),
        ("HSA_DEVICE_TYPE_GPU", u64::from(DEVICE_TYPE_GPU)),
        (
            "HSA_AMD_AGENT_INFO_PRODUCT_NAME",
            u64::from(AMD_AGENT_INFO_PRODUCT_NAME),
        ),
        (
            "HSA_EXECUTABLE_SYMBOL_INFO_TYPE",
            u64::from(SYMBOL_INFO_TYPE),
        ),
        (
            "HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH",
            u64::from(SYMBOL_INFO_NAME_LENGTH),
        ),
        (
            "HSA_EXECUTABLE_SYMBOL_INFO_NAME",
            u64::from(SYMBOL_INFO_NAME),
        ),
        (
            "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT",
            u64::from(SYMBOL_INFO_KERNEL_OBJECT),
        ),
        ("HSA_SYMBOL_KIND_KERNEL", u64::from(SYMBOL_KIND_KERNEL)),
        ("HSA_SIGNAL_CONDITION_LT", u64::from(SIGNAL_CONDITION_LT)),
    ]
}
