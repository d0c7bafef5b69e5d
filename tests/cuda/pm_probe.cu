// A probe of CUPTI PM sampling on its own, without Metron, to find why
// cuptiPmSamplingDecodeData did not return on the H100 once samples were pending.
//
// Variant "a" is the call sequence of NVIDIA's CUPTI sample `pm_sampling` (samples/pm_sampling/
// pm_sampling.cpp + pm_sampling.h, CUDA 12.6+), with its sizes: cuInit; DeviceSupported;
// cuptiProfilerInitialize + cuptiDeviceGetChipName + GetCounterAvailability BEFORE any context
// exists; a PM_SAMPLING host object with the availability image; the config image;
// cuptiProfilerInitialize again; Enable(device 0); SetConfig (512 MiB hardware buffer, 10,000 ns,
// GPU_TIME_INTERVAL, KEEP_OLDEST); counter-data image for 10,000 samples; THEN the workload's
// allocations (which create the primary context); a decode thread started before Start that
// calls DecodeData in a tight loop with no CUDA context current, reading completed samples
// (GetCounterDataInfo, GetSampleInfo, EvaluateToGpuValues) and re-initializing the image with
// CounterDataImageInitialize after each decode; Start; the kernels from the main thread;
// cudaDeviceSynchronize; Stop; stop flag + join; Disable; cuptiProfilerDeInitialize.
// After the join the probe adds one thing the sample does not do: it decodes what is left on
// the main thread (final=0 turns it off).
//
// Other variants change one or more knobs, each also settable as key=value after the variant:
//   a  the sample's flow (above).
//   b  a second thread shaped like Metron's decoder: the context exists before Enable
//      (ctx_first), the decode thread pushes it (push), decodes every 20 ms (sleep_ms), Metron's
//      sizes (256 MiB buffer, 4096 samples, 100 us), the image reset by copying a pristine copy
//      (reset=memcpy).
//   c  a + CUPTI activity tracing as Metron does it (act: thread-id type SYSTEM, buffer
//      callbacks, CONCURRENT_KERNEL + MEMCPY + MEMSET enabled before cuInit).
//   d  everything Metron does: b + act + its CUPTI timestamp callback (tscb: CLOCK_MONOTONIC)
//      + a Callback API subscriber on cudaLaunchKernel and the resource domain (cb) + the PM
//      set-up done inside the first cudaLaunchKernel ENTER callback on the launching thread
//      (cbsetup), the decode thread started there after Start.
//   e  no decode thread: DecodeData on the launching thread in each idle gap (inline).
//   t  a + the timestamp callback only (tscb).
// Knobs: late_init ctx_first push sleep_ms hwbuf maxsamples interval(ns) reset(init|memcpy) act tscb cb
// cbsetup inline final reps gap_us copy_mib fma_iters abort_s samples(print each sample: 1)
// metrics(comma list).
//
// Output (stdout, line-buffered): STEP lines for each CUPTI/CUDA step with its result and time;
// DECODE lines (thread, ms since Start, duration, result, stop reason, overflow, total/
// populated/completed); KERNEL lines (host brackets, CUPTI timestamps, and cudaEvent ms);
// KACT lines (activity records when act=1); SAMPLE lines; per-kernel-window means; SUMMARY.
// A watchdog prints "DecodeData blocked" (or "<step> blocked") once a call has been inside
// CUPTI/CUDA for 5 s, and after abort_s (default 20) prints the summary so far and exits 3.
//
// Build (device): nvcc -O2 -std=c++17 -arch=sm_90 -I$CUPTI/include -o pm_probe pm_probe.cu
//   -L$CUPTI/lib64 -lcupti -lcuda -lpthread
//   pm_probe a | pm_probe d | pm_probe a hwbuf=268435456 maxsamples=4096 ...
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

// ---------------------------------------------------------------- knobs
struct Opt {
    std::string variant = "a";
    int ctx_first = 0, push = 0, sleep_ms = 0, act = 0, tscb = 0, cb = 0, cbsetup = 0, late_init = 0;
    int inline_decode = 0, final_drain = 1, reps = 3, gap_us = 3000, abort_s = 20, samples = 1;
    int reset_memcpy = 0;
    size_t hwbuf = (size_t)512 << 20;
    uint64_t maxsamples = 10000, interval = 10000;
    size_t copy_mib = 2048;
    int fma_iters = 40000;
    std::vector<std::string> metrics = {
        "dramc__read_throughput.avg.pct_of_peak_sustained_elapsed",
        "dramc__write_throughput.avg.pct_of_peak_sustained_elapsed",
        "sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed",
        "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed",
    };
};
static Opt O;

