//! ROCprofiler-SDK as Metron sees it: the C types it passes, the entry points Metron calls,
//! and every `unsafe` of the SDK path.
//!
//! Nothing is linked: when the SDK calls `rocprofiler_configure` its library is already loaded,
//! and every function is looked up with `dlsym(RTLD_DEFAULT, ..)` ([`Api::load`]). The callbacks
//! the SDK calls (tool initialize/finalize, the buffer callback, the callback-tracing callback)
//! are the `extern "C"` trampolines here: they turn the SDK's pointers into plain Rust values and
//! hand those to `rocprofiler_sdk.rs`, which holds no `unsafe`.
//!
//! Transcribed by hand from ROCm/rocprofiler-sdk, `source/include/rocprofiler-sdk/`:
//! `fwd.h`, `buffer_tracing.h`, `callback_tracing.h`, `agent.h` at commit
//! d2cd02cf96136f27eae3b33e02ea42f700b10d78; `registration.h` at
//! 13db6e1a4a97f00b14e78bb2926c0c9dd89c257e; `buffer.h` at
//! 2695e8368eeadb96b9f3379db759d54d9fa0a69a; `context.h` at
//! a20774b61613735a2fdddc63cad8468c0f8dde43; the clock of `rocprofiler_get_timestamp`
//! (`CLOCK_BOOTTIME`, `default_clock_id`) from `source/lib/common/utility.hpp` at a20774b6.
//! The HIP API buffer record (`rocprofiler_buffer_tracing_hip_api_record_t`),
//! `ROCPROFILER_BUFFER_TRACING_HIP_RUNTIME_API`, `rocprofiler_correlation_id_t`,
//! `rocprofiler_query_buffer_tracing_kind_operation_name` and
//! `rocprofiler_iterate_buffer_tracing_kind_operations` from `buffer_tracing.h` and `fwd.h` at
//! d2cd02cf96136f27eae3b33e02ea42f700b10d78 too.
//! Layouts are for x86-64 / AArch64 Linux (LP64); C enums are 32-bit `int`s.
//!
//! **ABI note.** `rocprofiler_correlation_id_t` gained its `ancestor` field in a later release
//! of the SDK, which moves `kind`, `operation`, `phase` and `payload` of the callback-tracing
//! record (passed by value). Metron checks each callback record's `kind` against the service it
//! configured and ignores (and counts) records that do not match, rather than misreading them.
//! The kernel dispatch and memory copy buffer records use `rocprofiler_async_correlation_id_t`,
//! whose layout did not change. The HIP API buffer record, though, holds a
//! `rocprofiler_correlation_id_t`: with `ancestor` it is 64 bytes ([`ApiRecord`]), before it
//! 56 ([`ApiRecordNoAncestor`], times 8 bytes earlier). Metron reads the record's own `size`
//! to tell them apart and counts (and skips) a HIP API record of any other size.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// `rocprofiler_status_t`.
pub type Status = c_int;
/// `ROCPROFILER_STATUS_SUCCESS`.
pub const STATUS_SUCCESS: Status = 0;

/// `rocprofiler_context_id_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ContextId {
    pub handle: u64,
}

/// `rocprofiler_buffer_id_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BufferId {
    pub handle: u64,
}

/// `rocprofiler_agent_id_t`, `rocprofiler_queue_id_t`, `rocprofiler_callback_thread_t`: opaque
/// handles.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Handle {
    pub handle: u64,
}

/// `rocprofiler_client_id_t`.
#[repr(C)]
pub struct ClientId {
    pub name: *const c_char,
    pub handle: u32,
}

/// `rocprofiler_client_finalize_t`.
pub type ClientFinalize = Option<unsafe extern "C" fn(ClientId)>;
/// `rocprofiler_tool_initialize_t`.
pub type ToolInitialize = unsafe extern "C" fn(ClientFinalize, *mut c_void) -> c_int;
/// `rocprofiler_tool_finalize_t`.
pub type ToolFinalize = unsafe extern "C" fn(*mut c_void);

/// `rocprofiler_tool_configure_result_t`.
#[repr(C)]
pub struct ToolConfigureResult {
    pub size: usize,
    pub initialize: Option<ToolInitialize>,
    pub finalize: Option<ToolFinalize>,
    pub tool_data: *mut c_void,
}

/// `rocprofiler_correlation_id_t` (with `ancestor`; `external` is a `rocprofiler_user_data_t`,
/// read as its `value`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CorrelationId {
    pub internal: u64,
    pub external: u64,
    pub ancestor: u64,
}

/// `rocprofiler_async_correlation_id_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct AsyncCorrelationId {
    pub internal: u64,
    pub external: u64,
}

/// `rocprofiler_dim3_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

/// `rocprofiler_record_header_t` (the `category`/`kind` half of its union; little-endian, the
/// same bytes as `hash = category | kind << 32`).
#[repr(C)]
pub struct RecordHeader {
    pub category: u32,
    pub kind: u32,
    pub payload: *mut c_void,
}

/// `rocprofiler_kernel_dispatch_info_t` (128 bytes, the SDK asserts it never grows).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct KernelDispatchInfo {
    pub size: u64,
    pub agent_id: Handle,
    pub queue_id: Handle,
    pub kernel_id: u64,
    pub dispatch_id: u64,
    /// Scratch per work-item (static + runtime), bytes.
    pub private_segment_size: u32,
    /// LDS per work-group (static + runtime), bytes.
    pub group_segment_size: u32,
    /// Work-items per work-group.
    pub workgroup_size: Dim3,
    /// Work-items in the grid.
    pub grid_size: Dim3,
    pub reserved_padding: [u8; 56],
}

/// `rocprofiler_buffer_tracing_kernel_dispatch_record_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct KernelDispatchRecord {
    pub size: u64,
    pub kind: c_int,
    pub operation: c_int,
    pub correlation_id: AsyncCorrelationId,
    /// The thread that launched the kernel.
    pub thread_id: u64,
    /// ns, on the clock of `rocprofiler_get_timestamp`.
    pub start_timestamp: u64,
    pub end_timestamp: u64,
    pub dispatch_info: KernelDispatchInfo,
}

/// `rocprofiler_buffer_tracing_memory_copy_record_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MemoryCopyRecord {
    pub size: u64,
    pub kind: c_int,
    /// A `rocprofiler_memory_copy_operation_t` (the direction).
    pub operation: c_int,
    pub correlation_id: AsyncCorrelationId,
    pub thread_id: u64,
    pub start_timestamp: u64,
    pub end_timestamp: u64,
    pub dst_agent_id: Handle,
    pub src_agent_id: Handle,
    pub bytes: u64,
    pub dst_address: u64,
    pub src_address: u64,
}

