// What a tool's set-up costs the program's first kernel: ITER iterations of one ~2 ms kernel,
// each inside a Metron region (`iter`, through metron_region_begin/end found with dlsym, so
// the program runs with or without Metron) and between two CUDA events. Per iteration it
// prints the host time of the launch call, the events' elapsed time and the region's host
// wall time; the tool's set-up shows as iteration 0 differing from the others.
//   nvcc -O2 -arch=sm_90 -o first_launch first_launch.cu -ldl
//   ./first_launch [iterations=6] [spin=2000000]
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void spin_kernel(long long cycles, int* out) {
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
    if (threadIdx.x == 0) out[blockIdx.x] = 1;
}

using BeginFn = int (*)(const char*);
using EndFn = int (*)(const char*);

int main(int argc, char** argv) {
    int iterations = argc > 1 ? std::atoi(argv[1]) : 6;
    long long spin = argc > 2 ? std::atoll(argv[2]) : 2000000;
    auto begin = reinterpret_cast<BeginFn>(dlsym(RTLD_DEFAULT, "metron_region_begin"));
    auto end = reinterpret_cast<EndFn>(dlsym(RTLD_DEFAULT, "metron_region_end"));
    int* out = nullptr;
    if (cudaMalloc(&out, 1024 * sizeof(int)) != cudaSuccess) return 1;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaDeviceSynchronize();
    for (int i = 0; i < iterations; ++i) {
        auto r0 = std::chrono::steady_clock::now();
        if (begin) begin("iter");
        cudaEventRecord(e0);
        auto l0 = std::chrono::steady_clock::now();
        spin_kernel<<<132, 128>>>(spin, out);
        auto l1 = std::chrono::steady_clock::now();
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        if (end) end("iter");
        auto r1 = std::chrono::steady_clock::now();
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        std::printf("FIRST iter=%d launch_us=%.1f events_ms=%.3f region_ms=%.3f metron=%d\n", i,
                    std::chrono::duration<double, std::micro>(l1 - l0).count(), ms,
                    std::chrono::duration<double, std::milli>(r1 - r0).count(), begin != nullptr);
    }
    cudaFree(out);
    return 0;
}
