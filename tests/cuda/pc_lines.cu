// Kernels for the SASS -> source line test without a GPU (tests/gpu_pcsampling_lines.rs): the
// cubin built from this file with the pip nvcc (`-cubin -O2 -lineinfo -arch=sm_90`) is
// resolved through CUPTI's cuptiGetSassToSourceCorrelation and compared with
// `nvdisasm -g` of the same cubin, run on the GPU machine and kept in
// tests/cuda/fixtures/pc_lines.sm_90.nvdisasm.txt. Editing this file changes the cubin: the
// test then skips until the fixture is made again (`nvdisasm -g -c` of the new cubin).

__device__ __forceinline__ float step(float v, float a) {
    return fmaf(v, a, 0.5f);
}

__global__ void chase(const unsigned* next, unsigned* out, int steps) {
    unsigned p = (blockIdx.x * blockDim.x + threadIdx.x) & 1023u;
    for (int k = 0; k < steps; ++k) {
        p = next[p];
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = p;
}

__global__ void inlined(float* out, int iters) {
    float v = threadIdx.x;
    for (int k = 0; k < iters; ++k) {
        v = step(v, 1.0001f);
    }
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
