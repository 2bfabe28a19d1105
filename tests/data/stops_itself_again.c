/* A thread woken while held that stops itself again without blocking first shows one more run only,
   and, stopping itself with a raw tgkill(SIGSTOP) from the same instruction with the same registers, the same
   syscall line as before: an allowance of one run "to finish switching out" let it through. Here a one-shot
   timer sends the process SIGCONT 150 ms after it starts; it stops itself at once, and again after the wake.
   Built and driven by tests/test_confine_and_hold_cpu.py against solbench.supervisor.pause.Hold (x86_64 only). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void on_continue(int sig) { (void)sig; }  /* a handler: a timer whose signal is ignored is parked */

int main(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_continue;
    sigaction(SIGCONT, &action, NULL);
    timer_t timer;
    struct sigevent event;
    memset(&event, 0, sizeof event);
    event.sigev_notify = SIGEV_SIGNAL;
    event.sigev_signo = SIGCONT;
    struct itimerspec when = {{0, 0}, {0, 150000000}};
    if (timer_create(CLOCK_MONOTONIC, &event, &timer) || timer_settime(timer, 0, &when, NULL)) return 1;
    printf("%d\n", getpid());
    fflush(stdout);
    long pid = getpid(), tid = syscall(SYS_gettid);
    volatile long woken = 0;
    for (;;) {
        register long r10 asm("r10") = 0, r8 asm("r8") = 0, r9 asm("r9") = 0;
        long ret;
        asm volatile("syscall" : "=a"(ret) : "0"((long)SYS_tgkill), "D"(pid), "S"(tid), "d"((long)SIGSTOP), "r"(r10),
                     "r"(r8), "r"(r9) : "rcx", "r11", "memory");
        woken = woken + 1;  /* its own code: a GPU launch would go here */
    }
}
