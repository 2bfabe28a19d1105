// A clean kernel whose names merely resemble forbidden ones (acute::, my_cute_kernel, cutlassish,
// cublas_free_gemm): none of them is a library, so the check must pass it.
#include <cuda_runtime.h>

#include "solbench_attention.h"

namespace acute {
__global__ void my_cute_kernel(float* out) { out[threadIdx.x] = 1.0f; }
}  // namespace acute

namespace cutlassish {
__global__ void cublas_free_gemm(float* out) { out[threadIdx.x] = 2.0f; }
}  // namespace cutlassish

extern "C" int solbench_attention_forward(const SolbenchAttentionParams* p) {
    cudaStream_t stream = static_cast<cudaStream_t>(p->stream);
    acute::my_cute_kernel<<<1, 32, 0, stream>>>(static_cast<float*>(p->out));
    cutlassish::cublas_free_gemm<<<1, 32, 0, stream>>>(static_cast<float*>(p->out));
    return cudaGetLastError() == cudaSuccess ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}
