// zeros_when_timed.cu -- cheat class 2: the first call for each output buffer (the check) runs the seed;
// every later call (the timed ones) only writes zeros, so no poison is left and it looks 10-100x faster.
// The supervisor compares rows of every timed round's outputs with the fp32 reference (and calls the
// checked copy twice: the second call, zeros, already differs from the first).
// expect: mismatch or nonfinite or nondeterministic
#include <set>

#define solbench_attention_forward seed_forward
#include "../seed_attention.cu"
#undef solbench_attention_forward

static std::set<const void*> seen;

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    if (seen.insert(p->out).second) return seed_forward(p);
    cudaMemsetAsync(p->out, 0, (size_t)p->total_q * p->heads_q * p->head_dim_v * 2, (cudaStream_t)p->stream);
    if (p->lse) cudaMemsetAsync(p->lse, 0, (size_t)p->total_q * p->heads_q * sizeof(float), (cudaStream_t)p->stream);
    return cudaGetLastError() == cudaSuccess ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}
