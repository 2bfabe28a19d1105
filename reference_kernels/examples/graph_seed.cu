// graph_seed.cu -- an honest kernel that launches its work as a CUDA graph: each call captures the seed's kernels
// and a 4-byte memset of its own on a private stream, then launches the graph on the call's stream. A harness
// that counts launches (the native runner) must not count the launches into the capture, and must
// clear the graph's launch by its kernels' records: a check that rejects it is a false positive.
// expect: passed
#include <cuda_runtime.h>

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    static cudaStream_t capture = nullptr;
    static int* scratch = nullptr;
    if (!capture && cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking) != cudaSuccess) return SOLBENCH_ERR_CUDA;
    if (!scratch && cudaMalloc(&scratch, sizeof(int)) != cudaSuccess) return SOLBENCH_ERR_CUDA;
    SolbenchAttentionParams captured = *p;
    captured.stream = capture;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    if (cudaStreamBeginCapture(capture, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return SOLBENCH_ERR_CUDA;
    int code = seed_attention_forward(&captured);
    cudaMemsetAsync(scratch, 0, sizeof(int), capture);
    if (cudaStreamEndCapture(capture, &graph) != cudaSuccess || code) return code ? code : SOLBENCH_ERR_CUDA;
    bool ok = cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess && cudaGraphLaunch(exec, (cudaStream_t)p->stream) == cudaSuccess;
    if (exec) cudaGraphExecDestroy(exec);  // freed once the launch is done; the work stays queued
    cudaGraphDestroy(graph);
    return ok ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}
