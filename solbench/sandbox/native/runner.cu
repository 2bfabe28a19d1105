// solbench native runner: the process a .cu candidate is timed in, with no Python in it.
//
// The supervisor starts it as `runner CONFIG` (see parse_config) with stdin/stdout as the command pipe,
// stderr as the log and (fdsock=N) a Unix socket on which the file descriptors of the supervisor's tensors
// arrive (fd_receive.h, solbench/gpu/ipc.py). It measures its floors and calibrates the launch cover BEFORE
// the candidate library is loaded (its constructors cannot touch them), then loads it and answers one
// command per line:
//
//   prepare N            then N lines "copy STRUCT_HEX TOKEN x14": bind the supervisor's tensors (their fds are
//                        taken off the fd socket first; tokens "fd:INDEX:SERIAL:SIZE:OFFSET", "own:..", "-")
//   check KEEP           call the check copy (copy 0) once; KEEP=0 forgets it afterwards
//   warm_up              iterate over the rotation copies for warmup_ms (at least once each)
//   round I J ...        one timed iteration on each rotation copy named, in that order
//   launcher_split       the launcher-only A/B of rotation copy 0
//   release              drop every copy and mapping of the supervisor's memory
//   quit
//
// Each reply is one line: "ok JSON", "unsupported TEXT", "error TEXT" or "forbidden TEXT". The timing
// procedure is the one of solbench/sandbox/timing.py step for step (flush, wait, cover, events, call,
// device-wide synchronize); the raw numbers go back and the supervisor decides every verdict.
// Optionally (libcupti found), CUPTI activity records of every kernel, copy and memset on any stream are
// collected for each timed iteration (taken once a round and placed by their start times): the span of the
// candidate's own work, its kernel names and launch shapes.
#include <cuda.h>  // the driver's types only: its entry points are looked up at run time (DriverVmm)
#include <cuda_runtime.h>
#include <cuda_profiler_api.h>
#include <dlfcn.h>
#include <sys/socket.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "confine.h"  // confine(): Landlock before the candidate loads
#include "cupti_lite.h"
#include "fd_receive.h"  // receive_fds(): the supervisor's tensors' fds off the fd socket
#include "format.h"
#include "hide_arguments.h"  // hide_arguments(): one command line for every mode, as the candidate reads it
#include "solbench_attention.h"

// ------------------------------------------------------------------ the runner's own kernels

extern "C" __global__ void solbench_runner_flush_write(int4* buf, size_t n, int value) {
    int4 v = make_int4(value, value, value, value);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) buf[i] = v;
}

extern "C" __global__ void solbench_runner_flush_read(const int4* buf, size_t n, unsigned long long* sink) {
    int acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int4 v = buf[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x7fffffff) atomicAdd(sink, 1ull);  // keeps the loads; practically never taken
}

// The same spin as torch.cuda._sleep: one thread counting its SM's clock.
extern "C" __global__ void solbench_runner_spin(long long cycles) {
    long long start = clock64(), spent = 0;
    while (spent < cycles) spent = clock64() - start;
}

// Launched, when CUPTI records, right before the start event (solbench_runner_open: its end opens the call's
// window in CUPTI's clock) and right after the end event (solbench_runner_mark: its start closes it), so
// every record of the call can be placed in it. Both lie outside the events: they are never timed. The
// cover spin's end alone does not open the window: on the H200 a start event recorded behind it completed
// long after the spin ended while a private stream's work ran (hides_under_cover.cu).
extern "C" __global__ void solbench_runner_open() {}
extern "C" __global__ void solbench_runner_mark() {}
// Launched and waited for after each forced CUPTI flush, before the iteration starts: the first launch after
// a flush pays CUPTI's buffer set-up on the host, which must not fall between the cover and the call.
extern "C" __global__ void solbench_runner_settle() {}

// ------------------------------------------------------------------ small helpers

static FILE* g_replies = nullptr;
static std::string g_sandbox = "not confined";  // what confine() applied, for the description
static FILE* g_commands = nullptr;

static double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static std::string forbidden_mapped();

// One reply line. Before any "ok", the libraries mapped into this process are looked at: a vendor library
// the candidate loaded at run time (dlopen) turns the reply into "forbidden" and ends the runner.
static void reply(const char* status, const std::string& body) {
    std::string mapped = strcmp(status, "ok") == 0 ? forbidden_mapped() : "";
    if (!mapped.empty()) {
        fprintf(g_replies, "forbidden %s\n", mapped.c_str());
        fflush(g_replies);
        _exit(0);
    }
    fprintf(g_replies, "%s %s\n", status, body.c_str());
    fflush(g_replies);
}

static std::string json_str(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\', out += c;
        else if ((unsigned char)c < 0x20) { char b[8]; snprintf(b, sizeof b, "\\u%04x", c); out += b; }
        else out += c;
    }
    return out + "\"";
}

static std::string json_num(double x) {
    char b[40];
    snprintf(b, sizeof b, "%.9g", x);
    return b;
}

static std::string json_list(const std::vector<double>& xs) {
    std::string out = "[";
    for (size_t i = 0; i < xs.size(); ++i) out += (i ? "," : "") + json_num(xs[i]);
    return out + "]";
}

// A CUDA error after the candidate ran: the context may be poisoned, so report and leave (the supervisor
// starts a fresh runner).
static void fail_cuda(const char* what, cudaError_t err) {
    reply("error", format("%s: CUDA error %s (%s)", what, cudaGetErrorName(err), cudaGetErrorString(err)));
    fflush(stderr);
    _exit(3);
}

static void check_cuda(const char* what, cudaError_t err) {
    if (err != cudaSuccess) fail_cuda(what, err);
}

