// reads_uninitialised.cu -- class 8: the seed's correct outputs, after a kernel that reads `out` before
// anything wrote it (an accumulator that was meant to be zeroed first). solbench poisons `out` before
// every call, so the read sees initialised bytes and the outcome never depends on it: only initcheck,
// under which the runner leaves the outputs uninitialised, sees it.
// expect with --sanitize: sanitizer_error from initcheck
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

__global__ void read_before_write(const unsigned short* out, int* sink) {
    unsigned short bits = out[threadIdx.x];
    if (bits == 0x1234 && threadIdx.x == 1000) *sink = bits;  // never true: keeps the load
}

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    read_before_write<<<1, 32, 0, (cudaStream_t)p->stream>>>((const unsigned short*)p->out, (int*)p->lse);
    if (cudaGetLastError() != cudaSuccess) return SOLBENCH_ERR_CUDA;
    return seed_attention_forward(p);
}
