// toggles_copies.cu -- class 4 (work the events do not see), against the launch count:
// kernel launches are counted and must leave a record, copies and memsets were not. This one switches copy and
// memset records off inside its call and moves 32 MiB on a private stream while the launch cover holds the
// timing stream (what a cheat would use to warm L2 with the keys and values before its timed kernel starts),
// then computes honestly with the seed. What catches it: copies and memsets are counted by the same callback
// and must each leave a finished record (cupti_blind -> tampered).
// expect: tampered
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdlib.h>

#include "runner_cupti.h"

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

typedef int (*Switch)(int);
static Switch g_disable = nullptr, g_enable = nullptr;
static const size_t BYTES = 32u << 20;

// CUPTI_ACTIVITY_KIND_MEMCPY = 1, MEMSET = 2 (cupti_activity.h)
static void toggle(Switch f) {
    if (f) f(1), f(2);
}

__attribute__((constructor)) static void find_cupti() {
    if (void* lib = runner_cupti()) {
        g_disable = (Switch)dlsym(lib, "cuptiActivityDisable");
        g_enable = (Switch)dlsym(lib, "cuptiActivityEnable");
    }
}

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    static cudaStream_t side = nullptr;
    static char *from = nullptr, *to = nullptr;
    if (!side && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return SOLBENCH_ERR_CUDA;
    if (!from && (cudaMalloc(&from, BYTES) != cudaSuccess || cudaMalloc(&to, BYTES) != cudaSuccess)) return SOLBENCH_ERR_CUDA;
    toggle(g_disable);
    bool moved = cudaMemcpyAsync(to, from, BYTES, cudaMemcpyDeviceToDevice, side) == cudaSuccess &&
                 cudaStreamSynchronize(side) == cudaSuccess;
    toggle(g_enable);
    if (!moved) return SOLBENCH_ERR_CUDA;
    return seed_attention_forward(p);
}