/// `rocprofiler_buffer_tracing_hip_api_record_t` (with `ancestor` in its correlation id: 64
/// bytes); `rocprofiler_buffer_tracing_hsa_api_record_t` has the same fields.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ApiRecord {
    pub size: u64,
    pub kind: c_int,
    /// A `rocprofiler_hip_runtime_api_id_t`.
    pub operation: c_int,
    pub correlation_id: CorrelationId,
    /// ns, on the clock of `rocprofiler_get_timestamp`.
    pub start_timestamp: u64,
    pub end_timestamp: u64,
    /// The thread that made the call.
    pub thread_id: u64,
}

/// `rocprofiler_buffer_tracing_hip_api_record_t` of an SDK whose `rocprofiler_correlation_id_t`
/// had no `ancestor` yet (56 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ApiRecordNoAncestor {
    pub size: u64,
    pub kind: c_int,
    pub operation: c_int,
    pub correlation_id: AsyncCorrelationId,
    pub start_timestamp: u64,
    pub end_timestamp: u64,
    pub thread_id: u64,
}

/// `rocprofiler_callback_tracing_record_t` (passed by value to the callback).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CallbackRecord {
    pub context_id: ContextId,
    pub thread_id: u64,
    pub correlation_id: CorrelationId,
    pub kind: c_int,
    pub operation: c_int,
    pub phase: c_int,
    pub payload: *mut c_void,
}

/// `rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct KernelSymbolData {
    pub size: u64,
    pub kernel_id: u64,
    pub code_object_id: u64,
    pub kernel_name: *const c_char,
    pub kernel_object: u64,
    pub kernarg_segment_size: u32,
    pub kernarg_segment_alignment: u32,
    /// Static LDS per work-group, bytes.
    pub group_segment_size: u32,
    /// Static scratch per work-item, bytes.
    pub private_segment_size: u32,
    pub sgpr_count: u32,
    pub arch_vgpr_count: u32,
    pub accum_vgpr_count: u32,
    pub kernel_code_entry_byte_offset: i64,
    pub kernel_address: u64,
}

/// `rocprofiler_agent_v0_t`. The `HSA_ENGINE_VERSION`, `HSA_ENGINE_ID` and `HSA_CAPABILITY`
/// fields (`hsakmttypes.h`) are 32-bit unions, read as `u32`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AgentV0 {
    pub size: u64,
    pub id: Handle,
    pub agent_type: c_int,
    pub cpu_cores_count: u32,
    pub simd_count: u32,
    pub mem_banks_count: u32,
    pub caches_count: u32,
    pub io_links_count: u32,
    pub cpu_core_id_base: u32,
    pub simd_id_base: u32,
    pub max_waves_per_simd: u32,
    pub lds_size_in_kb: u32,
    pub gds_size_in_kb: u32,
    pub num_gws: u32,
    pub wave_front_size: u32,
    pub num_xcc: u32,
    pub cu_count: u32,
    pub array_count: u32,
    pub num_shader_banks: u32,
    pub simd_arrays_per_engine: u32,
    pub cu_per_simd_array: u32,
    pub simd_per_cu: u32,
    pub max_slots_scratch_cu: u32,
    pub gfx_target_version: u32,
    pub vendor_id: u16,
    pub device_id: u16,
    pub location_id: u32,
    pub domain: u32,
    pub drm_render_minor: u32,
    pub num_sdma_engines: u32,
    pub num_sdma_xgmi_engines: u32,
    pub num_sdma_queues_per_engine: u32,
    pub num_cp_queues: u32,
    pub max_engine_clk_ccompute: u32,
    pub max_engine_clk_fcompute: u32,
    pub sdma_fw_version: u32,
    pub fw_version: u32,
    pub capability: u32,
    pub cu_per_engine: u32,
    pub max_waves_per_cu: u32,
    pub family_id: u32,
    pub workgroup_max_size: u32,
    pub grid_max_size: u32,
    pub local_mem_size: u64,
    pub hive_id: u64,
    pub gpu_id: u64,
    pub workgroup_max_dim: Dim3,
    pub grid_max_dim: Dim3,
    pub mem_banks: *const c_void,
    pub caches: *const c_void,
    pub io_links: *const c_void,
    pub name: *const c_char,
    pub vendor_name: *const c_char,
    pub product_name: *const c_char,
    pub model_name: *const c_char,
    pub node_id: u32,
    pub logical_node_id: i32,
    pub logical_node_type_id: i32,
    pub runtime_visibility: u32,
    pub uuid: u64,
}

/// How much of [`AgentV0`] Metron reads (through `logical_node_type_id`): an SDK whose agents
/// are smaller than this gives no device names.
const AGENT_BYTES_READ: u64 = std::mem::offset_of!(AgentV0, runtime_visibility) as u64;

/// `rocprofiler_counter_info_v0_t` (`counters.h`; its two 1-bit fields share `flags`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CounterInfoV0 {
    pub id: Handle,
    pub name: *const c_char,
    pub description: *const c_char,
    pub block: *const c_char,
    pub expression: *const c_char,
    pub flags: u8,
}

/// `rocprofiler_dispatch_counting_service_data_t` (`dispatch_counting_service.h`; passed by
/// value to the dispatch counting callback).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DispatchCountingData {
    pub size: u64,
    pub correlation_id: AsyncCorrelationId,
    pub start_timestamp: u64,
    pub end_timestamp: u64,
    pub dispatch_info: KernelDispatchInfo,
}

/// `rocprofiler_dispatch_counting_service_record_t`: the header the SDK puts in the buffer
/// before a dispatch's counter records.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DispatchCountingRecord {
    pub size: u64,
    pub num_records: u64,
    pub correlation_id: AsyncCorrelationId,
    pub start_timestamp: u64,
    pub end_timestamp: u64,
    pub dispatch_info: KernelDispatchInfo,
}

/// `rocprofiler_counter_record_t` (`fwd.h`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CounterRecord {
    /// A `rocprofiler_counter_instance_id_t`: the counter and the instance's dimensions.
    pub id: u64,
    pub counter_value: f64,
    pub dispatch_id: u64,
    pub user_data: u64,
    pub agent_id: Handle,
}

// rocprofiler_buffer_category_t
/// `ROCPROFILER_BUFFER_CATEGORY_TRACING`.
pub const BUFFER_CATEGORY_TRACING: u32 = 1;

