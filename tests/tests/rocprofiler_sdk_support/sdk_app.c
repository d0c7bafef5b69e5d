/* The application of the ROCprofiler-SDK test: linked with libmetron.so (its regions) and the
 * SDK double. It starts Metron (as `metron run`'s preload would), has the "runtime" find and
 * initialize the tools, lets the HSA runtime offer Metron its tool table too (OnLoad, which
 * must decline), loads a code object, and launches kernels and copies inside Metron regions on
 * two threads, some inside HIP runtime API calls (hipLaunchKernel, hipMemcpy; hipMalloc,
 * hipDeviceSynchronize and hipFree on their own). It prints what the test expects (key=value
 * lines): each kernel's and each HIP call's correlation id and CLOCK_MONOTONIC start as the
 * double timed it, and the HIP calls' threads and durations. */
#define _GNU_SOURCE
#include "rocprofiler_sdk_double.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <metron/metron.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define QUEUE_A 0x7f00aa000000ull
#define QUEUE_B 0x7f00bb000000ull
#define LOOP_DISPATCHES 40

static const double_sdk_kernel KERNELS[] = {
    {11, "_Z10vector_addPKfS0_Pfi", 1024, 16, 24, 32, 8},
    {12, "reduce_sum.kd", 4096, 0, 40, 64, 0},
    {13, "_Z11matmul_tileILi64EEvPKfS1_Pf", 16384, 32, 48, 128, 64},
};

static void check(metron_status s, const char* what) {
    if (s != METRON_OK) {
        fprintf(stderr, "%s failed: %d\n", what, s);
        exit(2);
    }
}

static void kernel(const char* label, uint64_t id, uint64_t queue, rocprofiler_dim3_t grid,
                   rocprofiler_dim3_t wg, uint32_t lds, uint32_t scratch, uint64_t duration) {
    uint64_t start = 0;
    uint64_t corr = double_sdk_dispatch(id, queue, grid, wg, lds, scratch, 2000, duration, &start);
    printf("%s.correlation=%" PRIu64 "\n%s.start_monotonic=%" PRIu64 "\n%s.duration=%" PRIu64 "\n",
           label, corr, label, start, label, duration);
}

static void copy(const char* label, rocprofiler_memory_copy_operation_t dir, uint64_t bytes,
                 uint64_t duration) {
    uint64_t start = 0;
    uint64_t corr = double_sdk_copy(dir, bytes, 1000, duration, &start);
    printf("%s.correlation=%" PRIu64 "\n%s.start_monotonic=%" PRIu64 "\n", label, corr, label,
           start);
}

static uint64_t gettid_(void) { return (uint64_t)syscall(SYS_gettid); }

/* A HIP call begins (its work, until hip_end, carries its correlation id). */
static void hip_begin(const char* label, int op) {
    uint64_t start = 0;
    uint64_t corr = double_sdk_hip_begin(op, &start);
    printf("hip.%s.correlation=%" PRIu64 "\nhip.%s.start_monotonic=%" PRIu64
           "\nhip.%s.tid=%" PRIu64 "\n",
           label, corr, label, start, label, gettid_());
}

static void hip_end(const char* label) {
    printf("hip.%s.duration=%" PRIu64 "\n", label, double_sdk_hip_end());
}

/* A HIP call that takes `us` microseconds and starts no GPU work. */
static void hip_call(const char* label, int op, unsigned us) {
    hip_begin(label, op);
    struct timespec ts = {0, (long)us * 1000};
    nanosleep(&ts, NULL);
    hip_end(label);
}

/* An HSA API call of exactly `ns` nanoseconds (on the SDK's clock). */
static void hsa_call(const char* label, rocprofiler_buffer_tracing_kind_t kind, int op,
                     uint64_t ns) {
    uint64_t start = 0;
    double_sdk_hsa_call(kind, op, ns, &start);
    printf("hsa.%s.start_monotonic=%" PRIu64 "\nhsa.%s.duration=%" PRIu64 "\n", label, start,
           label, ns);
}

static void* worker(void* arg) {
    (void)arg;
    check(metron_set_thread_name("sdk-worker"), "thread name");
    check(metron_region_begin("worker_step"), "begin worker_step");
    printf("worker_tid=%" PRIu64 "\n", gettid_());
    hip_begin("launch_matmul", DOUBLE_SDK_HIP_LAUNCH_KERNEL);
    kernel("matmul", 13, QUEUE_A, (rocprofiler_dim3_t){512, 512, 1},
           (rocprofiler_dim3_t){64, 4, 1}, 16384 + 2048, 32, 400000);
    hip_end("launch_matmul");
    check(metron_region_end("worker_step"), "end worker_step");
    return NULL;
}

