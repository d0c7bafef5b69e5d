// What a GPU-counted region costs: ITER iterations of one deterministic FMA kernel (the same
// instruction count every launch), each inside a Metron region `step` (metron_region_begin/end
// found with dlsym, so the program runs with or without Metron) and between two CUDA events.
// Before the loop one region `once` runs one kernel (a region that never repeats). With
// THREADS=2 two threads take turns (a mutex around each iteration: their regions never
// overlap), each with its own region name (`step0`, `step1`).
// Per iteration it prints the region's host wall time and the events' elapsed time.
//   nvcc -O2 -arch=sm_90 -o region_batch region_batch.cu -ldl -lpthread
//   ./region_batch [iterations=200] [fma_loops=400000] [threads=1]
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

__global__ void fma_kernel(int loops, float* out) {
    float a = threadIdx.x * 0.001f, b = 1.0001f, c = 0.0001f;
    for (int i = 0; i < loops; ++i) a = a * b + c;
    out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

using BeginFn = int (*)(const char*);
using EndFn = int (*)(const char*);

static BeginFn begin;
static EndFn end;
static std::mutex turn;

static void iterate(int thread, int iterations, int loops, float* out) {
    char name[16];
    std::snprintf(name, sizeof name, "step%d", thread);
    const char* region = thread < 0 ? "step" : name;
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (int i = 0; i < iterations; ++i) {
        std::lock_guard<std::mutex> g(turn);
        auto r0 = std::chrono::steady_clock::now();
        if (begin) begin(region);
        cudaEventRecord(e0, s);
        fma_kernel<<<132, 128, 0, s>>>(loops, out);
        cudaEventRecord(e1, s);
        cudaEventSynchronize(e1);
        if (end) end(region);
        auto r1 = std::chrono::steady_clock::now();
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        std::printf("ITER region=%s i=%d region_us=%.1f events_ms=%.4f\n", region, i,
                    std::chrono::duration<double, std::micro>(r1 - r0).count(), ms);
    }
    cudaStreamDestroy(s);
}

int main(int argc, char** argv) {
    int iterations = argc > 1 ? std::atoi(argv[1]) : 200;
    int loops = argc > 2 ? std::atoi(argv[2]) : 400000;
    int threads = argc > 3 ? std::atoi(argv[3]) : 1;
    begin = reinterpret_cast<BeginFn>(dlsym(RTLD_DEFAULT, "metron_region_begin"));
    end = reinterpret_cast<EndFn>(dlsym(RTLD_DEFAULT, "metron_region_end"));
    float* out = nullptr;
    if (cudaMalloc(&out, 132 * 128 * sizeof(float)) != cudaSuccess) return 1;
    cudaDeviceSynchronize();
    if (begin) begin("once");
    fma_kernel<<<132, 128>>>(loops, out);
    cudaDeviceSynchronize();
    if (end) end("once");
    if (threads <= 1) {
        iterate(-1, iterations, loops, out);
    } else {
        std::vector<std::thread> ts;
        for (int t = 0; t < threads; ++t)
            ts.emplace_back(iterate, t, iterations / threads, loops, out);
        for (auto& t : ts) t.join();
    }
    cudaFree(out);
    std::printf("DONE metron=%d\n", begin != nullptr);
    return 0;
}
