// fault_on_one.cu -- the seed kernel, except on scenarios with heads_q == 8, where it fails the way the
// environment variable SOLBENCH_TEST_FAULT says:
//   segfault        dereference a null host pointer (SIGSEGV kills the worker)
//   illegal_address a kernel writes 4 TiB past the output (the CUDA context is lost)
//   infinite_loop   a kernel spins forever (the worker hangs until the runner's timeout)
//   oom             allocate device memory until none is left, keep it, report the failed allocation
// Anything else (or unset): the seed everywhere. One binary serves every mode, so a test builds it once.
// The harness must cost the failing scenario only: every other scenario passes and is on disk.
#define solbench_attention_forward seed_forward
#include "../seed_attention.cu"
#undef solbench_attention_forward

#include <cstdlib>
#include <cstring>
#include <vector>

__global__ void write_far_out_of_bounds(float* out) {
    out[(1ull << 40) + threadIdx.x] = 1.0f;
}

__global__ void spin_on(volatile int* flag) {
    while (*flag == 0) {
    }
}

static int fault(const char* mode, const SolbenchAttentionParams* p) {
    cudaStream_t stream = static_cast<cudaStream_t>(p->stream);
    if (std::strcmp(mode, "segfault") == 0) {
        volatile int* nowhere = nullptr;
        *nowhere = p->batch;
    } else if (std::strcmp(mode, "illegal_address") == 0) {
        write_far_out_of_bounds<<<1, 32, 0, stream>>>(static_cast<float*>(p->out));
        return cudaGetLastError() == cudaSuccess ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
    } else if (std::strcmp(mode, "infinite_loop") == 0) {
        static int* flag = nullptr;
        if (flag == nullptr && (cudaMalloc(&flag, sizeof(int)) != cudaSuccess ||
                                cudaMemset(flag, 0, sizeof(int)) != cudaSuccess))
            return SOLBENCH_ERR_CUDA;
        spin_on<<<1, 1, 0, stream>>>(flag);
        return cudaGetLastError() == cudaSuccess ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
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