int main(void) {
    check(metron_init(NULL), "metron_init");
    check(metron_set_thread_name("sdk-main"), "thread name");

    if (double_sdk_init() != 1) {
        fprintf(stderr, "the tool did not initialize\n");
        return 3;
    }

    /* The HSA runtime offers Metron its API table as well (HSA_TOOLS_LIB): the SDK path was
     * claimed, so Metron must leave the table alone (a null table would crash otherwise). */
    bool (*on_load)(void*, uint64_t, uint64_t, const char* const*) =
        (bool (*)(void*, uint64_t, uint64_t, const char* const*))dlsym(RTLD_DEFAULT, "OnLoad");
    printf("onload_found=%d\n", on_load != NULL);
    if (on_load) printf("onload_result=%d\n", (int)on_load(NULL, 1, 0, NULL));

    double_sdk_load_code_object(KERNELS, sizeof(KERNELS) / sizeof(KERNELS[0]));

    printf("main_tid=%" PRIu64 "\n", gettid_());
    /* HSA calls (as HIP makes them underneath): delivered only to a tool that asked for the
     * HSA API kinds. */
    hsa_call("init", ROCPROFILER_BUFFER_TRACING_HSA_CORE_API, DOUBLE_SDK_HSA_INIT, 7000);
    hsa_call("system_get_info", ROCPROFILER_BUFFER_TRACING_HSA_CORE_API,
             DOUBLE_SDK_HSA_SYSTEM_GET_INFO, 300);
    hsa_call("agent_get_info", ROCPROFILER_BUFFER_TRACING_HSA_CORE_API,
             DOUBLE_SDK_HSA_AGENT_GET_INFO, 400);
    hsa_call("pool_allocate", ROCPROFILER_BUFFER_TRACING_HSA_AMD_EXT_API,
             DOUBLE_SDK_HSA_AMD_MEMORY_POOL_ALLOCATE, 1500);
    hsa_call("allow_access", ROCPROFILER_BUFFER_TRACING_HSA_AMD_EXT_API,
             DOUBLE_SDK_HSA_AMD_AGENTS_ALLOW_ACCESS, 600);
    hip_call("malloc", DOUBLE_SDK_HIP_MALLOC, 100);

    check(metron_region_begin("forward"), "begin forward");
    hip_begin("memcpy", DOUBLE_SDK_HIP_MEMCPY);
    copy("upload", ROCPROFILER_MEMORY_COPY_HOST_TO_DEVICE, 1 << 20, 150000);
    hip_end("memcpy");
    hip_begin("launch_vector_add", DOUBLE_SDK_HIP_LAUNCH_KERNEL);
    kernel("vector_add", 11, QUEUE_A, (rocprofiler_dim3_t){4096, 2, 1},
           (rocprofiler_dim3_t){256, 1, 1}, 1024, 16, 250000);
    hip_end("launch_vector_add");
    hip_call("synchronize", DOUBLE_SDK_HIP_DEVICE_SYNCHRONIZE, 300);
    hsa_call("signal_wait", ROCPROFILER_BUFFER_TRACING_HSA_CORE_API,
             DOUBLE_SDK_HSA_SIGNAL_WAIT_SCACQUIRE, 4000);
    check(metron_region_end("forward"), "end forward");

    check(metron_region_begin("backward"), "begin backward");
    check(metron_region_begin("reduce"), "begin reduce");
    kernel("reduce_sum", 12, QUEUE_B, (rocprofiler_dim3_t){1024, 1, 1},
           (rocprofiler_dim3_t){1024, 1, 1}, 4096, 0, 125000);
    check(metron_region_end("reduce"), "end reduce");
    check(metron_region_end("backward"), "end backward");

    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);

    /* Enough records to cross the buffer's watermark: delivered on the SDK's thread while the
     * program runs. */
    check(metron_region_begin("loop"), "begin loop");
    for (int i = 0; i < LOOP_DISPATCHES; ++i) {
        uint64_t start = 0;
        double_sdk_dispatch(11, QUEUE_B, (rocprofiler_dim3_t){256, 1, 1},
                            (rocprofiler_dim3_t){256, 1, 1}, 1024, 16, 1000, 5000, &start);
    }
    check(metron_region_end("loop"), "end loop");
    printf("loop_dispatches=%d\n", LOOP_DISPATCHES);

    hip_call("free", DOUBLE_SDK_HIP_FREE, 50);

    /* Metron's own flush goes through rocprofiler_flush_buffer. */
    check(metron_flush(), "metron_flush");

    double_sdk_add_drops(5);
    copy("download", ROCPROFILER_MEMORY_COPY_DEVICE_TO_HOST, 4096, 50000);

    double_sdk_report();
    /* At exit: the SDK finalizes its tools and delivers what is left, then Metron writes. */
    return 0;
}
