// workspace_seed.cu -- an honest kernel that uses the harness's workspace: it asks for a scratch buffer the
// size of `out`, computes into it, and copies the result to `out` on the same stream. A harness check
// that rejects it (the workspace is memory beside the outputs) is a false positive.
// expect: passed
#include <cuda_runtime.h>

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

static size_t out_bytes(const SolbenchAttentionParams* p) {
    return (size_t)p->total_q * p->heads_q * p->head_dim_v * 2;  // bf16 out for every input dtype
}

extern "C" SOLBENCH_EXPORT size_t solbench_attention_workspace_size(const SolbenchAttentionParams* p) {
    return out_bytes(p) ? out_bytes(p) : 256;
}

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    if (!p->workspace || p->workspace_bytes < out_bytes(p)) return SOLBENCH_ERR_WORKSPACE;
    SolbenchAttentionParams scratch = *p;
    scratch.out = p->workspace;
    int code = seed_attention_forward(&scratch);
    if (code) return code;
    if (!out_bytes(p)) return SOLBENCH_OK;
    return cudaMemcpyAsync(p->out, p->workspace, out_bytes(p), cudaMemcpyDeviceToDevice, (cudaStream_t)p->stream) ==
                   cudaSuccess ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}
