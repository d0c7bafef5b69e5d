/* A test double of ROCprofiler-SDK: the part of its C interface that Metron uses, with the
 * SDK's own names, values and layouts, and the double's control functions (double_sdk_*) that
 * the test program calls to play the runtime.
 *
 * Types transcribed by hand from ROCm/rocprofiler-sdk, source/include/rocprofiler-sdk/:
 * fwd.h, buffer_tracing.h, callback_tracing.h, agent.h at commit
 * d2cd02cf96136f27eae3b33e02ea42f700b10d78; registration.h at 13db6e1a4a97f00b14e78bb2926c0c9dd89c257e;
 * buffer.h at 2695e8368eeadb96b9f3379db759d54d9fa0a69a; context.h at
 * a20774b61613735a2fdddc63cad8468c0f8dde43; the HIP API buffer record and the operation name
 * functions from buffer_tracing.h at d2cd02cf too. Independent of Metron's Rust transcription
 * (gpu-amd/src/sys_sdk.rs): the sizes asserted below are the headers', so a wrong layout on
 * either side shows up as wrong values in the test. The hsakmt unions of rocprofiler_agent_v0_t
 * (HSA_ENGINE_VERSION, HSA_ENGINE_ID, HSA_CAPABILITY) are 32-bit and written as uint32_t. */
#ifndef ROCPROFILER_SDK_DOUBLE_H
#define ROCPROFILER_SDK_DOUBLE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rocprofiler_status_t {
    ROCPROFILER_STATUS_SUCCESS = 0,
    ROCPROFILER_STATUS_ERROR,
    ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND,
    ROCPROFILER_STATUS_ERROR_BUFFER_NOT_FOUND,
    ROCPROFILER_STATUS_ERROR_KIND_NOT_FOUND,
    ROCPROFILER_STATUS_ERROR_OPERATION_NOT_FOUND,
    ROCPROFILER_STATUS_ERROR_THREAD_NOT_FOUND,
    ROCPROFILER_STATUS_ERROR_AGENT_NOT_FOUND,
    ROCPROFILER_STATUS_ERROR_COUNTER_NOT_FOUND,
    ROCPROFILER_STATUS_ERROR_CONTEXT_ERROR,
    ROCPROFILER_STATUS_ERROR_CONTEXT_INVALID,
    ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_STARTED,
    ROCPROFILER_STATUS_ERROR_CONTEXT_CONFLICT,
    ROCPROFILER_STATUS_ERROR_CONTEXT_ID_NOT_ZERO,
    ROCPROFILER_STATUS_ERROR_BUFFER_BUSY,
    ROCPROFILER_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED,
    ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED,
    ROCPROFILER_STATUS_ERROR_NOT_IMPLEMENTED,
    ROCPROFILER_STATUS_ERROR_INCOMPATIBLE_ABI,
    ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT,
} rocprofiler_status_t;

typedef enum rocprofiler_buffer_category_t {
    ROCPROFILER_BUFFER_CATEGORY_NONE = 0,
    ROCPROFILER_BUFFER_CATEGORY_TRACING,
    ROCPROFILER_BUFFER_CATEGORY_PC_SAMPLING,
    ROCPROFILER_BUFFER_CATEGORY_COUNTERS,
} rocprofiler_buffer_category_t;

typedef enum rocprofiler_agent_type_t {
    ROCPROFILER_AGENT_TYPE_NONE = 0,
    ROCPROFILER_AGENT_TYPE_CPU,
    ROCPROFILER_AGENT_TYPE_GPU,
} rocprofiler_agent_type_t;

typedef enum rocprofiler_callback_phase_t {
    ROCPROFILER_CALLBACK_PHASE_NONE = 0,
    ROCPROFILER_CALLBACK_PHASE_ENTER,
    ROCPROFILER_CALLBACK_PHASE_LOAD = ROCPROFILER_CALLBACK_PHASE_ENTER,
    ROCPROFILER_CALLBACK_PHASE_EXIT,
    ROCPROFILER_CALLBACK_PHASE_UNLOAD = ROCPROFILER_CALLBACK_PHASE_EXIT,
} rocprofiler_callback_phase_t;

