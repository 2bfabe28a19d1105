// side_stream.cu -- the seed's correct work, enqueued on a private stream and never joined to p->stream.
// Its outputs are right once the device is synchronised, but events on p->stream time nothing: the
// harness must not report its (near-zero) time as a speed-up (CUPTI sees its kernels outlast the events).
// expect: hidden_work
#include <cuda_runtime.h>

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    static cudaStream_t side = nullptr;
    if (side == nullptr && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess)
        return SOLBENCH_ERR_CUDA;
    SolbenchAttentionParams on_side = *p;
    on_side.stream = side;
    return seed_attention_forward(&on_side);  // returns at once; p->stream never waits for `side`
}
