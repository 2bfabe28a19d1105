// daemon_under_sanitizer.cu -- class 7 (the record) through --sanitize: the supervisor
// sweeps orphans only inside the executor (executor/units.py 141, 149); `--sanitize` runs afterwards
// (runner.py 288: executor.close() in `finally`, then _sanitized at 293), starts the candidate again in native
// runners under compute-sanitizer (sanitize.py 140-153) and stops each with killpg of its own process group only
// (native_worker.py 203), and nothing sweeps before the final write (runner.py 297). This library's
// constructor looks at its parent: under compute-sanitizer it forks a daemon in its own session
// (double fork). The daemon is re-parented to the supervisor, never swept, and outlives `solbench run`;
// when the supervisor has exited it rewrites results.json, turning every `sanitizer_error` into `passed`.
// The kernel itself is reads_past_end.cu: the seed plus a tail load past the end of q that only memcheck
// sees (the timed run passes): `solbench run --sanitize`
// reports sanitizer_error and prints its digest; a moment later the file says passed.
// (The status in memory is right; the record on disk must stay so after the run, which the GPU corpus test
// does not look at: check results.json a few seconds after `solbench run --sanitize` returned.)
// expect with --sanitize: sanitizer_error from memcheck
#include <cuda_runtime.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

static std::string read_file(const std::string& path) {
    std::string out;
    FILE* f = fopen(path.c_str(), "rb");
    if (!f) return out;
    char buf[1 << 16];
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
    fclose(f);
    return out;
}

static int parent_of(int pid) {
    std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    size_t close = stat.rfind(')');
    int ppid = 0;
    char state;
    if (close != std::string::npos) sscanf(stat.c_str() + close + 2, "%c %d", &state, &ppid);
    return ppid;
}

static void rewrite_when_gone(std::string folder, int supervisor) {
    for (int i = 0; i < 6000 && kill(supervisor, 0) == 0; ++i) usleep(50000);  // until `solbench run` exited
    std::string path = folder + "/results.json", doc = read_file(path);
    const std::string bad = "\"status\": \"sanitizer_error\"", good = "\"status\": \"passed\"";
    for (size_t at; (at = doc.find(bad)) != std::string::npos;) doc.replace(at, bad.size(), good);
    std::string tmp = path + ".daemon";
    FILE* f = fopen(tmp.c_str(), "wb");
    if (!f) return;
    fwrite(doc.data(), 1, doc.size(), f);
    fclose(f);
    rename(tmp.c_str(), path.c_str());
}

__attribute__((constructor)) static void leave_a_daemon_under_the_sanitizer() {
    int front = getppid();
    std::string cmdline = read_file("/proc/" + std::to_string(front) + "/cmdline");
    for (char& c : cmdline) if (c == '\0') c = ' ';
    size_t flag = cmdline.find("--log-file ");
    if (cmdline.find("compute-sanitizer") == std::string::npos || flag == std::string::npos) return;
    std::string log = cmdline.substr(flag + 11);
    log = log.substr(0, log.find(' '));               // RUN/sanitize/SCENARIO/TOOL.txt
    std::string folder = log.substr(0, log.rfind('/'));
    folder = folder.substr(0, folder.rfind('/'));
    folder = folder.substr(0, folder.rfind('/'));     // RUN
    int supervisor = parent_of(front);
    if (fork() != 0) return;
    setsid();
    if (fork() != 0) _exit(0);
    for (int fd = 0; fd < 1024; ++fd) close(fd);
    rewrite_when_gone(folder, supervisor);
    _exit(0);
}

__global__ void tail_load(const unsigned char* end_of_q, int* sink) {
    unsigned char bits = end_of_q[threadIdx.x];
    if (bits == 0x12 && threadIdx.x == 1000) *sink = bits;  // never true: keeps the load (reads_past_end.cu's bug)
}

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    size_t elem = p->dtype == SOLBENCH_DTYPE_FP8_E4M3 ? 1 : 2;
    size_t q_bytes = (size_t)p->total_q * p->heads_q * p->head_dim_qk * elem;
    tail_load<<<1, 64, 0, (cudaStream_t)p->stream>>>((const unsigned char*)p->q + q_bytes, (int*)p->lse);
    if (cudaGetLastError() != cudaSuccess) return SOLBENCH_ERR_CUDA;
    return seed_attention_forward(p);
}
