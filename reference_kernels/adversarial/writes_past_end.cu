// writes_past_end.cu -- the seed's correct outputs, plus one element written past the end of `out` and one
// before the start of `lse` (an off-by-one tile bound): memory safety that passes by luck when the bytes
// beside the buffers belong to nobody. The supervisor's guard bytes around every output see it.
// expect: out_of_bounds
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

__global__ void scribble(__nv_bfloat16* past_out, float* before_lse) {
    *past_out = __float2bfloat16(0.0f);
    *before_lse = 0.0f;
}

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    int code = seed_attention_forward(p);
    if (code) return code;
    size_t out_elems = (size_t)p->total_q * p->heads_q * p->head_dim_v;  // out is bf16 for every input dtype here
    scribble<<<1, 1, 0, (cudaStream_t)p->stream>>>((__nv_bfloat16*)p->out + out_elems, p->lse - 1);
    return cudaGetLastError() == cudaSuccess ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}
