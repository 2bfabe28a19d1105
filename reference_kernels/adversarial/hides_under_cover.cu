// hides_under_cover.cu -- classes 2 and 4: when the stream is busy at entry (the launch cover holds it only
// in timed calls) it runs the seed's work on a private stream and waits for it on the host while the cover
// spins, then returns with nothing on p->stream: the events see an empty call. Checked calls (idle stream)
// get the honest work. CUPTI sees its kernels run before the start event.
// expect: hidden_work
#include <cuda_runtime.h>

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    if (cudaStreamQuery((cudaStream_t)p->stream) != cudaErrorNotReady) return seed_attention_forward(p);
    static cudaStream_t side = nullptr;
    if (!side && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return SOLBENCH_ERR_CUDA;
    SolbenchAttentionParams on_side = *p;
    on_side.stream = side;
    int code = seed_attention_forward(&on_side);
    if (code) return code;
    return cudaStreamSynchronize(side) == cudaSuccess ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}