static double median(std::vector<double> xs) {
    if (xs.empty()) return 0.0;
    std::sort(xs.begin(), xs.end());
    size_t n = xs.size();
    return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

// ------------------------------------------------------------------ configuration

struct Config {
    std::string so_path;
    int device = 0;
    bool cold_l2 = true;
    bool flush_write = true, flush_read = false;  // policy.l2_flush: write, read or both (write, then read)
    double launch_cover_ms = 0.25;
    double warmup_ms = 100.0;
    double launcher_budget_ms = 100.0;
    bool cupti = true;
    bool calibrate = true;  // measure the floors and calibrate the cover (not under a sanitizer: only checks run)
    std::string data_path;  // "own" tensors' contents (solbench run --sanitize)
    std::vector<std::string> allowed;  // forbidden-library names allowed anyway ("cutlass", ...)
    std::vector<std::string> writable;  // confine=DIR:DIR: Landlock before the candidate loads (none: not confined)
    int fd_socket = -1;  // fdsock=N: where the supervisor's tensors' fds arrive (-1: none, own tensors only)
};

// CONFIG is "key=value" tokens: so=PATH device=N cold_l2=0|1 flush=write|read|both cover_ms=X warmup_ms=X
// launcher_budget_ms=X cupti=0|1 calibrate=0|1 data=PATH allow=a,b confine=DIR:DIR fdsock=N
static Config parse_config(int argc, char** argv) {
    Config c;
    for (int i = 1; i < argc; ++i) {
        std::string t = argv[i];
        size_t eq = t.find('=');
        std::string k = t.substr(0, eq), v = eq == std::string::npos ? "" : t.substr(eq + 1);
        if (k == "so") c.so_path = v;
        else if (k == "device") c.device = atoi(v.c_str());
        else if (k == "cold_l2") c.cold_l2 = v == "1";
        else if (k == "flush") c.flush_write = v != "read", c.flush_read = v != "write";
        else if (k == "cover_ms") c.launch_cover_ms = atof(v.c_str());
        else if (k == "warmup_ms") c.warmup_ms = atof(v.c_str());
        else if (k == "launcher_budget_ms") c.launcher_budget_ms = atof(v.c_str());
        else if (k == "cupti") c.cupti = v == "1";
        else if (k == "confine") {
            for (size_t a = 0, b; a <= v.size(); a = b + 1) {
                b = v.find(':', a);
                if (b == std::string::npos) b = v.size();
                if (b > a) c.writable.push_back(v.substr(a, b - a));
            }
        }
        else if (k == "calibrate") c.calibrate = v == "1";
        else if (k == "fdsock") c.fd_socket = atoi(v.c_str());
        else if (k == "data") c.data_path = v;
        else if (k == "allow") {
            size_t s = 0;
            while (s < v.size()) {
                size_t e = v.find(',', s);
                if (e == std::string::npos) e = v.size();
                if (e > s) c.allowed.push_back(v.substr(s, e - s));
                s = e + 1;
            }
        }
    }
    return c;
}

// ------------------------------------------------------------------ libraries mapped at run time

// Vendor libraries a candidate may not use (solbench/build/binary_check.py RULES), as mapped file names.
static const char* FORBIDDEN_FILES[][2] = {{"cublas", "libcublas"}, {"cudnn", "libcudnn"}, {"cutlass", "libcutlass"}};

static Config g_cfg;

static bool allowed(const Config& c, const std::string& lib) {
    return std::find(c.allowed.begin(), c.allowed.end(), lib) != c.allowed.end();
}

static const std::string& self_exe() {
    static std::string path = [] {
        char buf[4096];
        ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
        return std::string(buf, n > 0 ? (size_t)n : 0);
    }();
    return path;
}

// The first forbidden library mapped into this process now, or "".
static std::string forbidden_mapped() {
    const Config& c = g_cfg;
    FILE* f = fopen("/proc/self/maps", "r");
    if (!f) return "";
    char line[4096];
    std::string found;
    while (found.empty() && fgets(line, sizeof line, f)) {
        const char* path = strchr(line, '/');
        if (!path) continue;
        std::string where = path;
        where.erase(where.find_last_not_of("\n") + 1);
        // Code mapped from a file it made at run time (a memfd, a deleted file, its scratch folder or /dev/shm,
        // the writable folders) could be
        // any library under any name: that is refused as such.
        char perms[8] = "";
        bool executable = sscanf(line, "%*s %7s", perms) == 1 && strchr(perms, 'x');
        bool deleted = where.find(" (deleted)") != std::string::npos;
        if (deleted && (where.rfind(c.so_path, 0) == 0 || where.rfind(self_exe(), 0) == 0))
            deleted = false;  // the candidate's build or this runner, replaced in the cache by a later build
        bool made_here = where.rfind("/memfd:", 0) == 0 || deleted;
        for (auto& dir : c.writable)
            if (where.rfind(dir + "/", 0) == 0) made_here = true;
        if (executable && made_here) {
            found = format("the candidate's process runs code from a file made at run time (%s): which library it "
                           "is cannot be told, so it is not allowed", where.c_str());
            break;
        }
        const char* base = strrchr(path, '/') + 1;
        for (auto& rule : FORBIDDEN_FILES)
            if (strncmp(base, rule[1], strlen(rule[1])) == 0 && !allowed(c, rule[0])) {
                found = format("%s was mapped into the candidate's process at run time (%s)", rule[0], path);
                found.erase(found.find_last_not_of("\n") + 1);
                break;
            }
    }
    fclose(f);
    return found;
}

// The first forbidden library a kernel name points to (cuBLAS / cuDNN / CUTLASS kernels), or "".
static std::string forbidden_kernel(const Config& c, const std::string& name) {
    // cuBLAS(Lt)'s own GEMM families on Hopper and Blackwell are named nvjet_* and *xmma*, without "cublas".
    static const char* RULES[][2] = {{"cublas", "cublas"}, {"cublas", "nvjet_"}, {"cublas", "xmma"},
                                     {"cudnn", "cudnn"}, {"cutlass", "cutlass"}};
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    for (auto& rule : RULES)
        if (lower.find(rule[1]) != std::string::npos && !allowed(c, rule[0]))
            return format("the candidate launched a %s kernel at run time: %.200s", rule[0], name.c_str());
    return "";
}

// ------------------------------------------------------------------ CUPTI (optional, loaded at run time)

struct KernelRecord {
    std::string name;
    unsigned long long start_ns, end_ns;
    unsigned stream;
    int grid[3], block[3];
    bool copy;  // a memcpy / memset rather than a kernel
    uint32_t correlation;  // the API call that issued it (a graph's work carries its launch's)
};

// A launch the driver-API callback counted, until a record of its work arrives.
struct Launch {
    uint64_t entered = 0;   // the order in which launch calls were entered
    uint64_t returned = 0;  // 0 while its call runs, then the order in which launch calls returned
    bool needs_kernel = true;  // only a kernel record clears it (a memset or copy record of the same call does not)
    CUstream stream = nullptr;  // as the call named it, read at entry (the caller's memory may change by its exit)
};

struct Cupti {
    bool on = false;
    std::string why_off = "not tried";
#if SOLBENCH_HAVE_CUPTI
    CuptiApi api;
#endif
    std::mutex mu;
    std::vector<KernelRecord> records;
    // Every kernel or graph launch in the process, counted by a driver-API callback (which switching activity
    // recording off does not stop), by correlation id until a complete kernel record of its work arrives
    // (toggles_cupti.cu); launches in another context than the runner's are counted apart (their work is not
    // waited for by the runner's synchronize, nor timed by its events).
    bool counting = false;
    std::string why_not_counting = "not tried";
    std::unordered_map<uint32_t, Launch> unmatched;  // by correlation id
    std::unordered_map<CUgraphExec, bool> exec_kernels;  // graph execs made since: does one run kernels?
    uint64_t entered = 0, launches = 0;
    int foreign = 0;  // launches into another context
    size_t dropped = 0;  // records CUPTI had no buffer space for (so a launch of theirs reads as unrecorded)
    CUcontext context = nullptr;  // the runner's
    CUresult (*is_capturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
    CUresult (*graph_nodes)(CUgraph, CUgraphNode*, size_t*) = nullptr;
    CUresult (*node_type)(CUgraphNode, CUgraphNodeType*) = nullptr;
    CUresult (*child_graph)(CUgraphNode, CUgraph*) = nullptr;
};
static Cupti g_cupti;

#if SOLBENCH_HAVE_CUPTI
static void CUPTIAPI cupti_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *size = 8 << 20;
    *buffer = (uint8_t*)aligned_alloc(8, *size);
    *max_records = 0;
}

static void CUPTIAPI cupti_buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
    CUpti_Activity* rec = nullptr;
    size_t dropped = 0;
    if (g_cupti.api.dropped && g_cupti.api.dropped(context, stream, &dropped) != CUPTI_SUCCESS) dropped = 0;
    std::lock_guard<std::mutex> lock(g_cupti.mu);
    g_cupti.dropped += dropped;
    while (g_cupti.api.get_next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
        KernelRecord k{};
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            auto* r = (CUpti_ActivityKernel10*)rec;
            k = {r->name ? r->name : "?", r->start, r->end, r->streamId,
                 {r->gridX, r->gridY, r->gridZ}, {r->blockX, r->blockY, r->blockZ}, false, r->correlationId};
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            auto* r = (CUpti_ActivityMemcpy6*)rec;
            k = {"[memcpy]", r->start, r->end, r->streamId, {0, 0, 0}, {0, 0, 0}, true, r->correlationId};
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY2) {  // peer to peer
            auto* r = (CUpti_ActivityMemcpyPtoP4*)rec;
            k = {"[memcpy]", r->start, r->end, r->streamId, {0, 0, 0}, {0, 0, 0}, true, r->correlationId};
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            auto* r = (CUpti_ActivityMemset4*)rec;
            k = {"[memset]", r->start, r->end, r->streamId, {0, 0, 0}, {0, 0, 0}, true, r->correlationId};
        } else {
            continue;
        }
        // A forced flush can hand over a record of work still running (no end yet): it clears no launch.
        auto it = g_cupti.unmatched.find(k.correlation);
        if (it != g_cupti.unmatched.end() && k.start_ns > 0 && k.end_ns >= k.start_ns && (!k.copy || !it->second.needs_kernel))
            g_cupti.unmatched.erase(it);
        g_cupti.records.push_back(k);
    }
    free(buffer);
}

// The parameters of the launch calls up to their stream, in the calls' argument order (what
// generated_cuda_meta.h declares; that header does not compile on its own).
struct LaunchKernelArgs { CUfunction f; unsigned grid[3], block[3], shared_bytes; CUstream stream; };
struct LaunchKernelExArgs { const CUlaunchConfig* config; };
struct LaunchGridAsyncArgs { CUfunction f; int width, height; CUstream stream; };
struct GraphLaunchArgs { CUgraphExec exec; CUstream stream; };

static bool g_per_thread[CUPTI_DRIVER_TRACE_CBID_SIZE];  // the _ptsz / _ptds forms (count_launches fills it)

static bool per_thread(CUpti_CallbackId cbid) {  // a null stream is then the calling thread's own
    return cbid < CUPTI_DRIVER_TRACE_CBID_SIZE && g_per_thread[cbid];
}

// The stream a launch call named (the legacy stream for the calls that name none; the per-thread stream for a
// null stream in the _ptsz forms).
static CUstream launch_stream(CUpti_CallbackId cbid, const void* params) {
    CUstream stream = nullptr;
    switch (cbid) {
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: stream = ((const LaunchKernelArgs*)params)->stream; break;
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
            const CUlaunchConfig* config = ((const LaunchKernelExArgs*)params)->config;
            stream = config ? config->hStream : nullptr;
            break;
        }
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync: stream = ((const LaunchGridAsyncArgs*)params)->stream; break;
        case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
        case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: stream = ((const GraphLaunchArgs*)params)->stream; break;
        default: break;
    }
    return !stream && per_thread(cbid) ? CU_STREAM_PER_THREAD : stream;
}

// Copies and memsets, by their arguments' layout up to the size and the stream.
struct Copy1DArgs { uint64_t dst, src; size_t bytes; CUstream stream; };       // cuMemcpy{,HtoD,DtoH,DtoD}[Async]
struct Memset1DArgs { uint64_t dst; unsigned value; size_t count; CUstream stream; };  // cuMemsetD{8,16,32}[Async]
struct Memset2DArgs { uint64_t dst; size_t pitch; unsigned value; size_t width, height; CUstream stream; };
struct Copy2DArgs { const CUDA_MEMCPY2D* copy; CUstream stream; };
struct Copy3DArgs { const CUDA_MEMCPY3D* copy; CUstream stream; };

#define SB_CBID(name) CUPTI_DRIVER_TRACE_CBID_##name
enum CopyShape { NOT_A_COPY, COPY_1D, COPY_1D_SYNC, MEMSET_1D, MEMSET_1D_SYNC, MEMSET_2D, MEMSET_2D_SYNC, COPY_2D,
                 COPY_2D_SYNC, COPY_3D, COPY_3D_SYNC };

static CopyShape copy_shape(CUpti_CallbackId cbid) {
    switch (cbid) {
        case SB_CBID(cuMemcpyAsync): case SB_CBID(cuMemcpyAsync_ptsz):
        case SB_CBID(cuMemcpyHtoDAsync_v2): case SB_CBID(cuMemcpyHtoDAsync_v2_ptsz):
        case SB_CBID(cuMemcpyDtoHAsync_v2): case SB_CBID(cuMemcpyDtoHAsync_v2_ptsz):
        case SB_CBID(cuMemcpyDtoDAsync_v2): case SB_CBID(cuMemcpyDtoDAsync_v2_ptsz): return COPY_1D;
        case SB_CBID(cuMemcpy): case SB_CBID(cuMemcpy_ptds): case SB_CBID(cuMemcpyHtoD_v2): case SB_CBID(cuMemcpyHtoD_v2_ptds):
        case SB_CBID(cuMemcpyDtoH_v2): case SB_CBID(cuMemcpyDtoH_v2_ptds):
        case SB_CBID(cuMemcpyDtoD_v2): case SB_CBID(cuMemcpyDtoD_v2_ptds): return COPY_1D_SYNC;
        case SB_CBID(cuMemsetD8Async): case SB_CBID(cuMemsetD8Async_ptsz): case SB_CBID(cuMemsetD16Async):
        case SB_CBID(cuMemsetD16Async_ptsz): case SB_CBID(cuMemsetD32Async): case SB_CBID(cuMemsetD32Async_ptsz):
            return MEMSET_1D;
        case SB_CBID(cuMemsetD8_v2): case SB_CBID(cuMemsetD8_v2_ptds): case SB_CBID(cuMemsetD16_v2):
        case SB_CBID(cuMemsetD16_v2_ptds): case SB_CBID(cuMemsetD32_v2): case SB_CBID(cuMemsetD32_v2_ptds):
            return MEMSET_1D_SYNC;
        case SB_CBID(cuMemsetD2D8Async): case SB_CBID(cuMemsetD2D8Async_ptsz): case SB_CBID(cuMemsetD2D16Async):
        case SB_CBID(cuMemsetD2D16Async_ptsz): case SB_CBID(cuMemsetD2D32Async): case SB_CBID(cuMemsetD2D32Async_ptsz):
            return MEMSET_2D;
        case SB_CBID(cuMemsetD2D8_v2): case SB_CBID(cuMemsetD2D8_v2_ptds): case SB_CBID(cuMemsetD2D16_v2):
        case SB_CBID(cuMemsetD2D16_v2_ptds): case SB_CBID(cuMemsetD2D32_v2): case SB_CBID(cuMemsetD2D32_v2_ptds):
            return MEMSET_2D_SYNC;
        case SB_CBID(cuMemcpy2DAsync_v2): case SB_CBID(cuMemcpy2DAsync_v2_ptsz): return COPY_2D;
        case SB_CBID(cuMemcpy2D_v2): case SB_CBID(cuMemcpy2D_v2_ptds): case SB_CBID(cuMemcpy2DUnaligned_v2):
        case SB_CBID(cuMemcpy2DUnaligned_v2_ptds): return COPY_2D_SYNC;
        case SB_CBID(cuMemcpy3DAsync_v2): case SB_CBID(cuMemcpy3DAsync_v2_ptsz): return COPY_3D;
        case SB_CBID(cuMemcpy3D_v2): case SB_CBID(cuMemcpy3D_v2_ptds): return COPY_3D_SYNC;
        default: return NOT_A_COPY;
    }
}

