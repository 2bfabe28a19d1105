// Planted: reaches cuBLAS at run time through dlopen/dlsym, so nothing is linked. Must be rejected
// (the library and symbol names are embedded strings).
#include <dlfcn.h>

#include "solbench_attention.h"

extern "C" int solbench_attention_forward(const SolbenchAttentionParams* p) {
    void* lib = dlopen("libcublas.so.13", RTLD_NOW);
    if (lib == nullptr) return SOLBENCH_ERR_UNSUPPORTED;
    typedef int (*create_fn)(void**);
    create_fn create = reinterpret_cast<create_fn>(dlsym(lib, "cublasCreate_v2"));
    void* handle = nullptr;
    return create != nullptr && create(&handle) == 0 && p != nullptr ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}
