/* A test double of ROCprofiler-SDK (librocprofiler-sdk.so): the functions Metron calls, with
 * the SDK's signatures and layouts (rocprofiler_sdk_double.h), the SDK's contract checked on
 * every call (configuration only inside the tool's initialize, contexts and buffers that exist,
 * one service per kind and context, watermark within the buffer, the agent struct size), tool
 * discovery as the SDK does it (rocprofiler_configure looked up in every loaded library), and
 * the buffered services: records kept in a buffer of the tool's size, handed to the tool's
 * callback on the double's own thread when the watermark is reached, on
 * rocprofiler_flush_buffer (which waits for the delivery) and at finalization; a full buffer
 * is delivered and swapped (lossless) or drops the record (discard, counted in drop_count).
 * No GPU is involved: the test program says which kernels and copies ran and when. */
#define _GNU_SOURCE
#include "rocprofiler_sdk_double.h"

#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(rocprofiler_kernel_dispatch_info_t) == 128, "fwd.h asserts 128 bytes");
_Static_assert(sizeof(rocprofiler_record_header_t) == 16, "record header");
_Static_assert(sizeof(rocprofiler_callback_tracing_record_t) == 64, "callback record");
_Static_assert(sizeof(rocprofiler_counter_record_t) == 40, "counter record");
_Static_assert(sizeof(rocprofiler_dispatch_counting_service_record_t) == 176, "counting header");
_Static_assert(sizeof(rocprofiler_buffer_tracing_hip_api_record_t) == 64, "HIP API record");
_Static_assert(offsetof(rocprofiler_buffer_tracing_hip_api_record_t, start_timestamp) == 40,
               "HIP API record start");

#define MAX_TOOLS 4
#define MAX_CONTEXTS 8
#define MAX_BUFFERS 8
#define MAX_SERVICES 16
#define MAX_OPS 8
#define MAX_RECORDS 4096

static int violations;
static void violation(const char* what) {
    ++violations;
    fprintf(stderr, "rocprofiler-sdk double: contract violation: %s\n", what);
}

static uint64_t clock_ns(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t sdk_now(void) { return clock_ns(CLOCK_BOOTTIME) + DOUBLE_SDK_CLOCK_OFFSET_NS; }

static uint64_t tid(void) { return (uint64_t)syscall(SYS_gettid); }

/* The SDK's clock paired with CLOCK_MONOTONIC: the narrowest of a few windows. */
static void pair_clocks(uint64_t* sdk, uint64_t* mono) {
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 7; ++i) {
        uint64_t a = clock_ns(CLOCK_MONOTONIC);
        uint64_t s = sdk_now();
        uint64_t b = clock_ns(CLOCK_MONOTONIC);
        if (b - a < best) {
            best = b - a;
            *sdk = s;
            *mono = a + (b - a) / 2;
        }
    }
}

/* ---- state ---- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int configuring; /* inside a tool's initialize */
static int finalized;

typedef struct tool {
    rocprofiler_tool_configure_result_t* config;
    rocprofiler_client_id_t* client;
} tool;
static tool tools[MAX_TOOLS];
static int n_tools;

typedef struct context {
    uint64_t id;
    int started;
} context;
static context contexts[MAX_CONTEXTS];
static int n_contexts;

typedef struct slot {
    rocprofiler_record_header_t header;
    union {
        rocprofiler_buffer_tracing_kernel_dispatch_record_t dispatch;
        rocprofiler_buffer_tracing_memory_copy_record_t copy;
        rocprofiler_buffer_tracing_hip_api_record_t hip_api;
        rocprofiler_buffer_tracing_hsa_api_record_t hsa_api;
        rocprofiler_dispatch_counting_service_record_t counting;
        rocprofiler_counter_record_t counter;
    } payload;
} slot;

typedef struct buffer {
    uint64_t id;
    uint64_t context;
    size_t size;
    size_t watermark;
    rocprofiler_buffer_policy_t policy;
    rocprofiler_buffer_tracing_cb_t callback;
    void* data;
    int own_thread;
    slot* records; /* MAX_RECORDS */
    size_t count;
    size_t bytes;
    uint64_t drops;
} buffer;
static buffer buffers[MAX_BUFFERS];
static int n_buffers;

typedef struct service {
    uint64_t context;
    int kind;
    int ops[MAX_OPS];
    size_t n_ops;
    /* buffer tracing */
    uint64_t buffer;
    /* callback tracing */
    rocprofiler_callback_tracing_cb_t callback;
    void* callback_data;
} service;
static service buffer_services[MAX_SERVICES];
static int n_buffer_services;
static service callback_services[MAX_SERVICES];
static int n_callback_services;

/* The dispatch counting service and the counter configurations. */
typedef struct counting_service {
    uint64_t context;
    uint64_t buffer;
    rocprofiler_dispatch_counting_service_cb_t callback;
    void* data;
} counting_service;
static counting_service counting[MAX_SERVICES];
static int n_counting;

typedef struct counter_config {
    uint64_t id;
    uint64_t agent;
    uint64_t counters[8];
    size_t count;
} counter_config;
static counter_config configs[8];
static int n_configs;

static const char* const COUNTER_NAMES[] = {"", "SQ_WAVES", "GRBM_GUI_ACTIVE", "SQ_INSTS_VALU"};
#define N_COUNTERS 3
#define COUNTER_INSTANCES 2

/* The HIP runtime API operations and their names (DOUBLE_SDK_HIP_*). */
static const struct {
    int op;
    const char* name;
} HIP_OPS[] = {
    {DOUBLE_SDK_HIP_MALLOC, "hipMalloc"},
    {DOUBLE_SDK_HIP_MEMCPY, "hipMemcpy"},
    {DOUBLE_SDK_HIP_LAUNCH_KERNEL, "hipLaunchKernel"},
    {DOUBLE_SDK_HIP_DEVICE_SYNCHRONIZE, "hipDeviceSynchronize"},
    {DOUBLE_SDK_HIP_FREE, "hipFree"},
};
#define N_HIP_OPS (sizeof(HIP_OPS) / sizeof(HIP_OPS[0]))