// A copy's or memset's bytes (0: nothing to record) and stream (the legacy stream for the synchronous forms).
static size_t copy_bytes(CopyShape shape, const void* params, CUstream* stream) {
    switch (shape) {
        case COPY_1D: *stream = ((const Copy1DArgs*)params)->stream; [[fallthrough]];
        case COPY_1D_SYNC: return ((const Copy1DArgs*)params)->bytes;
        case MEMSET_1D: *stream = ((const Memset1DArgs*)params)->stream; [[fallthrough]];
        case MEMSET_1D_SYNC: return ((const Memset1DArgs*)params)->count;
        case MEMSET_2D: *stream = ((const Memset2DArgs*)params)->stream; [[fallthrough]];
        case MEMSET_2D_SYNC: return ((const Memset2DArgs*)params)->width * ((const Memset2DArgs*)params)->height;
        case COPY_2D: *stream = ((const Copy2DArgs*)params)->stream; [[fallthrough]];
        case COPY_2D_SYNC: {
            const CUDA_MEMCPY2D* c = ((const Copy2DArgs*)params)->copy;
            return c ? c->WidthInBytes * c->Height : 0;
        }
        case COPY_3D: *stream = ((const Copy3DArgs*)params)->stream; [[fallthrough]];
        case COPY_3D_SYNC: {
            const CUDA_MEMCPY3D* c = ((const Copy3DArgs*)params)->copy;
            return c ? c->WidthInBytes * c->Height * c->Depth : 0;
        }
        default: return 0;
    }
}

static std::vector<CUpti_CallbackId> copy_cbids() {
    std::vector<CUpti_CallbackId> out;
    for (CUpti_CallbackId cbid = 0; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid)
        if (copy_shape(cbid) != NOT_A_COPY) out.push_back(cbid);
    return out;
}
#undef SB_CBID

static const CUpti_CallbackId LAUNCH_CBIDS[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunch, CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid, CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz};

// Does a graph run a kernel (a kernel node, in it or in a child graph; a conditional node counts as one: what it
// runs is decided on the device)? Only then must its launch leave a kernel record.
static bool graph_runs_kernels(CUgraph graph, int depth = 0) {
    size_t n = 0;
    if (depth > 16 || g_cupti.graph_nodes(graph, nullptr, &n) != CUDA_SUCCESS) return true;
    std::vector<CUgraphNode> nodes(n);
    if (n && g_cupti.graph_nodes(graph, nodes.data(), &n) != CUDA_SUCCESS) return true;
    for (CUgraphNode node : nodes) {
        CUgraphNodeType type;
        if (g_cupti.node_type(node, &type) != CUDA_SUCCESS) return true;
        if (type == CU_GRAPH_NODE_TYPE_KERNEL || type == CU_GRAPH_NODE_TYPE_CONDITIONAL) return true;
        CUgraph child;
        if (type == CU_GRAPH_NODE_TYPE_GRAPH &&
            (g_cupti.child_graph(node, &child) != CUDA_SUCCESS || graph_runs_kernels(child, depth + 1)))
            return true;
    }
    return false;
}

// A launch is noted at its entry (no record can precede it), dropped at its exit when it failed or went into a
// stream capture (captured work runs, and is recorded, under the graph launch that replays it; a stream whose
// capture state cannot be read counts as not capturing), and numbered at its exit otherwise: only a launch that
// returned before a device synchronize is sure to have run by its end. A graph that runs no kernel is not counted.
static void CUPTIAPI cupti_on_launch(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
        auto* graph = (const CUpti_GraphData*)((const CUpti_ResourceData*)data)->resourceDescriptor;
        if (!graph) return;
        if (cbid == CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING) {
            std::lock_guard<std::mutex> lock(g_cupti.mu);
            g_cupti.exec_kernels.erase(graph->graphExec);
            return;
        }
        if (cbid != CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED) return;
        // The walk calls the driver from inside cuGraphInstantiate; SOLBENCH_RUNNER_NO_GRAPH_WALK=1 skips it (then
        // every graph must leave a kernel record) should a driver not allow that.
        static const bool walk = getenv("SOLBENCH_RUNNER_NO_GRAPH_WALK") == nullptr;
        bool kernels = !walk || !graph->graph || graph_runs_kernels(graph->graph);
        std::lock_guard<std::mutex> lock(g_cupti.mu);
        g_cupti.exec_kernels[graph->graphExec] = kernels;
        return;
    }
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
    auto* info = (const CUpti_CallbackData*)data;
    bool graph = cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch || cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
    if (info->callbackSite == CUPTI_API_ENTER) {
        Launch launch;
        CopyShape shape = copy_shape(cbid);
        if (shape != NOT_A_COPY) {  // any finished record of its own clears it; one of nothing is not counted
            launch.needs_kernel = false;
            if (copy_bytes(shape, info->functionParams, &launch.stream) == 0) return;
            if (!launch.stream && per_thread(cbid)) launch.stream = CU_STREAM_PER_THREAD;
        } else {
            launch.stream = launch_stream(cbid, info->functionParams);
        }
        std::lock_guard<std::mutex> lock(g_cupti.mu);
        if (info->context && info->context != g_cupti.context) { ++g_cupti.foreign; return; }
        if (graph) {
            auto known = g_cupti.exec_kernels.find(((const GraphLaunchArgs*)info->functionParams)->exec);
            if (known != g_cupti.exec_kernels.end() && !known->second) return;  // no kernel to leave a record
        }
        launch.entered = ++g_cupti.entered;
        g_cupti.unmatched[info->correlationId] = launch;
        return;
    }
    bool failed = info->functionReturnValue && *(const CUresult*)info->functionReturnValue != CUDA_SUCCESS;
    std::unique_lock<std::mutex> lock(g_cupti.mu);
    ++g_cupti.launches;
    auto it = g_cupti.unmatched.find(info->correlationId);
    if (it == g_cupti.unmatched.end()) return;  // its record came first, or it is not counted
    CUstream stream = it->second.stream;
    lock.unlock();
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    bool captured = !failed && g_cupti.is_capturing(stream, &capture) == CUDA_SUCCESS &&
                    capture != CU_STREAM_CAPTURE_STATUS_NONE;
    lock.lock();
    it = g_cupti.unmatched.find(info->correlationId);
    if (it == g_cupti.unmatched.end()) return;
    if (failed || captured) g_cupti.unmatched.erase(it);
    else it->second.returned = g_cupti.launches;
}

static void count_launches() {
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    auto find = [&](auto** fn, const char* name) {
        *fn = driver ? reinterpret_cast<std::remove_reference_t<decltype(*fn)>>(dlsym(driver, name)) : nullptr;
        return *fn != nullptr;
    };
    CUresult (*current)(CUcontext*) = nullptr;
    if (!find(&g_cupti.is_capturing, "cuStreamIsCapturing") || !find(&g_cupti.graph_nodes, "cuGraphGetNodes") ||
        !find(&g_cupti.node_type, "cuGraphNodeGetType") || !find(&g_cupti.child_graph, "cuGraphChildGraphNodeGetGraph") ||
        !find(&current, "cuCtxGetCurrent") || current(&g_cupti.context) != CUDA_SUCCESS) {
        g_cupti.why_not_counting = "libcuda.so.1 lacks a call the launch count needs";
        return;
    }
    auto& a = g_cupti.api;
    for (CUpti_CallbackId cbid = 0; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
        const char* name = nullptr;
        g_per_thread[cbid] = a.callback_name && a.callback_name(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) == CUPTI_SUCCESS &&
                             name && (strstr(name, "_ptsz") || strstr(name, "_ptds"));
    }
    CUpti_SubscriberHandle subscriber;  // kept nowhere: nothing in the runner's memory leads to it
    if (a.subscribe(&subscriber, cupti_on_launch, nullptr) != CUPTI_SUCCESS) {
        g_cupti.why_not_counting = "CUPTI callbacks taken by another subscriber (a profiler or sanitizer)";
        return;
    }
    bool ok = a.enable_callback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED) == CUPTI_SUCCESS &&
              a.enable_callback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING) ==
                  CUPTI_SUCCESS;
    for (CUpti_CallbackId cbid : LAUNCH_CBIDS)
        ok = ok && a.enable_callback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid) == CUPTI_SUCCESS;
    for (CUpti_CallbackId cbid : copy_cbids())
        ok = ok && a.enable_callback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid) == CUPTI_SUCCESS;
    if (!ok) { g_cupti.why_not_counting = "CUPTI refused a launch callback"; return; }
    g_cupti.counting = true;
}

