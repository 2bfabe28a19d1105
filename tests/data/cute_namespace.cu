// Planted: a kernel templated on a CuTe type (names mention cute:: only through a template argument),
// plus a non-inlined device function inside namespace cute. Must be rejected.
#include <cuda_runtime.h>

#include "solbench_attention.h"

namespace cute {
template <int N>
struct Int {};
__device__ __noinline__ float copy_tile(const float* src, int i) { return src[i]; }
}  // namespace cute

template <class Shape>
__global__ void tile_kernel(float* out, Shape) { out[threadIdx.x] = cute::copy_tile(out, threadIdx.x + 32); }

extern "C" int solbench_attention_forward(const SolbenchAttentionParams* p) {
    tile_kernel<<<1, 32, 0, static_cast<cudaStream_t>(p->stream)>>>(static_cast<float*>(p->out), cute::Int<128>{});
    return cudaGetLastError() == cudaSuccess ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}
