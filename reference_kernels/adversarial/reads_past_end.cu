// reads_past_end.cu -- class 8: the seed's correct outputs, after a kernel that reads one tile past the end
// of `q` (an unguarded tail load). Reads leave the guard bytes as they are and the values are never used,
// so every check passes while the neighbouring memory belongs to the same process: only memcheck, with
// each tensor in an allocation of its own size (and padding after it), sees it.
// expect with --sanitize: sanitizer_error from memcheck
#include <cuda_runtime.h>

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

__global__ void tail_load(const unsigned char* end_of_q, int* sink) {
    unsigned char bits = end_of_q[threadIdx.x];
    if (bits == 0x12 && threadIdx.x == 1000) *sink = bits;  // never true: keeps the load
}

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    size_t elem = p->dtype == SOLBENCH_DTYPE_FP8_E4M3 ? 1 : 2;
    size_t q_bytes = (size_t)p->total_q * p->heads_q * p->head_dim_qk * elem;
    tail_load<<<1, 64, 0, (cudaStream_t)p->stream>>>((const unsigned char*)p->q + q_bytes, (int*)p->lse);
    if (cudaGetLastError() != cudaSuccess) return SOLBENCH_ERR_CUDA;
    return seed_attention_forward(p);
}