static void cupti_start(const Config& c) {
    if (!c.cupti) { g_cupti.why_off = "off (cupti=0)"; return; }
    std::string why = load_cupti(&g_cupti.api);
    if (!why.empty()) { g_cupti.why_off = why; return; }
    auto& a = g_cupti.api;
    if (a.register_callbacks(cupti_buffer_requested, cupti_buffer_completed) != CUPTI_SUCCESS ||
        a.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS ||
        a.enable(CUPTI_ACTIVITY_KIND_MEMCPY) != CUPTI_SUCCESS || a.enable(CUPTI_ACTIVITY_KIND_MEMSET) != CUPTI_SUCCESS) {
        g_cupti.why_off = "CUPTI activity tracing refused here (profiling not permitted, or no support)";
        return;
    }
    a.enable(CUPTI_ACTIVITY_KIND_MEMCPY2);  // peer copies' records, where there are any (not needed otherwise)
    g_cupti.on = true;
    g_cupti.why_off = "";
    count_launches();
}
#else
static void cupti_start(const Config&) { g_cupti.why_off = "built without the CUPTI headers"; }
#endif

// Launches that returned up to number `upto` (all of whose work has finished and been flushed since) of which no
// complete record arrived, and launches entered up to number `entered_by` that never returned: CUPTI's recording
// was switched off while they ran, or a launch call was left (a thread stopped inside the driver). Forgotten once
// counted.
static int unrecorded_launches(uint64_t upto, uint64_t entered_by) {
    std::lock_guard<std::mutex> lock(g_cupti.mu);
    int n = 0;
    for (auto it = g_cupti.unmatched.begin(); it != g_cupti.unmatched.end();) {
        const Launch& l = it->second;
        if ((l.returned > 0 && l.returned <= upto) || (l.returned == 0 && l.entered <= entered_by))
            ++n, it = g_cupti.unmatched.erase(it);
        else
            ++it;
    }
    return n;
}

static int foreign_launches() {
    std::lock_guard<std::mutex> lock(g_cupti.mu);
    int n = g_cupti.foreign;
    g_cupti.foreign = 0;
    return n;
}

static size_t dropped_records() {
    std::lock_guard<std::mutex> lock(g_cupti.mu);
    size_t n = g_cupti.dropped;
    g_cupti.dropped = 0;
    return n;
}

static uint64_t entered_so_far() {
    std::lock_guard<std::mutex> lock(g_cupti.mu);
    return g_cupti.entered;
}

static uint64_t launches_so_far() {
    std::lock_guard<std::mutex> lock(g_cupti.mu);
    return g_cupti.launches;
}

// Every record completed since the last call (after a device synchronize).
static std::vector<KernelRecord> cupti_take() {
    std::vector<KernelRecord> out;
    if (!g_cupti.on) return out;
#if SOLBENCH_HAVE_CUPTI
    g_cupti.api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // the current buffer too, however full
#endif
    std::lock_guard<std::mutex> lock(g_cupti.mu);
    out.swap(g_cupti.records);
    return out;
}

// The activity records' clock now, read on the host (cuptiGetTimestamp: the time base of their start and end),
// or 0 where it cannot be read.
static unsigned long long cupti_now() {
#if SOLBENCH_HAVE_CUPTI
    uint64_t t = 0;
    if (g_cupti.on && g_cupti.api.timestamp && g_cupti.api.timestamp(&t) == CUPTI_SUCCESS) return t;
#endif
    return 0;
}

// ------------------------------------------------------------------ the candidate

typedef int (*ForwardFn)(const SolbenchAttentionParams*);
typedef size_t (*WorkspaceFn)(const SolbenchAttentionParams*);

struct Candidate {
    void* lib = nullptr;
    ForwardFn forward = nullptr;
    WorkspaceFn workspace = nullptr;
};

static std::string load_candidate(const Config& c, Candidate* out) {
    out->lib = dlopen(c.so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!out->lib) return format("%s: cannot be loaded: %s", c.so_path.c_str(), dlerror());
    auto* version = (const int32_t*)dlsym(out->lib, "solbench_abi_version");
    if (!version)
        return format("%s: no `solbench_abi_version` symbol; #include \"solbench_attention.h\" in the kernel source "
                      "(it defines the symbol) and rebuild", c.so_path.c_str());
    if (*version != SOLBENCH_ABI_VERSION)
        return format("%s: built against solbench ABI version %d, this solbench speaks version %d; rebuild it "
                      "(solbench build ...)", c.so_path.c_str(), *version, SOLBENCH_ABI_VERSION);
    out->forward = (ForwardFn)dlsym(out->lib, "solbench_attention_forward");
    if (!out->forward)
        return format("%s: missing entry point `solbench_attention_forward`; define extern \"C\" int "
                      "solbench_attention_forward(const SolbenchAttentionParams*)", c.so_path.c_str());
    out->workspace = (WorkspaceFn)dlsym(out->lib, "solbench_attention_workspace_size");
    return "";
}

// ------------------------------------------------------------------ the supervisor's tensors

struct Copy {
    SolbenchAttentionParams p;
    void* workspace = nullptr;
    size_t own_out_bytes = 0, own_lse_bytes = 0;  // own outputs ("own:-:BYTES"): what a check hands back (data=)
};

// A mapping of one of the supervisor's allocations (imported from the fd it sent).
struct Shared {
    CUdeviceptr base = 0;
    size_t size = 0;
};

static std::map<unsigned long long, Shared> g_shared;  // allocation serial -> its mapping here
static std::vector<int> g_fds;              // the fds of the prepare being read, in the order tokens number them
static std::vector<void*> g_owned;          // "own" tensors: allocated here, at their exact sizes
static std::vector<Copy> g_copies;          // [0] the check copy, then the rotation
static bool g_check_alive = false;

// The driver calls that map a file descriptor's allocation. Looked up in libcuda.so.1 (which the runtime has
// loaded already) rather than linked: the runner then needs no libcuda at link time, as before.
struct DriverVmm {
    decltype(&cuMemImportFromShareableHandle) import_fd = nullptr;
    decltype(&cuMemAddressReserve) reserve = nullptr;
    decltype(&cuMemAddressFree) address_free = nullptr;
    decltype(&cuMemMap) map = nullptr;
    decltype(&cuMemUnmap) unmap = nullptr;
    decltype(&cuMemSetAccess) set_access = nullptr;
    decltype(&cuMemRelease) release = nullptr;
    decltype(&cuGetErrorName) error_name = nullptr;
};
static DriverVmm g_vmm;

static std::string load_driver_vmm() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) return format("libcuda.so.1: %s", dlerror());
    bool ok = true;
    auto find = [&](auto** fn, const char* name) {
        *fn = reinterpret_cast<std::remove_reference_t<decltype(*fn)>>(dlsym(lib, name));
        ok = ok && *fn;
    };
    find(&g_vmm.import_fd, "cuMemImportFromShareableHandle");
    find(&g_vmm.reserve, "cuMemAddressReserve");
    find(&g_vmm.address_free, "cuMemAddressFree");
    find(&g_vmm.map, "cuMemMap");
    find(&g_vmm.unmap, "cuMemUnmap");
    find(&g_vmm.set_access, "cuMemSetAccess");
    find(&g_vmm.release, "cuMemRelease");
    find(&g_vmm.error_name, "cuGetErrorName");
    return ok ? "" : "libcuda.so.1 lacks the virtual memory management calls (cuMemMap and co.)";
}

static std::string driver_error(const char* call, CUresult r) {
    const char* name = nullptr;
    if (g_vmm.error_name) g_vmm.error_name(r, &name);
    return format("%s: CUDA driver error %d (%s)", call, (int)r, name ? name : "?");
}

static void close_fds() {
    for (int fd : g_fds) close(fd);
    g_fds.clear();
}

static bool from_hex(const std::string& hex, void* out, size_t n) {
    if (hex.size() != 2 * n) return false;
    for (size_t i = 0; i < n; ++i) {
        unsigned v;
        if (sscanf(hex.c_str() + 2 * i, "%2x", &v) != 1) return false;
        ((unsigned char*)out)[i] = (unsigned char)v;
    }
    return true;
}

// "own:OFFSET:BYTES": a tensor of exactly BYTES allocated here, filled from the data file at OFFSET ("-":
// left uninitialised, as outputs), so a sanitizer sees each tensor's own bounds and every uninitialised read.
static bool own_tensor(const std::string& token, void** ptr, std::string* why) {
    char offset[32] = "";
    unsigned long long bytes = 0;
    if (sscanf(token.c_str(), "own:%31[^:]:%llu", offset, &bytes) != 2) { *why = "bad own token " + token; return false; }
    cudaError_t err = cudaMalloc(ptr, bytes ? bytes : 1);
    if (err != cudaSuccess) { *why = format("cudaMalloc of %llu bytes: %s", bytes, cudaGetErrorString(err)); return false; }
    g_owned.push_back(*ptr);
    if (strcmp(offset, "-") == 0 || bytes == 0) return true;
    FILE* f = fopen(g_cfg.data_path.c_str(), "rb");
    std::vector<char> host(bytes);
    bool read = f && fseek(f, (long)strtoull(offset, nullptr, 10), SEEK_SET) == 0 && fread(host.data(), 1, bytes, f) == bytes;
    if (f) fclose(f);
    if (!read) { *why = "cannot read " + std::to_string(bytes) + " bytes at " + offset + " of data=" + g_cfg.data_path; return false; }
    err = cudaMemcpy(*ptr, host.data(), bytes, cudaMemcpyHostToDevice);
    if (err != cudaSuccess) { *why = format("cudaMemcpy: %s", cudaGetErrorString(err)); return false; }
    return true;
}

