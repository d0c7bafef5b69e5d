// PC sampling's GPU workload: three kernels whose dominant stall reason is known by construction,
// each launched inside its own C-marker region, for Metron's PC sampling and ncu's
// smsp__pcsamp_* metrics. Runs with or without Metron (the markers are looked up with dlsym).
//
//   pc_stalls [reps=2] [only=all|chase|fma|barrier]
//     chase   (region "memory"):  a pointer chase through a shuffled 64 MiB table: every load
//             depends on the previous one -> long_scoreboard on the instruction using the load
//             (the line marked HOT_CHASE);
//     fma     (region "compute"): 8 independent FMA chains per thread at full occupancy -> the
//             FMA pipe is the limit (math_pipe_throttle / selected / not_selected / wait);
//     barrier (region "sync"):    warp 0 of each block does a dependent chain while the other
//             31 warps wait at __syncthreads -> barrier.
//   mixed: chase only, from two regions: "memory" (2048 steps) and "memory_short" (512 steps),
//          to check how continuous mode shares one kernel's samples between regions.
//   Prints "KTIME <kernel> <ms>" per launch (cudaEvent) for the overhead comparison.
//
//   nvcc -O2 -lineinfo -arch=sm_90 -o pc_stalls pc_stalls.cu -ldl
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(x)                                                                   \
    do {                                                                           \
        cudaError_t e_ = (x);                                                      \
        if (e_ != cudaSuccess) {                                                   \
            std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,         \
                         cudaGetErrorString(e_));                                  \
            std::exit(1);                                                          \
        }                                                                          \
    } while (0)

typedef int (*region_fn)(const char*);
static region_fn g_begin = nullptr, g_end = nullptr;

__global__ void chase(const unsigned* next, unsigned* out, int steps) {
    unsigned p = (blockIdx.x * blockDim.x + threadIdx.x) * 97u;
    p &= (1u << 24) - 1;
    for (int k = 0; k < steps; ++k) {
        p = next[p];  // HOT_CHASE
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = p;
}

__global__ void fma8(float* out, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float a0 = i, a1 = i + 1, a2 = i + 2, a3 = i + 3, a4 = i + 4, a5 = i + 5, a6 = i + 6, a7 = i + 7;
    for (int k = 0; k < iters; ++k) {
        a0 = fmaf(a0, 0.9999f, 0.001f); a1 = fmaf(a1, 0.9999f, 0.001f);  // HOT_FMA
        a2 = fmaf(a2, 0.9999f, 0.001f); a3 = fmaf(a3, 0.9999f, 0.001f);
        a4 = fmaf(a4, 0.9999f, 0.001f); a5 = fmaf(a5, 0.9999f, 0.001f);
        a6 = fmaf(a6, 0.9999f, 0.001f); a7 = fmaf(a7, 0.9999f, 0.001f);
    }
    out[i] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

__global__ void barrier(float* out, int rounds) {
    __shared__ float s[32];
    float v = threadIdx.x;
    for (int r = 0; r < rounds; ++r) {
        if (threadIdx.x < 32) {
            for (int k = 0; k < 64; ++k) v = fmaf(v, 1.0001f, 0.5f);
            s[threadIdx.x] = v;
        }
        __syncthreads();  // HOT_BARRIER
        v += s[threadIdx.x & 31];
        __syncthreads();
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

int main(int argc, char** argv) {
    int reps = argc > 1 ? std::atoi(argv[1]) : 2;
    const char* only = argc > 2 ? argv[2] : "all";
    auto want = [&](const char* k) { return !std::strcmp(only, "all") || !std::strcmp(only, k); };
    g_begin = (region_fn)dlsym(RTLD_DEFAULT, "metron_region_begin");
    g_end = (region_fn)dlsym(RTLD_DEFAULT, "metron_region_end");
    const int n = 1 << 24;
    std::vector<unsigned> h(n);
    // One random cycle through the whole table (Sattolo), so the chase never settles in cache.
    for (int i = 0; i < n; ++i) h[i] = i;
    unsigned long long x = 88172645463325252ull;
    for (int i = n - 1; i > 0; --i) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        int j = (int)(x % (unsigned long long)i);
        unsigned t = h[i]; h[i] = h[j]; h[j] = t;
    }
    unsigned *next, *uout;
    float* fout;
    CHECK(cudaMalloc(&next, n * sizeof(unsigned)));
    CHECK(cudaMalloc(&uout, 132 * 1024 * sizeof(unsigned)));
    CHECK(cudaMalloc(&fout, 132 * 2048 * sizeof(float)));
    CHECK(cudaMemcpy(next, h.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    auto timed = [&](const char* name, auto launch) {
        CHECK(cudaEventRecord(e0));
        launch();
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        std::printf("KTIME %s %.4f\n", name, ms);
    };
    for (int r = 0; r < reps; ++r) {
        if (!std::strcmp(only, "mixed")) {
            if (g_begin) g_begin("memory");
            timed("chase", [&] { chase<<<132 * 4, 256>>>(next, uout, 2048); });
            if (g_end) g_end("memory");
            if (g_begin) g_begin("memory_short");
            timed("chase_short", [&] { chase<<<132 * 4, 256>>>(next, uout, 512); });
            if (g_end) g_end("memory_short");
            continue;
        }
        if (want("chase")) {
            if (g_begin) g_begin("memory");
            timed("chase", [&] { chase<<<132 * 4, 256>>>(next, uout, 2048); });
            if (g_end) g_end("memory");
        }
        if (want("fma")) {
            if (g_begin) g_begin("compute");
            timed("fma8", [&] { fma8<<<132 * 16, 128>>>(fout, 20000); });
            if (g_end) g_end("compute");
        }
        if (want("barrier")) {
            if (g_begin) g_begin("sync");
            timed("barrier", [&] { barrier<<<132 * 2, 1024>>>(fout, 4000); });
            if (g_end) g_end("sync");
        }
    }
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    std::printf("PC_STALLS done reps=%d\n", reps);
    return 0;
}
