// replays_by_pointer.cu -- cheat class 3: computes with the seed on the first call for each output
// buffer, keeps a copy of the answer, and on every later call for that buffer copies the stored answer
// back (correct for the contents it first saw, no attention work). The supervisor gives every timed call
// new contents behind the same pointers, so the first timed round is wrong. Keyed by pointers and sizes: a
// later scenario's out may be mapped at an address an earlier one had (the fd path), and replaying a larger
// answer there is caught as out_of_bounds instead, which is not this class.
// expect: mismatch
#include <map>
#include <tuple>

#define solbench_attention_forward seed_forward
#include "../seed_attention.cu"
#undef solbench_attention_forward

namespace {
struct Stored { void* out; void* lse; size_t out_bytes, lse_bytes; };
std::map<std::tuple<const void*, size_t, const void*, size_t>, Stored> stored;

size_t lse_bytes(const SolbenchAttentionParams* p) { return (size_t)p->total_q * p->heads_q * sizeof(float); }

size_t out_bytes(const SolbenchAttentionParams* p) {
    return (size_t)p->total_q * p->heads_q * p->head_dim_v * 2;  // bf16 or fp16 (bf16 for fp8 inputs)
}
}  // namespace

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    auto hit = stored.find({p->out, out_bytes(p), p->lse, lse_bytes(p)});
    if (hit != stored.end()) {
        cudaMemcpyAsync(p->out, hit->second.out, hit->second.out_bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)p->stream);
        if (p->lse) cudaMemcpyAsync(p->lse, hit->second.lse, hit->second.lse_bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)p->stream);
        return cudaGetLastError() == cudaSuccess ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
    }
    int status = seed_forward(p);
    if (status != SOLBENCH_OK) return status;
    Stored s{nullptr, nullptr, out_bytes(p), (size_t)p->total_q * p->heads_q * sizeof(float)};
    if (cudaMalloc(&s.out, s.out_bytes) != cudaSuccess || cudaMalloc(&s.lse, s.lse_bytes) != cudaSuccess)
        return SOLBENCH_ERR_CUDA;
    cudaMemcpyAsync(s.out, p->out, s.out_bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)p->stream);
    if (p->lse) cudaMemcpyAsync(s.lse, p->lse, s.lse_bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)p->stream);
    stored[{p->out, s.out_bytes, p->lse, s.lse_bytes}] = s;
    return cudaGetLastError() == cudaSuccess ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}
