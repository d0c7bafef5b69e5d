//! ROCprofiler-SDK's C types and constants, as `sys_sdk.rs` passes them (transcribed by hand:
//! the headers and commits are listed in `sys_sdk.rs`). Layouts are for x86-64 / AArch64 Linux
//! (LP64); C enums are 32-bit `int`s.

use std::ffi::{c_char, c_int, c_void};

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
pub(crate) const AGENT_BYTES_READ: u64 = std::mem::offset_of!(AgentV0, runtime_visibility) as u64;

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
