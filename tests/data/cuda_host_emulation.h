// cuda_host_emulation.h -- run a simple CUDA kernel source on the CPU, for tests on machines
// without a GPU. Force-included (g++ -include) into a .cu compiled as C++20, after the test has
// rewritten each `kernel<<<grid, block, smem, stream>>>(args)` into `emu_launch(kernel, grid,
// block, smem, stream, args)`. One std::thread per CUDA thread, one CTA at a time, a std::barrier
// for __syncthreads. Enough for the seed kernel (dynamic shared memory, no warp intrinsics,
// no atomics); it checks the algorithm and the ABI plumbing, not the GPU code generation.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#undef __global__
#undef __shared__
#undef __launch_bounds__
#define __global__
#define __shared__
#define __launch_bounds__(...)
#define __syncthreads() emu_barrier->arrive_and_wait()
#define cudaFuncSetAttribute(...) cudaSuccess
#define cudaGetLastError() cudaSuccess

using std::max;
using std::min;

namespace {
alignas(16) float smem[1 << 16];  // the kernel's `extern __shared__ float smem[]` (256 KiB)
thread_local uint3 emu_threadIdx;
uint3 emu_blockIdx;
dim3 emu_gridDim, emu_blockDim;
std::barrier<>* emu_barrier;

template <typename Kernel, typename... Args>
void emu_launch(Kernel kernel, dim3 grid, int block, size_t smem_bytes, cudaStream_t, Args... args) {
    if (smem_bytes > sizeof(smem)) std::abort();
    emu_gridDim = grid;
    emu_blockDim = dim3(block);
    for (unsigned z = 0; z < grid.z; ++z)
        for (unsigned y = 0; y < grid.y; ++y)
            for (unsigned x = 0; x < grid.x; ++x) {
                emu_blockIdx = make_uint3(x, y, z);
                std::memset(smem, 0xff, sizeof(smem));  // NaN garbage: catches reads before writes
                std::barrier<> bar(block);
                emu_barrier = &bar;
                std::vector<std::thread> threads;
                for (int t = 0; t < block; ++t)
                    threads.emplace_back([=] { emu_threadIdx = make_uint3(t, 0, 0); kernel(args...); });
                for (auto& th : threads) th.join();
            }
}
}  // namespace

#define threadIdx emu_threadIdx
#define blockIdx emu_blockIdx
#define gridDim emu_gridDim
#define blockDim emu_blockDim
