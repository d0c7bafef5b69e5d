// Metron's GPU example: vector add, tiled matrix multiply and a reduction, each launch inside
// a Metron region (C API), timed with GPU events too so the trace's kernel durations can be
// checked against them. The same source builds with hipcc (examples/hip).
//
//   metron run -- ./build/cuda/vector_ops        # kernels, copies and API calls in the trace,
//                                                # kernels.csv and the summary
// Output lines "EVENT <kernel> <ms>" are the GPU-event durations of each launch.
#include <metron/metron.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gpu_compat.h"

#define CHECK(call)                                                                    \
    do {                                                                               \
        gpuError_t err_ = (call);                                                      \
        if (err_ != gpuSuccess) {                                                      \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,         \
                         gpuGetErrorString(err_));                                     \
            std::exit(1);                                                              \
        }                                                                              \
    } while (0)

constexpr int TILE = 16;

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

__global__ void matmul_tiled(const float* a, const float* b, float* c, int n) {
    __shared__ float ta[TILE][TILE];
    __shared__ float tb[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < (n + TILE - 1) / TILE; ++t) {
        int ac = t * TILE + threadIdx.x, br = t * TILE + threadIdx.y;
        ta[threadIdx.y][threadIdx.x] = (row < n && ac < n) ? a[row * n + ac] : 0.0f;
        tb[threadIdx.y][threadIdx.x] = (br < n && col < n) ? b[br * n + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
        __syncthreads();
    }
    if (row < n && col < n) c[row * n + col] = acc;
}

__global__ void reduce_sum(const float* in, float* out, int n) {
    extern __shared__ float partial[];
    int tid = threadIdx.x;
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + tid; i < n; i += blockDim.x * gridDim.x) v += in[i];
    partial[tid] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) partial[tid] += partial[tid + s];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(out, partial[0]);
}

// Times one launch with GPU events and prints "EVENT <name> <ms>".
template <typename F>
static void timed(const char* name, F launch) {
    gpuEvent_t start, stop;
    CHECK(gpuEventCreate(&start));
    CHECK(gpuEventCreate(&stop));
    CHECK(gpuEventRecord(start, 0));
    launch();
    CHECK(gpuGetLastError());
    CHECK(gpuEventRecord(stop, 0));
    CHECK(gpuEventSynchronize(stop));
    float ms = 0.0f;
    CHECK(gpuEventElapsedTime(&ms, start, stop));
    std::printf("EVENT %s %.6f\n", name, ms);
    CHECK(gpuEventDestroy(start));
    CHECK(gpuEventDestroy(stop));
}

// Usage: vector_ops [repeats=3] [log2 of the vector length=22] [matrix side=512]
int main(int argc, char** argv) {
    int repeats = argc > 1 ? std::atoi(argv[1]) : 3;
    const int n = 1 << (argc > 2 ? std::atoi(argv[2]) : 22);   // vector length
    const int m = argc > 3 ? std::atoi(argv[3]) : 512;          // matrix side
    metron_region_begin("main");

    metron_region_begin("setup");
    std::vector<float> ha(n, 1.0f), hb(n, 2.0f), hm(size_t(m) * m, 0.5f);
    float *da, *db, *dc, *ma, *mb, *mc, *dsum;
    CHECK(gpuMalloc(&da, n * sizeof(float)));
    CHECK(gpuMalloc(&db, n * sizeof(float)));
    CHECK(gpuMalloc(&dc, n * sizeof(float)));
    CHECK(gpuMalloc(&ma, m * m * sizeof(float)));
    CHECK(gpuMalloc(&mb, m * m * sizeof(float)));
    CHECK(gpuMalloc(&mc, m * m * sizeof(float)));
    CHECK(gpuMalloc(&dsum, sizeof(float)));
    CHECK(gpuMemcpy(da, ha.data(), n * sizeof(float), gpuMemcpyHostToDevice));
    CHECK(gpuMemcpy(db, hb.data(), n * sizeof(float), gpuMemcpyHostToDevice));
    CHECK(gpuMemcpy(ma, hm.data(), m * m * sizeof(float), gpuMemcpyHostToDevice));
    CHECK(gpuMemcpy(mb, hm.data(), m * m * sizeof(float), gpuMemcpyHostToDevice));
    metron_region_end("setup");

    for (int r = 0; r < repeats; ++r) {
        metron_region_begin("vector_add");
        timed("vector_add", [&] { vector_add<<<(n + 255) / 256, 256>>>(da, db, dc, n); });
        metron_region_end("vector_add");

        metron_region_begin("matmul");
        dim3 block(TILE, TILE), grid((m + TILE - 1) / TILE, (m + TILE - 1) / TILE);
        timed("matmul_tiled", [&] { matmul_tiled<<<grid, block>>>(ma, mb, mc, m); });
        metron_region_end("matmul");

        metron_region_begin("reduction");
        CHECK(gpuMemset(dsum, 0, sizeof(float)));
        timed("reduce_sum", [&] { reduce_sum<<<264, 256, 256 * sizeof(float)>>>(dc, dsum, n); });
        metron_region_end("reduction");
    }

    metron_region_begin("copy_back");
    float sum = 0.0f, c0 = 0.0f;
    CHECK(gpuMemcpy(&sum, dsum, sizeof(float), gpuMemcpyDeviceToHost));
    CHECK(gpuMemcpy(&c0, mc, sizeof(float), gpuMemcpyDeviceToHost));
    CHECK(gpuDeviceSynchronize());
    metron_region_end("copy_back");
    std::printf("%s: sum=%.0f (expected %.0f) c[0][0]=%.1f (expected %.1f)\n", GPU_RUNTIME, sum,
                3.0 * n, c0, 0.25 * m);

    CHECK(gpuFree(da));
    CHECK(gpuFree(db));
    CHECK(gpuFree(dc));
    CHECK(gpuFree(ma));
    CHECK(gpuFree(mb));
    CHECK(gpuFree(mc));
    CHECK(gpuFree(dsum));
    metron_region_end("main");
    bool ok = std::fabs(sum - 3.0 * n) <= 1e-5 * 3.0 * n && c0 == 0.25f * m;
    return ok ? 0 : 2;
}