/// `ROCPROFILER_BUFFER_CATEGORY_COUNTERS`.
pub const BUFFER_CATEGORY_COUNTERS: u32 = 3;
/// `ROCPROFILER_COUNTER_RECORD_PROFILE_COUNTING_DISPATCH_HEADER`.
pub const COUNTER_RECORD_DISPATCH_HEADER: u32 = 1;
/// `ROCPROFILER_COUNTER_RECORD_VALUE`.
pub const COUNTER_RECORD_VALUE: u32 = 2;
/// `ROCPROFILER_COUNTER_INFO_VERSION_0`.
pub const COUNTER_INFO_VERSION_0: c_int = 1;

// rocprofiler_buffer_tracing_kind_t
/// `ROCPROFILER_BUFFER_TRACING_HSA_CORE_API`.
pub const BUFFER_TRACING_HSA_CORE_API: c_int = 1;
/// `ROCPROFILER_BUFFER_TRACING_HSA_AMD_EXT_API`.
pub const BUFFER_TRACING_HSA_AMD_EXT_API: c_int = 2;
/// `ROCPROFILER_BUFFER_TRACING_HIP_RUNTIME_API`.
pub const BUFFER_TRACING_HIP_RUNTIME_API: c_int = 5;
/// `ROCPROFILER_BUFFER_TRACING_MEMORY_COPY`.
pub const BUFFER_TRACING_MEMORY_COPY: c_int = 10;
/// `ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH`.
pub const BUFFER_TRACING_KERNEL_DISPATCH: c_int = 11;

// rocprofiler_callback_tracing_kind_t
/// `ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT`.
pub const CALLBACK_TRACING_CODE_OBJECT: c_int = 10;
/// `ROCPROFILER_CALLBACK_TRACING_KERNEL_DISPATCH`.
pub const CALLBACK_TRACING_KERNEL_DISPATCH: c_int = 12;

// rocprofiler_code_object_operation_t
/// `ROCPROFILER_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER`.
pub const CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER: c_int = 2;

// rocprofiler_kernel_dispatch_operation_t
/// `ROCPROFILER_KERNEL_DISPATCH_ENQUEUE`.
pub const KERNEL_DISPATCH_ENQUEUE: c_int = 1;

// rocprofiler_callback_phase_t
/// `ROCPROFILER_CALLBACK_PHASE_ENTER` (= `_LOAD`).
pub const PHASE_ENTER: c_int = 1;

// rocprofiler_memory_copy_operation_t
/// `ROCPROFILER_MEMORY_COPY_HOST_TO_HOST`.
pub const MEMORY_COPY_HOST_TO_HOST: c_int = 1;
/// `ROCPROFILER_MEMORY_COPY_HOST_TO_DEVICE`.
pub const MEMORY_COPY_HOST_TO_DEVICE: c_int = 2;
/// `ROCPROFILER_MEMORY_COPY_DEVICE_TO_HOST`.
pub const MEMORY_COPY_DEVICE_TO_HOST: c_int = 3;
/// `ROCPROFILER_MEMORY_COPY_DEVICE_TO_DEVICE`.
pub const MEMORY_COPY_DEVICE_TO_DEVICE: c_int = 4;

// rocprofiler_buffer_policy_t
/// `ROCPROFILER_BUFFER_POLICY_DISCARD`.
pub const BUFFER_POLICY_DISCARD: c_int = 1;
/// `ROCPROFILER_BUFFER_POLICY_LOSSLESS`.
pub const BUFFER_POLICY_LOSSLESS: c_int = 2;

// rocprofiler_agent_type_t, rocprofiler_agent_version_t
/// `ROCPROFILER_AGENT_TYPE_GPU`.
pub const AGENT_TYPE_GPU: c_int = 2;
/// `ROCPROFILER_AGENT_INFO_VERSION_0`.
pub const AGENT_INFO_VERSION_0: c_int = 1;

type BufferCallback =
    unsafe extern "C" fn(ContextId, BufferId, *mut *mut RecordHeader, usize, *mut c_void, u64);
type TracingCallback = unsafe extern "C" fn(CallbackRecord, *mut u64, *mut c_void);
type AgentsCallback = unsafe extern "C" fn(c_int, *mut *const c_void, usize, *mut c_void) -> Status;

type CreateContextFn = unsafe extern "C" fn(*mut ContextId) -> Status;
type StartContextFn = unsafe extern "C" fn(ContextId) -> Status;
type CreateBufferFn = unsafe extern "C" fn(
    ContextId,
    usize,
    usize,
    c_int,
    BufferCallback,
    *mut c_void,
    *mut BufferId,
) -> Status;
type FlushBufferFn = unsafe extern "C" fn(BufferId) -> Status;
type ConfigureBufferTracingFn =
    unsafe extern "C" fn(ContextId, c_int, *const c_int, usize, BufferId) -> Status;
type ConfigureCallbackTracingFn = unsafe extern "C" fn(
    ContextId,
    c_int,
    *const c_int,
    usize,
    TracingCallback,
    *mut c_void,
) -> Status;
type GetTimestampFn = unsafe extern "C" fn(*mut u64) -> Status;
type QueryAgentsFn = unsafe extern "C" fn(c_int, AgentsCallback, usize, *mut c_void) -> Status;
type CreateCallbackThreadFn = unsafe extern "C" fn(*mut Handle) -> Status;
type AssignCallbackThreadFn = unsafe extern "C" fn(BufferId, Handle) -> Status;
type StatusStringFn = unsafe extern "C" fn(Status) -> *const c_char;
type CountersCallback = unsafe extern "C" fn(Handle, *mut Handle, usize, *mut c_void) -> Status;
type CountingCallback =
    unsafe extern "C" fn(DispatchCountingData, *mut Handle, *mut u64, *mut c_void);
type IterateCountersFn = unsafe extern "C" fn(Handle, CountersCallback, *mut c_void) -> Status;
type CounterInfoFn = unsafe extern "C" fn(Handle, c_int, *mut c_void) -> Status;
type CreateCounterConfigFn =
    unsafe extern "C" fn(Handle, *mut Handle, usize, *mut Handle) -> Status;
type ConfigureCountingFn =
    unsafe extern "C" fn(ContextId, BufferId, CountingCallback, *mut c_void) -> Status;