typedef enum rocprofiler_callback_tracing_kind_t {
    ROCPROFILER_CALLBACK_TRACING_NONE = 0,
    ROCPROFILER_CALLBACK_TRACING_HSA_CORE_API,
    ROCPROFILER_CALLBACK_TRACING_HSA_AMD_EXT_API,
    ROCPROFILER_CALLBACK_TRACING_HSA_IMAGE_EXT_API,
    ROCPROFILER_CALLBACK_TRACING_HSA_FINALIZE_EXT_API,
    ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API,
    ROCPROFILER_CALLBACK_TRACING_HIP_COMPILER_API,
    ROCPROFILER_CALLBACK_TRACING_MARKER_CORE_API,
    ROCPROFILER_CALLBACK_TRACING_MARKER_CONTROL_API,
    ROCPROFILER_CALLBACK_TRACING_MARKER_NAME_API,
    ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT,
    ROCPROFILER_CALLBACK_TRACING_SCRATCH_MEMORY,
    ROCPROFILER_CALLBACK_TRACING_KERNEL_DISPATCH,
    ROCPROFILER_CALLBACK_TRACING_MEMORY_COPY,
    ROCPROFILER_CALLBACK_TRACING_RCCL_API,
    ROCPROFILER_CALLBACK_TRACING_OMPT,
    ROCPROFILER_CALLBACK_TRACING_MEMORY_ALLOCATION,
    ROCPROFILER_CALLBACK_TRACING_RUNTIME_INITIALIZATION,
    ROCPROFILER_CALLBACK_TRACING_ROCDECODE_API,
    ROCPROFILER_CALLBACK_TRACING_ROCJPEG_API,
    ROCPROFILER_CALLBACK_TRACING_HIP_STREAM,
    ROCPROFILER_CALLBACK_TRACING_LAST,
} rocprofiler_callback_tracing_kind_t;

typedef enum rocprofiler_buffer_tracing_kind_t {
    ROCPROFILER_BUFFER_TRACING_NONE = 0,
    ROCPROFILER_BUFFER_TRACING_HSA_CORE_API,
    ROCPROFILER_BUFFER_TRACING_HSA_AMD_EXT_API,
    ROCPROFILER_BUFFER_TRACING_HSA_IMAGE_EXT_API,
    ROCPROFILER_BUFFER_TRACING_HSA_FINALIZE_EXT_API,
    ROCPROFILER_BUFFER_TRACING_HIP_RUNTIME_API,
    ROCPROFILER_BUFFER_TRACING_HIP_COMPILER_API,
    ROCPROFILER_BUFFER_TRACING_MARKER_CORE_API,
    ROCPROFILER_BUFFER_TRACING_MARKER_CONTROL_API,
    ROCPROFILER_BUFFER_TRACING_MARKER_NAME_API,
    ROCPROFILER_BUFFER_TRACING_MEMORY_COPY,
    ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH,
    ROCPROFILER_BUFFER_TRACING_PAGE_MIGRATION,
    ROCPROFILER_BUFFER_TRACING_SCRATCH_MEMORY,
    ROCPROFILER_BUFFER_TRACING_CORRELATION_ID_RETIREMENT,
    ROCPROFILER_BUFFER_TRACING_RCCL_API,
    ROCPROFILER_BUFFER_TRACING_OMPT,
    ROCPROFILER_BUFFER_TRACING_MEMORY_ALLOCATION,
    ROCPROFILER_BUFFER_TRACING_RUNTIME_INITIALIZATION,
    ROCPROFILER_BUFFER_TRACING_ROCDECODE_API,
    ROCPROFILER_BUFFER_TRACING_ROCJPEG_API,
    ROCPROFILER_BUFFER_TRACING_HIP_STREAM,
    ROCPROFILER_BUFFER_TRACING_HIP_RUNTIME_API_EXT,
    ROCPROFILER_BUFFER_TRACING_HIP_COMPILER_API_EXT,
    ROCPROFILER_BUFFER_TRACING_ROCDECODE_API_EXT,
    ROCPROFILER_BUFFER_TRACING_LAST,
} rocprofiler_buffer_tracing_kind_t;

