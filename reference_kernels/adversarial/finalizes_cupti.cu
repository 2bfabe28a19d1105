// finalizes_cupti.cu -- class 4 (work the events do not see), after the launch count: the runner
// counts every kernel launch with a CUPTI callback subscription (toggles_cupti.cu is caught by it), so the
// candidate detaches CUPTI altogether. cuptiFinalize needs no handle of the runner's: it ends the runner's
// callback subscription and its activity recording at once, after which the candidate's launches are neither
// counted nor recorded. Its work is hides_under_cover.cu's: the seed on a private stream, waited for on the host
// inside the call. What catches it: the runner's own marks go unrecorded (unmarked), and its own launches in the
// round (flush, settle, spin, open and end marks) outnumber the launches the callback counted -- the second is
// what stays if a candidate finds the runner's buffer callback and feeds it records of its own after finalizing.
// expect: tampered
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdlib.h>

#include "runner_cupti.h"

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

static void finalize_cupti() {
    void* lib = runner_cupti();
    if (!lib) return;
    auto flush = (int (*)(unsigned))dlsym(lib, "cuptiActivityFlushAll");
    auto finalize = (int (*)())dlsym(lib, "cuptiFinalize");
    if (flush) flush(1);  // CUPTI asks for a flush before it is finalized
    if (finalize) finalize();
}

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    static cudaStream_t side = nullptr;
    static bool finalized = false;
    if (!finalized) finalize_cupti(), finalized = true;
    if (!side && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return SOLBENCH_ERR_CUDA;
    SolbenchAttentionParams on_side = *p;
    on_side.stream = side;
    int code = seed_attention_forward(&on_side);
    if (code) return code;
    return cudaStreamSynchronize(side) == cudaSuccess ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}
