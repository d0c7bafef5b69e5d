// Steps whose true answer to "what if this kernel were faster" is constructed: every part's
// duration is a command-line parameter (kernels spin on the GPU's global timer, CPU parts
// spin on the host clock), so a run with a part shortened is the measured answer to the
// prediction made from a run without the change. Each step is a Metron region `step`
// (metron_region_begin/end found with dlsym: the program runs with or without Metron); the CPU
// part is a region `cpu`.
//   nvcc -O2 -arch=sm_90 -o whatif_steps whatif_steps.cu -ldl
//   ./whatif_steps MODE STEPS CPU_US A_US B_US C_US [CPU2_US A2_US B2_US C2_US]
// With the second set, odd steps use it and are the region `alt` instead of `step`: the
// changed part is measured in the same process, minute and host state as the prediction's
// baseline.
// MODE streams: CPU part; spin_a on stream 1; spin_b on stream 2; stream 2 waits for an event
//   recorded after spin_a; spin_c on stream 2; cudaStreamSynchronize(stream 2). The step is
//   CPU + max(A, B) + C: A is critical while A > B, then B.
// MODE launch: launch-bound: 40 times (CPU part, spin_a on stream 1); cudaStreamSynchronize.
// MODE cpu: CPU-bound: CPU part; spin_a; CPU part again; cudaStreamSynchronize.
// Prints one line per step: WHATIF step=<i> ms=<host wall time of the step>.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

__device__ __forceinline__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

#define SPIN_KERNEL(name)                                        \
    __global__ void name(unsigned long long ns) {                \
        unsigned long long start = now_ns();                     \
        while (now_ns() - start < ns) {                          \
        }                                                        \
    }
SPIN_KERNEL(spin_a)
SPIN_KERNEL(spin_b)
SPIN_KERNEL(spin_c)

using RegionFn = int (*)(const char*);
static RegionFn begin_region, end_region;

static void cpu_part(double us) {
    if (begin_region) begin_region("cpu");
    auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds((long long)(us * 1000));
    while (std::chrono::steady_clock::now() < until) {
    }
    if (end_region) end_region("cpu");
}

int main(int argc, char** argv) {
    if (argc != 7 && argc != 11) {
        std::fprintf(stderr, "usage: whatif_steps streams|launch|cpu STEPS CPU_US A_US B_US C_US [CPU2_US A2_US B2_US C2_US]\n");
        return 2;
    }
    const char* mode = argv[1];
    int steps = std::atoi(argv[2]);
    double cpu_set[2];
    unsigned long long a_set[2], b_set[2], c_set[2];
    for (int k = 0; k < 2; ++k) {
        int at = argc == 11 && k == 1 ? 7 : 3;
        cpu_set[k] = std::atof(argv[at]);
        a_set[k] = (unsigned long long)(std::atof(argv[at + 1]) * 1000);
        b_set[k] = (unsigned long long)(std::atof(argv[at + 2]) * 1000);
        c_set[k] = (unsigned long long)(std::atof(argv[at + 3]) * 1000);
    }
    begin_region = reinterpret_cast<RegionFn>(dlsym(RTLD_DEFAULT, "metron_region_begin"));
    end_region = reinterpret_cast<RegionFn>(dlsym(RTLD_DEFAULT, "metron_region_end"));
    cudaStream_t s1, s2;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    cudaEvent_t done_a;
    cudaEventCreateWithFlags(&done_a, cudaEventDisableTiming);
    // Warm-up: module load and first launches outside the measured steps.
    spin_a<<<1, 1, 0, s1>>>(1000);
    spin_b<<<1, 1, 0, s2>>>(1000);
    spin_c<<<1, 1, 0, s2>>>(1000);
    cudaDeviceSynchronize();
    for (int i = 0; i < steps; ++i) {
        int k = argc == 11 ? i % 2 : 0;
        const char* region = k ? "alt" : "step";
        double cpu_us = cpu_set[k];
        unsigned long long a = a_set[k], b = b_set[k], c = c_set[k];
        auto t0 = std::chrono::steady_clock::now();
        if (begin_region) begin_region(region);
        if (std::strcmp(mode, "streams") == 0) {
            cpu_part(cpu_us);
            spin_a<<<1, 1, 0, s1>>>(a);
            cudaEventRecord(done_a, s1);
            spin_b<<<1, 1, 0, s2>>>(b);
            cudaStreamWaitEvent(s2, done_a, 0);
            spin_c<<<1, 1, 0, s2>>>(c);
            cudaStreamSynchronize(s2);
        } else if (std::strcmp(mode, "launch") == 0) {
            for (int k = 0; k < 40; ++k) {
                cpu_part(cpu_us);
                spin_a<<<1, 1, 0, s1>>>(a);
            }
            cudaStreamSynchronize(s1);
        } else {
            cpu_part(cpu_us);
            spin_a<<<1, 1, 0, s1>>>(a);
            cpu_part(cpu_us);
            cudaStreamSynchronize(s1);
        }
        if (end_region) end_region(region);
        auto t1 = std::chrono::steady_clock::now();
        std::printf("WHATIF step=%d %s ms=%.4f\n", i, region, std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        std::fprintf(stderr, "whatif_steps: %s\n", cudaGetErrorString(e));
        return 1;
    }
    return 0;
}