typedef enum rocprofiler_code_object_operation_t {
    ROCPROFILER_CODE_OBJECT_NONE = 0,
    ROCPROFILER_CODE_OBJECT_LOAD,
    ROCPROFILER_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER,
    ROCPROFILER_CODE_OBJECT_HOST_KERNEL_SYMBOL_REGISTER,
    ROCPROFILER_CODE_OBJECT_LAST,
} rocprofiler_code_object_operation_t;

typedef enum rocprofiler_memory_copy_operation_t {
    ROCPROFILER_MEMORY_COPY_NONE = 0,
    ROCPROFILER_MEMORY_COPY_HOST_TO_HOST,
    ROCPROFILER_MEMORY_COPY_HOST_TO_DEVICE,
    ROCPROFILER_MEMORY_COPY_DEVICE_TO_HOST,
    ROCPROFILER_MEMORY_COPY_DEVICE_TO_DEVICE,
    ROCPROFILER_MEMORY_COPY_LAST,
} rocprofiler_memory_copy_operation_t;

typedef enum rocprofiler_kernel_dispatch_operation_t {
    ROCPROFILER_KERNEL_DISPATCH_NONE = 0,
    ROCPROFILER_KERNEL_DISPATCH_ENQUEUE = 1,
    ROCPROFILER_KERNEL_DISPATCH_COMPLETE,
    ROCPROFILER_KERNEL_DISPATCH_LAST,
} rocprofiler_kernel_dispatch_operation_t;

typedef enum rocprofiler_buffer_policy_t {
    ROCPROFILER_BUFFER_POLICY_NONE = 0,
    ROCPROFILER_BUFFER_POLICY_DISCARD,
    ROCPROFILER_BUFFER_POLICY_LOSSLESS,
    ROCPROFILER_BUFFER_POLICY_LAST,
} rocprofiler_buffer_policy_t;

typedef enum rocprofiler_agent_version_t {
    ROCPROFILER_AGENT_INFO_VERSION_NONE = 0,
    ROCPROFILER_AGENT_INFO_VERSION_0 = 1,
    ROCPROFILER_AGENT_INFO_VERSION_LAST,
} rocprofiler_agent_version_t;

typedef uint64_t rocprofiler_timestamp_t;
typedef uint64_t rocprofiler_thread_id_t;
typedef int32_t rocprofiler_tracing_operation_t;
typedef uint64_t rocprofiler_kernel_id_t;
typedef uint64_t rocprofiler_dispatch_id_t;

typedef union rocprofiler_user_data_t {
    uint64_t value;
    void* ptr;
} rocprofiler_user_data_t;

typedef union rocprofiler_address_t {
    uint64_t handle;
    uint64_t value;
    const void* ptr;
} rocprofiler_address_t;

typedef union rocprofiler_uuid_t {
    uint64_t value;
    void* bytes;
} rocprofiler_uuid_t;

typedef struct rocprofiler_context_id_t { uint64_t handle; } rocprofiler_context_id_t;
typedef struct rocprofiler_queue_id_t { uint64_t handle; } rocprofiler_queue_id_t;
typedef struct rocprofiler_buffer_id_t { uint64_t handle; } rocprofiler_buffer_id_t;
typedef struct rocprofiler_agent_id_t { uint64_t handle; } rocprofiler_agent_id_t;
typedef struct rocprofiler_callback_thread_t { uint64_t handle; } rocprofiler_callback_thread_t;

typedef struct rocprofiler_correlation_id_t {
    uint64_t internal;
    rocprofiler_user_data_t external;
    uint64_t ancestor;
} rocprofiler_correlation_id_t;

typedef struct rocprofiler_async_correlation_id_t {
    uint64_t internal;
    rocprofiler_user_data_t external;
} rocprofiler_async_correlation_id_t;

typedef struct rocprofiler_dim3_t {
    uint32_t x;
    uint32_t y;
    uint32_t z;
} rocprofiler_dim3_t;

