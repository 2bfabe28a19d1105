// planted_slowdown.cu -- the seed kernel plus about 2 % more device time on every call, for the
// detection-rate experiment of benchmarks/ab_experiment.py (never a real candidate).
//
// Every call runs the seed between two events and then, on the same stream, a one-thread kernel that
// spins on the global timer for SLOWDOWN x the seed's time in the previous call on the same inputs. The
// extra time is real device time in the call, as a slower kernel's would be, and it follows the seed's
// own time under the harness's conditions (cold L2, clocks) call by call.
#define solbench_attention_forward seed_forward
#include "../reference_kernels/seed_attention.cu"
#undef solbench_attention_forward

#include <map>

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

// Keyed by the Q buffer: each rotated input copy has its own. (A first version keyed a time measured
// once per configuration on shapes and Q: a windowed 0.07 ms scenario got the same recycled buffers as
// the full 61 ms scenario before it and spun 18x its own time.) Timing call by call needs no key beyond
// the buffers: a recycled buffer carries the previous scenario's time into one call only, the check
// call of the next scenario, which is never timed.
struct LastCall {
    cudaEvent_t start = nullptr, end = nullptr;
    bool recorded = false;
};

extern "C" int solbench_attention_forward(const SolbenchAttentionParams* p) {
    static std::map<const void*, LastCall> last;
    cudaStream_t stream = (cudaStream_t)p->stream;
    LastCall& call = last[p->q];
    if (call.start == nullptr && (cudaEventCreate(&call.start) != cudaSuccess || cudaEventCreate(&call.end) != cudaSuccess))
        return SOLBENCH_ERR_CUDA;
    float previous_ms = 0.f;
    if (call.recorded) {
        cudaEventSynchronize(call.end);  // already done: the harness synchronises between timed calls
        cudaEventElapsedTime(&previous_ms, call.start, call.end);
    }
    cudaEventRecord(call.start, stream);
    int status = seed_forward(p);
    cudaEventRecord(call.end, stream);
    call.recorded = true;
#ifdef SLOWDOWN_PAGED_ONLY
    if (p->page_size == 0) return status;
#endif
    if (previous_ms > 0.f) spin_ns<<<1, 1, 0, stream>>>((unsigned long long)(previous_ms * SLOWDOWN * 1e6));
    return status;
}
