// Launch-bound cost: N empty kernels on one stream, timed on the host (ns per launch).
// Run bare and under `metron run` to see what tracing adds per launch:
//   ./launch_overhead 100000 ; metron run -- ./launch_overhead 100000
#include <metron/metron.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "gpu_compat.h"

__global__ void empty_kernel(int) {}

int main(int argc, char** argv) {
    int n = argc > 1 ? std::atoi(argv[1]) : 100000;
    for (int i = 0; i < 2000; ++i) empty_kernel<<<1, 1>>>(i);   // warm-up
    if (gpuDeviceSynchronize() != gpuSuccess) return 1;
    metron_region_begin("launch_loop");
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) empty_kernel<<<1, 1>>>(i);
    auto t1 = std::chrono::steady_clock::now();
    if (gpuDeviceSynchronize() != gpuSuccess) return 1;
    auto t2 = std::chrono::steady_clock::now();
    metron_region_end("launch_loop");
    double enq = std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
    double tot = std::chrono::duration<double, std::nano>(t2 - t0).count() / n;
    std::printf("LAUNCH n=%d enqueue_ns_per_launch=%.1f total_ns_per_launch=%.1f\n", n, enq, tot);
    return 0;
}
