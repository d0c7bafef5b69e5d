// Host side of tests/cuda/pc_inline.cu for the PC-sampling annotation check (scripts/gpu-validate.sh):
// launches `nested` (two levels of __forceinline__ functions, two call sites) and `plain`
// REPS times on 2^24 elements, so PC sampling catches their inlined lines. The kernels come
// from pc_inline.cu itself (included), so the cubin's lines are that file's.
#include "pc_inline.cu"
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
    int reps = argc > 1 ? std::atoi(argv[1]) : 200;
    const int n = 1 << 24;
    float *p, *out;
    if (cudaMalloc(&p, (n + 1) * sizeof(float)) != cudaSuccess ||
        cudaMalloc(&out, n * sizeof(float)) != cudaSuccess) {
        std::printf("cudaMalloc failed\n");
        return 1;
    }
    cudaMemset(p, 0, (n + 1) * sizeof(float));
    for (int r = 0; r < reps; ++r) {
        nested<<<n / 256, 256>>>(p, out, n);
        plain<<<n / 256, 256>>>(out, n);
    }
    cudaError_t e = cudaDeviceSynchronize();
    std::printf("pc_inline: %d reps, %s\n", reps, cudaGetErrorString(e));
    return e == cudaSuccess ? 0 : 1;
}
