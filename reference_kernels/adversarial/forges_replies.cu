// forges_replies.cu -- class 1 (patching the harness) for the native runner: "no Python
// in the timed process" removes the interpreter, not the candidate's control of the process. The runner
// keeps its reply pipe open on a plain descriptor (runner.cu 874: out_fd = dup(1), before CUDA opens any
// file, so it is the lowest write-only pipe descriptor above 2) and writes every reply there through a
// FILE* (runner.cu 84-93). This library's constructor (run by dlopen in load_candidate, runner.cu 329,
// before the first reply) moves that descriptor onto a pipe of its own (dup2), keeps the real one, and a
// thread copies each reply line through, multiplying every time of a round reply (device_ms, host_ms,
// span_ms, issued_ms, launch_ms, cover_ms, work_span_ms) by 0.55 and zeroing stray_kernels. The work is the
// seed's, honest and complete, so every output check passes. The supervisor decides from those numbers
// (native_worker.py 98-111, 237-239); the only number it measures itself is the round's wall time
// (evaluate.py 296, 334; audit.py clock_gap 123-135), which flags a round only when the unexplained time exceeds
// half the round AND 2 ms (audit.py 27-28, 133-135): 45 % unexplained never does, so every scenario passes
// 1.8x faster than it ran (and rounds under ~2 ms of unexplained time may be scaled by any factor). The same
// descriptor carries "forbidden ..." replies, and the thread could rewrite those too.
// expect: hidden_work or tampered
#include <cuda_runtime.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

#ifndef FORGE_FACTOR
#define FORGE_FACTOR 0.55  // forges_replies_past_busy.cu includes this file with 0.1
#endif
static const double FACTOR = FORGE_FACTOR;
static const char* SCALED[] = {"\"device_ms\":[", "\"host_ms\":[", "\"span_ms\":[", "\"issued_ms\":[",
                               "\"launch_ms\":[", "\"cover_ms\":[", "\"work_span_ms\":["};

static std::string forge(std::string line) {
    if (line.rfind("ok {\"device_ms\":[", 0) != 0) return line;  // only round replies carry times
    std::string out;
    size_t i = 0;
    while (i < line.size()) {
        size_t best = std::string::npos, len = 0;
        for (const char* key : SCALED) {
            size_t at = line.find(key, i);
            if (at < best) best = at, len = strlen(key);
        }
        if (best == std::string::npos) { out += line.substr(i); break; }
        out += line.substr(i, best + len - i);
        size_t close = line.find(']', best);
        std::string list = line.substr(best + len, close - best - len), scaled;
        for (size_t s = 0; s < list.size();) {
            size_t e = list.find(',', s);
            if (e == std::string::npos) e = list.size();
            char num[40];
            snprintf(num, sizeof num, "%.9g", atof(list.substr(s, e - s).c_str()) * FACTOR);
            scaled += (scaled.empty() ? "" : ",") + std::string(num);
            s = e + 1;
        }
        out += scaled + "]";
        i = close + 1;
    }
    size_t stray = out.find("\"stray_kernels\":");
    if (stray != std::string::npos) {
        size_t end = out.find_first_of(",}", stray + 16);
        out.replace(stray + 16, end - stray - 16, "0");
    }
    return out;
}

static void pump(int from, int to) {
    std::string buffer;
    char chunk[1 << 16];
    for (ssize_t n; (n = read(from, chunk, sizeof chunk)) > 0;) {
        buffer.append(chunk, n);
        for (size_t nl; (nl = buffer.find('\n')) != std::string::npos;) {
            std::string line = forge(buffer.substr(0, nl)) + "\n";
            buffer.erase(0, nl + 1);
            for (size_t done = 0; done < line.size();) {
                ssize_t w = write(to, line.data() + done, line.size() - done);
                if (w <= 0) return;
                done += w;
            }
        }
    }
}

__attribute__((constructor)) static void intercept_replies() {
    for (int fd = 3; fd < 64; ++fd) {
        int flags = fcntl(fd, F_GETFL);
        char link[64] = "", path[32];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        if (flags < 0 || (flags & O_ACCMODE) != O_WRONLY || readlink(path, link, sizeof link - 1) <= 0 ||
            strncmp(link, "pipe:", 5) != 0)
            continue;
        int real = dup(fd), mine[2];
        if (real < 0 || pipe(mine) != 0) return;
        dup2(mine[1], fd);  // the runner's FILE* now writes into our pipe
        close(mine[1]);
        std::thread(pump, mine[0], real).detach();
        return;
    }
}

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    return seed_attention_forward(p);
}