typedef struct rocprofiler_callback_tracing_record_t {
    rocprofiler_context_id_t context_id;
    rocprofiler_thread_id_t thread_id;
    rocprofiler_correlation_id_t correlation_id;
    rocprofiler_callback_tracing_kind_t kind;
    rocprofiler_tracing_operation_t operation;
    rocprofiler_callback_phase_t phase;
    void* payload;
} rocprofiler_callback_tracing_record_t;

typedef struct rocprofiler_record_header_t {
    union {
        struct {
            uint32_t category;
            uint32_t kind;
        };
        uint64_t hash;
    };
    void* payload;
} rocprofiler_record_header_t;

typedef struct rocprofiler_kernel_dispatch_info_t {
    uint64_t size;
    rocprofiler_agent_id_t agent_id;
    rocprofiler_queue_id_t queue_id;
    rocprofiler_kernel_id_t kernel_id;
    rocprofiler_dispatch_id_t dispatch_id;
    uint32_t private_segment_size;
    uint32_t group_segment_size;
    rocprofiler_dim3_t workgroup_size;
    rocprofiler_dim3_t grid_size;
    uint8_t reserved_padding[56];
} rocprofiler_kernel_dispatch_info_t;

typedef struct rocprofiler_buffer_tracing_kernel_dispatch_record_t {
    uint64_t size;
    rocprofiler_buffer_tracing_kind_t kind;
    rocprofiler_kernel_dispatch_operation_t operation;
    rocprofiler_async_correlation_id_t correlation_id;
    rocprofiler_thread_id_t thread_id;
    rocprofiler_timestamp_t start_timestamp;
    rocprofiler_timestamp_t end_timestamp;
    rocprofiler_kernel_dispatch_info_t dispatch_info;
} rocprofiler_buffer_tracing_kernel_dispatch_record_t;

typedef struct rocprofiler_buffer_tracing_memory_copy_record_t {
    uint64_t size;
    rocprofiler_buffer_tracing_kind_t kind;
    rocprofiler_memory_copy_operation_t operation;
    rocprofiler_async_correlation_id_t correlation_id;
    rocprofiler_thread_id_t thread_id;
    rocprofiler_timestamp_t start_timestamp;
    rocprofiler_timestamp_t end_timestamp;
    rocprofiler_agent_id_t dst_agent_id;
    rocprofiler_agent_id_t src_agent_id;
    uint64_t bytes;
    rocprofiler_address_t dst_address;
    rocprofiler_address_t src_address;
} rocprofiler_buffer_tracing_memory_copy_record_t;

/* The HIP API record holds the full rocprofiler_correlation_id_t (with `ancestor`). */
typedef struct rocprofiler_buffer_tracing_hip_api_record_t {
    uint64_t size;
    rocprofiler_buffer_tracing_kind_t kind;
    rocprofiler_tracing_operation_t operation;
    rocprofiler_correlation_id_t correlation_id;
    rocprofiler_timestamp_t start_timestamp;
    rocprofiler_timestamp_t end_timestamp;
    rocprofiler_thread_id_t thread_id;
} rocprofiler_buffer_tracing_hip_api_record_t;

/* The HSA API record: the same fields (buffer_tracing.h). */
typedef struct rocprofiler_buffer_tracing_hsa_api_record_t {
    uint64_t size;
    rocprofiler_buffer_tracing_kind_t kind;
    rocprofiler_tracing_operation_t operation;
    rocprofiler_correlation_id_t correlation_id;
    rocprofiler_timestamp_t start_timestamp;
    rocprofiler_timestamp_t end_timestamp;
    rocprofiler_thread_id_t thread_id;
} rocprofiler_buffer_tracing_hsa_api_record_t;

typedef struct rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t {
    uint64_t size;
    uint64_t kernel_id;
    uint64_t code_object_id;
    const char* kernel_name;
    uint64_t kernel_object;
    uint32_t kernarg_segment_size;
    uint32_t kernarg_segment_alignment;
    uint32_t group_segment_size;
    uint32_t private_segment_size;
    uint32_t sgpr_count;
    uint32_t arch_vgpr_count;
    uint32_t accum_vgpr_count;
    int64_t kernel_code_entry_byte_offset;
    rocprofiler_address_t kernel_address;
} rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t;

