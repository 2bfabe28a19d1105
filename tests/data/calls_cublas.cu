// Planted: a "kernel" that hands the work to cuBLAS (linked with -lcublas). Must be rejected.
#include "solbench_attention.h"

extern "C" int cublasCreate_v2(void** handle);  // from cublas_api.h, declared here so no header is needed

extern "C" int solbench_attention_forward(const SolbenchAttentionParams* p) {
    void* handle = nullptr;
    return cublasCreate_v2(&handle) == 0 && p != nullptr ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}
