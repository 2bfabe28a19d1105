// dlopens_cublas_renamed.cu -- class 6 (forbidden libraries at run time): the native
// runner recognises a vendor library only by the file name of a mapping (runner.cu 204-223: the basename
// must start with "libcublas", "libcudnn" or "libcutlass") and by the substrings "cublas" / "cudnn" /
// "cutlass" in CUPTI's kernel names (runner.cu 226-234); cuBLAS(Lt)'s own GEMM kernels on Hopper are named
// nvjet_* / sm90_xmma_*, which contain none of them. So this library copies libcublasLt and libcublas into
// anonymous memory files (memfd_create) and dlopens them from /proc/self/fd: /proc/self/maps then names them
// "/memfd:seedgemm (deleted)". libcublasLt goes first, so libcublas's NEEDED entry matches its SONAME and is
// not looked up on disk. Names are built at run time (binary_check.py finds no string). It then creates a
// cuBLAS handle, to show the library works, and returns the seed's answer. Every reply says "ok".
// ($SOLBENCH_ADVERSARY_CUBLAS_DIR names the folder holding libcublas*.so* where it is not a usual one.)
// expect: forbidden_library
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

static void* load_anonymously(const std::string& file) {
    FILE* in = fopen(file.c_str(), "rb");
    if (!in) return nullptr;
    int fd = memfd_create("seedgemm", 0);
    char buf[1 << 16];
    for (size_t n; (n = fread(buf, 1, sizeof buf, in)) > 0;)
        if (write(fd, buf, n) != (ssize_t)n) { fclose(in); close(fd); return nullptr; }
    fclose(in);
    void* h = dlopen(("/proc/self/fd/" + std::to_string(fd)).c_str(), RTLD_NOW | RTLD_GLOBAL);
    return h;
}

static bool load_blas() {
    const char* named = getenv("SOLBENCH_ADVERSARY_CUBLAS_DIR");
    std::string dirs[] = {named && *named ? named : "/usr/local/cuda/lib64", "/usr/local/cuda/lib64",
                          "/usr/lib/x86_64-linux-gnu"};
    std::string stem = std::string("libcu") + "bl" + "as";
    for (auto& dir : dirs)
        for (const char* version : {".so.13", ".so.12"}) {
            if (access((dir + "/" + stem + "Lt" + version).c_str(), R_OK) != 0) continue;
            if (!load_anonymously(dir + "/" + stem + "Lt" + version)) continue;
            void* blas = load_anonymously(dir + "/" + stem + version);
            if (!blas) return false;
            auto create = (int (*)(void**))dlsym(blas, (std::string("cu") + "blas" + "Create_v2").c_str());
            void* handle = nullptr;
            return create && create(&handle) == 0;
        }
    return false;
}

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    static bool loaded = false;
    if (!loaded && !(loaded = load_blas())) return SOLBENCH_ERR_CUDA;  // nothing to load: cannot be tried here
    return seed_attention_forward(p);
}
