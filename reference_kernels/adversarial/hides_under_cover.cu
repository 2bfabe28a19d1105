// hides_under_cover.cu -- class 4: runs the seed's work on a private stream and waits for it on the host,
// then returns with nothing on p->stream. In a timed call the launch cover holds p->stream meanwhile (the
// cover grows with the call's own launch time), so the start and end events see an empty call, and the
// host clock sees only a slow launcher. CUPTI sees its kernels run before the start event (H200,
// 2026-12-03: hidden_work, device time 1.3 us, 20-33 us of its work before the window). Where its private
// stream's work runs after the cover instead (seen on the H200 while the cover had shrunk to nothing: the
// window's marks then held it, device time 0.069-0.079 ms against the seed's 0.058-0.065 ms), `passed`
// means the events timed all of its work (the supervisor checks the CUPTI span against them).
// expect: hidden_work or passed
#include <cuda_runtime.h>

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    static cudaStream_t side = nullptr;
    if (!side && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return SOLBENCH_ERR_CUDA;
    SolbenchAttentionParams on_side = *p;
    on_side.stream = side;
    int code = seed_attention_forward(&on_side);
    if (code) return code;
    return cudaStreamSynchronize(side) == cudaSuccess ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}
