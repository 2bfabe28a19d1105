// planted_slowdown.cu -- the seed kernel plus about 2 % more device time on every call, for the
// detection-rate experiment of benchmarks/ab_experiment.py (never a real candidate).
//
// The first call of each configuration times the seed alone (events, synchronised); every call then
// runs the seed and, on the same stream, a one-thread kernel that spins on the global timer for
// SLOWDOWN x that time. The extra time is real device time in the call, as a slower kernel's would be.
#define solbench_attention_forward seed_forward
#include "../reference_kernels/seed_attention.cu"
#undef solbench_attention_forward

#include <algorithm>
#include <map>
#include <string>

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

// The seed's time of a configuration, keyed by every byte of the parameters: scenarios that share their
// shapes but differ in window, mask, softcap or page table (and may get the same buffers back from the
// caching allocator) are timed apart. Keyed on shapes and Q alone, a 0.07 ms windowed scenario took the
// 61 ms of the full one before it and spun 18x its own time. The median of three calls, so a first call
// that also loads the kernel module does not set it.
static float seed_time_ms(const SolbenchAttentionParams* p, cudaStream_t stream, int* status) {
    float ms[3];
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (float& each : ms) {
        cudaEventRecord(a, stream);
        *status = seed_forward(p);
        cudaEventRecord(b, stream);
        cudaEventSynchronize(b);
        cudaEventElapsedTime(&each, a, b);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(ms, ms + 3);
    return ms[1];
}

extern "C" int solbench_attention_forward(const SolbenchAttentionParams* p) {
    static std::map<std::string, float> seed_ms;
    std::string key(reinterpret_cast<const char*>(p), sizeof(*p));
    cudaStream_t stream = (cudaStream_t)p->stream;
    auto found = seed_ms.find(key);
    if (found == seed_ms.end()) {
        int status = SOLBENCH_OK;
        seed_ms[key] = seed_time_ms(p, stream, &status);
        return status;
    }
    int status = seed_forward(p);
#ifdef SLOWDOWN_PAGED_ONLY
    if (p->page_size == 0) return status;
#endif
    spin_ns<<<1, 1, 0, stream>>>((unsigned long long)(found->second * SLOWDOWN * 1e6));
    return status;
}
