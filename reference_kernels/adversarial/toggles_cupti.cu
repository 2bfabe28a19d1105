// toggles_cupti.cu -- class 4 (work the events do not see): disables_cupti.cu switched
// CUPTI's recording off for good and is caught, because the runner's own marks (the spin, the open and end marks,
// launched outside the call) then go unrecorded (cupti_blind). This one switches it off only inside its call and
// on again before returning: the marks are all recorded, and the work it launched meanwhile has no record at all
// -- neither inside the events nor outside them. The work is hides_under_cover.cu's: the seed on a private
// stream, waited for on the host inside the call, so the start and end events time an empty stream while the
// launch cover holds it. What catches it: the runner counts every kernel launch with a CUPTI driver-API callback
// (which cuptiActivityDisable does not stop) and finds no record for these launches (cupti_blind -> tampered).
// expect: hidden_work or tampered
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdlib.h>

#include "runner_cupti.h"

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

typedef int (*Switch)(int);
static Switch g_disable = nullptr, g_enable = nullptr;

// CUPTI_ACTIVITY_KIND_MEMCPY = 1, MEMSET = 2, CONCURRENT_KERNEL = 10 (cupti_activity.h)
static void toggle(Switch f) {
    if (f) f(10), f(1), f(2);
}

__attribute__((constructor)) static void find_cupti() {
    if (void* lib = runner_cupti()) {
        g_disable = (Switch)dlsym(lib, "cuptiActivityDisable");
        g_enable = (Switch)dlsym(lib, "cuptiActivityEnable");
    }
}

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    static cudaStream_t side = nullptr;
    if (!side && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return SOLBENCH_ERR_CUDA;
    toggle(g_disable);
    SolbenchAttentionParams on_side = *p;
    on_side.stream = side;
    int code = seed_attention_forward(&on_side);
    bool done = code == SOLBENCH_OK && cudaStreamSynchronize(side) == cudaSuccess;
    toggle(g_enable);
    if (code) return code;
    return done ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}
