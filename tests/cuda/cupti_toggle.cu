// CUPTI's per-launch cost, measured IN ONE PROCESS (the floor Metron's API tracing is held to): CUPTI
// kernel activity and an empty Callback API subscriber are switched on and off at run time
// between many short rounds, each round timing every configuration once (in a rotated order),
// so slow drift of the machine cancels in the per-round differences. The launching thread
// pins itself to one core (CUPTI's and the driver's threads stay free):
//   ./cupti_toggle [rounds=150] [launches=4000] [core=3]
// Prints one line per configuration: median ns/launch over rounds, and the median (and
// 25th/75th percentiles, and the median's standard error, 1.25 x IQR/1.35/sqrt(rounds)) of
// the per-round difference against `K` (kernel records only).
// Configurations:
//   N      nothing enabled (the subscriber exists with no callback enabled)
//   K      CONCURRENT_KERNEL activity only (the target's baseline)
//   KCr    K + empty callback on the 6 runtime launch cbids
//   KC     K + empty callback on the runtime and driver launch cbids (Metron's launch set)
//   KCD    KC + the whole runtime domain enabled (Metron's default subscription)
//   KCDt   KCD with a callback that reads the clock at enter and exit and stores 32 bytes in
//          a thread-local ring (the least an API tracer does)
//   KCDr   the same with the TSC (rdtsc) instead of clock_gettime (what Metron reads now)
//   C      the launch callbacks alone (no kernel activity)
//   nvcc -O2 -arch=sm_90 -o cupti_toggle cupti_toggle.cu -I$CUDA/include -L$CUDA/lib -lcupti
#include <cuda_runtime.h>
#include <cupti.h>
#include <x86intrin.h>

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

__global__ void empty_kernel(int) {}

static unsigned long g_records = 0;
static CUpti_SubscriberHandle g_sub;
static const unsigned RT[] = {211, 214, 269, 270, 430, 431};
static const unsigned DRV[] = {307, 442, 477, 478, 652, 653};

static uint64_t monotonic() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

static void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max) {
    *size = 8 << 20;
    *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
    *max = 0;
}

static void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) g_records++;
    free(buffer);
}

static int g_work = 0;  // 0 nothing, 1 clock_gettime, 2 rdtsc
struct Rec { uint64_t start, end; uint32_t corr, cbid, tid, status; };
static thread_local Rec t_ring[4096];
static thread_local unsigned t_pos = 0;

static void CUPTIAPI on_cb(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* d) {
    if (!g_work) return;
    auto* data = static_cast<const CUpti_CallbackData*>(d);
    if (data->callbackSite == CUPTI_API_ENTER) {
        *data->correlationData = g_work == 2 ? __rdtsc() : monotonic();
    } else {
        Rec& r = t_ring[t_pos++ & 4095];
        r.start = *data->correlationData;
        r.end = g_work == 2 ? __rdtsc() : monotonic();
        r.corr = data->correlationId;
        r.cbid = cbid | (unsigned(domain) << 16);
        r.tid = 0;
        r.status = 0;
    }
}

static void check(CUptiResult r, const char* what) {
    if (r != CUPTI_SUCCESS) {
        const char* s = "?";
        cuptiGetResultString(r, &s);
        std::fprintf(stderr, "%s failed: %s\n", what, s);
        std::exit(2);
    }
}

struct Cfg { const char* name; bool kernel, copies, rt, drv, domain; int work; };
static const Cfg CFGS[] = {
    {"N", false, false, false, false, false, 0},
    {"K", true, false, false, false, false, 0},
    {"KCr", true, false, true, false, false, 0},
    {"KC", true, false, true, true, false, 0},
    {"KCD", true, false, true, true, true, 0},
    {"KCDt", true, false, true, true, true, 1},
    {"C", false, false, true, true, false, 0},
    {"KCDr", true, false, true, true, true, 2},
};
static const int NCFG = sizeof(CFGS) / sizeof(CFGS[0]);

