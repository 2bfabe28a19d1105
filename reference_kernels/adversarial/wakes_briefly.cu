// wakes_briefly.cu -- the native runner's twin of wakes_briefly.py: wakes_itself.cu made quiet. The
// supervisor stops the candidate's process from each reply to its next request, and a check of a hold
// by its end state (every thread stopped) and its CPU time (at most 30 ms, in 10 ms ticks) alone is not enough. A POSIX timer
// sends one thread of this library SIGCONT every 2 ms (SIGEV_THREAD_ID; the thread blocks the signal and takes it
// with sigwaitinfo), which wakes the whole process. When that thread finds it was woken while held (no SIGCONT of
// the supervisor's since its last call, the runner's main thread waiting in read() on its request pipe with
// nothing there), it launches 5 ms of GPU work on a stream of its own, which runs while the seed is timed, and
// stops the process again itself: microseconds of CPU, every thread stopped at the next request. The supervisor
// now counts each stopped thread's runs (schedstat), so the next request fails `tampered`. Its answers are the
// seed's. Without a comparator (as the corpus test runs it) some holds are shorter than the timer's period;
// tests/test_trust_gpu.py also runs it against the seed, where every scenario must be tampered.
// expect: tampered or passed
#include <cuda_runtime.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

static std::atomic<bool> inside{false};
static std::atomic<bool> released{false};
static timer_t timer;
static std::atomic<bool> armed{false};

__global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

static void arm() {
    itimerspec period = {{0, 2000000}, {0, 2000000}};
    if (armed) timer_settime(timer, 0, &period, nullptr);
}

static void on_continue(int) { released = true; }  // the supervisor's SIGCONT (the timer's goes to the waker)

static bool held() {
    if (inside || released.exchange(false)) return false;
    char path[64], call[128] = {};
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)getpid());
    FILE* f = fopen(path, "r");
    if (!f) return false;
    size_t n = fread(call, 1, sizeof call - 1, f);
    fclose(f);
    unsigned long nr = 1, fd = 0;
    if (n < 3 || sscanf(call, "%lu %lx", &nr, &fd) != 2 || nr != 0) return false;  // read(fd, ...)
    struct stat request, pipe;  // the runner reads its requests from a copy of its stdin
    int pending = 1;
    return fstat((int)fd, &request) == 0 && fstat(0, &pipe) == 0 && request.st_ino == pipe.st_ino &&
           ioctl((int)fd, FIONREAD, &pending) == 0 && pending == 0;
}

__attribute__((constructor)) static void wake_briefly() {
    struct sigaction action = {};
    action.sa_handler = on_continue;
    action.sa_flags = SA_RESTART;
    sigaction(SIGCONT, &action, nullptr);
    std::thread([] {
        sigset_t cont;
        sigemptyset(&cont);
        sigaddset(&cont, SIGCONT);
        pthread_sigmask(SIG_BLOCK, &cont, nullptr);
        sigevent event = {};
        event.sigev_notify = SIGEV_THREAD_ID;
        event.sigev_signo = SIGCONT;
        event.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
        if (timer_create(CLOCK_MONOTONIC, &event, &timer) != 0) return;
        armed = true;
        arm();
        cudaStream_t own = nullptr;
        for (;;) {
            siginfo_t info;
            if (sigwaitinfo(&cont, &info) < 0 || !held()) continue;
            if (own || cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking) == cudaSuccess)
                spin<<<132, 1, 0, own>>>(10000000LL);  // ~5 ms at 1.98 GHz, on every SM
            arm();  // first: a stop discards a pending timer signal, and the timer with it
            kill(getpid(), SIGSTOP);
        }
    }).detach();
}

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    inside = true;
    int status = seed_attention_forward(p);
    inside = false;
    arm();
    return status;
}