static uint64_t clk(clockid_t c) {
    timespec t;
    clock_gettime(c, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
static uint64_t mono() { return clk(CLOCK_MONOTONIC); }
static uint64_t T0 = 0;  // monotonic at program start
static double ms_since(uint64_t t) { return (double)(mono() - t) / 1e6; }
static long tid() { return (long)syscall(SYS_gettid); }

// ---------------------------------------------------------------- watchdog
// Two slots: 0 for the decode side (DecodeData, GetCounterDataInfo: the decode thread), 1 for
// every other watched step (the main thread), so one thread's step never hides the other's.
struct Slot {
    std::atomic<uint64_t> enter_ns{0};  // monotonic when the current watched call began
    std::atomic<const char*> step{nullptr};
    std::atomic<long> tid{0};
    std::atomic<int> seq{0};
};
static Slot g_slot[2];
static void summary(const char* why);

struct Watch {
    Slot& s;
    Watch(const char* name)
        : s(g_slot[std::strcmp(name, "DecodeData") == 0 || std::strcmp(name, "GetCounterDataInfo") == 0 ? 0 : 1]) {
        s.step.store(name);
        s.tid.store(tid());
        s.seq.fetch_add(1);
        s.enter_ns.store(mono());
    }
    ~Watch() { s.enter_ns.store(0); }
};

static void watchdog() {
    int reported[2] = {-1, -1};
    for (;;) {
        usleep(100000);
        for (int k = 0; k < 2; ++k) {
            Slot& sl = g_slot[k];
            uint64_t e = sl.enter_ns.load();
            if (!e) continue;
            double s = (double)(mono() - e) / 1e9;
            int seq = sl.seq.load();
            const char* step = sl.step.load();
            if (s >= 5.0 && reported[k] != seq) {
                reported[k] = seq;
                std::printf("WATCHDOG %s blocked: inside it for %.1f s on thread %ld (variant %s)\n",
                            step, s, sl.tid.load(), O.variant.c_str());
                std::fflush(stdout);
            }
            if (s >= O.abort_s) {
                std::printf("WATCHDOG giving up after %.1f s inside %s: summary so far, exit 3\n", s, step);
                summary("watchdog");
                std::fflush(stdout);
                _exit(3);
            }
        }
    }
}

// ---------------------------------------------------------------- checks
static const char* cupti_str(CUptiResult r) {
    const char* s = "?";
    cuptiGetResultString(r, &s);
    return s;
}
#define CUPTI_STEP(name, call)                                                                 \
    ({                                                                                         \
        uint64_t t_ = mono();                                                                  \
        CUptiResult r_;                                                                        \
        {                                                                                      \
            Watch w_(name);                                                                    \
            r_ = (call);                                                                       \
        }                                                                                      \
        std::printf("STEP %-34s rc=%d %s  %.3f ms  tid=%ld +%.1f ms\n", name, (int)r_,         \
                    r_ == CUPTI_SUCCESS ? "" : cupti_str(r_), (double)(mono() - t_) / 1e6,     \
                    tid(), ms_since(T0));                                                      \
        r_;                                                                                    \
    })
#define MUST(name, call)                                                                       \
    do {                                                                                       \
        if (CUPTI_STEP(name, call) != CUPTI_SUCCESS) {                                         \
            summary("failed step");                                                            \
            std::exit(2);                                                                      \
        }                                                                                      \
    } while (0)
#define CU(call)                                                                               \
    do {                                                                                       \
        CUresult e_ = (call);                                                                  \
        if (e_ != CUDA_SUCCESS) {                                                              \
            std::printf("CUDA driver error %d at %s:%d %s\n", (int)e_, __FILE__, __LINE__,     \
                        #call);                                                                \
            std::exit(2);                                                                      \
        }                                                                                      \
    } while (0)
#define RT(call)                                                                               \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                               \
            std::printf("CUDA runtime error %s at %s:%d %s\n", cudaGetErrorString(e_),         \
                        __FILE__, __LINE__, #call);                                            \
            std::exit(2);                                                                      \
        }                                                                                      \
    } while (0)

// ---------------------------------------------------------------- kernels (as pm_mix.cu)
__global__ void copy_kernel(const float4* __restrict__ src, float4* __restrict__ dst, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = src[i];
}
__global__ void fma_kernel(float* out, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float a0 = i, a1 = i + 1, a2 = i + 2, a3 = i + 3, a4 = i + 4, a5 = i + 5, a6 = i + 6, a7 = i + 7;
    for (int k = 0; k < iters; ++k) {
        a0 = fmaf(a0, 0.9999f, 0.001f); a1 = fmaf(a1, 0.9999f, 0.001f);
        a2 = fmaf(a2, 0.9999f, 0.001f); a3 = fmaf(a3, 0.9999f, 0.001f);
        a4 = fmaf(a4, 0.9999f, 0.001f); a5 = fmaf(a5, 0.9999f, 0.001f);
        a6 = fmaf(a6, 0.9999f, 0.001f); a7 = fmaf(a7, 0.9999f, 0.001f);
    }
    out[i] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

// ---------------------------------------------------------------- state
static std::string g_chip;
static std::vector<uint8_t> g_avail, g_config, g_image, g_pristine;
static CUpti_Profiler_Host_Object* g_host = nullptr;
static CUpti_PmSampling_Object* g_pm = nullptr;
static std::vector<const char*> g_names;
static CUcontext g_ctx = nullptr;
static std::atomic<bool> g_stop_decode{false};
static std::atomic<bool> g_started{false};
static uint64_t g_start_mono = 0;
static std::thread g_decode_thread;
static std::mutex g_mu;  // guards the sample/decoder stats below (printing at the end)

struct Sample { uint64_t start, end; std::vector<double> v; };
static std::vector<Sample> g_samples;
struct DecodeStat { int calls = 0, errors = 0, overflows = 0, full = 0, eval_errors = 0; double max_ms = 0; };
static DecodeStat g_ds;
static CUptiResult g_thread_result = CUPTI_SUCCESS;
struct KWin { const char* name; uint64_t cupti0, cupti1, mono0, mono1, real0, real1; float ev_ms; };
static std::vector<KWin> g_kwins;
struct KAct { std::string name; uint64_t start, end; };
static std::vector<KAct> g_kact;
static std::mutex g_act_mu;

// ---------------------------------------------------------------- PM sampling steps
static void pm_enable_config_image() {
    // The sample's CuptiPmSampling::SetUp: cuptiProfilerInitialize (a second time).
    CUpti_Profiler_Initialize_Params ip = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    MUST("cuptiProfilerInitialize(2)", cuptiProfilerInitialize(&ip));
    CUcontext cur = nullptr;
    cuCtxGetCurrent(&cur);
    std::printf("INFO context current at Enable: %p\n", (void*)cur);
    CUpti_PmSampling_Enable_Params en = {CUpti_PmSampling_Enable_Params_STRUCT_SIZE};
    en.deviceIndex = 0;
    MUST("cuptiPmSamplingEnable", cuptiPmSamplingEnable(&en));
    g_pm = en.pPmSamplingObject;
    CUpti_PmSampling_SetConfig_Params sc = {CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE};
    sc.pPmSamplingObject = g_pm;
    sc.configSize = g_config.size();
    sc.pConfig = g_config.data();
    sc.hardwareBufferSize = O.hwbuf;
    sc.samplingInterval = O.interval;
    sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
    // hwBufferAppendMode left 0 (KEEP_OLDEST), as the sample leaves it.
    MUST("cuptiPmSamplingSetConfig", cuptiPmSamplingSetConfig(&sc));
    CUpti_PmSampling_GetCounterDataSize_Params ds = {CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE};
    ds.pPmSamplingObject = g_pm;
    ds.numMetrics = g_names.size();
    ds.pMetricNames = g_names.data();
    ds.maxSamples = (uint32_t)O.maxsamples;
    MUST("cuptiPmSamplingGetCounterDataSize", cuptiPmSamplingGetCounterDataSize(&ds));
    g_image.assign(ds.counterDataSize, 0);
    CUpti_PmSampling_CounterDataImage_Initialize_Params ci = {CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    ci.pPmSamplingObject = g_pm;
    ci.counterDataSize = g_image.size();
    ci.pCounterData = g_image.data();
    MUST("cuptiPmSamplingCounterDataImageInitialize", cuptiPmSamplingCounterDataImageInitialize(&ci));
    g_pristine = g_image;
    std::printf("INFO counter-data image %zu bytes for %llu samples, hw buffer %zu, interval %llu ns\n",
                g_image.size(), (unsigned long long)O.maxsamples, O.hwbuf,
                (unsigned long long)O.interval);
}

static void reset_image() {
    if (O.reset_memcpy) {
        std::memcpy(g_image.data(), g_pristine.data(), g_image.size());
        return;
    }
    CUpti_PmSampling_CounterDataImage_Initialize_Params ci = {CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    ci.pPmSamplingObject = g_pm;
    ci.counterDataSize = g_image.size();
    ci.pCounterData = g_image.data();
    CUptiResult r = cuptiPmSamplingCounterDataImageInitialize(&ci);
    if (r != CUPTI_SUCCESS) std::printf("RESET rc=%d %s\n", (int)r, cupti_str(r));
}

// One decode as the sample's DecodeCounterData loop body: DecodeData, GetCounterDataInfo,
// each completed sample's info and values, reset. Returns the DecodeData result; *stop gets the
// stop reason.
static CUptiResult decode_once(const char* who, int* stop_out) {
    CUpti_PmSampling_DecodeData_Params dp = {CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE};
    dp.pPmSamplingObject = g_pm;
    dp.pCounterDataImage = g_image.data();
    dp.counterDataImageSize = g_image.size();
    uint64_t t0 = mono();
    CUptiResult r;
    {
        Watch w("DecodeData");
        r = cuptiPmSamplingDecodeData(&dp);
    }
    double dms = (double)(mono() - t0) / 1e6;
    CUpti_PmSampling_GetCounterDataInfo_Params ci = {CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE};
    ci.pCounterDataImage = g_image.data();
    ci.counterDataImageSize = g_image.size();
    CUptiResult ri = CUPTI_SUCCESS;
    if (r == CUPTI_SUCCESS) {
        Watch w("GetCounterDataInfo");
        ri = cuptiPmSamplingGetCounterDataInfo(&ci);
    }
    std::lock_guard<std::mutex> g(g_mu);
    int n = g_ds.calls++;
    if (dms > g_ds.max_ms) g_ds.max_ms = dms;
    if (r != CUPTI_SUCCESS) g_ds.errors++;
    if (dp.overflow) g_ds.overflows++;
    if (dp.decodeStopReason == CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL) g_ds.full++;
    bool verbose = n < 40 || ci.numCompletedSamples > 0 || r != CUPTI_SUCCESS || dp.overflow;
    if (verbose)
        std::printf("DECODE #%d %s tid=%ld t=%+.3f ms dur=%.3f ms rc=%d %s stop=%d overflow=%d "
                    "info_rc=%d total=%zu populated=%zu completed=%zu\n",
                    n, who, tid(), g_start_mono ? ms_since(g_start_mono) : -1.0, dms, (int)r,
                    r == CUPTI_SUCCESS ? "" : cupti_str(r), (int)dp.decodeStopReason,
                    (int)dp.overflow, (int)ri, ci.numTotalSamples, ci.numPopulatedSamples,
                    ci.numCompletedSamples);
    if (stop_out) *stop_out = (int)dp.decodeStopReason;
    if (r != CUPTI_SUCCESS || ri != CUPTI_SUCCESS) return r != CUPTI_SUCCESS ? r : ri;
    std::vector<double> vals(g_names.size());
    for (size_t i = 0; i < ci.numCompletedSamples; ++i) {
        CUpti_PmSampling_CounterData_GetSampleInfo_Params si = {CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE};
        si.pPmSamplingObject = g_pm;
        si.pCounterDataImage = g_image.data();
        si.counterDataImageSize = g_image.size();
        si.sampleIndex = i;
        CUptiResult a = cuptiPmSamplingCounterDataGetSampleInfo(&si);
        CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
        ev.pHostObject = g_host;
        ev.pCounterDataImage = g_image.data();
        ev.counterDataImageSize = g_image.size();
        ev.ppMetricNames = g_names.data();
        ev.numMetrics = g_names.size();
        ev.rangeIndex = i;
        ev.pMetricValues = vals.data();
        CUptiResult b = cuptiProfilerHostEvaluateToGpuValues(&ev);
        if (a != CUPTI_SUCCESS || b != CUPTI_SUCCESS) {
            if (g_ds.eval_errors++ < 5)
                std::printf("EVAL sample %zu: GetSampleInfo rc=%d, Evaluate rc=%d %s\n", i, (int)a,
                            (int)b, cupti_str(b));
            continue;
        }
        g_samples.push_back(Sample{si.startTimestamp, si.endTimestamp, vals});
    }
    reset_image();
    return CUPTI_SUCCESS;
}

static void decode_thread_fn() {
    std::printf("INFO decode thread tid=%ld started\n", tid());
    if (O.push && g_ctx) {
        CUresult e = cuCtxPushCurrent(g_ctx);
        std::printf("INFO decode thread cuCtxPushCurrent(%p) -> %d\n", (void*)g_ctx, (int)e);
    }
    // The sample's loop: decode until the stop flag, return on the first error.
    while (!g_stop_decode.load()) {
        CUptiResult r = decode_once("thread", nullptr);
        if (r != CUPTI_SUCCESS) {
            g_thread_result = r;
            std::printf("INFO decode thread: DecodePmSamplingData failed with %s, thread returns\n",
                        cupti_str(r));
            return;
        }
        if (O.sleep_ms) std::this_thread::sleep_for(std::chrono::milliseconds(O.sleep_ms));
    }
}

static void pm_start() {
    if (!O.inline_decode && !O.cbsetup)
        g_decode_thread = std::thread(decode_thread_fn);  // the sample: thread before Start
    CUpti_PmSampling_Start_Params st = {CUpti_PmSampling_Start_Params_STRUCT_SIZE};
    st.pPmSamplingObject = g_pm;
    g_start_mono = mono();
    MUST("cuptiPmSamplingStart", cuptiPmSamplingStart(&st));
    g_started = true;
    if (!O.inline_decode && O.cbsetup) g_decode_thread = std::thread(decode_thread_fn);  // Metron
}

// ---------------------------------------------------------------- CUPTI activity / callbacks
static void CUPTIAPI buf_req(uint8_t** buf, size_t* size, size_t* max) {
    *size = 8 << 20;
    *buf = (uint8_t*)aligned_alloc(8, *size);
    *max = 0;
}
static void CUPTIAPI buf_done(CUcontext, uint32_t, uint8_t* buf, size_t, size_t valid) {
    CUpti_Activity* rec = nullptr;
    std::lock_guard<std::mutex> g(g_act_mu);
    while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            auto* k = (CUpti_ActivityKernel10*)rec;
            g_kact.push_back(KAct{k->name ? k->name : "?", k->start, k->end});
        }
    }
    free(buf);
}
static uint64_t CUPTIAPI ts_cb() { return mono(); }

static std::atomic<int> g_cb_launches{0};
// The runtime's kernel launches (<<<>>> goes through __cudaLaunchKernel in CUDA 13).
static const CUpti_CallbackId kLaunchCbids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000};
static void CUPTIAPI on_cb(void*, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void* data) {
    if (dom == CUPTI_CB_DOMAIN_RESOURCE) {
        std::printf("CALLBACK resource cbid=%u tid=%ld +%.1f ms\n", cbid, tid(), ms_since(T0));
        return;
    }
    if (dom != CUPTI_CB_DOMAIN_RUNTIME_API) return;
    auto* d = (const CUpti_CallbackData*)data;
    if (d->callbackSite != CUPTI_API_ENTER) return;
    if (g_cb_launches.load() < 3)
        std::printf("CALLBACK launch cbid=%u %s tid=%ld\n", cbid, d->functionName, tid());
    if (g_cb_launches.fetch_add(1) == 0 && O.cbsetup) {
        // Metron: the one-time set-up at the first launch's ENTER, on the launching thread.
        std::printf("INFO set-up inside the cudaLaunchKernel ENTER callback, ctx %p\n", (void*)d->context);
        g_ctx = d->context;
        pm_enable_config_image();
        pm_start();
    }
}

// ---------------------------------------------------------------- summary
static bool g_summarized = false;
static void summary(const char* why) {
    // Bounded wait: from the watchdog, a thread stuck in CUPTI may hold the lock.
    std::unique_lock<std::mutex> g(g_mu, std::defer_lock);
    for (int i = 0; i < 40 && !g.try_lock(); ++i) usleep(50000);
    if (!g.owns_lock()) std::printf("INFO summary without the lock (a thread holds it)\n");
    if (g_summarized) return;
    g_summarized = true;
    if (O.samples)
        for (size_t i = 0; i < g_samples.size(); ++i) {
            const Sample& s = g_samples[i];
            std::printf("SAMPLE %zu %llu %llu", i, (unsigned long long)s.start, (unsigned long long)s.end);
            for (double v : s.v) std::printf(" %.3f", v);
            std::printf("\n");
        }
    {
        std::unique_lock<std::mutex> ga(g_act_mu, std::defer_lock);
        for (int i = 0; i < 20 && !ga.try_lock(); ++i) usleep(50000);
        for (auto& k : g_kact)
            std::printf("KACT %s %llu %llu %.3f ms\n", k.name.substr(0, 40).c_str(),
                        (unsigned long long)k.start, (unsigned long long)k.end, (k.end - k.start) / 1e6);
    }
    // Which clock do the sample timestamps follow? Compare the first sample with the brackets.
    for (auto& w : g_kwins) {
        // Samples whose midpoint falls in the window, in each candidate clock domain.
        const char* dom[3] = {"cupti", "monotonic", "realtime"};
        uint64_t lo[3] = {w.cupti0, w.mono0, w.real0}, hi[3] = {w.cupti1, w.mono1, w.real1};
        for (int d = 0; d < 3; ++d) {
            std::vector<double> sum(g_names.size(), 0.0), mx(g_names.size(), 0.0);
            size_t n = 0;
            for (auto& s : g_samples) {
                uint64_t mid = s.start / 2 + s.end / 2;
                if (mid < lo[d] || mid > hi[d]) continue;
                ++n;
                for (size_t m = 0; m < s.v.size(); ++m) {
                    sum[m] += s.v[m];
                    if (s.v[m] > mx[m]) mx[m] = s.v[m];
                }
            }
            if (!n) continue;
            std::printf("WINDOW %s %s-clock bracket %.3f ms event %.3f ms: %zu samples, mean/max:", w.name,
                        dom[d], (hi[d] - lo[d]) / 1e6, w.ev_ms, n);
            for (size_t m = 0; m < sum.size(); ++m) std::printf(" %.2f/%.2f", sum[m] / n, mx[m]);
            std::printf("\n");
        }
    }
    if (!g_samples.empty())
        std::printf("INFO first sample [%llu, %llu], last [%llu, %llu]\n",
                    (unsigned long long)g_samples.front().start, (unsigned long long)g_samples.front().end,
                    (unsigned long long)g_samples.back().start, (unsigned long long)g_samples.back().end);
    std::printf("SUMMARY variant=%s why=%s samples=%zu decodes=%d decode_errors=%d overflows=%d "
                "image_full=%d eval_errors=%d max_decode_ms=%.3f thread_result=%d kernels=%zu act_kernels=%zu\n",
                O.variant.c_str(), why, g_samples.size(), g_ds.calls, g_ds.errors, g_ds.overflows,
                g_ds.full, g_ds.eval_errors, g_ds.max_ms, (int)g_thread_result, g_kwins.size(),
                g_kact.size());
    std::fflush(stdout);
}

// ---------------------------------------------------------------- options
static void preset(const std::string& v) {
    O.variant = v;
    if (v == "a") return;
    if (v == "b" || v == "d") {
        O.ctx_first = 1; O.push = 1; O.sleep_ms = 20; O.hwbuf = (size_t)256 << 20;
        O.maxsamples = 4096; O.interval = 100000; O.reset_memcpy = 1;
    }
    if (v == "c") O.act = 1;
    if (v == "d") { O.act = 1; O.tscb = 1; O.cb = 1; O.cbsetup = 1; }
    if (v == "e") O.inline_decode = 1;
    if (v == "t") O.tscb = 1;
    if (v != "b" && v != "c" && v != "d" && v != "e" && v != "t") {
        std::fprintf(stderr, "unknown variant %s (a b c d e t)\n", v.c_str());
        std::exit(1);
    }
}
static void knob(const std::string& kv) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos) { std::fprintf(stderr, "knob %s: want key=value\n", kv.c_str()); std::exit(1); }
    std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    long long n = std::atoll(v.c_str());
    if (k == "ctx_first") O.ctx_first = n; else if (k == "push") O.push = n;
    else if (k == "late_init") O.late_init = n;
    else if (k == "sleep_ms") O.sleep_ms = n; else if (k == "act") O.act = n;
    else if (k == "tscb") O.tscb = n; else if (k == "cb") O.cb = n;
    else if (k == "cbsetup") O.cbsetup = n; else if (k == "inline") O.inline_decode = n;
    else if (k == "final") O.final_drain = n; else if (k == "reps") O.reps = n;
    else if (k == "gap_us") O.gap_us = n; else if (k == "abort_s") O.abort_s = n;
    else if (k == "samples") O.samples = n; else if (k == "hwbuf") O.hwbuf = n;
    else if (k == "maxsamples") O.maxsamples = n; else if (k == "interval") O.interval = n;
    else if (k == "copy_mib") O.copy_mib = n; else if (k == "fma_iters") O.fma_iters = n;
    else if (k == "reset") O.reset_memcpy = (v == "memcpy");
    else if (k == "metrics") {
        O.metrics.clear();
        size_t p = 0;
        while (p <= v.size()) {
            size_t c = v.find(',', p);
            if (c == std::string::npos) c = v.size();
            if (c > p) O.metrics.push_back(v.substr(p, c - p));
            p = c + 1;
        }
    } else { std::fprintf(stderr, "unknown knob %s\n", k.c_str()); std::exit(1); }
}

