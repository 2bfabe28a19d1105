// wakes_itself.cu -- the native runner's twin of wakes_itself.py: the supervisor stops the candidate's
// process (SIGSTOP) from each reply to its next request, so that nothing of it runs while the comparators are
// timed, and any SIGCONT wakes it again. Its constructor has the kernel send it SIGCONT every millisecond (a POSIX
// timer; the seccomp filter cannot read the sigevent) and starts a thread that loads a CPU whenever its own call
// is not running. Its answers are the seed's. The supervisor finds threads awake (and CPU time spent) in a
// process it holds: tampered. Without a comparator (as the corpus test runs it) some holds are shorter than the
// timer's period and a scenario can pass (nothing is timed beside it then); tests/test_trust_gpu.py also runs it
// against the seed, where every scenario must be tampered.
// expect: tampered or passed
#include <atomic>
#include <csignal>
#include <ctime>
#include <thread>

#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

static std::atomic<bool> inside{false};

static void on_continue(int) {}  // a handler: the kernel parks a timer whose signal is ignored (SIGCONT's default)

__attribute__((constructor)) static void wake_every_millisecond() {
    struct sigaction action = {};
    action.sa_handler = on_continue;
    action.sa_flags = SA_RESTART;
    sigaction(SIGCONT, &action, nullptr);
    sigevent event = {};
    event.sigev_notify = SIGEV_SIGNAL;
    event.sigev_signo = SIGCONT;
    timer_t timer;
    if (timer_create(CLOCK_MONOTONIC, &event, &timer) != 0) return;
    itimerspec period = {{0, 1000000}, {0, 1000000}};
    timer_settime(timer, 0, &period, nullptr);
    std::thread([] {
        volatile unsigned long spins = 0;
        for (;;)
            if (!inside.load(std::memory_order_relaxed)) spins = spins + 1;
    }).detach();
}

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    inside = true;
    int status = seed_attention_forward(p);
    inside = false;
    return status;
}
