// planted_slowdown.cu -- the seed kernel plus about 2 % more device time on every call, for the
// detection-rate experiment of benchmarks/ab_experiment.py (never a real candidate).
//
// The first call of each configuration times the seed alone (events, synchronised); every call then
// runs the seed and, on the same stream, a one-thread kernel that spins on the global timer for
// SLOWDOWN x that time. The extra time is real device time in the call, as a slower kernel's would be.
#define solbench_attention_forward seed_forward
#include "../reference_kernels/seed_attention.cu"
#undef solbench_attention_forward

#include <map>
#include <tuple>

#ifndef SLOWDOWN
#define SLOWDOWN 0.02
#endif
// -DSLOWDOWN_PAGED_ONLY: slow down only scenarios with paged KV, so a gate can be shown to flag exactly
// the scenarios where the slowdown applies and no others.

__global__ void spin_ns(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}

extern "C" int solbench_attention_forward(const SolbenchAttentionParams* p) {
    static std::map<std::tuple<int, int, int, int, int, const void*>, float> seed_ms;
    auto key = std::make_tuple(p->batch, p->total_q, p->max_kv_len, p->heads_q, p->head_dim_qk, (const void*)p->q);
    cudaStream_t stream = (cudaStream_t)p->stream;
    auto found = seed_ms.find(key);
    if (found == seed_ms.end()) {
        cudaEvent_t a, b;
        cudaEventCreate(&a);
        cudaEventCreate(&b);
        cudaEventRecord(a, stream);
        int status = seed_forward(p);
        cudaEventRecord(b, stream);
        cudaEventSynchronize(b);
        float ms = 0.f;
        cudaEventElapsedTime(&ms, a, b);
        cudaEventDestroy(a);
        cudaEventDestroy(b);
        seed_ms[key] = ms;
        return status;
    }
    int status = seed_forward(p);
#ifdef SLOWDOWN_PAGED_ONLY
    if (p->page_size == 0) return status;
#endif
    spin_ns<<<1, 1, 0, stream>>>((unsigned long long)(found->second * SLOWDOWN * 1e6));
    return status;
}
