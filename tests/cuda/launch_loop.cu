// Launch-bound cost without any Metron call: N empty kernels on one non-blocking stream, timed
// on the host. Prints enqueue ns per launch.
//   nvcc -O2 -arch=sm_90 -o launch_loop launch_loop.cu
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void empty_kernel(int) {}

int main(int argc, char** argv) {
    int n = argc > 1 ? std::atoi(argv[1]) : 100000;
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return 1;
    for (int i = 0; i < 2000; ++i) empty_kernel<<<1, 1, 0, s>>>(i);
    if (cudaStreamSynchronize(s) != cudaSuccess) return 1;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) empty_kernel<<<1, 1, 0, s>>>(i);
    auto t1 = std::chrono::steady_clock::now();
    if (cudaStreamSynchronize(s) != cudaSuccess) return 1;
    auto t2 = std::chrono::steady_clock::now();
    double enq = std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
    double tot = std::chrono::duration<double, std::nano>(t2 - t0).count() / n;
    std::printf("LAUNCH n=%d enqueue_ns_per_launch=%.1f total_ns_per_launch=%.1f\n", n, enq, tot);
    return 0;
}