type RecordCounterIdFn = unsafe extern "C" fn(u64, *mut Handle) -> Status;
/// `rocprofiler_query_buffer_tracing_kind_operation_name`.
type OperationNameFn = unsafe extern "C" fn(c_int, c_int, *mut *const c_char, *mut u64) -> Status;
/// `rocprofiler_buffer_tracing_kind_operation_cb_t` (0: go on).
type OperationCallback = unsafe extern "C" fn(c_int, c_int, *mut c_void) -> c_int;
/// `rocprofiler_iterate_buffer_tracing_kind_operations`.
type IterateOperationsFn = unsafe extern "C" fn(c_int, OperationCallback, *mut c_void) -> Status;

/// The dispatch counting service's entry points (`counters.h`, `counter_config.h`,
/// `dispatch_counting_service.h`; experimental in the SDK).
#[derive(Clone, Copy)]
struct CountingApi {
    iterate_agent_supported_counters: IterateCountersFn,
    query_counter_info: CounterInfoFn,
    /// `rocprofiler_create_counter_config` (`rocprofiler_create_profile_config` before).
    create_counter_config: CreateCounterConfigFn,
    configure_buffer_dispatch_counting_service: ConfigureCountingFn,
    query_record_counter_id: RecordCounterIdFn,
}

/// The SDK's entry points Metron calls (looked up, never linked).
#[derive(Clone, Copy)]
pub struct Api {
    create_context: CreateContextFn,
    start_context: StartContextFn,
    create_buffer: CreateBufferFn,
    flush_buffer: FlushBufferFn,
    configure_buffer_tracing_service: ConfigureBufferTracingFn,
    configure_callback_tracing_service: ConfigureCallbackTracingFn,
    get_timestamp: GetTimestampFn,
    query_available_agents: QueryAgentsFn,
    create_callback_thread: Option<CreateCallbackThreadFn>,
    assign_callback_thread: Option<AssignCallbackThreadFn>,
    get_status_string: Option<StatusStringFn>,
    operation_name: Option<OperationNameFn>,
    iterate_operations: Option<IterateOperationsFn>,
    counting: Option<CountingApi>,
}

fn lookup(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: a valid C string; RTLD_DEFAULT searches the global scope, which holds the SDK
    // library that is calling Metron.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}

macro_rules! required {
    ($name:literal, $ty:ty) => {{
        let p = lookup($name).ok_or_else(|| {
            format!(
                "{} not found in the loaded ROCprofiler-SDK",
                $name.to_string_lossy()
            )
        })?;
        // SAFETY: the symbol is the SDK's function of that name; the field's type is its C
        // prototype as transcribed above.
        unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
    }};
}

macro_rules! optional {
    ($name:literal, $ty:ty) => {
        // SAFETY: as for `required!`.
        lookup($name).map(|p| unsafe { std::mem::transmute::<*mut c_void, $ty>(p) })
    };
}

/// An agent as Metron keeps it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Agent {
    /// `rocprofiler_agent_id_t` handle.
    pub id: u64,
    pub gpu: bool,
    /// Index among agents of its type (`logical_node_type_id`).
    pub type_index: u32,
    /// Architecture (`name`, e.g. `gfx90a`).
    pub arch: String,
    /// Marketing name (`product_name`).
    pub product: String,
}

impl Api {
    /// Looks the SDK's functions up in the process.
    pub fn load() -> Result<Api, String> {
        Ok(Api {
            create_context: required!(c"rocprofiler_create_context", CreateContextFn),
            start_context: required!(c"rocprofiler_start_context", StartContextFn),
            create_buffer: required!(c"rocprofiler_create_buffer", CreateBufferFn),
            flush_buffer: required!(c"rocprofiler_flush_buffer", FlushBufferFn),
            configure_buffer_tracing_service: required!(
                c"rocprofiler_configure_buffer_tracing_service",
                ConfigureBufferTracingFn
            ),
            configure_callback_tracing_service: required!(
                c"rocprofiler_configure_callback_tracing_service",
                ConfigureCallbackTracingFn
            ),
            get_timestamp: required!(c"rocprofiler_get_timestamp", GetTimestampFn),
            query_available_agents: required!(c"rocprofiler_query_available_agents", QueryAgentsFn),
            create_callback_thread: optional!(
                c"rocprofiler_create_callback_thread",
                CreateCallbackThreadFn
            ),
            assign_callback_thread: optional!(
                c"rocprofiler_assign_callback_thread",
                AssignCallbackThreadFn
            ),
            get_status_string: optional!(c"rocprofiler_get_status_string", StatusStringFn),
            operation_name: optional!(
                c"rocprofiler_query_buffer_tracing_kind_operation_name",
                OperationNameFn
            ),
            iterate_operations: optional!(
                c"rocprofiler_iterate_buffer_tracing_kind_operations",
                IterateOperationsFn
            ),
            counting: CountingApi::load(),
        })
    }

    /// `Err` with the SDK's description of `status` unless it is success.
    fn check(&self, status: Status, what: &str) -> Result<(), String> {
        if status == STATUS_SUCCESS {
            return Ok(());
        }
        let text = self
            .get_status_string
            // SAFETY: takes a status by value; returns a static string or null.
            .and_then(|f| unsafe { c_str(f(status)) })
            .unwrap_or_default();
        Err(format!("{what} failed: status {status} {text}")
            .trim_end()
            .to_string())
    }

    /// `rocprofiler_create_context`.
    pub fn create_context(&self) -> Result<ContextId, String> {
        let mut id = ContextId::default();
        // SAFETY: a valid out-pointer, zero as the SDK requires.
        let s = unsafe { (self.create_context)(&mut id) };
        self.check(s, "rocprofiler_create_context").map(|_| id)
    }

    /// `rocprofiler_start_context`.
    pub fn start_context(&self, context: ContextId) -> Result<(), String> {
        // SAFETY: plain values.
        let s = unsafe { (self.start_context)(context) };
        self.check(s, "rocprofiler_start_context")
    }

    /// `rocprofiler_create_buffer`, delivering to [`crate::rocprofiler_sdk::on_buffer`].
    pub fn create_buffer(
        &self,
        context: ContextId,
        size: usize,
        watermark: usize,
        policy: c_int,
    ) -> Result<BufferId, String> {
        let mut id = BufferId::default();
        // SAFETY: a valid out-pointer; the callback is a `'static` function with the SDK's
        // prototype; no callback data.
        let s = unsafe {
            (self.create_buffer)(
                context,
                size,
                watermark,
                policy,
                buffer_callback,
                std::ptr::null_mut(),
                &mut id,
            )
        };
        self.check(s, "rocprofiler_create_buffer").map(|_| id)
    }

