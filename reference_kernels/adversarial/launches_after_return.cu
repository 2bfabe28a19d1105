// launches_after_return.cu -- class 4: the first two calls on each output buffer (the checked ones) get the
// honest work; every later call returns at once and a host thread launches the seed's work 50 us later,
// after the end event was recorded, so the events time an empty call. CUPTI sees the work land outside
// the call's events or between calls; if it lands after the supervisor reads the outputs, they are
// unwritten. The candidate's process is stopped from each reply to the next request, so a thread can wake
// after its scenario's buffers were released and fault there: the next scenario is a runtime_error (the
// H200, 2026-12-04k: smoke scenario 3, cudaErrorIllegalAddress; the others hidden_work or unwritten).
// expect: hidden_work or unwritten or mismatch or runtime_error
#include <cuda_runtime.h>

#include <chrono>
#include <map>
#include <thread>

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

static std::map<const void*, int> calls;

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    if (++calls[p->out] <= 2) return seed_attention_forward(p);
    SolbenchAttentionParams later = *p;
    std::thread([later] {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        seed_attention_forward(&later);
    }).detach();
    return SOLBENCH_OK;
}