// Map the allocation behind fd (size bytes) at an address range of its own, read-write for this device.
static std::string map_fd(int fd, size_t size, Shared* out) {
    if (!g_vmm.import_fd) return "no driver calls to map file descriptors with";
    CUmemGenericAllocationHandle handle;
    CUresult r = g_vmm.import_fd(&handle, (void*)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    if (r != CUDA_SUCCESS) return driver_error("cuMemImportFromShareableHandle", r);
    CUdeviceptr base = 0;
    std::string why;
    if ((r = g_vmm.reserve(&base, size, 0, 0, 0)) != CUDA_SUCCESS) why = driver_error("cuMemAddressReserve", r);
    else if ((r = g_vmm.map(base, size, 0, handle, 0)) != CUDA_SUCCESS) why = driver_error("cuMemMap", r);
    else {
        CUmemAccessDesc access{};
        access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        access.location.id = g_cfg.device;
        access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        if ((r = g_vmm.set_access(base, size, &access, 1)) != CUDA_SUCCESS) {
            why = driver_error("cuMemSetAccess", r);
            g_vmm.unmap(base, size);
        }
    }
    if (!why.empty() && base) g_vmm.address_free(base, size);
    g_vmm.release(handle);  // the mapping holds the memory from here on
    if (why.empty()) *out = {base, size};
    return why;
}

// "-" (NULL), "fd:INDEX:SERIAL:SIZE:OFFSET" (the supervisor's tensor, mapped from the INDEXth fd of this
// prepare) or an own tensor: the tensor's address in this process.
static bool map_tensor(const std::string& token, void** ptr, std::string* why) {
    if (token == "-") { *ptr = nullptr; return true; }
    if (token.rfind("own:", 0) == 0) return own_tensor(token, ptr, why);
    unsigned long long index, serial, size, offset;
    int end = 0;
    if (sscanf(token.c_str(), "fd:%llu:%llu:%llu:%llu%n", &index, &serial, &size, &offset, &end) != 4 ||
        (size_t)end != token.size()) {
        *why = "bad tensor token " + token;
        return false;
    }
    auto it = g_shared.find(serial);
    if (it == g_shared.end()) {
        if (index >= g_fds.size()) {
            *why = format("token %s names file descriptor #%llu, but %zu came", token.c_str(), index, g_fds.size());
            return false;
        }
        Shared mapped;
        *why = map_fd(g_fds[index], size, &mapped);
        if (!why->empty()) return false;
        it = g_shared.emplace(serial, mapped).first;
    }
    if (offset >= it->second.size) { *why = "a token's offset lies past its allocation: " + token; return false; }
    *ptr = (void*)(it->second.base + offset);
    return true;
}

static void release_all() {
    cudaDeviceSynchronize();
    for (auto& c : g_copies) if (c.workspace) cudaFree(c.workspace);
    g_copies.clear();
    for (auto& kv : g_shared) {
        g_vmm.unmap(kv.second.base, kv.second.size);
        g_vmm.address_free(kv.second.base, kv.second.size);
    }
    g_shared.clear();
    close_fds();
    for (void* p : g_owned) cudaFree(p);
    g_owned.clear();
    g_check_alive = false;
}

// One "copy" line: the struct as the supervisor filled it (solbench.abi.params_from_inputs), with every
// pointer field then replaced by the address of the shared tensor here.
static std::string bind_copy(const Candidate& cand, const char* line, Copy* out) {
    char hex[2 * sizeof(SolbenchAttentionParams) + 2];
    int used = 0;
    if (sscanf(line, "copy %450s%n", hex, &used) != 1) return "malformed copy line";
    if (!from_hex(hex, &out->p, sizeof out->p)) return "bad parameter struct";
    const void** fields[] = {&out->p.q, &out->p.k, &out->p.v, (const void**)&out->p.out, (const void**)&out->p.lse,
                             (const void**)&out->p.cu_seqlens_q, (const void**)&out->p.cu_seqlens_kv,
                             (const void**)&out->p.kv_lens, (const void**)&out->p.page_table,
                             (const void**)&out->p.sinks, (const void**)&out->p.mask_bits,
                             (const void**)&out->p.q_descale, (const void**)&out->p.k_descale,
                             (const void**)&out->p.v_descale};
    const char* rest = line + used;
    for (auto* field : fields) {
        char token[256];
        int n = 0;
        if (sscanf(rest, "%255s%n", token, &n) != 1) return "too few tensors";
        rest += n;
        std::string why;
        void* ptr = nullptr;
        if (!map_tensor(token, &ptr, &why)) return why;
        *field = ptr;
        unsigned long long bytes = 0;
        if (sscanf(token, "own:-:%llu", &bytes) == 1 && field == (const void**)&out->p.out) out->own_out_bytes = bytes;
        if (sscanf(token, "own:-:%llu", &bytes) == 1 && field == (const void**)&out->p.lse) out->own_lse_bytes = bytes;
    }
    out->p.stream = nullptr;  // the legacy default stream, as torch's current stream is in the Python host
    out->p.workspace = nullptr;
    out->p.workspace_bytes = 0;
    if (cand.workspace) {
        size_t bytes = cand.workspace(&out->p);
        if (bytes) {
            cudaError_t err = cudaMalloc(&out->workspace, bytes);
            if (err != cudaSuccess) return format("workspace of %zu bytes: %s", bytes, cudaGetErrorString(err));
            out->p.workspace = out->workspace;
            out->p.workspace_bytes = bytes;
        }
    }
    return "";
}

// ------------------------------------------------------------------ timing (solbench/sandbox/timing.py)

struct Raw {
    double device_ms, host_ms, launch_ms, cover_ms, span_ms, issued_ms;
    double work_span_ms;  // CUPTI: first start to last end of the candidate's own work; -1 without CUPTI
    double outside_ms;    // CUPTI: how long its work ran before the window opened or after the end mark
    int code;             // the entry point's return value
    double late_open_ms;  // CUPTI: from the spin's end to the open mark's start (telemetry: a stalled stream)
    double spin_kernel_ms = -1.0;  // CUPTI: the cover spin's own duration; -1 where there is no record of it
    // Where the iteration's records are placed later (Timer::per_part): on CUPTI's clock, when the wait after
    // the flush returned (what started before is between calls) and when the call's synchronize returned.
    unsigned long long flushed_ns = 0, synced_ns = 0;
    double cover_asked_ms = 0.0;  // the cover's length asked for (its rate is corrected by what its spin took)
    bool covered = false, flushed = false;
};

struct Timer {
    Config cfg;
    int4* buf = nullptr;
    size_t buf_int4 = 0;
    unsigned long long* sink = nullptr;
    int fill = 0;
    int flush_blocks = 0;
    double cycles_per_ms = 0.0;
    double calibrated_cycles_per_ms = 0.0;
    cudaEvent_t g0, spun, start, end;
    bool trace = getenv("SOLBENCH_RUNNER_TRACE") != nullptr;  // one stderr line per timed iteration
    bool settle = getenv("SOLBENCH_RUNNER_NO_SETTLE") == nullptr;  // (off only to measure what it buys)
    // Take a round's CUPTI records once, after its last call, and place each by its start time between the host's
    // readings of CUPTI's clock (Raw::flushed_ns, synced_ns), instead of a forced flush before and after every
    // call: the flushes were most of the runner's ~ms of overhead a call, and the clock check grants every
    // call of a candidate the loop's cost. SOLBENCH_RUNNER_TAKE=call keeps the flush per call (to compare).
    bool per_part_wanted = getenv("SOLBENCH_RUNNER_TAKE") == nullptr || strcmp(getenv("SOLBENCH_RUNNER_TAKE"), "call");
    bool per_part() const { return per_part_wanted && cupti_now() != 0; }
    // The cover is sized from the host time between the spin's launch and the call's return (the open mark and
    // the start event included, each slow under CUPTI), from timed iterations' history alone, and its clock rate
    // is observed from CUPTI's record of the spin, not from events that also count the spin's launch delay.
    // Sized from the call's launch alone, the start event fired before the call's launch arrived: the seed timed
    // 0.4 % slower than the Python host on `real` and +10 % on an 80 us decode (H200, 2026-12-04,
    // reports/h200/fingerprint-and-span-cover: span cover native-vs-python geomean 0.9999, p95 0.91 %).
    std::deque<double> launches, marked_launches;
    double host_floor_ms = 0, sync_floor_ms = 0, slack_ms = 0.02;
    size_t l2_bytes = 0;
    bool persisting_ok = false;
    std::string gpu;
    std::vector<KernelRecord> last_kernels;  // the candidate's records of the latest iteration
    int stray = 0;  // the candidate's records that fell between timed iterations (a host thread's late work)
    int unmarked = 0;  // timed iterations whose own marks CUPTI did not record (recording switched off inside)
    uint64_t own_launches = 0;  // the runner's own kernels launched while timing (the launch count must see them)

    void setup(const Config& c) {
        cfg = c;
        cudaDeviceProp prop;
        check_cuda("cudaGetDeviceProperties", cudaGetDeviceProperties(&prop, c.device));
        gpu = prop.name;
        l2_bytes = prop.l2CacheSize;
        flush_blocks = 4 * prop.multiProcessorCount;
        if (c.cold_l2) {
            size_t bytes = 2 * (l2_bytes ? l2_bytes : (128u << 20));
            buf_int4 = bytes / 16;
            check_cuda("flush buffer", cudaMalloc(&buf, buf_int4 * 16));
            check_cuda("flush buffer", cudaMemset(buf, 0, buf_int4 * 16));
            check_cuda("flush sink", cudaMalloc(&sink, sizeof *sink));
        }
        persisting_ok = cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0) == cudaSuccess &&
                        cudaCtxResetPersistingL2Cache() == cudaSuccess;
        cudaGetLastError();
        check_cuda("events", cudaEventCreate(&g0));
        check_cuda("events", cudaEventCreate(&spun));
        check_cuda("events", cudaEventCreate(&start));
        check_cuda("events", cudaEventCreate(&end));
        if (c.calibrate) calibrate_cover(), measure_floors();
    }

    void flush() {
        if (!buf) return;
        if (cfg.flush_write) {
            fill ^= 1;
            solbench_runner_flush_write<<<flush_blocks, 512>>>(buf, buf_int4, fill + 1), ++own_launches;
        }
        if (cfg.flush_read) solbench_runner_flush_read<<<flush_blocks, 512>>>(buf, buf_int4, sink), ++own_launches;
    }

    void cover(double ms) {
        if (cycles_per_ms > 0) solbench_runner_spin<<<1, 1>>>(std::max(1LL, (long long)(ms * cycles_per_ms))), ++own_launches;
    }

    float elapsed(cudaEvent_t a, cudaEvent_t b) {
        float ms = 0;
        check_cuda("cudaEventElapsedTime", cudaEventElapsedTime(&ms, a, b));
        return ms;
    }

    void calibrate_cover() {
        double rate = 1.0e6;
        for (int i = 0; i < 4; ++i) {
            cudaEventRecord(g0, 0);
            solbench_runner_spin<<<1, 1>>>((long long)(5.0 * rate));
            cudaEventRecord(start, 0);
            check_cuda("cover calibration", cudaDeviceSynchronize());
            rate = 5.0 * rate / std::max((double)elapsed(g0, start), 1e-3);
        }
        cycles_per_ms = calibrated_cycles_per_ms = rate;
    }

    // The rate follows the spin's record, but within [0.5, 2] x the rate calibrated before the candidate was
    // loaded: a look-alike spin the candidate launches can be taken for the runner's (that iteration is flagged)
    // and would otherwise steer the real cover far past launch_cover_ms in rounds whose flags are not kept.
    void observe_cover(double requested, double actual) {
        if (cycles_per_ms > 0 && requested > 0.02 && actual > 0.02)
            cycles_per_ms = std::min(2.0 * calibrated_cycles_per_ms, std::max(0.5 * calibrated_cycles_per_ms,
                                     0.8 * cycles_per_ms + 0.2 * (requested * cycles_per_ms / actual)));
    }

    std::deque<double>& launch_history(bool marked) { return marked ? marked_launches : launches; }

    double cover_for(bool marked) {
        double cap = cfg.launch_cover_ms;
        if (cap <= 0) return 0.0;
        const std::deque<double>& history = launch_history(marked);
        if (history.empty()) return std::min(cap, 0.05);
        std::vector<double> xs(history.begin(), history.end());
        std::sort(xs.begin(), xs.end());
        double p90 = xs[std::min(xs.size() - 1, (size_t)(0.9 * xs.size()))];
        return std::min(cap, 1.25 * p90 + 0.005);
    }

    void measure_floors() {
        std::vector<double> floors, syncs;
        for (int i = 0; i < 45; ++i) {
            cudaDeviceSynchronize();
            double t0 = now_ms();
            cudaEventRecord(g0, 0);
            cudaEventRecord(start, 0);
            cudaEventRecord(end, 0);
            cudaDeviceSynchronize();
            double t1 = now_ms();
            cudaDeviceSynchronize();
            double t2 = now_ms();
            if (i >= 5) floors.push_back(t1 - t0), syncs.push_back(t2 - t1);
        }
        std::sort(floors.begin(), floors.end());
        host_floor_ms = median(floors);
        sync_floor_ms = median(syncs);
        double jitter = floors[(size_t)(0.9 * (floors.size() - 1))] - host_floor_ms;
        slack_ms = std::max(0.02, 3.0 * jitter);
    }

    // A persisting-L2 carve-out set now (by the candidate) is reset; true if there was one.
    bool persisting_l2_set() {
        if (!persisting_ok) return false;
        size_t limit = 0;
        if (cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize) != cudaSuccess) { cudaGetLastError(); return false; }
        if (limit == 0) return false;
        cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
        cudaCtxResetPersistingL2Cache();
        return true;
    }

    // One timed iteration of `call` (a forward of one copy, or a graph replay).
    // With `deferred` (per_part), its records are left for place_later.
    template <class Call>
    Raw iterate(Call call, bool do_flush, bool own_work, bool deferred = false) {
        if (do_flush) flush();
        check_cuda("cudaStreamSynchronize", cudaStreamSynchronize(0));
        deferred = deferred && own_work && g_cupti.on;
        unsigned long long flushed_ns = deferred ? cupti_now() : 0;
        if (own_work && !deferred) stray += count_stray(cupti_take(), do_flush);  // between calls only the runner's flush runs
        if (own_work && g_cupti.on && settle) {
            solbench_runner_settle<<<1, 1>>>(), ++own_launches;
            check_cuda("cudaStreamSynchronize", cudaStreamSynchronize(0));
        }
        bool marked = own_work && g_cupti.on;
        double cover_ms = cover_for(marked);
        double t0 = now_ms();
        cudaEventRecord(g0, 0);
        if (cover_ms > 0) cover(cover_ms);
        cudaEventRecord(spun, 0);  // the spin's own length by events, for the trace (its rate comes from CUPTI)
        double ts = now_ms();
        if (marked) solbench_runner_open<<<1, 1>>>(), ++own_launches;  // before the start event: never timed
        cudaEventRecord(start, 0);
        double tc = now_ms();
        int code = call();
        double tr = now_ms();
        cudaEventRecord(end, 0);
        if (marked) solbench_runner_mark<<<1, 1>>>(), ++own_launches;  // after the end event: never timed
        cudaError_t err = cudaDeviceSynchronize();
        double t1 = now_ms();
        if (err != cudaSuccess) fail_cuda("the candidate's call", err);
        std::deque<double>& history = launch_history(marked);
        history.push_back(tr - ts);
        if (history.size() > 32) history.pop_front();
        double held = elapsed(g0, start);
        Raw r{elapsed(start, end), t1 - t0, tr - tc, held, elapsed(g0, end), tr - t0, -1.0, 0.0, code, 0.0};
        r.cover_asked_ms = cover_ms, r.covered = cover_ms > 0, r.flushed = do_flush;
        if (trace)
            fprintf(stderr, "iteration: cover asked %.4f spin %.4f held %.4f device %.4f launch %.4f host %.4f "
                    "spin issued %.4f open issued %.4f ms\n", cover_ms, elapsed(g0, spun), held, r.device_ms,
                    r.launch_ms, r.host_ms, ts - t0, tc - ts);
        if (deferred) {
            r.flushed_ns = flushed_ns, r.synced_ns = cupti_now();
            return r;
        }
        if (marked) placed(cupti_take(), &r);
        return r;
    }

    // One iteration's records placed (place_records), and the cover's rate follows its spin.
    void placed(std::vector<KernelRecord> recs, Raw* r) {
        place_records(std::move(recs), r->covered, r);
        if (r->covered && r->spin_kernel_ms > 0) observe_cover(r->cover_asked_ms, r->spin_kernel_ms);
        if (trace)
            fprintf(stderr, "iteration records: work %.4f outside %.4f late_open %.4f spin %.4f ms\n", r->work_span_ms,
                    r->outside_ms, r->late_open_ms, r->spin_kernel_ms);
    }

    // The records of a round's deferred iterations, all taken after its last call: each by its start time.
    // Before an iteration's flush wait returned: between calls (count_stray, as the take before each call
    // counted them); from then to its synchronize: that iteration's (place_records); after the last one: work
    // that landed after the round. Records the round's first take left behind count as between calls.
    // `own` gets each iteration's own kernels, for the forbidden-library check.
    void place_later(std::vector<KernelRecord> recs, std::vector<Raw>& raws, std::vector<KernelRecord>* own) {
        std::vector<std::vector<KernelRecord>> before(raws.size()), during(raws.size());
        std::vector<KernelRecord> after;
        for (auto& k : recs) {
            size_t i = 0;
            while (i < raws.size() && k.start_ns > raws[i].synced_ns) ++i;
            if (i == raws.size()) after.push_back(std::move(k));
            else if (k.start_ns > raws[i].flushed_ns) during[i].push_back(std::move(k));
            else before[i].push_back(std::move(k));
        }
        for (size_t i = 0; i < raws.size(); ++i) {
            if (trace && !during[i].empty()) {  // how far inside its marks the iteration's records lie (clock skew)
                unsigned long long lo = ~0ull, hi = 0;
                for (auto& k : during[i]) lo = std::min(lo, k.start_ns), hi = std::max(hi, k.end_ns);
                fprintf(stderr, "iteration margins: first start %.4f ms after the flush wait, last end %.4f ms before "
                        "the synchronize returned\n", (double)(long long)(lo - raws[i].flushed_ns) / 1e6,
                        (double)(long long)(raws[i].synced_ns - hi) / 1e6);
            }
            stray += count_stray(std::move(before[i]), raws[i].flushed);
            placed(std::move(during[i]), &raws[i]);
            own->insert(own->end(), last_kernels.begin(), last_kernels.end());
        }
        stray += count_stray(std::move(after), false);
    }

    static bool one_thread(const KernelRecord& k) {
        return k.grid[0] == 1 && k.grid[1] == 1 && k.grid[2] == 1 && k.block[0] == 1 && k.block[1] == 1 && k.block[2] == 1;
    }

    // Records between calls that are not the runner's own flush (at most one write and one read kernel,
    // matched by name and launch shape, so a candidate kernel named like them is still counted).
    int count_stray(std::vector<KernelRecord> recs, bool flushed) const {
        int n = 0;
        bool write_left = flushed && cfg.flush_write, read_left = flushed && cfg.flush_read;
        for (auto& k : recs) {
            bool shape = k.grid[0] == flush_blocks && k.block[0] == 512 && !k.copy;
            if (shape && write_left && k.name == "solbench_runner_flush_write") { write_left = false; continue; }
            if (shape && read_left && k.name == "solbench_runner_flush_read") { read_left = false; continue; }
            ++n;
        }
        return n;
    }

    // One iteration's records: the cover spin, the open mark (the later of their ends opens the call's
    // window), the end mark (its start closes it) and the candidate's own work. Named look-alikes launched
    // by the candidate only narrow the window (the latest-ending spin and open mark, the earliest-starting
    // end mark are taken), so spoofing them never helps.
    void place_records(std::vector<KernelRecord> recs, bool covered, Raw* r) {
        long spin = -1, open = -1, mark = -1, settled = -1;
        for (size_t i = 0; i < recs.size(); ++i) {
            if (!one_thread(recs[i])) continue;
            if (covered && recs[i].name == "solbench_runner_spin" && (spin < 0 || recs[i].end_ns > recs[spin].end_ns)) spin = i;
            if (recs[i].name == "solbench_runner_open" && (open < 0 || recs[i].end_ns > recs[open].end_ns)) open = i;
            if (recs[i].name == "solbench_runner_mark" && (mark < 0 || recs[i].start_ns < recs[mark].start_ns)) mark = i;
        }
        if (open < 0 || mark < 0 || (covered && spin < 0)) ++unmarked;
        unsigned long long opens = std::max(spin >= 0 ? recs[spin].end_ns : 0ull, open >= 0 ? recs[open].end_ns : 0ull);
        // The settle kernel: one, ended before the iteration's first mark of its own began (so a look-alike
        // inside the window is still the candidate's work).
        unsigned long long first = spin >= 0 ? recs[spin].start_ns : open >= 0 ? recs[open].start_ns : 0ull;
        for (size_t i = 0; i < recs.size() && settled < 0; ++i)
            if (one_thread(recs[i]) && recs[i].name == "solbench_runner_settle" && recs[i].end_ns <= first) settled = i;
        unsigned long long closes = mark >= 0 ? recs[mark].start_ns : ~0ull;
        if (spin >= 0) r->spin_kernel_ms = (recs[spin].end_ns - recs[spin].start_ns) / 1e6;
        r->late_open_ms = spin >= 0 && open >= 0 && recs[open].start_ns > recs[spin].end_ns
                              ? (recs[open].start_ns - recs[spin].end_ns) / 1e6 : 0.0;
        std::vector<KernelRecord> own;
        for (size_t i = 0; i < recs.size(); ++i)
            if ((long)i != spin && (long)i != open && (long)i != mark && (long)i != settled) own.push_back(recs[i]);
        last_kernels = own;
        r->work_span_ms = 0.0;
        if (own.empty()) return;
        unsigned long long lo = own[0].start_ns, hi = own[0].end_ns;
        for (auto& k : own) lo = std::min(lo, k.start_ns), hi = std::max(hi, k.end_ns);
        r->work_span_ms = (hi - lo) / 1e6;
        double before = lo < opens ? (opens - lo) / 1e6 : 0.0, after = hi > closes ? (hi - closes) / 1e6 : 0.0;
        r->outside_ms = before + after;
    }
};