    /// A callback thread of Metron's own for `buffer` (so that Metron's conversion never delays
    /// another tool's buffers). `false` when the SDK has no such functions or refused.
    pub fn own_callback_thread(&self, buffer: BufferId) -> bool {
        let (Some(create), Some(assign)) =
            (self.create_callback_thread, self.assign_callback_thread)
        else {
            return false;
        };
        let mut thread = Handle::default();
        // SAFETY: a valid out-pointer; then plain values.
        unsafe { create(&mut thread) == STATUS_SUCCESS && assign(buffer, thread) == STATUS_SUCCESS }
    }

    /// `rocprofiler_flush_buffer`.
    pub fn flush_buffer(&self, buffer: BufferId) -> Result<(), String> {
        // SAFETY: plain values.
        let s = unsafe { (self.flush_buffer)(buffer) };
        self.check(s, "rocprofiler_flush_buffer")
    }

    /// `rocprofiler_configure_buffer_tracing_service` (`operations` empty: all of them).
    pub fn configure_buffer_tracing(
        &self,
        context: ContextId,
        kind: c_int,
        operations: &[c_int],
        buffer: BufferId,
    ) -> Result<(), String> {
        let ops = if operations.is_empty() {
            std::ptr::null()
        } else {
            operations.as_ptr()
        };
        // SAFETY: `ops` is null or `operations.len()` values, read during the call.
        let s = unsafe {
            (self.configure_buffer_tracing_service)(context, kind, ops, operations.len(), buffer)
        };
        self.check(
            s,
            &format!("rocprofiler_configure_buffer_tracing_service({kind})"),
        )
    }

    /// `rocprofiler_configure_callback_tracing_service`, calling
    /// [`crate::rocprofiler_sdk::on_callback`] with `kind` as the callback data.
    pub fn configure_callback_tracing(
        &self,
        context: ContextId,
        kind: c_int,
        operations: &[c_int],
    ) -> Result<(), String> {
        let ops = if operations.is_empty() {
            std::ptr::null()
        } else {
            operations.as_ptr()
        };
        // SAFETY: `ops` is null or `operations.len()` values, read during the call; the
        // callback is a `'static` function with the SDK's prototype; the data is the kind as an
        // integer, never dereferenced.
        let s = unsafe {
            (self.configure_callback_tracing_service)(
                context,
                kind,
                ops,
                operations.len(),
                tracing_callback,
                kind as usize as *mut c_void,
            )
        };
        self.check(
            s,
            &format!("rocprofiler_configure_callback_tracing_service({kind})"),
        )
    }

    /// `rocprofiler_get_timestamp`: ns on the SDK's clock (`CLOCK_BOOTTIME` in the SDK's
    /// sources; Metron does not rely on which).
    pub fn timestamp(&self) -> Option<u64> {
        let mut ts = 0u64;
        // SAFETY: a valid out-pointer.
        let s = unsafe { (self.get_timestamp)(&mut ts) };
        (s == STATUS_SUCCESS && ts != 0).then_some(ts)
    }

    /// The agents (`rocprofiler_query_available_agents`, version 0).
    pub fn agents(&self) -> Result<Vec<Agent>, String> {
        let mut out: Vec<Agent> = Vec::new();
        // SAFETY: the callback is a `'static` function with the SDK's prototype; the data is
        // `&mut out`, alive for the call (the SDK calls back synchronously).
        let s = unsafe {
            (self.query_available_agents)(
                AGENT_INFO_VERSION_0,
                agents_callback,
                std::mem::size_of::<AgentV0>(),
                (&mut out as *mut Vec<Agent>).cast(),
            )
        };
        self.check(s, "rocprofiler_query_available_agents")
            .map(|_| out)
    }

    /// The name of buffer tracing `kind`'s `operation`
    /// (`rocprofiler_query_buffer_tracing_kind_operation_name`): `None` when the SDK has no such
    /// function, does not know the operation or gives no constant name.
    pub fn operation_name(&self, kind: c_int, operation: c_int) -> Option<String> {
        let query = self.operation_name?;
        let mut name: *const c_char = std::ptr::null();
        let mut len = 0u64;
        // SAFETY: valid out-pointers, written during the call.
        let s = unsafe { query(kind, operation, &mut name, &mut len) };
        if s != STATUS_SUCCESS || name.is_null() {
            return None;
        }
        // SAFETY: the SDK's name: a string literal of its library (NUL-terminated, never
        // freed); copied.
        let name = unsafe { c_str(name) }?;
        (!name.is_empty()).then_some(name)
    }

    /// Every operation of buffer tracing `kind`
    /// (`rocprofiler_iterate_buffer_tracing_kind_operations`); `None` when the SDK has no such
    /// function or refused.
    pub fn operations(&self, kind: c_int) -> Option<Vec<c_int>> {
        let iterate = self.iterate_operations?;
        let mut out: Vec<c_int> = Vec::new();
        // SAFETY: the callback is a `'static` function with the SDK's prototype; the data is
        // `&mut out`, alive for the call (the SDK calls back synchronously).
        let s = unsafe {
            iterate(
                kind,
                operations_callback,
                (&mut out as *mut Vec<c_int>).cast(),
            )
        };
        (s == STATUS_SUCCESS).then_some(out)
    }
}

unsafe extern "C" fn operations_callback(
    _kind: c_int,
    operation: c_int,
    data: *mut c_void,
) -> c_int {
    if !data.is_null() {
        // SAFETY: `data` is the `&mut Vec<c_int>` of `Api::operations`, alive and not aliased
        // during the synchronous call.
        unsafe { &mut *data.cast::<Vec<c_int>>() }.push(operation);
    }
    0
}

impl CountingApi {
    fn load() -> Option<CountingApi> {
        let create = optional!(c"rocprofiler_create_counter_config", CreateCounterConfigFn).or(
            optional!(c"rocprofiler_create_profile_config", CreateCounterConfigFn),
        )?;
        Some(CountingApi {
            iterate_agent_supported_counters: optional!(
                c"rocprofiler_iterate_agent_supported_counters",
                IterateCountersFn
            )?,
            query_counter_info: optional!(c"rocprofiler_query_counter_info", CounterInfoFn)?,
            create_counter_config: create,
            configure_buffer_dispatch_counting_service: optional!(
                c"rocprofiler_configure_buffer_dispatch_counting_service",
                ConfigureCountingFn
            )?,
            query_record_counter_id: optional!(
                c"rocprofiler_query_record_counter_id",
                RecordCounterIdFn
            )?,
        })
    }
}

impl Api {
    fn counting(&self) -> Result<&CountingApi, String> {
        self.counting
            .as_ref()
            .ok_or_else(|| "this ROCprofiler-SDK has no dispatch counting service".to_string())
    }

