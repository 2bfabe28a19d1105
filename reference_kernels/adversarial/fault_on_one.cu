// fault_on_one.cu -- the seed kernel, except on scenarios with heads_q == 8, where it fails the way the
// environment variable SOLBENCH_TEST_FAULT says:
//   segfault        dereference a null host pointer (SIGSEGV kills the worker)
//   illegal_address a kernel writes 4 TiB past the output (the CUDA context is lost)
//   infinite_loop   a kernel spins forever (the worker hangs until the runner's timeout)
//   oom             allocate device memory until none is left, keep it, report the failed allocation
// Anything else (or unset): the seed everywhere. One binary serves every mode, so a test builds it once.
// The harness must cost the failing scenario only: every other scenario passes and is on disk.
// Each failure mode is the adversarial kernel of the same name, included under another entry-point name.
#define solbench_attention_forward seed_forward
#include "../seed_attention.cu"
#undef solbench_attention_forward
#define solbench_attention_forward segfault_forward
#include "segfault.cu"
#undef solbench_attention_forward
#define solbench_attention_forward illegal_address_forward
#include "illegal_address.cu"
#undef solbench_attention_forward
#define solbench_attention_forward infinite_loop_forward
#include "infinite_loop.cu"
#undef solbench_attention_forward

#include <cstdlib>
#include <cstring>
#include <vector>

static int fault(const char* mode, const SolbenchAttentionParams* p) {
    if (std::strcmp(mode, "segfault") == 0) {
        return segfault_forward(p);
    } else if (std::strcmp(mode, "illegal_address") == 0) {
        return illegal_address_forward(p);
    } else if (std::strcmp(mode, "infinite_loop") == 0) {
        return infinite_loop_forward(p);
    } else if (std::strcmp(mode, "oom") == 0) {
        // Leak 1 GiB blocks until the device is full; a later scenario would fail too unless the worker
        // holding them is replaced.
        static std::vector<void*> held;
        void* block = nullptr;
        while (cudaMalloc(&block, 1ull << 30) == cudaSuccess) held.push_back(block);
        cudaGetLastError();  // clear the allocation error: the context itself is intact
        return SOLBENCH_ERR_CUDA;
    }
    return seed_forward(p);
}

extern "C" int solbench_attention_forward(const SolbenchAttentionParams* p) {
    const char* mode = std::getenv("SOLBENCH_TEST_FAULT");
    if (mode != nullptr && p->heads_q == 8) return fault(mode, p);
    return seed_forward(p);
}
