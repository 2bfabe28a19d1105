// races_in_shared.cu -- class 8: the seed's correct outputs, plus a block-wide reduction in shared memory
// that forgot a __syncthreads between writing and reading (a classic missing barrier). Here the value it
// reduces is never used, so every output is right and every timing check passes: only racecheck sees it.
// expect with --sanitize: sanitizer_error from racecheck
#include <cuda_runtime.h>

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

__global__ void unsynchronised_sum(const int* lens, int batch, int* sink) {
    __shared__ int partial[128];
    partial[threadIdx.x] = threadIdx.x < batch ? lens[threadIdx.x] : 0;
    // missing __syncthreads(): the reads below race with other warps' writes above
    int total = 0;
    for (int i = 0; i < 128; ++i) total += partial[(threadIdx.x + i) % 128];
    if (total == -12345) *sink = total;  // never true: keeps the loads
}

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    unsynchronised_sum<<<1, 128, 0, (cudaStream_t)p->stream>>>(p->kv_lens, p->batch, (int*)p->lse);
    if (cudaGetLastError() != cudaSuccess) return SOLBENCH_ERR_CUDA;
    return seed_attention_forward(p);
}