static const char* hip_op_name(int op) {
    for (size_t i = 0; i < N_HIP_OPS; ++i)
        if (HIP_OPS[i].op == op) return HIP_OPS[i].name;
    return NULL;
}

/* The HSA API operations the double lists (DOUBLE_SDK_HSA_*). */
static const struct {
    int kind;
    int op;
    const char* name;
} HSA_OPS[] = {
    {ROCPROFILER_BUFFER_TRACING_HSA_CORE_API, DOUBLE_SDK_HSA_INIT, "hsa_init"},
    {ROCPROFILER_BUFFER_TRACING_HSA_CORE_API, DOUBLE_SDK_HSA_SYSTEM_GET_INFO, "hsa_system_get_info"},
    {ROCPROFILER_BUFFER_TRACING_HSA_CORE_API, DOUBLE_SDK_HSA_AGENT_GET_INFO, "hsa_agent_get_info"},
    {ROCPROFILER_BUFFER_TRACING_HSA_CORE_API, DOUBLE_SDK_HSA_SIGNAL_WAIT_SCACQUIRE,
     "hsa_signal_wait_scacquire"},
    {ROCPROFILER_BUFFER_TRACING_HSA_AMD_EXT_API, DOUBLE_SDK_HSA_AMD_MEMORY_POOL_ALLOCATE,
     "hsa_amd_memory_pool_allocate"},
    {ROCPROFILER_BUFFER_TRACING_HSA_AMD_EXT_API, DOUBLE_SDK_HSA_AMD_AGENTS_ALLOW_ACCESS,
     "hsa_amd_agents_allow_access"},
};
#define N_HSA_OPS (sizeof(HSA_OPS) / sizeof(HSA_OPS[0]))

static int is_hsa_kind(int kind) {
    return kind == ROCPROFILER_BUFFER_TRACING_HSA_CORE_API ||
           kind == ROCPROFILER_BUFFER_TRACING_HSA_AMD_EXT_API;
}

static const char* hsa_op_name(int kind, int op) {
    for (size_t i = 0; i < N_HSA_OPS; ++i)
        if (HSA_OPS[i].kind == kind && HSA_OPS[i].op == op) return HSA_OPS[i].name;
    return NULL;
}

static int operation_iterations;
static int operation_name_queries;
static int operation_name_queries_delivering; /* on the delivery thread, inside a callback */

static int callback_threads;
static int flush_calls;
static int watermark_deliveries;

static context* find_context(uint64_t id) {
    for (int i = 0; i < n_contexts; ++i)
        if (contexts[i].id == id) return &contexts[i];
    return NULL;
}

static buffer* find_buffer(uint64_t id) {
    for (int i = 0; i < n_buffers; ++i)
        if (buffers[i].id == id) return &buffers[i];
    return NULL;
}

static int service_wants(const service* s, int op) {
    if (s->n_ops == 0) return 1;
    for (size_t i = 0; i < s->n_ops; ++i)
        if (s->ops[i] == op) return 1;
    return 0;
}

/* ---- the delivery thread (the SDK's callback thread) ---- */

static pthread_t delivery_thread;
static int delivery_started;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static uint64_t requested; /* generations of delivery requests */
static uint64_t completed;
static int stop_thread;

/* Hands the buffer's records to its tool. Called without `lock` held, with the records taken. */
static void deliver(buffer* b, slot* records, size_t count, uint64_t drops) {
    if (count == 0 && drops == 0) return;
    rocprofiler_record_header_t** headers = calloc(count + 1, sizeof(*headers));
    for (size_t i = 0; i < count; ++i) {
        records[i].header.payload = &records[i].payload;
        headers[i] = &records[i].header;
    }
    rocprofiler_context_id_t ctx = {b->context};
    rocprofiler_buffer_id_t id = {b->id};
    b->callback(ctx, id, headers, count, b->data, drops);
    free(headers);
}

/* Takes every buffer's records (under `lock`) and delivers them (without it). */
static void deliver_all(void) {
    for (int i = 0; i < n_buffers; ++i) {
        buffer* b = &buffers[i];
        pthread_mutex_lock(&lock);
        size_t count = b->count;
        uint64_t drops = b->drops;
        slot* taken = malloc(sizeof(slot) * (count + 1));
        memcpy(taken, b->records, sizeof(slot) * count);
        b->count = 0;
        b->bytes = 0;
        b->drops = 0;
        pthread_mutex_unlock(&lock);
        deliver(b, taken, count, drops);
        free(taken);
    }
}

