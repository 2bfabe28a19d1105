// toggles_kernels_in_graph.cu -- class 4 (work the events do not see), against the launch
// count: toggles_cupti.cu switched every kind of record off inside its call and was caught because its kernel
// launches left no record. This one switches off kernel records only and launches its work as one graph: the
// seed's kernels captured on a private stream, then a 4-byte memset node. The memset's record carries the graph
// launch's correlation id, which cleared the launch while any record did. The work is hides_under_cover.cu's (the
// private stream waited for on the host inside the call). What catches it: a graph whose nodes run kernels is
// cleared only by a finished kernel record of its launch (cupti_blind -> tampered).
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
static const int CONCURRENT_KERNEL = 10;  // CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL (cupti_activity.h)

__attribute__((constructor)) static void find_cupti() {
    if (void* lib = runner_cupti()) {
        g_disable = (Switch)dlsym(lib, "cuptiActivityDisable");
        g_enable = (Switch)dlsym(lib, "cuptiActivityEnable");
    }
}

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    static cudaStream_t side = nullptr;
    static int* scratch = nullptr;
    if (!side && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return SOLBENCH_ERR_CUDA;
    if (!scratch && cudaMalloc(&scratch, sizeof(int)) != cudaSuccess) return SOLBENCH_ERR_CUDA;
    SolbenchAttentionParams on_side = *p;
    on_side.stream = side;
    // The graph is captured afresh each call (the tensors rotate); launches into a capture are not counted.
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    if (cudaStreamBeginCapture(side, cudaStreamCaptureModeRelaxed) != cudaSuccess) return SOLBENCH_ERR_CUDA;
    int code = seed_attention_forward(&on_side);
    cudaMemsetAsync(scratch, 0, sizeof(int), side);
    if (cudaStreamEndCapture(side, &graph) != cudaSuccess || code) return code ? code : SOLBENCH_ERR_CUDA;
    if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) return SOLBENCH_ERR_CUDA;
    if (g_disable) g_disable(CONCURRENT_KERNEL);
    bool done = cudaGraphLaunch(exec, side) == cudaSuccess && cudaStreamSynchronize(side) == cudaSuccess;
    if (g_enable) g_enable(CONCURRENT_KERNEL);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return done ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}