    /// The counters `agent` offers: `(counter id, name)`.
    pub fn agent_counters(&self, agent: u64) -> Result<Vec<(u64, String)>, String> {
        let c = self.counting()?;
        let mut ids: Vec<u64> = Vec::new();
        // SAFETY: the callback is a `'static` function with the SDK's prototype; the data is
        // `&mut ids`, alive for the call (the SDK calls back synchronously).
        let s = unsafe {
            (c.iterate_agent_supported_counters)(
                Handle { handle: agent },
                counters_callback,
                (&mut ids as *mut Vec<u64>).cast(),
            )
        };
        self.check(s, "rocprofiler_iterate_agent_supported_counters")?;
        Ok(ids
            .into_iter()
            .filter_map(|id| {
                let mut info = std::mem::MaybeUninit::<CounterInfoV0>::zeroed();
                // SAFETY: `info` is a writable `rocprofiler_counter_info_v0_t`, as version 0
                // asks.
                let s = unsafe {
                    (c.query_counter_info)(
                        Handle { handle: id },
                        COUNTER_INFO_VERSION_0,
                        info.as_mut_ptr().cast(),
                    )
                };
                if s != STATUS_SUCCESS {
                    return None;
                }
                // SAFETY: filled by the SDK (zeroed before: all fields valid either way).
                let info = unsafe { info.assume_init() };
                // SAFETY: the SDK's NUL-terminated name (or null), alive for the call; copied.
                Some((id, unsafe { c_str(info.name) }?))
            })
            .collect())
    }

    /// `rocprofiler_create_counter_config` for `agent` with `counters`.
    pub fn create_counter_config(&self, agent: u64, counters: &[u64]) -> Result<u64, String> {
        let c = self.counting()?;
        let mut list: Vec<Handle> = counters.iter().map(|&handle| Handle { handle }).collect();
        let mut config = Handle::default();
        // SAFETY: `list` holds `list.len()` counter ids for the call; a valid out-pointer, zero
        // (a new configuration, not a copy of one).
        let s = unsafe {
            (c.create_counter_config)(
                Handle { handle: agent },
                list.as_mut_ptr(),
                list.len(),
                &mut config,
            )
        };
        self.check(s, "rocprofiler_create_counter_config")
            .map(|_| config.handle)
    }

    /// `rocprofiler_configure_buffer_dispatch_counting_service`: each dispatch gets the counter
    /// configuration [`crate::rocprofiler_sdk::counter_config_for`] gives its agent.
    pub fn configure_dispatch_counting(
        &self,
        context: ContextId,
        buffer: BufferId,
    ) -> Result<(), String> {
        let c = self.counting()?;
        // SAFETY: the callback is a `'static` function with the SDK's prototype; no data.
        let s = unsafe {
            (c.configure_buffer_dispatch_counting_service)(
                context,
                buffer,
                counting_callback,
                std::ptr::null_mut(),
            )
        };
        self.check(s, "rocprofiler_configure_buffer_dispatch_counting_service")
    }

    /// The counter of a counter record's instance id.
    pub fn record_counter_id(&self, instance: u64) -> Option<u64> {
        let c = self.counting.as_ref()?;
        let mut id = Handle::default();
        // SAFETY: a valid out-pointer.
        let s = unsafe { (c.query_record_counter_id)(instance, &mut id) };
        (s == STATUS_SUCCESS).then_some(id.handle)
    }
}

unsafe extern "C" fn counters_callback(
    _agent: Handle,
    counters: *mut Handle,
    count: usize,
    data: *mut c_void,
) -> Status {
    if counters.is_null() || data.is_null() {
        return STATUS_SUCCESS;
    }
    // SAFETY: `data` is the `&mut Vec<u64>` of `Api::agent_counters`, alive and not aliased
    // during the synchronous call.
    let out = unsafe { &mut *data.cast::<Vec<u64>>() };
    // SAFETY: the SDK passes `count` counter ids.
    out.extend(
        unsafe { std::slice::from_raw_parts(counters, count) }
            .iter()
            .map(|c| c.handle),
    );
    STATUS_SUCCESS
}

/// The dispatch counting callback: runs on the launching thread before the kernel is enqueued;
/// sets the counter configuration for the dispatch's agent (none: not counted).
unsafe extern "C" fn counting_callback(
    data: DispatchCountingData,
    config: *mut Handle,
    _user: *mut u64,
    _args: *mut c_void,
) {
    if config.is_null() {
        return;
    }
    let agent = data.dispatch_info.agent_id.handle;
    if let Some(handle) = crate::rocprofiler_sdk::counter_config_for(agent) {
        // SAFETY: the SDK's out-parameter for this dispatch's configuration.
        unsafe { *config = Handle { handle } };
    }
}

