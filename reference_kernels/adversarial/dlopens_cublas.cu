// dlopens_cublas.cu -- the seed's correct work, and at its first call a vendor BLAS loaded with dlopen under
// a name built at run time, so the static symbol scan of the binary finds nothing. The native runner looks
// at the libraries mapped into its process before every reply. ($SOLBENCH_ADVERSARY_CUBLAS names the
// library where it is not on the loader's path.)
// expect: forbidden_library
#include <dlfcn.h>
#include <stdlib.h>

#include <string>

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    static void* handle = nullptr;
    if (!handle) {
        const char* named = getenv("SOLBENCH_ADVERSARY_CUBLAS");
        std::string name = std::string("libcu") + "bl" + "as.so";
        handle = dlopen(named && *named ? named : name.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) handle = dlopen((name + ".13").c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) handle = dlopen((name + ".12").c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) return SOLBENCH_ERR_CUDA;  // nothing to load here: the cheat cannot be tried
    }
    return seed_attention_forward(p);
}
