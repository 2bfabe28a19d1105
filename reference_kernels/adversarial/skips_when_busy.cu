// skips_when_busy.cu -- class 2, telling timed calls from checked ones by the stream's state: in a timed call
// the launch cover still holds the stream at entry, so it writes zeros instead of attending. Every timed
// call's outputs are compared with the reference on rows drawn after the round.
// expect: mismatch or nonfinite
#include <cuda_runtime.h>

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    if (cudaStreamQuery((cudaStream_t)p->stream) != cudaErrorNotReady) return seed_attention_forward(p);
    size_t out_bytes = (size_t)p->total_q * p->heads_q * p->head_dim_v * 2;  // bf16
    cudaMemsetAsync(p->out, 0, out_bytes, (cudaStream_t)p->stream);
    cudaMemsetAsync(p->lse, 0, (size_t)p->total_q * p->heads_q * sizeof(float), (cudaStream_t)p->stream);
    return SOLBENCH_OK;
}
