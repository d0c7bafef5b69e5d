// Inlined device functions for the inlined-at chain test without a GPU
// (tests/gpu_pcsampling_lines.rs): the cubin built from this file with the pip nvcc
// (`-cubin -O2 -lineinfo -arch=sm_90`) carries NVIDIA's inlined-call opcode in .debug_line;
// Metron's reader (metron_symbols::cubin) must give every instruction the chain that
// `nvdisasm -gi` prints (tests/cuda/fixtures/pc_inline.sm_90.nvdisasm-gi.txt). Editing this
// file changes the cubin: the test then skips until the fixture is made again.

__device__ __forceinline__ float inner(float x, float y) {
    return x * y + 1.0f;
}

__device__ __forceinline__ float outer(const float* p, int i) {
    float a = p[i];
    return inner(a, a);
}

extern "C" __global__ void plain(float* out, int n) {
    int i = threadIdx.x;
    if (i < n)
        out[i] = out[i] * 2.0f + 3.0f;
}

extern "C" __global__ void nested(const float* p, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = outer(p, i) + inner(p[i + 1], 3.0f);
}