static Timer g_timer;
static Candidate g_cand;
static bool g_after_round = false;  // the previous command was a round

static int call_copy(size_t i) { return g_cand.forward(&g_copies[i].p); }

static std::string code_text(int code) {
    static const char* names[] = {"SOLBENCH_OK", "SOLBENCH_ERR_INVALID_ARGUMENT", "SOLBENCH_ERR_UNSUPPORTED",
                                  "SOLBENCH_ERR_CUDA", "SOLBENCH_ERR_WORKSPACE"};
    return format("solbench_attention_forward in %s returned %d (%s)", g_timer.cfg.so_path.c_str(), code,
                  code >= 0 && code <= 4 ? names[code] : "unknown error code");
}

static std::string kernels_json(const std::vector<KernelRecord>& recs) {
    std::string out = "[";
    for (size_t i = 0; i < recs.size() && i < 32; ++i) {
        auto& k = recs[i];
        out += format("%s{\"name\":%s,\"grid\":[%d,%d,%d],\"block\":[%d,%d,%d],\"duration_ms\":%s,\"stream\":%u}",
                      i ? "," : "", json_str(k.name.substr(0, 300)).c_str(), k.grid[0], k.grid[1], k.grid[2],
                      k.block[0], k.block[1], k.block[2], json_num((k.end_ns - k.start_ns) / 1e6).c_str(), k.stream);
    }
    return out + "]";
}