static void apply(const Cfg& c, bool on) {
    if (c.kernel) check(on ? cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
                           : cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "kernel");
    if (c.copies) {
        check(on ? cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) : cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY), "memcpy");
        check(on ? cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET) : cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET), "memset");
    }
    if (c.domain) check(cuptiEnableDomain(on, g_sub, CUPTI_CB_DOMAIN_RUNTIME_API), "domain");
    if (c.rt) for (unsigned id : RT) check(cuptiEnableCallback(on, g_sub, CUPTI_CB_DOMAIN_RUNTIME_API, id), "rt cb");
    if (c.drv) for (unsigned id : DRV) check(cuptiEnableCallback(on, g_sub, CUPTI_CB_DOMAIN_DRIVER_API, id), "drv cb");
    g_work = on ? c.work : 0;
}

static double pct(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    double i = p * (v.size() - 1);
    size_t lo = size_t(i);
    size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (i - lo);
}

int main(int argc, char** argv) {
    int rounds = argc > 1 ? std::atoi(argv[1]) : 150;
    int n = argc > 2 ? std::atoi(argv[2]) : 4000;
    int core = argc > 3 ? std::atoi(argv[3]) : 3;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) std::fprintf(stderr, "pinning failed\n");
    check(cuptiActivityRegisterTimestampCallback(monotonic), "timestamp");
    check(cuptiActivityRegisterCallbacks(requested, completed), "callbacks");
    check(cuptiSubscribe(&g_sub, (CUpti_CallbackFunc)on_cb, nullptr), "subscribe");
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return 1;
    for (int i = 0; i < 2000; ++i) empty_kernel<<<1, 1, 0, s>>>(i);
    if (cudaStreamSynchronize(s) != cudaSuccess) return 1;
    std::vector<std::vector<double>> ns(NCFG);
    for (int r = 0; r < rounds; ++r) {
        for (int j = 0; j < NCFG; ++j) {
            const Cfg& c = CFGS[(j + r) % NCFG];
            apply(c, true);
            for (int i = 0; i < 200; ++i) empty_kernel<<<1, 1, 0, s>>>(i);
            cudaStreamSynchronize(s);
            auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < n; ++i) empty_kernel<<<1, 1, 0, s>>>(i);
            auto t1 = std::chrono::steady_clock::now();
            cudaStreamSynchronize(s);
            apply(c, false);
            cuptiActivityFlushAll(1);
            ns[(j + r) % NCFG].push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
        }
    }
    std::printf("TOGGLE rounds=%d launches=%d records=%lu\n", rounds, n, g_records);
    std::printf("%-5s %9s %9s %9s | %9s %9s %9s %7s\n", "cfg", "median", "p25", "p75", "d_vs_K", "d_p25", "d_p75", "se");
    for (int j = 0; j < NCFG; ++j) {
        std::vector<double> d;
        for (int r = 0; r < rounds; ++r) d.push_back(ns[j][r] - ns[1][r]);
        double se = 1.2533 * (pct(d, 0.75) - pct(d, 0.25)) / 1.349 / std::sqrt(double(rounds));
        std::printf("%-5s %9.1f %9.1f %9.1f | %+9.1f %+9.1f %+9.1f %7.1f\n", CFGS[j].name, pct(ns[j], 0.5),
                    pct(ns[j], 0.25), pct(ns[j], 0.75), pct(d, 0.5), pct(d, 0.25), pct(d, 0.75), se);
    }
    // Pairwise steps that isolate each part.
    auto step = [&](int a, int b, const char* what) {
        std::vector<double> d;
        for (int r = 0; r < rounds; ++r) d.push_back(ns[b][r] - ns[a][r]);
        double se = 1.2533 * (pct(d, 0.75) - pct(d, 0.25)) / 1.349 / std::sqrt(double(rounds));
        std::printf("STEP %-4s -> %-4s %+8.1f ns +- %.1f (p25 %+.1f, p75 %+.1f)  %s\n", CFGS[a].name, CFGS[b].name,
                    pct(d, 0.5), se, pct(d, 0.25), pct(d, 0.75), what);
    };
    step(0, 1, "CUPTI kernel records");
    step(1, 2, "callback dispatch, runtime launch cbids");
    step(1, 3, "callback dispatch, runtime+driver launch cbids (the floor for the join)");
    step(2, 3, "driver launch cbids added");
    step(3, 4, "whole runtime domain enabled");
    step(4, 5, "clock reads + ring store in the callback");
    step(0, 6, "launch callbacks without kernel activity");
    step(4, 7, "TSC reads + ring store in the callback");
    step(7, 5, "clock_gettime instead of the TSC (2 reads)");
    return 0;
}