// ---------------------------------------------------------------- main
int main(int argc, char** argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    T0 = mono();
    if (argc > 1) preset(argv[1]);
    for (int i = 2; i < argc; ++i) knob(argv[i]);
    for (auto& m : O.metrics) g_names.push_back(m.c_str());
    std::printf("CONFIG variant=%s ctx_first=%d push=%d sleep_ms=%d hwbuf=%zu maxsamples=%llu interval=%llu "
                "reset=%s act=%d tscb=%d cb=%d cbsetup=%d inline=%d final=%d reps=%d gap_us=%d metrics=%zu\n",
                O.variant.c_str(), O.ctx_first, O.push, O.sleep_ms, O.hwbuf, (unsigned long long)O.maxsamples,
                (unsigned long long)O.interval, O.reset_memcpy ? "memcpy" : "init", O.act, O.tscb, O.cb,
                O.cbsetup, O.inline_decode, O.final_drain, O.reps, O.gap_us, O.metrics.size());
    std::thread(watchdog).detach();

    // Metron's start-up (before the application touches CUDA): activity + callbacks.
    if (O.act || O.tscb) MUST("cuptiSetThreadIdType(SYSTEM)", cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM));
    if (O.tscb) MUST("cuptiActivityRegisterTimestampCallback", cuptiActivityRegisterTimestampCallback(ts_cb));
    if (O.act) {
        MUST("cuptiActivityRegisterCallbacks", cuptiActivityRegisterCallbacks(buf_req, buf_done));
        MUST("cuptiActivityEnable(CONCURRENT_KERNEL)", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
        MUST("cuptiActivityEnable(MEMCPY)", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
        MUST("cuptiActivityEnable(MEMSET)", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
    }
    CUpti_SubscriberHandle sub = nullptr;
    if (O.cb || O.cbsetup) {
        MUST("cuptiSubscribe", cuptiSubscribe(&sub, (CUpti_CallbackFunc)on_cb, nullptr));
        for (CUpti_CallbackId id : kLaunchCbids)
            MUST("cuptiEnableCallback(launch)", cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, id));
        // Metron's driver-domain launch ids too (gpu-nvidia/src/sys.rs DRIVER_LAUNCH_CBIDS).
        for (CUpti_CallbackId id : {307u, 442u, 477u, 478u, 652u, 653u})
            MUST("cuptiEnableCallback(driver launch)", cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, id));
        MUST("cuptiEnableCallback(CONTEXT_CREATED)",
             cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED));
        MUST("cuptiEnableCallback(CONTEXT_DESTROY_STARTING)",
             cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING));
    }

    // The sample's main(): cuInit, device support, chip name, counter availability.
    CU(cuInit(0));
    {
        uint32_t cv = 0;
        int dv = 0;
        cuptiGetVersion(&cv);
        cuDriverGetVersion(&dv);
        std::printf("INFO CUPTI API version %u, driver CUDA version %d\n", cv, dv);
    }
    CUdevice dev;
    CU(cuDeviceGet(&dev, 0));
    {
        CUpti_Profiler_DeviceSupported_Params p = {CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE};
        p.cuDevice = dev;
        p.api = CUPTI_PROFILER_PM_SAMPLING;
        MUST("cuptiProfilerDeviceSupported", cuptiProfilerDeviceSupported(&p));
        std::printf("INFO PM sampling supported=%d arch=%d sli=%d vgpu=%d cc=%d cmp=%d wsl=%d\n",
                    (int)p.isSupported, (int)p.architecture, (int)p.sli, (int)p.vGpu,
                    (int)p.confidentialCompute, (int)p.cmp, (int)p.wsl);
    }
    // late_init=1: the profiler is initialized after the context exists (Metron's order).
    if (O.late_init) {
        RT(cudaFree(0));
        cuCtxGetCurrent(&g_ctx);
        std::printf("INFO context created before cuptiProfilerInitialize: %p\n", (void*)g_ctx);
    }
    {
        CUpti_Profiler_Initialize_Params ip = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
        MUST("cuptiProfilerInitialize(1)", cuptiProfilerInitialize(&ip));
        CUpti_Device_GetChipName_Params cn = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
        cn.deviceIndex = 0;
        MUST("cuptiDeviceGetChipName", cuptiDeviceGetChipName(&cn));
        g_chip = cn.pChipName;
        std::printf("INFO chip %s\n", g_chip.c_str());
    }
    if (O.ctx_first && !O.late_init) {
        RT(cudaFree(0));  // Metron: the context exists before PM sampling is set up
        cuCtxGetCurrent(&g_ctx);
        std::printf("INFO context created first: %p\n", (void*)g_ctx);
    }
    {
        CUpti_PmSampling_GetCounterAvailability_Params ca = {CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE};
        ca.deviceIndex = 0;
        MUST("cuptiPmSamplingGetCounterAvailability(size)", cuptiPmSamplingGetCounterAvailability(&ca));
        g_avail.assign(ca.counterAvailabilityImageSize, 0);
        ca.pCounterAvailabilityImage = g_avail.data();
        MUST("cuptiPmSamplingGetCounterAvailability", cuptiPmSamplingGetCounterAvailability(&ca));
    }
    // PmSamplingCollection: host object, config image, passes.
    {
        CUpti_Profiler_Host_Initialize_Params hi = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
        hi.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
        hi.pChipName = g_chip.c_str();
        hi.pCounterAvailabilityImage = g_avail.data();
        MUST("cuptiProfilerHostInitialize", cuptiProfilerHostInitialize(&hi));
        g_host = hi.pHostObject;
        CUpti_Profiler_Host_ConfigAddMetrics_Params am = {CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
        am.pHostObject = g_host;
        am.ppMetricNames = g_names.data();
        am.numMetrics = g_names.size();
        MUST("cuptiProfilerHostConfigAddMetrics", cuptiProfilerHostConfigAddMetrics(&am));
        CUpti_Profiler_Host_GetConfigImageSize_Params gs = {CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
        gs.pHostObject = g_host;
        MUST("cuptiProfilerHostGetConfigImageSize", cuptiProfilerHostGetConfigImageSize(&gs));
        g_config.assign(gs.configImageSize, 0);
        CUpti_Profiler_Host_GetConfigImage_Params gi = {CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
        gi.pHostObject = g_host;
        gi.pConfigImage = g_config.data();
        gi.configImageSize = g_config.size();
        MUST("cuptiProfilerHostGetConfigImage", cuptiProfilerHostGetConfigImage(&gi));
        CUpti_Profiler_Host_GetNumOfPasses_Params np = {CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
        np.pConfigImage = g_config.data();
        np.configImageSize = g_config.size();
        MUST("cuptiProfilerHostGetNumOfPasses", cuptiProfilerHostGetNumOfPasses(&np));
        std::printf("INFO config image %zu bytes, %zu pass(es)\n", g_config.size(), np.numOfPasses);
    }
    if (!O.cbsetup) pm_enable_config_image();

    // The workload's set-up (the sample's vectorWorkLoad.SetUp(): after Enable, before Start).
    int sms = 0;
    RT(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const size_t n4 = (O.copy_mib << 20) / sizeof(float4);
    float4 *src, *dst;
    float* out;
    RT(cudaMalloc(&src, n4 * sizeof(float4)));
    RT(cudaMalloc(&dst, n4 * sizeof(float4)));
    RT(cudaMemset(src, 1, n4 * sizeof(float4)));
    const int fma_blocks = sms * 8, fma_threads = 256;
    RT(cudaMalloc(&out, (size_t)fma_blocks * fma_threads * sizeof(float)));
    cudaEvent_t e0, e1;
    RT(cudaEventCreate(&e0));
    RT(cudaEventCreate(&e1));
    if (!g_ctx) cuCtxGetCurrent(&g_ctx);
    // Warm-up launches (module load) before Start; with cbsetup the first launch sets up.
    copy_kernel<<<sms * 8, 256>>>(src, dst, 1024);
    fma_kernel<<<1, 32>>>(out, 1);
    RT(cudaDeviceSynchronize());
    uint64_t c0, m0 = mono(), r0 = clk(CLOCK_REALTIME);
    cuptiGetTimestamp(&c0);
    std::printf("CLOCKS cupti=%llu monotonic=%llu realtime=%llu\n", (unsigned long long)c0,
                (unsigned long long)m0, (unsigned long long)r0);
    if (!O.cbsetup) pm_start();

    for (int r = 0; r < O.reps; ++r) {
        for (int which = 0; which < 2; ++which) {
            KWin w{which == 0 ? "copy" : "fma"};
            cuptiGetTimestamp(&w.cupti0);
            w.mono0 = mono();
            w.real0 = clk(CLOCK_REALTIME);
            RT(cudaEventRecord(e0));
            if (which == 0)
                copy_kernel<<<sms * 8, 256>>>(src, dst, n4);
            else
                fma_kernel<<<fma_blocks, fma_threads>>>(out, O.fma_iters);
            RT(cudaEventRecord(e1));
            {
                Watch wt("cudaEventSynchronize");
                RT(cudaEventSynchronize(e1));
            }
            cuptiGetTimestamp(&w.cupti1);
            w.mono1 = mono();
            w.real1 = clk(CLOCK_REALTIME);
            RT(cudaEventElapsedTime(&w.ev_ms, e0, e1));
            std::printf("KERNEL %s rep %d event %.4f ms, cupti [%llu, %llu] monotonic [%llu, %llu] +%.3f ms since Start\n",
                        w.name, r, w.ev_ms, (unsigned long long)w.cupti0, (unsigned long long)w.cupti1,
                        (unsigned long long)w.mono0, (unsigned long long)w.mono1,
                        g_start_mono ? (double)(w.mono0 - g_start_mono) / 1e6 : -1.0);
            {
                std::lock_guard<std::mutex> g(g_mu);
                g_kwins.push_back(w);
            }
            if (O.inline_decode) {
                int stop = 0;
                for (int k = 0; k < 64; ++k) {
                    if (decode_once("inline", &stop) != CUPTI_SUCCESS) break;
                    if (stop != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL) break;
                }
            }
            usleep(O.gap_us);
        }
    }
    {
        Watch w("cudaDeviceSynchronize");
        RT(cudaDeviceSynchronize());
    }
    // The sample: Stop, then the stop flag and join.
    CUpti_PmSampling_Stop_Params sp = {CUpti_PmSampling_Stop_Params_STRUCT_SIZE};
    sp.pPmSamplingObject = g_pm;
    MUST("cuptiPmSamplingStop", cuptiPmSamplingStop(&sp));
    g_stop_decode = true;
    if (g_decode_thread.joinable()) {
        Watch w("join decode thread");
        g_decode_thread.join();
        std::printf("STEP join decode thread done, thread result %d %s\n", (int)g_thread_result,
                    cupti_str(g_thread_result));
    }
    if (O.final_drain) {  // not in the sample: what is left after Stop, on the main thread
        int stop = 0;
        for (int k = 0; k < 64; ++k) {
            if (decode_once("final", &stop) != CUPTI_SUCCESS) break;
            if (stop != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL) break;
        }
    }
    if (O.act) {
        MUST("cuptiActivityFlushAll", cuptiActivityFlushAll(1));
    }
    CUpti_PmSampling_Disable_Params dp = {CUpti_PmSampling_Disable_Params_STRUCT_SIZE};
    dp.pPmSamplingObject = g_pm;
    CUPTI_STEP("cuptiPmSamplingDisable", cuptiPmSamplingDisable(&dp));
    CUpti_Profiler_Host_Deinitialize_Params hd = {CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
    hd.pHostObject = g_host;
    CUPTI_STEP("cuptiProfilerHostDeinitialize", cuptiProfilerHostDeinitialize(&hd));
    CUpti_Profiler_DeInitialize_Params pd = {CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
    CUPTI_STEP("cuptiProfilerDeInitialize", cuptiProfilerDeInitialize(&pd));
    summary("done");
    if (sub) cuptiUnsubscribe(sub);
    RT(cudaFree(src));
    RT(cudaFree(dst));
    RT(cudaFree(out));
    return 0;
}