static void* delivery_main(void* arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        while (completed == requested && !stop_thread) pthread_cond_wait(&work, &lock);
        if (completed == requested && stop_thread) break;
        uint64_t target = requested;
        pthread_mutex_unlock(&lock);
        deliver_all();
        pthread_mutex_lock(&lock);
        completed = target;
        pthread_cond_broadcast(&done);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

static int delivering(void) {
    return delivery_started && pthread_equal(pthread_self(), delivery_thread);
}

/* Asks the delivery thread for a delivery; with `wait`, returns once it happened. `lock` held. */
static void request_delivery(int wait) {
    uint64_t mine = ++requested;
    pthread_cond_signal(&work);
    while (wait && completed < mine) pthread_cond_wait(&done, &lock);
}

/* Adds a record to the buffer `id` (the records of a started context only). */
static void buffer_record_of(uint64_t buffer_id, uint32_t category, uint32_t kind,
                             const void* payload, size_t size) {
    pthread_mutex_lock(&lock);
    buffer* b = find_buffer(buffer_id);
    if (!b || finalized) {
        pthread_mutex_unlock(&lock);
        return;
    }
    size_t bytes = sizeof(rocprofiler_record_header_t) + size;
    if (b->bytes + bytes > b->size || b->count == MAX_RECORDS) {
        if (b->policy == ROCPROFILER_BUFFER_POLICY_DISCARD) {
            ++b->drops;
            pthread_mutex_unlock(&lock);
            return;
        }
        /* lossless: the full buffer goes to the tool, the record to a fresh one */
        request_delivery(1);
    }
    slot* s = &b->records[b->count++];
    memset(s, 0, sizeof(*s));
    s->header.category = category;
    s->header.kind = kind;
    memcpy(&s->payload, payload, size);
    b->bytes += bytes;
    if (b->bytes >= b->watermark) {
        ++watermark_deliveries;
        request_delivery(0);
    }
    pthread_mutex_unlock(&lock);
}

static void buffer_record(uint64_t buffer_id, uint32_t kind, const void* payload, size_t size) {
    buffer_record_of(buffer_id, ROCPROFILER_BUFFER_CATEGORY_TRACING, kind, payload, size);
}

/* ---- the SDK's functions ---- */

rocprofiler_status_t rocprofiler_iterate_agent_supported_counters(
    rocprofiler_agent_id_t agent_id, rocprofiler_available_counters_cb_t cb, void* user_data) {
    if (!cb) return ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT;
    if (agent_id.handle != DOUBLE_SDK_GPU_AGENT) return ROCPROFILER_STATUS_ERROR;
    rocprofiler_counter_id_t ids[N_COUNTERS];
    for (int i = 0; i < N_COUNTERS; ++i) ids[i].handle = (uint64_t)(i + 1);
    return cb(agent_id, ids, N_COUNTERS, user_data);
}

rocprofiler_status_t rocprofiler_query_counter_info(rocprofiler_counter_id_t counter_id,
                                                    rocprofiler_counter_info_version_id_t version,
                                                    void* info) {
    if (!info) return ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT;
    if (version != ROCPROFILER_COUNTER_INFO_VERSION_0) return ROCPROFILER_STATUS_ERROR_INCOMPATIBLE_ABI;
    if (counter_id.handle < 1 || counter_id.handle > N_COUNTERS)
        return ROCPROFILER_STATUS_ERROR_COUNTER_NOT_FOUND;
    rocprofiler_counter_info_v0_t* v0 = info;
    memset(v0, 0, sizeof(*v0));
    v0->id = counter_id;
    v0->name = COUNTER_NAMES[counter_id.handle];
    v0->description = "a counter of the double";
    v0->block = "SQ";
    v0->expression = "";
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_create_counter_config(rocprofiler_agent_id_t agent_id,
                                                       rocprofiler_counter_id_t* counters_list,
                                                       size_t counters_count,
                                                       rocprofiler_counter_config_id_t* config_id) {
    if (!config_id || (counters_count > 0 && !counters_list) || counters_count > 8)
        return ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT;
    if (agent_id.handle != DOUBLE_SDK_GPU_AGENT) {
        violation("rocprofiler_create_counter_config for an agent without counters");
        return ROCPROFILER_STATUS_ERROR_AGENT_NOT_FOUND;
    }
    if (config_id->handle != 0) {
        violation("rocprofiler_create_counter_config with an unknown base configuration");
        return ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT;
    }
    for (size_t i = 0; i < counters_count; ++i)
        if (counters_list[i].handle < 1 || counters_list[i].handle > N_COUNTERS) {
            violation("rocprofiler_create_counter_config with an unknown counter");
            return ROCPROFILER_STATUS_ERROR_COUNTER_NOT_FOUND;
        }
    if (n_configs == 8) return ROCPROFILER_STATUS_ERROR;
    counter_config* c = &configs[n_configs];
    c->id = 0x400 + (uint64_t)n_configs;
    c->agent = agent_id.handle;
    c->count = counters_count;
    for (size_t i = 0; i < counters_count; ++i) c->counters[i] = counters_list[i].handle;
    ++n_configs;
    config_id->handle = c->id;
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_configure_buffer_dispatch_counting_service(
    rocprofiler_context_id_t context_id, rocprofiler_buffer_id_t buffer_id,
    rocprofiler_dispatch_counting_service_cb_t callback, void* callback_data_args) {
    if (!configuring) {
        violation("rocprofiler_configure_buffer_dispatch_counting_service outside of initialize");
        return ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED;
    }
    buffer* b = find_buffer(buffer_id.handle);
    if (!find_context(context_id.handle) || !b || b->context != context_id.handle || !callback) {
        violation("rocprofiler_configure_buffer_dispatch_counting_service with a bad argument");
        return ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT;
    }
    for (int i = 0; i < n_counting; ++i)
        if (counting[i].context == context_id.handle)
            return ROCPROFILER_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED;
    counting[n_counting].context = context_id.handle;
    counting[n_counting].buffer = buffer_id.handle;
    counting[n_counting].callback = callback;
    counting[n_counting].data = callback_data_args;
    ++n_counting;
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_query_record_counter_id(rocprofiler_counter_instance_id_t id,
                                                         rocprofiler_counter_id_t* counter_id) {
    if (!counter_id) return ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT;
    counter_id->handle = id >> 32;
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_get_timestamp(rocprofiler_timestamp_t* ts) {
    if (!ts) return ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT;
    *ts = sdk_now();
    return ROCPROFILER_STATUS_SUCCESS;
}

const char* rocprofiler_get_status_string(rocprofiler_status_t status) {
    switch (status) {
        case ROCPROFILER_STATUS_SUCCESS: return "Success";
        case ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED: return "Configuration locked";
        case ROCPROFILER_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED: return "Service already configured";
        default: return "Error";
    }
}

static int delivering(void);

rocprofiler_status_t rocprofiler_query_buffer_tracing_kind_operation_name(
    rocprofiler_buffer_tracing_kind_t kind, rocprofiler_tracing_operation_t operation,
    const char** name, uint64_t* name_len) {
    if (kind <= ROCPROFILER_BUFFER_TRACING_NONE || kind >= ROCPROFILER_BUFFER_TRACING_LAST)
        return ROCPROFILER_STATUS_ERROR_KIND_NOT_FOUND;
    pthread_mutex_lock(&lock);
    ++operation_name_queries;
    if (delivering()) ++operation_name_queries_delivering;
    pthread_mutex_unlock(&lock);
    if (kind != ROCPROFILER_BUFFER_TRACING_HIP_RUNTIME_API && !is_hsa_kind(kind))
        return ROCPROFILER_STATUS_ERROR_NOT_IMPLEMENTED;
    const char* n = is_hsa_kind(kind) ? hsa_op_name(kind, operation) : hip_op_name(operation);
    if (!n) return ROCPROFILER_STATUS_ERROR_OPERATION_NOT_FOUND;
    if (name) *name = n;
    if (name_len) *name_len = strlen(n);
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_iterate_buffer_tracing_kind_operations(
    rocprofiler_buffer_tracing_kind_t kind, rocprofiler_buffer_tracing_kind_operation_cb_t callback,
    void* data) {
    if (!callback) {
        violation("rocprofiler_iterate_buffer_tracing_kind_operations without a callback");
        return ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if (kind <= ROCPROFILER_BUFFER_TRACING_NONE || kind >= ROCPROFILER_BUFFER_TRACING_LAST)
        return ROCPROFILER_STATUS_ERROR_KIND_NOT_FOUND;
    if (kind != ROCPROFILER_BUFFER_TRACING_HIP_RUNTIME_API && !is_hsa_kind(kind))
        return ROCPROFILER_STATUS_ERROR_NOT_IMPLEMENTED;
    pthread_mutex_lock(&lock);
    ++operation_iterations;
    pthread_mutex_unlock(&lock);
    if (is_hsa_kind(kind)) {
        for (size_t i = 0; i < N_HSA_OPS; ++i)
            if (HSA_OPS[i].kind == (int)kind && callback(kind, HSA_OPS[i].op, data) != 0) break;
        return ROCPROFILER_STATUS_SUCCESS;
    }
    /* Every operation but the last (hipFree): see rocprofiler_sdk_double.h. */
    for (size_t i = 0; i + 1 < N_HIP_OPS; ++i)
        if (callback(kind, HIP_OPS[i].op, data) != 0) break;
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_create_context(rocprofiler_context_id_t* context_id) {
    if (!context_id) return ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT;
    if (!configuring) {
        violation("rocprofiler_create_context outside of the tool's initialize");
        return ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED;
    }
    if (context_id->handle != 0) {
        violation("rocprofiler_create_context with a context id that is not zero");
        return ROCPROFILER_STATUS_ERROR_CONTEXT_ID_NOT_ZERO;
    }
    if (n_contexts == MAX_CONTEXTS) return ROCPROFILER_STATUS_ERROR;
    contexts[n_contexts].id = 0x100 + (uint64_t)n_contexts;
    contexts[n_contexts].started = 0;
    context_id->handle = contexts[n_contexts++].id;
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_start_context(rocprofiler_context_id_t context_id) {
    context* c = find_context(context_id.handle);
    if (!c) {
        violation("rocprofiler_start_context of an unknown context");
        return ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND;
    }
    c->started = 1;
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_create_buffer(rocprofiler_context_id_t context, size_t size,
                                               size_t watermark,
                                               rocprofiler_buffer_policy_t policy,
                                               rocprofiler_buffer_tracing_cb_t callback,
                                               void* callback_data,
                                               rocprofiler_buffer_id_t* buffer_id) {
    if (!configuring) {
        violation("rocprofiler_create_buffer outside of the tool's initialize");
        return ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED;
    }
    if (!find_context(context.handle)) {
        violation("rocprofiler_create_buffer for an unknown context");
        return ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND;
    }
    if (!callback || !buffer_id) {
        violation("rocprofiler_create_buffer without a callback or an out-pointer");
        return ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if (watermark > size) {
        violation("rocprofiler_create_buffer with a watermark above the size");
        return ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if (policy != ROCPROFILER_BUFFER_POLICY_DISCARD && policy != ROCPROFILER_BUFFER_POLICY_LOSSLESS) {
        violation("rocprofiler_create_buffer with no policy");
        return ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT;
    }
    if (n_buffers == MAX_BUFFERS) return ROCPROFILER_STATUS_ERROR;
    buffer* b = &buffers[n_buffers];
    memset(b, 0, sizeof(*b));
    b->id = 0x200 + (uint64_t)n_buffers;
    b->context = context.handle;
    /* rounded up to the page size, as the SDK does */
    long page = sysconf(_SC_PAGESIZE);
    b->size = (size + (size_t)page - 1) / (size_t)page * (size_t)page;
    b->watermark = watermark;
    b->policy = policy;
    b->callback = callback;
    b->data = callback_data;
    b->records = calloc(MAX_RECORDS, sizeof(slot));
    ++n_buffers;
    buffer_id->handle = b->id;
    if (!delivery_started) {
        delivery_started = 1;
        pthread_create(&delivery_thread, NULL, delivery_main, NULL);
    }
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_create_callback_thread(rocprofiler_callback_thread_t* cb_thread_id) {
    if (!configuring) {
        violation("rocprofiler_create_callback_thread outside of the tool's initialize");
        return ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED;
    }
    cb_thread_id->handle = 0x300 + (uint64_t)callback_threads++;
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_assign_callback_thread(rocprofiler_buffer_id_t buffer_id,
                                                        rocprofiler_callback_thread_t cb_thread_id) {
    buffer* b = find_buffer(buffer_id.handle);
    if (!b || cb_thread_id.handle < 0x300 || cb_thread_id.handle >= 0x300 + (uint64_t)callback_threads) {
        violation("rocprofiler_assign_callback_thread with an unknown buffer or thread");
        return ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT;
    }
    /* The double delivers every buffer on its one delivery thread. */
    b->own_thread = 1;
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_flush_buffer(rocprofiler_buffer_id_t buffer_id) {
    if (!find_buffer(buffer_id.handle)) {
        violation("rocprofiler_flush_buffer of an unknown buffer");
        return ROCPROFILER_STATUS_ERROR_BUFFER_NOT_FOUND;
    }
    pthread_mutex_lock(&lock);
    ++flush_calls;
    if (pthread_equal(pthread_self(), delivery_thread)) {
        pthread_mutex_unlock(&lock);
        deliver_all();
        return ROCPROFILER_STATUS_SUCCESS;
    }
    request_delivery(1);
    pthread_mutex_unlock(&lock);
    return ROCPROFILER_STATUS_SUCCESS;
}

static rocprofiler_status_t add_service(service* table, int* n, uint64_t ctx, int kind,
                                        const rocprofiler_tracing_operation_t* operations,
                                        size_t count, const char* what) {
    if (!configuring) {
        violation(what);
        return ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED;
    }
    if (!find_context(ctx)) return ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND;
    for (int i = 0; i < *n; ++i)
        if (table[i].context == ctx && table[i].kind == kind)
            return ROCPROFILER_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED;
    if (count > MAX_OPS || (count > 0 && !operations)) return ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT;
    service* s = &table[(*n)++];
    memset(s, 0, sizeof(*s));
    s->context = ctx;
    s->kind = kind;
    s->n_ops = count;
    for (size_t i = 0; i < count; ++i) s->ops[i] = operations[i];
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_configure_buffer_tracing_service(
    rocprofiler_context_id_t context_id, rocprofiler_buffer_tracing_kind_t kind,
    const rocprofiler_tracing_operation_t* operations, size_t operations_count,
    rocprofiler_buffer_id_t buffer_id) {
    if (kind <= ROCPROFILER_BUFFER_TRACING_NONE || kind >= ROCPROFILER_BUFFER_TRACING_LAST)
        return ROCPROFILER_STATUS_ERROR_KIND_NOT_FOUND;
    if (kind == ROCPROFILER_BUFFER_TRACING_HIP_RUNTIME_API)
        for (size_t i = 0; operations && i < operations_count; ++i)
            if (!hip_op_name(operations[i])) return ROCPROFILER_STATUS_ERROR_OPERATION_NOT_FOUND;
    if (is_hsa_kind(kind))
        for (size_t i = 0; operations && i < operations_count; ++i)
            if (!hsa_op_name(kind, operations[i]))
                return ROCPROFILER_STATUS_ERROR_OPERATION_NOT_FOUND;
    buffer* b = find_buffer(buffer_id.handle);
    if (!b || b->context != context_id.handle) {
        violation("rocprofiler_configure_buffer_tracing_service with a buffer of another context");
        return ROCPROFILER_STATUS_ERROR_BUFFER_NOT_FOUND;
    }
    rocprofiler_status_t s = add_service(
        buffer_services, &n_buffer_services, context_id.handle, (int)kind, operations,
        operations_count,
        "rocprofiler_configure_buffer_tracing_service outside of the tool's initialize");
    if (s == ROCPROFILER_STATUS_SUCCESS) buffer_services[n_buffer_services - 1].buffer = b->id;
    return s;
}

rocprofiler_status_t rocprofiler_configure_callback_tracing_service(
    rocprofiler_context_id_t context_id, rocprofiler_callback_tracing_kind_t kind,
    const rocprofiler_tracing_operation_t* operations, size_t operations_count,
    rocprofiler_callback_tracing_cb_t callback, void* callback_args) {
    if (kind <= ROCPROFILER_CALLBACK_TRACING_NONE || kind >= ROCPROFILER_CALLBACK_TRACING_LAST)
        return ROCPROFILER_STATUS_ERROR_KIND_NOT_FOUND;
    if (!callback) return ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT;
    rocprofiler_status_t s = add_service(
        callback_services, &n_callback_services, context_id.handle, (int)kind, operations,
        operations_count,
        "rocprofiler_configure_callback_tracing_service outside of the tool's initialize");
    if (s == ROCPROFILER_STATUS_SUCCESS) {
        callback_services[n_callback_services - 1].callback = callback;
        callback_services[n_callback_services - 1].callback_data = callback_args;
    }
    return s;
}

static rocprofiler_agent_v0_t agents[2];

static void make_agents(void) {
    memset(agents, 0, sizeof(agents));
    agents[0].size = sizeof(rocprofiler_agent_v0_t);
    agents[0].id.handle = DOUBLE_SDK_CPU_AGENT;
    agents[0].type = ROCPROFILER_AGENT_TYPE_CPU;
    agents[0].cpu_cores_count = 64;
    agents[0].name = "AMD EPYC 7763 64-Core Processor";
    agents[0].vendor_name = "CPU";
    agents[0].product_name = "AMD EPYC 7763 64-Core Processor";
    agents[0].model_name = "";
    agents[0].node_id = 0;
    agents[0].logical_node_id = 0;
    agents[0].logical_node_type_id = 0;
    agents[1].size = sizeof(rocprofiler_agent_v0_t);
    agents[1].id.handle = DOUBLE_SDK_GPU_AGENT;
    agents[1].type = ROCPROFILER_AGENT_TYPE_GPU;
    agents[1].simd_count = 416;
    agents[1].wave_front_size = 64;
    agents[1].cu_count = 104;
    agents[1].gfx_target_version = 90010;
    agents[1].name = "gfx90a";
    agents[1].vendor_name = "AMD";
    agents[1].product_name = "AMD Instinct MI210";
    agents[1].model_name = "aldebaran";
    agents[1].node_id = 1;
    agents[1].logical_node_id = 1;
    agents[1].logical_node_type_id = 0;
}

rocprofiler_status_t rocprofiler_query_available_agents(
    rocprofiler_agent_version_t version, rocprofiler_query_available_agents_cb_t callback,
    size_t agent_size, void* user_data) {
    if (version != ROCPROFILER_AGENT_INFO_VERSION_0 || !callback)
        return ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT;
    if (agent_size > sizeof(rocprofiler_agent_v0_t)) {
        violation("rocprofiler_query_available_agents with an agent larger than the SDK's");
        return ROCPROFILER_STATUS_ERROR_INCOMPATIBLE_ABI;
    }
    make_agents();
    const void* list[2] = {&agents[0], &agents[1]};
    return callback(version, list, 2, user_data);
}

/* ---- tool discovery, initialization, finalization ---- */

static int find_tool(struct dl_phdr_info* info, size_t size, void* data) {
    (void)size;
    (void)data;
    void* handle = dlopen(info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : NULL,
                          RTLD_LAZY | RTLD_NOLOAD);
    if (!handle) return 0;
    rocprofiler_configure_func_t f = (rocprofiler_configure_func_t)dlsym(handle, "rocprofiler_configure");
    if (f && n_tools < MAX_TOOLS) {
        for (int i = 0; i < n_tools; ++i)
            if ((void*)tools[i].config == (void*)f) f = NULL;
        if (f) tools[n_tools++].config = (rocprofiler_tool_configure_result_t*)(void*)f;
    }
    dlclose(handle);
    return 0;
}

static void finalize_tools(void) {
    pthread_mutex_lock(&lock);
    if (finalized) {
        pthread_mutex_unlock(&lock);
        return;
    }
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < n_tools; ++i)
        if (tools[i].config && tools[i].config->finalize)
            tools[i].config->finalize(tools[i].config->tool_data);
    /* What the tools left in their buffers still reaches them, then nothing more. */
    pthread_mutex_lock(&lock);
    request_delivery(1);
    finalized = 1;
    stop_thread = 1;
    pthread_cond_signal(&work);
    pthread_mutex_unlock(&lock);
    if (delivery_started) pthread_join(delivery_thread, NULL);
}

static rocprofiler_client_id_t clients[MAX_TOOLS];

int double_sdk_init(void) {
    dl_iterate_phdr(find_tool, NULL);
    int found = n_tools, configured = 0;
    n_tools = 0;
    for (int i = 0; i < found; ++i) {
        rocprofiler_configure_func_t f = (rocprofiler_configure_func_t)(void*)tools[i].config;
        memcpy((void*)&clients[i].handle, &(uint32_t){(uint32_t)(40 + i)}, sizeof(uint32_t));
        rocprofiler_tool_configure_result_t* r =
            f(10000 * 1 + 100 * 2 + 3, "rocprofiler-sdk double 1.2.3", (uint32_t)configured, &clients[i]);
        if (!r) continue;
        if (r->size < sizeof(rocprofiler_tool_configure_result_t) || !r->initialize) {
            violation("rocprofiler_configure returned an incomplete configuration");
            continue;
        }
        tools[n_tools].config = r;
        tools[n_tools].client = &clients[i];
        ++n_tools;
        ++configured;
    }
    int initialized = 0;
    for (int i = 0; i < n_tools; ++i) {
        configuring = 1;
        int rc = tools[i].config->initialize(NULL, tools[i].config->tool_data);
        configuring = 0;
        if (rc == 0) ++initialized;
    }
    atexit(finalize_tools);
    printf("tools_found=%d\ntools_initialized=%d\n", found, initialized);
    for (int i = 0; i < n_tools; ++i)
        printf("tool_name=%s\n", tools[i].client->name ? tools[i].client->name : "(none)");
    return initialized;
}

static int context_started(uint64_t ctx) {
    context* c = find_context(ctx);
    return c && c->started;
}

static void callbacks(int kind, int op, rocprofiler_callback_phase_t phase,
                      uint64_t correlation, void* payload, rocprofiler_user_data_t* user) {
    for (int i = 0; i < n_callback_services; ++i) {
        service* s = &callback_services[i];
        if (s->kind != kind || !service_wants(s, op) || !context_started(s->context)) continue;
        rocprofiler_callback_tracing_record_t r;
        memset(&r, 0, sizeof(r));
        r.context_id.handle = s->context;
        r.thread_id = tid();
        r.correlation_id.internal = correlation;
        r.kind = (rocprofiler_callback_tracing_kind_t)kind;
        r.operation = op;
        r.phase = phase;
        r.payload = payload;
        s->callback(r, &user[i], s->callback_data);
    }
}

void double_sdk_load_code_object(const double_sdk_kernel* kernels, size_t count) {
    rocprofiler_user_data_t user[MAX_SERVICES];
    for (size_t k = 0; k < count; ++k) {
        rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t d;
        memset(&d, 0, sizeof(d));
        d.size = sizeof(d);
        d.kernel_id = kernels[k].kernel_id;
        d.code_object_id = 1;
        d.kernel_name = kernels[k].name;
        d.kernel_object = 0x7f0000001000ull + 0x100 * k;
        d.kernarg_segment_size = 64;
        d.kernarg_segment_alignment = 16;
        d.group_segment_size = kernels[k].group_segment_size;
        d.private_segment_size = kernels[k].private_segment_size;
        d.sgpr_count = kernels[k].sgpr_count;
        d.arch_vgpr_count = kernels[k].arch_vgpr_count;
        d.accum_vgpr_count = kernels[k].accum_vgpr_count;
        memset(user, 0, sizeof(user));
        callbacks(ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT,
                  ROCPROFILER_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER,
                  ROCPROFILER_CALLBACK_PHASE_LOAD, 0, &d, user);
    }
}

static uint64_t next_correlation = 1000;
static uint64_t next_dispatch = 1;

/* The HIP API call open on this thread (its correlation id is its work's). */
static _Thread_local uint64_t api_correlation;
static _Thread_local int api_operation;
static _Thread_local uint64_t api_start;

/* The correlation id of work started now on this thread: the open API call's, or a new one. */
static uint64_t work_correlation(void) {
    if (api_correlation) return api_correlation;
    pthread_mutex_lock(&lock);
    uint64_t c = next_correlation++;
    pthread_mutex_unlock(&lock);
    return c;
}

/* The buffers configured for `kind`, with operation `op`, in started contexts. */
static void buffered(int kind, int op, const void* payload, size_t size) {
    for (int i = 0; i < n_buffer_services; ++i) {
        service* s = &buffer_services[i];
        if (s->kind == kind && service_wants(s, op) && context_started(s->context))
            buffer_record(s->buffer, (uint32_t)kind, payload, size);
    }
}

uint64_t double_sdk_dispatch(uint64_t kernel_id, uint64_t queue, rocprofiler_dim3_t grid,
                             rocprofiler_dim3_t workgroup, uint32_t group_segment_size,
                             uint32_t private_segment_size, uint64_t delay_ns,
                             uint64_t duration_ns, uint64_t* start_monotonic) {
    uint64_t correlation = work_correlation();
    pthread_mutex_lock(&lock);
    uint64_t dispatch = next_dispatch++;
    pthread_mutex_unlock(&lock);

    rocprofiler_kernel_dispatch_info_t info;
    memset(&info, 0, sizeof(info));
    info.size = offsetof(rocprofiler_kernel_dispatch_info_t, reserved_padding);
    info.agent_id.handle = DOUBLE_SDK_GPU_AGENT;
    info.queue_id.handle = queue;
    info.kernel_id = kernel_id;
    info.dispatch_id = dispatch;
    info.private_segment_size = private_segment_size;
    info.group_segment_size = group_segment_size;
    info.workgroup_size = workgroup;
    info.grid_size = grid;

    /* Dispatch counting: the tool picks the counter configuration before the enqueue. */
    const counter_config* counted[MAX_SERVICES] = {0};
    for (int i = 0; i < n_counting; ++i) {
        if (!context_started(counting[i].context)) continue;
        rocprofiler_dispatch_counting_service_data_t cd;
        memset(&cd, 0, sizeof(cd));
        cd.size = sizeof(cd);
        cd.correlation_id.internal = correlation;
        cd.dispatch_info = info;
        rocprofiler_counter_config_id_t config = {0};
        rocprofiler_user_data_t user_data = {0};
        counting[i].callback(cd, &config, &user_data, counting[i].data);
        for (int c = 0; c < n_configs; ++c)
            if (config.handle != 0 && configs[c].id == config.handle) {
                if (configs[c].agent != info.agent_id.handle)
                    violation("a counter configuration of another agent for a dispatch");
                counted[i] = &configs[c];
            }
        if (config.handle != 0 && !counted[i]) violation("an unknown counter configuration");
    }

    /* Enqueue: enter and exit on this (the launching) thread. */
    rocprofiler_callback_tracing_kernel_dispatch_data_t data;
    memset(&data, 0, sizeof(data));
    data.size = sizeof(data);
    data.dispatch_info = info;
    rocprofiler_user_data_t user[MAX_SERVICES];
    memset(user, 0, sizeof(user));
    callbacks(ROCPROFILER_CALLBACK_TRACING_KERNEL_DISPATCH, ROCPROFILER_KERNEL_DISPATCH_ENQUEUE,
              ROCPROFILER_CALLBACK_PHASE_ENTER, correlation, &data, user);
    callbacks(ROCPROFILER_CALLBACK_TRACING_KERNEL_DISPATCH, ROCPROFILER_KERNEL_DISPATCH_ENQUEUE,
              ROCPROFILER_CALLBACK_PHASE_EXIT, correlation, &data, user);

    uint64_t sdk, mono;
    pair_clocks(&sdk, &mono);
    rocprofiler_buffer_tracing_kernel_dispatch_record_t r;
    memset(&r, 0, sizeof(r));
    r.size = sizeof(r);
    r.kind = ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH;
    r.operation = ROCPROFILER_KERNEL_DISPATCH_COMPLETE;
    r.correlation_id.internal = correlation;
    r.thread_id = tid();
    r.start_timestamp = sdk + delay_ns;
    r.end_timestamp = sdk + delay_ns + duration_ns;
    r.dispatch_info = info;
    *start_monotonic = mono + delay_ns;
    buffered(ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH, ROCPROFILER_KERNEL_DISPATCH_COMPLETE, &r,
             sizeof(r));

    for (int i = 0; i < n_counting; ++i) {
        const counter_config* c = counted[i];
        if (!c) continue;
        rocprofiler_dispatch_counting_service_record_t h;
        memset(&h, 0, sizeof(h));
        h.size = sizeof(h);
        h.num_records = c->count * COUNTER_INSTANCES;
        h.correlation_id.internal = correlation;
        h.start_timestamp = r.start_timestamp;
        h.end_timestamp = r.end_timestamp;
        h.dispatch_info = info;
        buffer_record_of(counting[i].buffer, ROCPROFILER_BUFFER_CATEGORY_COUNTERS,
                         ROCPROFILER_COUNTER_RECORD_PROFILE_COUNTING_DISPATCH_HEADER, &h, sizeof(h));
        for (size_t k = 0; k < c->count; ++k) {
            double sum = 0;
            for (uint64_t inst = 0; inst < COUNTER_INSTANCES; ++inst) {
                rocprofiler_counter_record_t v;
                memset(&v, 0, sizeof(v));
                v.id = (c->counters[k] << 32) | inst;
                v.counter_value = (double)(1000 * c->counters[k] + 10 * inst + dispatch);
                v.dispatch_id = dispatch;
                v.agent_id = info.agent_id;
                sum += v.counter_value;
                buffer_record_of(counting[i].buffer, ROCPROFILER_BUFFER_CATEGORY_COUNTERS,
                                 ROCPROFILER_COUNTER_RECORD_VALUE, &v, sizeof(v));
            }
            printf("counter.%llu.%s=%.0f\n", (unsigned long long)correlation,
                   COUNTER_NAMES[c->counters[k]], sum);
        }
    }
    return correlation;
}

uint64_t double_sdk_copy(rocprofiler_memory_copy_operation_t direction, uint64_t bytes,
                         uint64_t delay_ns, uint64_t duration_ns, uint64_t* start_monotonic) {
    uint64_t correlation = work_correlation();
    uint64_t sdk, mono;
    pair_clocks(&sdk, &mono);
    rocprofiler_buffer_tracing_memory_copy_record_t r;
    memset(&r, 0, sizeof(r));
    r.size = sizeof(r);
    r.kind = ROCPROFILER_BUFFER_TRACING_MEMORY_COPY;
    r.operation = direction;
    r.correlation_id.internal = correlation;
    r.thread_id = tid();
    r.start_timestamp = sdk + delay_ns;
    r.end_timestamp = sdk + delay_ns + duration_ns;
    int to_gpu = direction == ROCPROFILER_MEMORY_COPY_HOST_TO_DEVICE ||
                 direction == ROCPROFILER_MEMORY_COPY_DEVICE_TO_DEVICE;
    int from_gpu = direction == ROCPROFILER_MEMORY_COPY_DEVICE_TO_HOST ||
                   direction == ROCPROFILER_MEMORY_COPY_DEVICE_TO_DEVICE;
    r.dst_agent_id.handle = to_gpu ? DOUBLE_SDK_GPU_AGENT : DOUBLE_SDK_CPU_AGENT;
    r.src_agent_id.handle = from_gpu ? DOUBLE_SDK_GPU_AGENT : DOUBLE_SDK_CPU_AGENT;
    r.bytes = bytes;
    r.dst_address.value = 0x7000;
    r.src_address.value = 0x8000;
    *start_monotonic = mono + delay_ns;
    buffered(ROCPROFILER_BUFFER_TRACING_MEMORY_COPY, (int)direction, &r, sizeof(r));
    return correlation;
}

uint64_t double_sdk_hip_begin(int operation, uint64_t* start_monotonic) {
    if (api_correlation) violation("the double's HIP API calls do not nest");
    if (!hip_op_name(operation)) violation("the double knows no such HIP API operation");
    pthread_mutex_lock(&lock);
    api_correlation = next_correlation++;
    pthread_mutex_unlock(&lock);
    api_operation = operation;
    uint64_t mono;
    pair_clocks(&api_start, &mono);
    *start_monotonic = mono;
    return api_correlation;
}

uint64_t double_sdk_hip_end(void) {
    uint64_t end = sdk_now();
    rocprofiler_buffer_tracing_hip_api_record_t r;
    memset(&r, 0, sizeof(r));
    r.size = sizeof(r);
    r.kind = ROCPROFILER_BUFFER_TRACING_HIP_RUNTIME_API;
    r.operation = api_operation;
    r.correlation_id.internal = api_correlation;
    r.correlation_id.ancestor = 0;
    r.start_timestamp = api_start;
    r.end_timestamp = end;
    r.thread_id = tid();
    api_correlation = 0;
    buffered(ROCPROFILER_BUFFER_TRACING_HIP_RUNTIME_API, r.operation, &r, sizeof(r));
    return end - api_start;
}

void double_sdk_hsa_call(rocprofiler_buffer_tracing_kind_t kind, int operation,
                         uint64_t duration_ns, uint64_t* start_monotonic) {
    if (!hsa_op_name((int)kind, operation)) violation("the double knows no such HSA API operation");
    rocprofiler_buffer_tracing_hsa_api_record_t r;
    memset(&r, 0, sizeof(r));
    r.size = sizeof(r);
    r.kind = kind;
    r.operation = operation;
    pthread_mutex_lock(&lock);
    r.correlation_id.internal = next_correlation++;
    pthread_mutex_unlock(&lock);
    pair_clocks(&r.start_timestamp, start_monotonic);
    r.end_timestamp = r.start_timestamp + duration_ns;
    r.thread_id = tid();
    buffered(kind, operation, &r, sizeof(r));
}

void double_sdk_add_drops(uint64_t count) {
    pthread_mutex_lock(&lock);
    if (n_buffers > 0) buffers[0].drops += count;
    pthread_mutex_unlock(&lock);
}

void double_sdk_report(void) {
    pthread_mutex_lock(&lock);
    printf("contexts=%d\n", n_contexts);
    for (int i = 0; i < n_contexts; ++i) printf("context_started=%d\n", contexts[i].started);
    printf("buffers=%d\n", n_buffers);
    for (int i = 0; i < n_buffers; ++i)
        printf("buffer_size=%zu\nbuffer_watermark=%zu\nbuffer_policy=%d\nbuffer_own_thread=%d\n",
               buffers[i].size, buffers[i].watermark, (int)buffers[i].policy,
               buffers[i].own_thread);
    for (int i = 0; i < n_buffer_services; ++i)
        printf("buffer_service=%d/%zu\n", buffer_services[i].kind, buffer_services[i].n_ops);
    for (int i = 0; i < n_callback_services; ++i) {
        printf("callback_service=%d:", callback_services[i].kind);
        for (size_t k = 0; k < callback_services[i].n_ops; ++k)
            printf("%s%d", k ? "," : "", callback_services[i].ops[k]);
        printf("\n");
    }
    printf("counting_services=%d\ncounter_configs=%d\n", n_counting, n_configs);
    printf("flush_calls=%d\n", flush_calls);
    printf("operation_iterations=%d\noperation_name_queries=%d\n"
           "operation_name_queries_delivering=%d\n",
           operation_iterations, operation_name_queries, operation_name_queries_delivering);
    printf("watermark_deliveries=%d\n", watermark_deliveries);
    printf("violations=%d\n", violations);
    pthread_mutex_unlock(&lock);
    fflush(stdout);
}