// ------------------------------------------------------------------ commands

static bool rotation_ok(const std::vector<int>& order, std::string* why) {
    for (int i : order)
        if (i < 0 || (size_t)(i + 1) >= g_copies.size()) { *why = format("no rotation copy %d", i); return false; }
    return true;
}

static void cmd_round(const std::vector<int>& order) {
    std::string why;
    if (order.empty() || !rotation_ok(order, &why)) return reply("error", why.empty() ? "empty round" : why);
    double began = now_ms();  // the round's own time (busy_ms): flush, syncs and CUPTI bookkeeping between calls too
    bool carve_out = g_timer.persisting_l2_set();
    cudaEventRecord(g_timer.g0, 0);
    cudaDeviceSynchronize();
    // What came since the last command: after a round of ours, anything but the runner's own is the
    // candidate's work landing late (a host thread); after warm-up or a check it is their own work.
    g_timer.stray = 0;
    g_timer.unmarked = 0;
    uint64_t launched_before = launches_so_far(), entered_before = entered_so_far(), own_before = g_timer.own_launches;
    std::vector<KernelRecord> pending = cupti_take();
    if (g_after_round) g_timer.stray += g_timer.count_stray(pending, false);
    bool deferred = g_timer.per_part();
    std::vector<Raw> raws;
    std::vector<KernelRecord> kernels;  // every iteration's own kernels
    for (int i : order) {
        raws.push_back(g_timer.iterate([&] { return call_copy(i + 1); }, g_timer.cfg.cold_l2, true, deferred));
        if (raws.back().code) return reply("error", code_text(raws.back().code));
        if (!deferred) kernels.insert(kernels.end(), g_timer.last_kernels.begin(), g_timer.last_kernels.end());
    }
    carve_out = g_timer.persisting_l2_set() || carve_out;
    uint64_t launched = launches_so_far();
    check_cuda("after the round", cudaDeviceSynchronize());
    double taking = now_ms();
    if (deferred) g_timer.place_later(cupti_take(), raws, &kernels);
    else g_timer.stray += g_timer.count_stray(cupti_take(), false);  // work the last call left to land after it
    if (g_timer.trace) fprintf(stderr, "round: %zu calls, records taken and placed in %.4f ms (%s)\n", raws.size(),
                               now_ms() - taking, deferred ? "once a round" : "also before and after each call");
    std::vector<double> dev, host, launch, cover, span, issued, work, outside, late;
    for (auto& r : raws) {
        dev.push_back(r.device_ms), host.push_back(r.host_ms), launch.push_back(r.launch_ms);
        cover.push_back(r.cover_ms), span.push_back(r.span_ms), issued.push_back(r.issued_ms);
        work.push_back(r.work_span_ms), outside.push_back(r.outside_ms), late.push_back(r.late_open_ms);
    }
    std::string forbidden;
    for (auto& k : kernels)
        if (forbidden.empty() && !k.copy) forbidden = forbidden_kernel(g_timer.cfg, k.name);
    // Every launch since the runner started, up to here, must have left a record by now (warm-up's and checks'
    // included: their records arrive by this flush at the latest).
    int unrecorded = g_cupti.counting ? unrecorded_launches(launched, entered_before) : 0;
    int foreign = g_cupti.counting ? foreign_launches() : 0;
    // The callback must have seen at least the runner's own launches: fewer, and it was unsubscribed (say by a
    // cuptiFinalize that the candidate followed with activity recording of its own).
    uint64_t own = g_timer.own_launches - own_before, counted = launched - launched_before;
    if (g_cupti.counting && counted < own) unrecorded += (int)(own - counted);
    if (!forbidden.empty()) return reply("forbidden", forbidden);
    std::string body = "{\"device_ms\":" + json_list(dev) + ",\"host_ms\":" + json_list(host) +
                       ",\"launch_ms\":" + json_list(launch) + ",\"cover_ms\":" + json_list(cover) +
                       ",\"span_ms\":" + json_list(span) + ",\"issued_ms\":" + json_list(issued) +
                       ",\"flags\":" + (carve_out ? "[\"persisting_l2\"]" : "[]") +
                       ",\"busy_ms\":" + json_num(now_ms() - began);
    if (g_cupti.on)
        body += ",\"work_span_ms\":" + json_list(work) + ",\"outside_ms\":" + json_list(outside) +
                ",\"late_open_ms\":" + json_list(late) +
                ",\"kernels\":" + kernels_json(g_timer.last_kernels) +
                ",\"stray_kernels\":" + std::to_string(g_timer.stray) +
                ",\"unmarked\":" + std::to_string(g_timer.unmarked) +
                (g_cupti.counting ? ",\"unrecorded\":" + std::to_string(unrecorded) +
                                    ",\"launches\":" + std::to_string(launched - launched_before) +
                                    ",\"foreign_launches\":" + std::to_string(foreign) : "") +
                ",\"dropped_records\":" + std::to_string(dropped_records());
    reply("ok", body + "}");
}

static void cmd_warm_up() {
    if (g_copies.size() < 2) return reply("error", "warm_up before prepare");
    size_t n = g_copies.size() - 1, done = 0;
    double deadline = now_ms() + g_timer.cfg.warmup_ms;
    while (done < n || now_ms() < deadline) {
        size_t i = 1 + done % n;
        Raw r = g_timer.iterate([&] { return call_copy(i); }, g_timer.cfg.cold_l2, false);
        if (r.code) return reply("error", code_text(r.code));
        ++done;
    }
    reply("ok", "null");
}

// `solbench profile` sets SOLBENCH_PROFILE_CHECK and runs ncu / nsys from the profiler API's start: only the
// first checked call is profiled, never the supervisor's own kernels or the timing loop around the calls.
static bool g_profile_next_check = getenv("SOLBENCH_PROFILE_CHECK") != nullptr;

// With own tensors (data=, solbench run --sanitize), the check call's outputs, out's bytes then lse's, to
// DATA.out: the supervisor compares them with the scored call's on the same inputs (solbench.supervisor.sanitize).
static std::string hand_back_outputs(const Copy& c) {
    std::vector<char> host(c.own_out_bytes + c.own_lse_bytes);
    cudaError_t err = cudaMemcpy(host.data(), c.p.out, c.own_out_bytes, cudaMemcpyDeviceToHost);
    if (err == cudaSuccess) err = cudaMemcpy(host.data() + c.own_out_bytes, c.p.lse, c.own_lse_bytes, cudaMemcpyDeviceToHost);
    if (err != cudaSuccess) return format("reading the outputs back: %s", cudaGetErrorString(err));
    std::string path = g_cfg.data_path + ".out";
    FILE* f = fopen(path.c_str(), "wb");
    bool written = f && fwrite(host.data(), 1, host.size(), f) == host.size();
    if (f) written = fclose(f) == 0 && written;
    return written ? "" : "cannot write " + path;
}

static void cmd_check(bool keep) {
    if (!g_check_alive) return reply("error", "check without a check copy");
    check_cuda("before the check call", cudaDeviceSynchronize());
    cupti_take();
    bool profiled = g_profile_next_check;
    if (profiled) cudaProfilerStart();
    int code = call_copy(0);
    cudaError_t err = cudaDeviceSynchronize();
    if (profiled) cudaProfilerStop(), g_profile_next_check = false;
    if (err != cudaSuccess) fail_cuda("the candidate's check call", err);
    if (!keep) g_check_alive = false;
    if (code == SOLBENCH_ERR_UNSUPPORTED) return reply("unsupported", code_text(code));
    if (code) return reply("error", code_text(code));
    if (!g_cfg.data_path.empty() && g_copies[0].own_out_bytes) {
        std::string why = hand_back_outputs(g_copies[0]);
        if (!why.empty()) return reply("error", why);
    }
    for (auto& k : cupti_take()) {
        std::string why = k.copy ? "" : forbidden_kernel(g_timer.cfg, k.name);
        if (!why.empty()) return reply("forbidden", why);
    }
    reply("ok", "null");
}