unsafe extern "C" fn agents_callback(
    version: c_int,
    agents: *mut *const c_void,
    count: usize,
    data: *mut c_void,
) -> Status {
    if version != AGENT_INFO_VERSION_0 || agents.is_null() || data.is_null() {
        return STATUS_SUCCESS;
    }
    // SAFETY: `data` is the `&mut Vec<Agent>` passed by `Api::agents`, alive and not aliased
    // during the synchronous call.
    let out = unsafe { &mut *data.cast::<Vec<Agent>>() };
    for i in 0..count {
        // SAFETY: the SDK passes `count` agent pointers.
        let p = unsafe { *agents.add(i) }.cast::<AgentV0>();
        if p.is_null() {
            continue;
        }
        // SAFETY: every agent starts with its `size`.
        let size = unsafe { std::ptr::addr_of!((*p).size).read_unaligned() };
        if size < AGENT_BYTES_READ {
            continue;
        }
        // SAFETY: the agent holds at least the fields read (its size says so); its strings
        // live until the tool is finalized and are copied here.
        let agent = unsafe {
            Agent {
                id: (*p).id.handle,
                gpu: (*p).agent_type == AGENT_TYPE_GPU,
                type_index: u32::try_from((*p).logical_node_type_id).unwrap_or(0),
                arch: c_str((*p).name).unwrap_or_default(),
                product: c_str((*p).product_name).unwrap_or_default(),
            }
        };
        out.push(agent);
    }
    STATUS_SUCCESS
}

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
unsafe fn read_record(header: *const RecordHeader) -> Record {
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
unsafe extern "C" fn buffer_callback(
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
unsafe fn read_callback(record: &CallbackRecord, configured: c_int) -> Callback {
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
unsafe extern "C" fn tracing_callback(record: CallbackRecord, _user: *mut u64, data: *mut c_void) {
    // SAFETY: the SDK's record for this call.
    let what = unsafe { read_callback(&record, data as usize as c_int) };
    let _ = std::panic::catch_unwind(|| crate::rocprofiler_sdk::on_callback(what));
}

unsafe extern "C" fn tool_initialize(_finalize: ClientFinalize, _data: *mut c_void) -> c_int {
    std::panic::catch_unwind(crate::rocprofiler_sdk::initialize).unwrap_or(-1)
}

unsafe extern "C" fn tool_finalize(_data: *mut c_void) {
    let _ = std::panic::catch_unwind(crate::rocprofiler_sdk::finalize);
}

/// The configuration `rocprofiler_configure` returns (read by the SDK, never written).
struct Configuration(ToolConfigureResult);

// SAFETY: immutable after construction; `tool_data` is null and never dereferenced.
unsafe impl Sync for Configuration {}

static CONFIGURATION: Configuration = Configuration(ToolConfigureResult {
    size: std::mem::size_of::<ToolConfigureResult>(),
    initialize: Some(tool_initialize),
    finalize: Some(tool_finalize),
    tool_data: std::ptr::null_mut(),
});

/// The pointer `rocprofiler_configure` returns.
pub fn configure_result() -> *mut c_void {
    (&CONFIGURATION.0 as *const ToolConfigureResult)
        .cast_mut()
        .cast()
}

static CLIENT_HANDLE: AtomicU64 = AtomicU64::new(u64::MAX);

/// Names Metron in the SDK's client id (for the SDK's diagnostics) and keeps its handle.
/// `client` is the pointer `rocprofiler_configure` received (or null).
pub fn name_client(client: *mut c_void) {
    let client = client.cast::<ClientId>();
    if client.is_null() {
        return;
    }
    static NAME: &CStr = c"metron";
    // SAFETY: the SDK's `rocprofiler_client_id_t`, writable during `rocprofiler_configure`
    // (the call this runs in); `name` is set to a static string, as the SDK asks.
    unsafe {
        (*client).name = NAME.as_ptr();
        CLIENT_HANDLE.store(u64::from((*client).handle), Ordering::Relaxed);
    }
}

/// The client handle the SDK gave Metron (`None` before `rocprofiler_configure`).
pub fn client_handle() -> Option<u32> {
    u32::try_from(CLIENT_HANDLE.load(Ordering::Relaxed)).ok()
}

/// A C string of the SDK's, or `None`.
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

/// The runtime version string `rocprofiler_configure` received.
pub fn runtime_version(p: *const c_char) -> Option<String> {
    // SAFETY: the SDK passes null or its version string, alive during `rocprofiler_configure`
    // (the call this runs in).
    unsafe { c_str(p) }
}

static API: OnceLock<Api> = OnceLock::new();

/// Keeps the SDK's entry points (first call wins).
pub fn set_api(api: Api) -> &'static Api {
    API.get_or_init(|| api)
}

/// The SDK's entry points, once loaded.
pub fn api() -> Option<&'static Api> {
    API.get()
}

/// The layouts Metron assumes, `("C.field", offset)` / `("sizeof C", size)`, for checking
/// against the SDK's headers (with `layouts` of the crate, once it lists them).
#[allow(dead_code)]
pub fn layouts() -> Vec<(&'static str, usize)> {
    use std::mem::{offset_of, size_of};
    vec![
        (
            "sizeof rocprofiler_tool_configure_result_t",
            size_of::<ToolConfigureResult>(),
        ),
        ("sizeof rocprofiler_client_id_t", size_of::<ClientId>()),
        (
            "sizeof rocprofiler_record_header_t",
            size_of::<RecordHeader>(),
        ),
        (
            "sizeof rocprofiler_kernel_dispatch_info_t",
            size_of::<KernelDispatchInfo>(),
        ),
        (
            "rocprofiler_kernel_dispatch_info_t.grid_size",
            offset_of!(KernelDispatchInfo, grid_size),
        ),
        (
            "rocprofiler_kernel_dispatch_info_t.reserved_padding",
            offset_of!(KernelDispatchInfo, reserved_padding),
        ),
        (
            "sizeof rocprofiler_buffer_tracing_kernel_dispatch_record_t",
            size_of::<KernelDispatchRecord>(),
        ),
        (
            "rocprofiler_buffer_tracing_kernel_dispatch_record_t.start_timestamp",
            offset_of!(KernelDispatchRecord, start_timestamp),
        ),
        (
            "rocprofiler_buffer_tracing_kernel_dispatch_record_t.dispatch_info",
            offset_of!(KernelDispatchRecord, dispatch_info),
        ),
        (
            "sizeof rocprofiler_buffer_tracing_memory_copy_record_t",
            size_of::<MemoryCopyRecord>(),
        ),
        (
            "rocprofiler_buffer_tracing_memory_copy_record_t.bytes",
            offset_of!(MemoryCopyRecord, bytes),
        ),
        (
            "sizeof rocprofiler_buffer_tracing_hip_api_record_t",
            size_of::<ApiRecord>(),
        ),
        (
            "rocprofiler_buffer_tracing_hip_api_record_t.start_timestamp",
            offset_of!(ApiRecord, start_timestamp),
        ),
        (
            "rocprofiler_buffer_tracing_hip_api_record_t.thread_id",
            offset_of!(ApiRecord, thread_id),
        ),
        (
            "sizeof rocprofiler_buffer_tracing_hip_api_record_t (no ancestor)",
            size_of::<ApiRecordNoAncestor>(),
        ),
        (
            "sizeof rocprofiler_callback_tracing_record_t",
            size_of::<CallbackRecord>(),
        ),
        (
            "rocprofiler_callback_tracing_record_t.kind",
            offset_of!(CallbackRecord, kind),
        ),
        (
            "rocprofiler_callback_tracing_record_t.payload",
            offset_of!(CallbackRecord, payload),
        ),
        (
            "sizeof rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t",
            size_of::<KernelSymbolData>(),
        ),
        (
            "rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t.sgpr_count",
            offset_of!(KernelSymbolData, sgpr_count),
        ),
        (
            "rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t.kernel_address",
            offset_of!(KernelSymbolData, kernel_address),
        ),
        (
            "sizeof rocprofiler_counter_info_v0_t",
            size_of::<CounterInfoV0>(),
        ),
        (
            "sizeof rocprofiler_dispatch_counting_service_data_t",
            size_of::<DispatchCountingData>(),
        ),
        (
            "sizeof rocprofiler_dispatch_counting_service_record_t",
            size_of::<DispatchCountingRecord>(),
        ),
        (
            "sizeof rocprofiler_counter_record_t",
            size_of::<CounterRecord>(),
        ),
        ("sizeof rocprofiler_agent_v0_t", size_of::<AgentV0>()),
        ("rocprofiler_agent_v0_t.name", offset_of!(AgentV0, name)),
        (
            "rocprofiler_agent_v0_t.product_name",
            offset_of!(AgentV0, product_name),
        ),
        (
            "rocprofiler_agent_v0_t.logical_node_type_id",
            offset_of!(AgentV0, logical_node_type_id),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_transcribed_headers() {
        let l: std::collections::HashMap<_, _> = layouts().into_iter().collect();
        // fwd.h: static_assert(sizeof(rocprofiler_kernel_dispatch_info_t) == 128).
        assert_eq!(l["sizeof rocprofiler_kernel_dispatch_info_t"], 128);
        assert_eq!(l["rocprofiler_kernel_dispatch_info_t.reserved_padding"], 72);
        assert_eq!(
            l["sizeof rocprofiler_buffer_tracing_kernel_dispatch_record_t"],
            56 + 128
        );
        assert_eq!(
            l["sizeof rocprofiler_buffer_tracing_memory_copy_record_t"],
            96
        );
        assert_eq!(l["sizeof rocprofiler_buffer_tracing_hip_api_record_t"], 64);
        assert_eq!(
            l["rocprofiler_buffer_tracing_hip_api_record_t.start_timestamp"],
            40
        );
        assert_eq!(
            l["rocprofiler_buffer_tracing_hip_api_record_t.thread_id"],
            56
        );
        assert_eq!(
            l["sizeof rocprofiler_buffer_tracing_hip_api_record_t (no ancestor)"],
            56
        );
        assert_eq!(l["sizeof rocprofiler_callback_tracing_record_t"], 64);
        assert_eq!(l["rocprofiler_callback_tracing_record_t.kind"], 40);
        assert_eq!(l["rocprofiler_callback_tracing_record_t.payload"], 56);
        assert_eq!(
            l["sizeof rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t"],
            88
        );
        assert_eq!(l["rocprofiler_agent_v0_t.name"], 248);
        assert_eq!(l["rocprofiler_agent_v0_t.logical_node_type_id"], 288);
        assert_eq!(l["sizeof rocprofiler_agent_v0_t"], 304);
        assert_eq!(l["sizeof rocprofiler_tool_configure_result_t"], 32);
        assert_eq!(l["sizeof rocprofiler_record_header_t"], 16);
        assert_eq!(l["sizeof rocprofiler_counter_info_v0_t"], 48);
        assert_eq!(
            l["sizeof rocprofiler_dispatch_counting_service_data_t"],
            168
        );
        assert_eq!(
            l["sizeof rocprofiler_dispatch_counting_service_record_t"],
            176
        );
        assert_eq!(l["sizeof rocprofiler_counter_record_t"], 40);
    }

    #[test]
    fn api_records_are_read_by_their_size() {
        let mut new = ApiRecord {
            size: 64,
            kind: BUFFER_TRACING_HIP_RUNTIME_API,
            operation: 7,
            correlation_id: CorrelationId {
                internal: 1001,
                external: 5,
                ancestor: 1000,
            },
            start_timestamp: 100,
            end_timestamp: 250,
            thread_id: 4242,
        };
        let mut old = ApiRecordNoAncestor {
            size: 56,
            kind: BUFFER_TRACING_HIP_RUNTIME_API,
            operation: 7,
            correlation_id: AsyncCorrelationId {
                internal: 1001,
                external: 5,
            },
            start_timestamp: 100,
            end_timestamp: 250,
            thread_id: 4242,
        };
        let want = Record::Api(ApiCall {
            kind: BUFFER_TRACING_HIP_RUNTIME_API,
            correlation: 1001,
            thread: 4242,
            operation: 7,
            start: 100,
            end: 250,
        });
        let read = |payload: *mut c_void| {
            let h = RecordHeader {
                category: BUFFER_CATEGORY_TRACING,
                kind: BUFFER_TRACING_HIP_RUNTIME_API as u32,
                payload,
            };
            // SAFETY: the header and its payload live on this stack for the call.
            unsafe { read_record(&h) }
        };
        assert_eq!(read((&mut new as *mut ApiRecord).cast()), want);
        assert_eq!(read((&mut old as *mut ApiRecordNoAncestor).cast()), want);
        old.size = 48;
        assert_eq!(
            read((&mut old as *mut ApiRecordNoAncestor).cast()),
            Record::UnknownApi
        );
        // An HSA API record: the same layout, under its own kind.
        new.kind = BUFFER_TRACING_HSA_AMD_EXT_API;
        let h = RecordHeader {
            category: BUFFER_CATEGORY_TRACING,
            kind: BUFFER_TRACING_HSA_AMD_EXT_API as u32,
            payload: (&mut new as *mut ApiRecord).cast(),
        };
        // SAFETY: the header and its payload live on this stack for the call.
        let Record::Api(call) = (unsafe { read_record(&h) }) else {
            panic!("an HSA API record was not read as one");
        };
        assert_eq!(
            (call.kind, call.operation, call.start),
            (BUFFER_TRACING_HSA_AMD_EXT_API, 7, 100)
        );
    }

    #[test]
    fn callback_records_of_another_kind_are_not_read() {
        let r = CallbackRecord {
            context_id: ContextId { handle: 1 },
            thread_id: 7,
            correlation_id: CorrelationId {
                internal: 42,
                ..CorrelationId::default()
            },
            kind: CALLBACK_TRACING_KERNEL_DISPATCH,
            operation: KERNEL_DISPATCH_ENQUEUE,
            phase: PHASE_ENTER,
            payload: std::ptr::null_mut(),
        };
        let read = |r: &CallbackRecord, kind| {
            // SAFETY: the payload (null) is only read for a kernel symbol, never asked here.
            unsafe { read_callback(r, kind) }
        };
        assert_eq!(
            read(&r, CALLBACK_TRACING_KERNEL_DISPATCH),
            Callback::Enqueue { correlation: 42 }
        );
        assert_eq!(
            read(&r, CALLBACK_TRACING_CODE_OBJECT),
            Callback::Unrecognized
        );
        let exit = CallbackRecord { phase: 2, ..r };
        assert_eq!(
            read(&exit, CALLBACK_TRACING_KERNEL_DISPATCH),
            Callback::Ignored
        );
    }
}
