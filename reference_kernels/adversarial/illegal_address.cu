// illegal_address.cu -- a kernel writes far outside every allocation (cudaErrorIllegalAddress).
// The harness must report an illegal memory access for the scenario; the CUDA context is lost, so the
// worker has to be replaced before the next scenario.
#include <cuda_runtime.h>

#include "solbench_attention.h"

__global__ void write_out_of_bounds(float* out) {
    out[(1ull << 40) + threadIdx.x] = 1.0f;  // 4 TiB past the output tensor
}

extern "C" int solbench_attention_forward(const SolbenchAttentionParams* p) {
    write_out_of_bounds<<<1, 32, 0, static_cast<cudaStream_t>(p->stream)>>>(static_cast<float*>(p->out));
    return cudaGetLastError() == cudaSuccess ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}