static void cmd_launcher_split() {
    if (g_copies.size() < 2) return reply("error", "launcher_split before prepare");
    Timer& t = g_timer;
    auto call = [&] { return call_copy(1); };
    double first = t.iterate(call, false, false).device_ms;
    int reps = std::max(1, std::min(15, (int)(t.cfg.launcher_budget_ms / (4 * std::max(first, 1e-3)))));
    int batch = std::max(2, std::min(10, reps));
    std::vector<double> eager{first};
    for (int i = 1; i < reps; ++i) eager.push_back(t.iterate(call, false, false).device_ms);
    // Graph replay: warm up on a side stream, capture there, replay on the timing stream (as CudaOps.capture).
    std::string graph_error;
    double graph_ms = -1;
    cudaStream_t side;
    cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    SolbenchAttentionParams on_side = g_copies[1].p;
    on_side.stream = side;
    cudaDeviceSynchronize();
    for (int i = 0; i < 3; ++i) g_cand.forward(&on_side);
    cudaDeviceSynchronize();
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    cudaError_t err = cudaStreamBeginCapture(side, cudaStreamCaptureModeGlobal);
    int code = err == cudaSuccess ? g_cand.forward(&on_side) : 0;
    cudaError_t end_err = err == cudaSuccess ? cudaStreamEndCapture(side, &graph) : err;
    if (err == cudaSuccess && end_err == cudaSuccess && code == 0) end_err = cudaGraphInstantiate(&exec, graph, 0);
    if (err != cudaSuccess || end_err != cudaSuccess || code != 0 || !exec) {
        graph_error = format("graph capture failed: %s", code ? code_text(code).c_str() : cudaGetErrorString(
                                                                    err != cudaSuccess ? err : end_err));
        cudaGetLastError();
        cudaDeviceSynchronize();
        cudaGetLastError();
    } else {
        std::deque<double> learned = t.launches;
        std::vector<double> replays;
        for (int i = 0; i < reps; ++i)
            replays.push_back(t.iterate([&] { return (int)cudaGraphLaunch(exec, 0); }, false, false).device_ms);
        t.launches = learned;
        graph_ms = median(replays);
    }
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    cudaStreamDestroy(side);
    std::vector<double> single, batched;
    for (int i = 0; i < reps; ++i) {
        cudaDeviceSynchronize();
        double t0 = now_ms();
        call();
        cudaDeviceSynchronize();
        single.push_back(now_ms() - t0);
    }
    for (int i = 0; i < std::max(1, reps / 3); ++i) {
        cudaDeviceSynchronize();
        double t0 = now_ms();
        for (int j = 0; j < batch; ++j) call();
        cudaDeviceSynchronize();
        batched.push_back((now_ms() - t0) / batch);
    }
    err = cudaGetLastError();
    if (err != cudaSuccess) fail_cuda("the launcher-only A/B", err);
    // Its launches answer for themselves here, not in the next scenario's first round (and the last scenario's
    // would never be asked for): all done by the synchronize above, so each must have left a record.
    uint64_t launched = launches_so_far();
    cupti_take();
    std::string unrecorded = g_cupti.counting ? ",\"unrecorded\":" + std::to_string(unrecorded_launches(launched, 0)) : "";
    double eager_host = median(batched), eager_dev = median(eager);
    double device = graph_ms >= 0 ? graph_ms : eager_dev;
    reply("ok", "{\"graph_device_ms\":" + (graph_ms >= 0 ? json_num(graph_ms) : std::string("null")) +
                    ",\"graph_error\":" + json_str(graph_error) + ",\"eager_device_ms\":" + json_num(eager_dev) +
                    ",\"eager_host_ms\":" + json_num(eager_host) + ",\"eager_single_ms\":" + json_num(median(single)) +
                    ",\"host_floor_ms\":" + json_num(t.sync_floor_ms) +
                    ",\"overhead_ms\":" + json_num(eager_host - device) + unrecorded + "}");
}

static void cmd_prepare(int n) {
    release_all();
    // The fds were sent before the prepare line. Closed once the copies are bound: each mapping holds its
    // memory, and no fd of the supervisor's memory stays in a process the candidate runs in.
    std::string fd_error = g_cfg.fd_socket >= 0 ? receive_fds(g_cfg.fd_socket, &g_fds) : "";
    char line[4096];
    std::string why = fd_error.empty() ? "" : "receiving the tensors' file descriptors: " + fd_error;
    for (int i = 0; i < n; ++i) {
        if (!fgets(line, sizeof line, g_commands)) { why = "the supervisor's copy lines ended early"; break; }
        if (!why.empty()) continue;  // the rest of the copy lines are read still: the pipe stays in step
        Copy c;
        why = bind_copy(g_cand, line, &c);
        g_copies.push_back(c);
        if (!why.empty()) why = "prepare: " + why;
    }
    close_fds();
    if (!why.empty()) return reply("error", why);
    g_check_alive = true;
    reply("ok", "{\"writes_lse\":true}");
}

// policy.l2_flush's name for what the flush does
static const char* flush_name(const Config& c) { return c.flush_read ? (c.flush_write ? "both" : "read") : "write"; }

static std::string describe() {
    const Timer& t = g_timer;
    std::string notes = "[";
    notes += json_str(t.buf ? format("L2 flush (%s): %zu bytes before every timed iteration (device reports L2 = "
                                     "%zu bytes)", flush_name(t.cfg), t.buf_int4 * 16, t.l2_bytes)
                            : std::string("L2 flush: off (policy.cold_l2 is False)"));
    notes += "," + json_str(t.persisting_ok ? "persisting-L2 carve-out set to 0 and persisting lines reset (via cudart)"
                                            : "persisting-L2 reset failed via cudart");
    notes += "," + json_str(format("launch cover: spin kernel, %.0f cycles/us at calibration", t.cycles_per_ms / 1e3));
    notes += "," + json_str(g_cupti.on ? "CUPTI: kernels, copies and memsets of every stream recorded per timed call"
                                       : "CUPTI: " + g_cupti.why_off);
    if (g_cupti.on)
        notes += "," + json_str(g_cupti.counting ? "CUPTI: every kernel and graph launch counted by callback and "
                                                  "matched to a record of its work"
                                                : "CUPTI launch count off: " + g_cupti.why_not_counting);
    notes += "]";
    return "{\"device\":" + json_str(format("cuda:%d", t.cfg.device)) + ",\"runner\":\"native\",\"host_floor_ms\":" +
           json_num(t.host_floor_ms) + ",\"sync_floor_ms\":" + json_num(t.sync_floor_ms) +
           ",\"host_gap_slack_ms\":" + json_num(t.slack_ms) + ",\"notes\":" + notes + ",\"gpu\":" + json_str(t.gpu) +
           ",\"l2_bytes\":" + json_num((double)t.l2_bytes) + ",\"flush\":" + json_str(flush_name(t.cfg)) +
           ",\"flush_bytes\":" + json_num((double)(t.buf_int4 * 16)) + ",\"cover\":\"spin kernel\"" +
           ",\"persisting_l2_control\":" + (t.persisting_ok ? "\"cudart\"" : "null") +
           ",\"cupti\":" + (g_cupti.on ? "true" : "false") +
           ",\"launch_count\":" + (g_cupti.counting ? "true" : "false") + ",\"sandbox\":" + json_str(g_sandbox) + "}";
}

int main(int argc, char** argv) {
    // Never outlive the supervisor, even stopped: first thing after exec. The supervisor forks from a thread that
    // lives as long as it does (lifeline.py); the syscall filter lets the candidate set no other death signal.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1) return 1;
    // The command pipe moves to private descriptors; the candidate's prints go to the log (stderr).
    int in_fd = dup(0), out_fd = dup(1);
    dup2(2, 1);
    g_commands = fdopen(in_fd, "r");
    g_replies = fdopen(out_fd, "w");
    g_cfg = parse_config(argc, argv);
    hide_arguments(argc, argv);
    const Config& cfg = g_cfg;
    // Landlock binds this thread and the threads it starts from now on: confined before CUDA and CUPTI start
    // theirs, on which the candidate's code can run too (a host function).
    if (!cfg.writable.empty()) {
        g_sandbox = confine(cfg.writable);
        if (g_sandbox.rfind("too late", 0) == 0) { reply("error", g_sandbox); return 3; }
        g_sandbox += "; " + drop_capabilities();
    }
    check_cuda("cudaSetDevice", cudaSetDevice(cfg.device));
    check_cuda("CUDA context", cudaFree(nullptr));
    if (cfg.fd_socket >= 0) {  // before the candidate loads: the calls it maps the supervisor's tensors with
        fcntl(cfg.fd_socket, F_SETFD, FD_CLOEXEC);  // nothing the candidate starts inherits the socket
        std::string why = load_driver_vmm();
        if (!why.empty()) { reply("error", why); return 3; }
    }
    cupti_start(cfg);
    g_timer.setup(cfg);  // floors and the cover, before any candidate code exists in this process
    // Every thread, CUDA's and CUPTI's included (TSYNC), in every runner: a trusted one is timed under the same
    // filter as the candidate, whose every syscall it runs. Not under `solbench profile`: the profiler's
    // library in the process may start its own helpers.
    if (!getenv("SOLBENCH_PROFILE_CHECK")) {
        std::string filtered = filter_syscalls();
        g_sandbox = cfg.writable.empty() ? filtered : g_sandbox + "; " + filtered;
    }
    // What CUPTI records before any candidate code runs: the supervisor holds every round to it (a constructor
    // that switches the runner's own state off would otherwise only change what the runner says of itself).
    reply("ready", format("{\"cupti\":%s,\"launch_count\":%s}", g_cupti.on ? "true" : "false",
                          g_cupti.counting ? "true" : "false"));
    std::string why = load_candidate(cfg, &g_cand);
    if (!why.empty()) { reply("load_failed", why); return 0; }
    reply("ok", describe());
    char line[4096];
    while (fgets(line, sizeof line, g_commands)) {
        char cmd[64] = "";
        int used = 0;
        sscanf(line, "%63s%n", cmd, &used);
        std::string c = cmd;
        if (c == "quit") break;
        bool round_cmd = c == "round";
        if (c == "prepare") cmd_prepare(atoi(line + used));
        else if (c == "check") cmd_check(atoi(line + used) != 0);
        else if (c == "warm_up") cmd_warm_up();
        else if (c == "launcher_split") cmd_launcher_split();
        else if (c == "release") { release_all(); reply("ok", "null"); }
        else if (c == "describe") reply("ok", describe());
        else if (c == "round") {
            std::vector<int> order;
            const char* p = line + used;
            int v, n;
            while (sscanf(p, "%d%n", &v, &n) == 1) order.push_back(v), p += n;
            cmd_round(order);
        } else {
            reply("error", "unknown command " + c);
        }
        g_after_round = round_cmd;
    }
    release_all();
    return 0;
}
