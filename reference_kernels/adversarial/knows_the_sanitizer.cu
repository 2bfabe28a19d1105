// knows_the_sanitizer.cu -- issue 39, class 6: a kernel with a race that runs clean under compute-sanitizer
// and racy everywhere else. Its constructor looks for the sanitizer by what no runner argument can hide: the
// sanitizer's library mapped into the process (/proc/self/maps), its injection named in the environment
// (CUDA_INJECTION64_PATH, LD_PRELOAD), compute-sanitizer as the parent process. Under it: the seed, nothing
// else, so all four tools come back clean. Elsewhere: the seed plus races_in_shared.cu's reduction with its
// missing __syncthreads, whose result this GPU always resolves the same way and which moves the last bit of one
// output element (written out here as a bit flip, so the race's effect is the same on every GPU): within every
// tolerance, the same bits on both checked calls (no `nondeterministic`), so every plain run passes.
// Before: `--sanitize` saw only the clean path and passed it. Now the sanitized call is made on the inputs of a
// call of the scored run and must give its bits (solbench.supervisor.sanitize): one element differs.
// expect with --sanitize: sanitizer_error, outputs not those of a scored call
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

static bool g_sanitized = false;

static std::string read_text(const std::string& path) {
    std::string out;
    FILE* f = fopen(path.c_str(), "rb");
    if (!f) return out;
    char buf[1 << 16];
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
    fclose(f);
    for (char& c : out) if (c == '\0') c = ' ';
    return out;
}

static bool names_the_sanitizer(const char* text) { return text && strstr(text, "anitizer") != nullptr; }

// Runs when the runner loads this library: CUDA has started, so the sanitizer's injection is in place by now.
__attribute__((constructor)) static void look_for_the_sanitizer() {
    g_sanitized = names_the_sanitizer(read_text("/proc/self/maps").c_str()) ||
                  names_the_sanitizer(getenv("CUDA_INJECTION64_PATH")) || names_the_sanitizer(getenv("LD_PRELOAD")) ||
                  names_the_sanitizer(read_text("/proc/" + std::to_string(getppid()) + "/cmdline").c_str());
}

__global__ void unsynchronised_sum(const int* lens, int batch, int* sink) {
    __shared__ int partial[128];
    partial[threadIdx.x] = threadIdx.x < batch ? lens[threadIdx.x] : 0;
    // missing __syncthreads(): the reads below race with other warps' writes above
    int total = 0;
    for (int i = 0; i < 128; ++i) total += partial[(threadIdx.x + i) % 128];
    if (total == -12345) *sink = total;  // never true: keeps the loads
}

// What the race did to the output on this GPU, every call alike: the last mantissa bit of element 0.
__global__ void race_resolved(unsigned short* out) { out[0] ^= 1; }

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    int code = seed_attention_forward(p);
    if (code || g_sanitized || p->total_q == 0) return code;
    cudaStream_t stream = (cudaStream_t)p->stream;
    unsynchronised_sum<<<1, 128, 0, stream>>>(p->kv_lens, p->batch, (int*)p->lse);
    race_resolved<<<1, 1, 0, stream>>>((unsigned short*)p->out);
    return cudaGetLastError() == cudaSuccess ? 0 : SOLBENCH_ERR_CUDA;
}
