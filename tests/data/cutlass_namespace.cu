// Planted: a kernel defined inside namespace cutlass (what CUTLASS's device_kernel looks like). Must be rejected.
#include <cuda_runtime.h>

#include "solbench_attention.h"

namespace cutlass {
__global__ void device_kernel(float* out) { out[threadIdx.x] = 0.0f; }
}  // namespace cutlass

extern "C" int solbench_attention_forward(const SolbenchAttentionParams* p) {
    cutlass::device_kernel<<<1, 32, 0, static_cast<cudaStream_t>(p->stream)>>>(static_cast<float*>(p->out));
    return cudaGetLastError() == cudaSuccess ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}
