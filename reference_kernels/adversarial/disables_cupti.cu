// disables_cupti.cu -- class 4 (work the events do not see): the native runner's CUPTI
// evidence lives in the candidate's own process, so the candidate switches it off. Its constructor (run at
// dlopen, after the runner started CUPTI) opens the libcupti the runner already loaded (RTLD_NOLOAD: the same
// handle, nothing new mapped) and calls cuptiActivityDisable for the three kinds the runner enabled
// (runner.cu cupti_start, lines 292-294). From then on cupti_take() (runner.cu 306) returns nothing:
// place_records (runner.cu 639-662) finds no spin, open or mark, `own` is empty, work_span_ms = 0 and
// outside_ms = 0, count_stray counts 0, and kernels are [] -- and round_flags (native_worker.py 105-110) only
// flags spans that are too long, never missing records. The work itself is hides_under_cover.cu's: the
// seed on a private stream, waited for on the host inside the call, so the launch cover (which grows with
// the call's launch time, runner.cu 545-553) holds p->stream and the start and end events time an empty
// stream. README: on the H200 that call passed before the open mark existed, and the open mark is seen only
// through CUPTI. Without CUPTI records the host-gap rule is all that is left, and the cover spans the work.
// Scenarios whose work exceeds the cover's cap (0.25 ms) may show a host gap instead. Since then a timed
// iteration whose own marks CUPTI did not record is tampered, before any other timing verdict.
// expect: tampered
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdlib.h>

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

// CUPTI_ACTIVITY_KIND_MEMCPY = 1, MEMSET = 2, CONCURRENT_KERNEL = 10 (cupti_activity.h)
__attribute__((constructor)) static void switch_cupti_off() {
    const char* named = getenv("SOLBENCH_CUPTI_LIB");  // where the supervisor told the runner to find it
    const char* tries[] = {named && *named ? named : "libcupti.so.13", "libcupti.so.13", "libcupti.so.12", "libcupti.so"};
    for (const char* name : tries) {
        void* lib = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
        if (!lib) continue;
        auto disable = (int (*)(int))dlsym(lib, "cuptiActivityDisable");
        if (disable) disable(10), disable(1), disable(2);
        return;
    }
}

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    static cudaStream_t side = nullptr;
    if (!side && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return SOLBENCH_ERR_CUDA;
    SolbenchAttentionParams on_side = *p;
    on_side.stream = side;
    int code = seed_attention_forward(&on_side);
    if (code) return code;
    return cudaStreamSynchronize(side) == cudaSuccess ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}