typedef struct rocprofiler_callback_tracing_kernel_dispatch_data_t {
    uint64_t size;
    rocprofiler_timestamp_t start_timestamp;
    rocprofiler_timestamp_t end_timestamp;
    rocprofiler_kernel_dispatch_info_t dispatch_info;
} rocprofiler_callback_tracing_kernel_dispatch_data_t;

typedef struct rocprofiler_agent_v0_t {
    uint64_t size;
    rocprofiler_agent_id_t id;
    rocprofiler_agent_type_t type;
    uint32_t cpu_cores_count;
    uint32_t simd_count;
    uint32_t mem_banks_count;
    uint32_t caches_count;
    uint32_t io_links_count;
    uint32_t cpu_core_id_base;
    uint32_t simd_id_base;
    uint32_t max_waves_per_simd;
    uint32_t lds_size_in_kb;
    uint32_t gds_size_in_kb;
    uint32_t num_gws;
    uint32_t wave_front_size;
    uint32_t num_xcc;
    uint32_t cu_count;
    uint32_t array_count;
    uint32_t num_shader_banks;
    uint32_t simd_arrays_per_engine;
    uint32_t cu_per_simd_array;
    uint32_t simd_per_cu;
    uint32_t max_slots_scratch_cu;
    uint32_t gfx_target_version;
    uint16_t vendor_id;
    uint16_t device_id;
    uint32_t location_id;
    uint32_t domain;
    uint32_t drm_render_minor;
    uint32_t num_sdma_engines;
    uint32_t num_sdma_xgmi_engines;
    uint32_t num_sdma_queues_per_engine;
    uint32_t num_cp_queues;
    uint32_t max_engine_clk_ccompute;
    uint32_t max_engine_clk_fcompute;
    uint32_t sdma_fw_version; /* HSA_ENGINE_VERSION */
    uint32_t fw_version;      /* HSA_ENGINE_ID */
    uint32_t capability;      /* HSA_CAPABILITY */
    uint32_t cu_per_engine;
    uint32_t max_waves_per_cu;
    uint32_t family_id;
    uint32_t workgroup_max_size;
    uint32_t grid_max_size;
    uint64_t local_mem_size;
    uint64_t hive_id;
    uint64_t gpu_id;
    rocprofiler_dim3_t workgroup_max_dim;
    rocprofiler_dim3_t grid_max_dim;
    const void* mem_banks;
    const void* caches;
    const void* io_links;
    const char* name;
    const char* vendor_name;
    const char* product_name;
    const char* model_name;
    uint32_t node_id;
    int32_t logical_node_id;
    int32_t logical_node_type_id;
    uint32_t runtime_visibility;
    rocprofiler_uuid_t uuid;
} rocprofiler_agent_v0_t;

/* counters.h, counter_config.h, dispatch_counting_service.h (experimental in the SDK) */
typedef enum rocprofiler_counter_info_version_id_t {
    ROCPROFILER_COUNTER_INFO_VERSION_NONE,
    ROCPROFILER_COUNTER_INFO_VERSION_0,
    ROCPROFILER_COUNTER_INFO_VERSION_1,
    ROCPROFILER_COUNTER_INFO_VERSION_LAST,
} rocprofiler_counter_info_version_id_t;

typedef enum rocprofiler_counter_record_kind_t {
    ROCPROFILER_COUNTER_RECORD_NONE = 0,
    ROCPROFILER_COUNTER_RECORD_PROFILE_COUNTING_DISPATCH_HEADER,
    ROCPROFILER_COUNTER_RECORD_VALUE,
    ROCPROFILER_COUNTER_RECORD_LAST,
} rocprofiler_counter_record_kind_t;

typedef uint64_t rocprofiler_counter_instance_id_t;
typedef struct rocprofiler_counter_id_t { uint64_t handle; } rocprofiler_counter_id_t;
typedef struct rocprofiler_counter_config_id_t { uint64_t handle; } rocprofiler_counter_config_id_t;

typedef struct rocprofiler_counter_info_v0_t {
    rocprofiler_counter_id_t id;
    const char* name;
    const char* description;
    const char* block;
    const char* expression;
    uint8_t is_constant : 1;
    uint8_t is_derived : 1;
} rocprofiler_counter_info_v0_t;

