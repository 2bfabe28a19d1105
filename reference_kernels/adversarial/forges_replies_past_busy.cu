// forges_replies_past_busy.cu -- forges_replies.cu (review 18) at a factor of 0.1 instead of 0.55, found in review 21.
// The supervisor's clock check was the only bound on a forged round reply: it compared its own wall time of the
// round with the sum of the reported host_ms, so times scaled by much less than ~0.5 left most of the round
// unexplained and were flagged (supervisor_clock_gap -> hidden_work). Since 02db683/2ba16ef the explained part
// of a native round is the runner's "busy_ms" (runner.cu cmd_round, native_worker._round "clock"), which this
// forger leaves alone: it is the runner's honest account of the whole round, so wall - busy is only the pipe
// and nothing is ever unexplained, whatever the other numbers say. Every time of a round reply is scaled by
// 0.1 (10x the seed), HOST_GAP and CUPTI's span test compare forged numbers with forged numbers, and only the
// datasheet speed-of-light bound (faster_than_light) is left to stop a smaller factor.
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

static const double FACTOR = 0.1;
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
