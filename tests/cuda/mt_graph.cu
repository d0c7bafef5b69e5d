// The GPU workload of the counter and graph checks: several launching threads, several streams, three kernel shapes, and
// a CUDA graph (kernels + memset + memcpy nodes) replayed N times, each phase inside a C-marker
// region. Runs with or without Metron: the markers are looked up at run time (dlsym), so the
// same binary runs under ncu for the reference counts.
//
//   mt_graph [replays=10] [overlap|serial] [threads=2] [devices=1]
//     overlap: the worker threads run at the same time (their regions overlap);
//     serial:  one after the other (region counter mode can count each region);
//     devices: worker t uses GPU t % devices (several GPUs from several threads).
//
//   nvcc -O2 -arch=sm_90 -o mt_graph mt_graph.cu -ldl -lpthread
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
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
static void region_begin(const char* n) { if (g_begin) g_begin(n); }
static void region_end(const char* n) { if (g_end) g_end(n); }

// Shape 1: memory-bound (DRAM reads of x and y).
__global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// Shape 2: compute-bound (a dependent FMA chain per thread).
__global__ void fma_loop(int iters, float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i * 0.001f;
    for (int k = 0; k < iters; ++k) v = fmaf(v, 1.0001f, 0.5f);
    out[i] = v;
}

// Shape 3: a block reduction through shared memory.
__global__ void block_sum(const float* in, float* out, int n) {
    extern __shared__ float s[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0.f;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

static const int N = 1 << 24;          // 64 MiB per array: larger than the H100's L2
static const int FMA_THREADS = 132 * 1024;
static const int FMA_ITERS = 2000;

struct Buffers {
    float *x, *y, *f, *r;
};

static Buffers alloc_buffers() {
    Buffers b;
    CHECK(cudaMalloc(&b.x, N * sizeof(float)));
    CHECK(cudaMalloc(&b.y, N * sizeof(float)));
    CHECK(cudaMalloc(&b.f, FMA_THREADS * sizeof(float)));
    CHECK(cudaMalloc(&b.r, (N / 256) * sizeof(float)));
    CHECK(cudaMemset(b.x, 0, N * sizeof(float)));
    CHECK(cudaMemset(b.y, 0, N * sizeof(float)));
    return b;
}

static void launch_three(const Buffers& b, cudaStream_t s0, cudaStream_t s1) {
    saxpy<<<N / 256, 256, 0, s0>>>(N, 2.0f, b.x, b.y);
    fma_loop<<<FMA_THREADS / 128, 128, 0, s1>>>(FMA_ITERS, b.f);
    block_sum<<<N / 256, 256, 256 * sizeof(float), s0>>>(b.y, b.r, N);
}

static std::atomic<int> g_ready{0};

static void worker(int t, int nthreads, bool overlap, int ndev) {
    CHECK(cudaSetDevice(t % ndev));
    Buffers b = alloc_buffers();
    cudaStream_t s0, s1;
    CHECK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CHECK(cudaDeviceSynchronize());
    if (overlap) {
        g_ready++;
        while (g_ready.load() < nthreads) std::this_thread::yield();
    }
    char name[32];
    std::snprintf(name, sizeof name, "worker%d", t);
    region_begin(name);
    for (int rep = 0; rep < 2; ++rep) launch_three(b, s0, s1);
    CHECK(cudaStreamSynchronize(s0));
    CHECK(cudaStreamSynchronize(s1));
    region_end(name);
    CHECK(cudaStreamDestroy(s0));
    CHECK(cudaStreamDestroy(s1));
    CHECK(cudaFree(b.x));
    CHECK(cudaFree(b.y));
    CHECK(cudaFree(b.f));
    CHECK(cudaFree(b.r));
}

int main(int argc, char** argv) {
    int replays = argc > 1 ? std::atoi(argv[1]) : 10;
    bool overlap = !(argc > 2 && std::strcmp(argv[2], "serial") == 0);
    int nthreads = argc > 3 ? std::atoi(argv[3]) : 2;
    int ndev = argc > 4 ? std::atoi(argv[4]) : 1;
    int have = 0;
    CHECK(cudaGetDeviceCount(&have));
    if (ndev > have) {
        std::printf("MT_GRAPH asked for %d GPUs, %d present: using %d\n", ndev, have, have);
        ndev = have;
    }
    g_begin = (region_fn)dlsym(RTLD_DEFAULT, "metron_region_begin");
    g_end = (region_fn)dlsym(RTLD_DEFAULT, "metron_region_end");
    CHECK(cudaSetDevice(0));
    CHECK(cudaFree(0));

    std::vector<std::thread> threads;
    for (int t = 0; t < nthreads; ++t) {
        threads.emplace_back(worker, t, nthreads, overlap, ndev);
        if (!overlap) threads.back().join();
    }
    if (overlap)
        for (auto& th : threads) th.join();

    // A graph: memset, five kernels of the three shapes, a device-to-device copy.
    Buffers b = alloc_buffers();
    float* copy;
    CHECK(cudaMalloc(&copy, (N / 256) * sizeof(float)));
    cudaStream_t g;
    CHECK(cudaStreamCreateWithFlags(&g, cudaStreamNonBlocking));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(g, cudaStreamCaptureModeGlobal));
    CHECK(cudaMemsetAsync(b.r, 0, (N / 256) * sizeof(float), g));
    saxpy<<<N / 256, 256, 0, g>>>(N, 3.0f, b.x, b.y);
    fma_loop<<<FMA_THREADS / 128, 128, 0, g>>>(FMA_ITERS, b.f);
    block_sum<<<N / 256, 256, 256 * sizeof(float), g>>>(b.y, b.r, N);
    saxpy<<<N / 256, 256, 0, g>>>(N, 0.5f, b.y, b.x);
    fma_loop<<<FMA_THREADS / 128, 128, 0, g>>>(FMA_ITERS, b.f);
    CHECK(cudaMemcpyAsync(copy, b.r, (N / 256) * sizeof(float), cudaMemcpyDeviceToDevice, g));
    CHECK(cudaStreamEndCapture(g, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    region_begin("graph_replay");
    for (int i = 0; i < replays; ++i) CHECK(cudaGraphLaunch(exec, g));
    CHECK(cudaStreamSynchronize(g));
    region_end("graph_replay");
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaDeviceSynchronize());
    std::printf("MT_GRAPH threads=%d overlap=%d replays=%d kernels=%d\n", nthreads, overlap,
                replays, nthreads * 6 + replays * 5);
    return 0;
}
