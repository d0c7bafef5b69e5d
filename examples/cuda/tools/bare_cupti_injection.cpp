// Bare CUPTI in Metron's configuration, as a CUDA injection library: the baseline for
// Metron's own per-launch cost (docs/gpu-validation.md). Enables the activity kinds Metron
// enables (CONCURRENT_KERNEL, MEMCPY, MEMSET, RUNTIME, DRIVER), CLOCK_MONOTONIC timestamps,
// 8 x 4 MiB buffers, and a Callback API subscriber on the same launch cbids with an empty
// callback; completed buffers are only walked and counted. No Metron at all.
//   g++ -O2 -shared -fPIC -I$CUDA/include bare_cupti_injection.cpp -o libbare_cupti.so -L$CUDA/lib -lcupti
//   CUDA_INJECTION64_PATH=$PWD/libbare_cupti.so ./launch_overhead 100000
// BARE_CUPTI_MODE=kernel: CONCURRENT_KERNEL activity only, no subscriber (the baseline of
// Metron's API-tracing target: what CUPTI's kernel records alone cost). kernel_cb: the same
// plus an empty Callback API subscriber on the launch cbids (what the kernel<->region join needs).
#include <cupti.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <initializer_list>
#include <string>

static std::atomic<unsigned long> g_records{0};

static uint64_t monotonic() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

static void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max) {
    *size = 4 << 20;
    *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
    *max = 0;
}

static void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) g_records++;
    free(buffer);
}

static void CUPTIAPI on_launch(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

static void report() {
    cuptiActivityFlushAll(1);
    std::fprintf(stderr, "bare_cupti: %lu records\n", g_records.load());
}

extern "C" int InitializeInjection(void) {
    cuptiActivityRegisterTimestampCallback(monotonic);
    cuptiActivityRegisterCallbacks(requested, completed);
    const char* mode = std::getenv("BARE_CUPTI_MODE");
    if (mode && (std::string(mode) == "kernel" || std::string(mode) == "kernel_cb")) {
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        if (std::string(mode) == "kernel_cb") {  // + an empty subscriber on the launch cbids
            CUpti_SubscriberHandle sub;
            cuptiSubscribe(&sub, on_launch, nullptr);
            for (unsigned id : {211u, 214u, 269u, 270u, 430u, 431u})
                cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, id);
            for (unsigned id : {307u, 442u, 477u, 478u, 652u, 653u})
                cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, id);
        }
        atexit(report);
        return 1;
    }
    for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                 CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME,
                                 CUPTI_ACTIVITY_KIND_DRIVER})
        cuptiActivityEnable(k);
    CUpti_SubscriberHandle sub;
    cuptiSubscribe(&sub, on_launch, nullptr);
    for (unsigned id : {211u, 214u, 269u, 270u, 430u, 431u})
        cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, id);
    for (unsigned id : {307u, 442u, 477u, 478u, 652u, 653u})
        cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, id);
    atexit(report);
    return 1;
}
