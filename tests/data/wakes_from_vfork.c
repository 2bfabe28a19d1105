/* The hold found a vfork parent in an uninterruptible wait (`D`) and judged it by its CPU time alone.
   Its vfork child G dies by its own timer's SIGKILL; G's exit signal is SIGCONT (clone's low byte), which
   clears the stop pending on the parent and, with G's death, ends its wait: the parent returns to its own code
   while the group is held, does its work, and stops itself again. The leader (the "worker") only waits.
   Built and driven by tests/test_confine_and_hold_cpu.py against solbench.supervisor.pause.Hold. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char stack_g[1 << 16] __attribute__((aligned(16)));
static char stack_h[1 << 16] __attribute__((aligned(16)));
static int worker;

static int stays_stopped(void *unused) {  /* H: `T` at the hold, never runs while held */
    for (;;) kill(getpid(), SIGSTOP);
    return 0;
}

static int dies_soon(void *unused) {  /* G: `D` (vfork) on H until its own timer kills it, 50 ms on */
    struct sigevent event = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGKILL};
    timer_t timer;
    struct itimerspec when = {.it_value = {0, 50000000}};
    if (timer_create(CLOCK_MONOTONIC, &event, &timer) == 0) timer_settime(timer, 0, &when, NULL);
    clone(stays_stopped, stack_h + sizeof stack_h, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
    for (;;) pause();
    return 0;
}

static char state_of(int pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    return p && p[1] ? p[2] : '?';
}

int main(void) {
    worker = getpid();
    printf("%d\n", worker);
    fflush(stdout);
    if (fork() != 0) for (;;) pause();  /* the worker: waits for requests */
    for (;;) {  /* C */
        int g = clone(dies_soon, stack_g + sizeof stack_g, CLONE_VM | CLONE_VFORK | SIGCONT, NULL);
        waitpid(g, NULL, __WALL);
        if (state_of(worker) == 'T') {  /* held: the comparators are being timed */
            struct timespec start, now;
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
            do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
            while ((now.tv_sec - start.tv_sec) * 1000000000L + now.tv_nsec - start.tv_nsec < 500000);
            kill(getpid(), SIGSTOP);
        }
        while (waitpid(-1, NULL, __WALL | WNOHANG) > 0) {
        }
    }
}
