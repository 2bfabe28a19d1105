// infinite_loop.cu -- a kernel that never finishes.
// The harness must report a timeout (hang) for the scenario, kill the worker, and carry on.
#include <cuda_runtime.h>

#include "solbench_attention.h"

__global__ void spin_forever(volatile int* flag) {
    while (*flag == 0) {
    }
}

extern "C" int solbench_attention_forward(const SolbenchAttentionParams* p) {
    // Spin on a zeroed flag of our own, made once, that nothing ever sets.
    static int* flag = nullptr;
    if (flag == nullptr) {
        if (cudaMalloc(&flag, sizeof(int)) != cudaSuccess) return SOLBENCH_ERR_CUDA;
        if (cudaMemset(flag, 0, sizeof(int)) != cudaSuccess) return SOLBENCH_ERR_CUDA;
    }
    spin_forever<<<1, 1, 0, static_cast<cudaStream_t>(p->stream)>>>(flag);
    return cudaGetLastError() == cudaSuccess ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}
