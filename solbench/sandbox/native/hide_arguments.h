// hide_arguments(): what the runner's command line reads as once the runner has parsed it, before the candidate
// loads: /proc/self/cmdline is "solbench-runner" whatever the arguments, so the candidate cannot tell a
// sanitizer run (data=, cupti=0, calibrate=0) from a timed one (fdsock=, confine=) by them.
// The kernel reads a process's command line from its argument area; once the byte at that area's end is no
// longer NUL (setproctitle's convention), it reads up to the first NUL instead of the whole area, so the area's
// length (which the arguments set) shows neither. A header of its own so that it is compiled and tried on a CPU
// (tests/test_sanitize_cpu.py). What else tells the two apart is in solbench/supervisor/sanitize.py.
#pragma once
#include <cstring>

static const char RUNNER_TITLE[] = "solbench-runner";

static void hide_arguments(int argc, char** argv) {
    if (argc < 1) return;
    char* start = argv[0];
    char* last = argv[argc - 1] + strlen(argv[argc - 1]);  // the area's last byte: the last argument's NUL
    if (last < start || (size_t)(last - start) < sizeof RUNNER_TITLE) return;  // never shorter than argv[0]'s path
    memset(start, 0, last - start);
    memcpy(start, RUNNER_TITLE, sizeof RUNNER_TITLE);
    *last = ' ';
}