typedef struct rocprofiler_counter_record_t {
    rocprofiler_counter_instance_id_t id;
    double counter_value;
    rocprofiler_dispatch_id_t dispatch_id;
    rocprofiler_user_data_t user_data;
    rocprofiler_agent_id_t agent_id;
} rocprofiler_counter_record_t;

typedef struct rocprofiler_dispatch_counting_service_data_t {
    uint64_t size;
    rocprofiler_async_correlation_id_t correlation_id;
    rocprofiler_timestamp_t start_timestamp;
    rocprofiler_timestamp_t end_timestamp;
    rocprofiler_kernel_dispatch_info_t dispatch_info;
} rocprofiler_dispatch_counting_service_data_t;

typedef struct rocprofiler_dispatch_counting_service_record_t {
    uint64_t size;
    uint64_t num_records;
    rocprofiler_async_correlation_id_t correlation_id;
    rocprofiler_timestamp_t start_timestamp;
    rocprofiler_timestamp_t end_timestamp;
    rocprofiler_kernel_dispatch_info_t dispatch_info;
} rocprofiler_dispatch_counting_service_record_t;

typedef rocprofiler_status_t (*rocprofiler_available_counters_cb_t)(
    rocprofiler_agent_id_t agent_id, rocprofiler_counter_id_t* counters, size_t num_counters,
    void* user_data);
typedef void (*rocprofiler_dispatch_counting_service_cb_t)(
    rocprofiler_dispatch_counting_service_data_t dispatch_data,
    rocprofiler_counter_config_id_t* config, rocprofiler_user_data_t* user_data,
    void* callback_data_args);

rocprofiler_status_t rocprofiler_iterate_agent_supported_counters(
    rocprofiler_agent_id_t agent_id, rocprofiler_available_counters_cb_t cb, void* user_data);
rocprofiler_status_t rocprofiler_query_counter_info(rocprofiler_counter_id_t counter_id,
                                                    rocprofiler_counter_info_version_id_t version,
                                                    void* info);
rocprofiler_status_t rocprofiler_create_counter_config(rocprofiler_agent_id_t agent_id,
                                                       rocprofiler_counter_id_t* counters_list,
                                                       size_t counters_count,
                                                       rocprofiler_counter_config_id_t* config_id);
rocprofiler_status_t rocprofiler_configure_buffer_dispatch_counting_service(
    rocprofiler_context_id_t context_id, rocprofiler_buffer_id_t buffer_id,
    rocprofiler_dispatch_counting_service_cb_t callback, void* callback_data_args);
rocprofiler_status_t rocprofiler_query_record_counter_id(rocprofiler_counter_instance_id_t id,
                                                         rocprofiler_counter_id_t* counter_id);

/* registration.h */
typedef struct rocprofiler_client_id_t {
    const char* name;
    const uint32_t handle;
} rocprofiler_client_id_t;

typedef void (*rocprofiler_client_finalize_t)(rocprofiler_client_id_t);
typedef int (*rocprofiler_tool_initialize_t)(rocprofiler_client_finalize_t finalize_func,
                                             void* tool_data);
typedef void (*rocprofiler_tool_finalize_t)(void* tool_data);

typedef struct rocprofiler_tool_configure_result_t {
    size_t size;
    rocprofiler_tool_initialize_t initialize;
    rocprofiler_tool_finalize_t finalize;
    void* tool_data;
} rocprofiler_tool_configure_result_t;

typedef rocprofiler_tool_configure_result_t* (*rocprofiler_configure_func_t)(
    uint32_t version, const char* runtime_version, uint32_t priority,
    rocprofiler_client_id_t* client_id);

/* buffer.h, callback_tracing.h, agent.h */
typedef void (*rocprofiler_buffer_tracing_cb_t)(rocprofiler_context_id_t context,
                                                rocprofiler_buffer_id_t buffer_id,
                                                rocprofiler_record_header_t** headers,
                                                size_t num_headers, void* data,
                                                uint64_t drop_count);
typedef void (*rocprofiler_callback_tracing_cb_t)(rocprofiler_callback_tracing_record_t record,
                                                  rocprofiler_user_data_t* user_data,
                                                  void* callback_data);
