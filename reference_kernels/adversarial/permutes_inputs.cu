// permutes_inputs.cu -- cheat class 5: after the seed's (correct) work it swaps the first two 16-byte
// chunks of k in place, which an order-blind checksum of the inputs cannot see. The supervisor's
// fingerprint is keyed and position-dependent.
// expect: mismatch
#define solbench_attention_forward seed_forward
#include "../seed_attention.cu"
#undef solbench_attention_forward

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    int status = seed_forward(p);
    if (status != SOLBENCH_OK) return status;
    static void* scratch = nullptr;
    if (scratch == nullptr && cudaMalloc(&scratch, 16) != cudaSuccess) return SOLBENCH_ERR_CUDA;
    char* k = (char*)p->k;  // the ABI says const: this is the cheat
    cudaMemcpyAsync(scratch, k, 16, cudaMemcpyDeviceToDevice, (cudaStream_t)p->stream);
    cudaMemcpyAsync(k, k + 16, 16, cudaMemcpyDeviceToDevice, (cudaStream_t)p->stream);
    cudaMemcpyAsync(k + 16, scratch, 16, cudaMemcpyDeviceToDevice, (cudaStream_t)p->stream);
    return cudaGetLastError() == cudaSuccess ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}
