// Planted: a "kernel" that hands the work to cuDNN (linked with -lcudnn). Must be rejected.
#include "solbench_attention.h"

extern "C" int cudnnCreate(void** handle);  // from cudnn.h, declared here so no header is needed

extern "C" int solbench_attention_forward(const SolbenchAttentionParams* p) {
    void* handle = nullptr;
    return cudnnCreate(&handle) == 0 && p != nullptr ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}