typedef rocprofiler_status_t (*rocprofiler_query_available_agents_cb_t)(
    rocprofiler_agent_version_t version, const void** agents, size_t num_agents, void* user_data);

rocprofiler_status_t rocprofiler_create_context(rocprofiler_context_id_t* context_id);
rocprofiler_status_t rocprofiler_start_context(rocprofiler_context_id_t context_id);
rocprofiler_status_t rocprofiler_create_buffer(rocprofiler_context_id_t context, size_t size,
                                               size_t watermark,
                                               rocprofiler_buffer_policy_t policy,
                                               rocprofiler_buffer_tracing_cb_t callback,
                                               void* callback_data,
                                               rocprofiler_buffer_id_t* buffer_id);
rocprofiler_status_t rocprofiler_flush_buffer(rocprofiler_buffer_id_t buffer_id);
rocprofiler_status_t rocprofiler_create_callback_thread(rocprofiler_callback_thread_t* cb_thread_id);
rocprofiler_status_t rocprofiler_assign_callback_thread(rocprofiler_buffer_id_t buffer_id,
                                                        rocprofiler_callback_thread_t cb_thread_id);
rocprofiler_status_t rocprofiler_configure_buffer_tracing_service(
    rocprofiler_context_id_t context_id, rocprofiler_buffer_tracing_kind_t kind,
    const rocprofiler_tracing_operation_t* operations, size_t operations_count,
    rocprofiler_buffer_id_t buffer_id);
rocprofiler_status_t rocprofiler_configure_callback_tracing_service(
    rocprofiler_context_id_t context_id, rocprofiler_callback_tracing_kind_t kind,
    const rocprofiler_tracing_operation_t* operations, size_t operations_count,
    rocprofiler_callback_tracing_cb_t callback, void* callback_args);
typedef int (*rocprofiler_buffer_tracing_kind_operation_cb_t)(
    rocprofiler_buffer_tracing_kind_t kind, rocprofiler_tracing_operation_t operation, void* data);
rocprofiler_status_t rocprofiler_query_buffer_tracing_kind_operation_name(
    rocprofiler_buffer_tracing_kind_t kind, rocprofiler_tracing_operation_t operation,
    const char** name, uint64_t* name_len);
rocprofiler_status_t rocprofiler_iterate_buffer_tracing_kind_operations(
    rocprofiler_buffer_tracing_kind_t kind, rocprofiler_buffer_tracing_kind_operation_cb_t callback,
    void* data);
rocprofiler_status_t rocprofiler_get_timestamp(rocprofiler_timestamp_t* ts);
rocprofiler_status_t rocprofiler_query_available_agents(
    rocprofiler_agent_version_t version, rocprofiler_query_available_agents_cb_t callback,
    size_t agent_size, void* user_data);
const char* rocprofiler_get_status_string(rocprofiler_status_t status);

/* ---- The double's control functions (what the runtime would do) ---- */

/* The double's clock: CLOCK_BOOTTIME (the SDK's) moved by this much, so that a tool that read
 * the SDK's timestamps as CLOCK_MONOTONIC, or assumed the SDK's clock, is caught. A tool must
 * pair through rocprofiler_get_timestamp. */
#define DOUBLE_SDK_CLOCK_OFFSET_NS 500000000000ULL

/* The agents: a CPU and one GPU. */
#define DOUBLE_SDK_CPU_AGENT 0x1000u
#define DOUBLE_SDK_GPU_AGENT 0x2000u

typedef struct double_sdk_kernel {
    uint64_t kernel_id;
    const char* name;
    uint32_t group_segment_size;
    uint32_t private_segment_size;
    uint32_t sgpr_count;
    uint32_t arch_vgpr_count;
    uint32_t accum_vgpr_count;
} double_sdk_kernel;

/* Finds every loaded rocprofiler_configure (as the SDK does), configures and initializes the
 * tools, and registers the finalization at exit. Returns how many tools initialized. */
int double_sdk_init(void);
/* A code object with these kernels was loaded (kernel symbol register callbacks, this thread). */
void double_sdk_load_code_object(const double_sdk_kernel* kernels, size_t count);
/* A kernel dispatch from this thread (enqueue callbacks here; a buffered record that says it ran
 * `delay_ns` after now for `duration_ns`). Writes the expected CLOCK_MONOTONIC start; returns the
 * internal correlation id. */
uint64_t double_sdk_dispatch(uint64_t kernel_id, uint64_t queue, rocprofiler_dim3_t grid,
                             rocprofiler_dim3_t workgroup, uint32_t group_segment_size,
                             uint32_t private_segment_size, uint64_t delay_ns,
                             uint64_t duration_ns, uint64_t* start_monotonic);
/* The double's GPU counters (ids 1..3; each has two instances, whose values for a dispatch are
 * 1000 * id + 10 * instance + dispatch id). A dispatch the tool counted prints
 * `counter.<correlation>.<name>=<sum over instances>`. */
/* A memory copy from this thread (buffered record only). */
uint64_t double_sdk_copy(rocprofiler_memory_copy_operation_t direction, uint64_t bytes,
                         uint64_t delay_ns, uint64_t duration_ns, uint64_t* start_monotonic);
/* HIP runtime API operations the double knows. The numbering is the double's own (the SDK's is
 * rocprofiler_hip_runtime_api_id_t of hip/api_id.h); a tool learns the names only through
 * rocprofiler_query_buffer_tracing_kind_operation_name. The double's
 * rocprofiler_iterate_buffer_tracing_kind_operations leaves hipFree out, so a tool must also
 * look up an operation it did not see at initialization. */
enum {
    DOUBLE_SDK_HIP_MALLOC = 3,
    DOUBLE_SDK_HIP_MEMCPY = 5,
    DOUBLE_SDK_HIP_LAUNCH_KERNEL = 8,
    DOUBLE_SDK_HIP_DEVICE_SYNCHRONIZE = 13,
    DOUBLE_SDK_HIP_FREE = 21,
};
/* A HIP runtime API call on this thread begins: returns its internal correlation id, which the
 * kernel dispatches and copies made before double_sdk_hip_end carry too. Writes the
 * CLOCK_MONOTONIC time of its start. */
uint64_t double_sdk_hip_begin(int operation, uint64_t* start_monotonic);
/* The call ends: its buffered record (HIP_RUNTIME_API). Returns its duration in ns. */
uint64_t double_sdk_hip_end(void);
/* HSA API operations the double lists (kind, operation): the numbering follows ROCr's API
 * tables, as rocprofiler_hsa_core_api_id_t and rocprofiler_hsa_amd_ext_api_id_t do; names
 * only through rocprofiler_query_buffer_tracing_kind_operation_name. */
enum {
    DOUBLE_SDK_HSA_INIT = 0,                   /* HSA_CORE_API */
    DOUBLE_SDK_HSA_SYSTEM_GET_INFO = 2,        /* HSA_CORE_API */
    DOUBLE_SDK_HSA_AGENT_GET_INFO = 6,         /* HSA_CORE_API */
    DOUBLE_SDK_HSA_SIGNAL_WAIT_SCACQUIRE = 44, /* HSA_CORE_API */
    DOUBLE_SDK_HSA_AMD_MEMORY_POOL_ALLOCATE = 13, /* HSA_AMD_EXT_API */
    DOUBLE_SDK_HSA_AMD_AGENTS_ALLOW_ACCESS = 17,  /* HSA_AMD_EXT_API */
};
/* An HSA API call on this thread lasting exactly `duration_ns` on the SDK's clock, from now:
 * its buffered record (kind HSA_CORE_API or HSA_AMD_EXT_API). Writes the CLOCK_MONOTONIC
 * time of its start. */
void double_sdk_hsa_call(rocprofiler_buffer_tracing_kind_t kind, int operation,
                         uint64_t duration_ns, uint64_t* start_monotonic);
/* Records lost in the SDK: reported as drop_count with the next delivery. */
void double_sdk_add_drops(uint64_t count);
/* Prints what the tools configured and every contract violation seen (key=value lines). */
void double_sdk_report(void);

#ifdef __cplusplus
}
#endif

#endif
