// confine(): the Landlock rules of solbench/sandbox/confine.py for the native runner (a header of its own
// so a CPU test can compile and try it without a GPU: tests/test_native_runner.py).
#pragma once
#include <cerrno>
#include <algorithm>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <string>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

#include "format.h"

// The rules of solbench/sandbox/confine.py: after this, the process and all it starts write only beneath
// `writable`, ptrace nothing outside, and (Landlock ABI >= 6) signal nothing outside. Returns what was
// applied, in words, or why nothing was (the run goes on unconfined then, as in the Python host).
// RLIMIT_NOFILE, hard limit included, down to confine.py's open_files_cap (CANDIDATE_OPEN_FILES = 4096, or half
// the hard limit): fds in flight over Unix sockets count against the user, so a candidate with the
// supervisor's limit could park enough of them to make the supervisor's sends fail.
static std::string limit_open_files() {
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim)) return format("open files not limited: %s", strerror(errno));
    rlim_t cap = lim.rlim_max == RLIM_INFINITY ? 4096 : std::min<rlim_t>(4096, lim.rlim_max / 2);
    struct rlimit lowered = {std::min(lim.rlim_cur, cap), cap};
    if (setrlimit(RLIMIT_NOFILE, &lowered)) return format("open files not limited: %s", strerror(errno));
    return format("open files <= %llu", (unsigned long long)cap);
}

// What the CUDA driver opens for writing when it starts, which is after the runner confines itself, beyond /dev
// (writable, for the GPU's device files): its threads' names, /proc/self/task/*/comm. Without it cudaSetDevice
// fails with cudaErrorOperatingSystem (H200, driver 580). /proc/self is this process's own folder: nothing
// there reaches another process. solbench/sandbox/confine.py's DRIVER_WRITES.
static std::vector<std::string> driver_writes() { return {"/proc/self"}; }

// `opened_for_writing`: files, or folders, beneath which existing files may still be opened for writing (nothing
// created, removed or renamed there).
static std::string confine(const std::vector<std::string>& writable, const std::vector<std::string>& opened_for_writing = {}) {
    std::string files = limit_open_files();
    long abi = syscall(444, nullptr, 0, 1u);  // landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    if (abi < 1) return "not confined: this kernel has no Landlock (Linux >= 5.13 with landlock among its LSMs); " + files;
    unsigned long long write = 0;
    for (int bit : {1, 4, 5, 6, 7, 8, 9, 10, 11, 12}) write |= 1ull << bit;
    if (abi >= 2) write |= 1ull << 13;  // REFER
    if (abi >= 3) write |= 1ull << 14;  // TRUNCATE
    struct { unsigned long long fs, net, scoped; } attr = {write, 0, abi >= 6 ? 1ull << 1 : 0};  // SCOPE_SIGNAL
    size_t size = abi >= 6 ? 24 : abi >= 4 ? 16 : 8;
    int ruleset = (int)syscall(444, &attr, size, 0u);
    if (ruleset < 0) return format("not confined: landlock_create_ruleset: %s", strerror(errno));
    std::string why;
    for (auto& dir : writable) {
        int fd = open(dir.c_str(), O_PATH | O_CLOEXEC);
        struct __attribute__((packed)) { unsigned long long allowed; int parent_fd; } rule = {write, fd};
        if (fd < 0 || syscall(445, ruleset, 1, &rule, 0u))
            why = format("landlock_add_rule %s: %s", dir.c_str(), strerror(errno));
        if (fd >= 0) close(fd);
        if (!why.empty()) break;
    }
    unsigned long long file_write = (1ull << 1) | (abi >= 3 ? 1ull << 14 : 0);  // WRITE_FILE, TRUNCATE
    for (size_t i = 0; why.empty() && i < opened_for_writing.size(); i++) {
        int fd = open(opened_for_writing[i].c_str(), O_PATH | O_CLOEXEC);
        struct __attribute__((packed)) { unsigned long long allowed; int parent_fd; } rule = {file_write, fd};
        if (fd < 0 || syscall(445, ruleset, 1, &rule, 0u))
            why = format("landlock_add_rule %s: %s", opened_for_writing[i].c_str(), strerror(errno));
        if (fd >= 0) close(fd);
    }
    if (why.empty() && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) why = "prctl(PR_SET_NO_NEW_PRIVS) refused";
    if (why.empty() && syscall(446, ruleset, 0u)) why = format("landlock_restrict_self: %s", strerror(errno));
    close(ruleset);
    if (!why.empty()) return "not confined: " + why + "; " + files;
    std::string dirs;
    for (auto& dir : writable) dirs += (dirs.empty() ? "" : ", ") + dir;
    if (!opened_for_writing.empty()) {
        dirs += "; existing files opened for writing beneath";
        for (auto& path : opened_for_writing) dirs += " " + path;
    }
    int threads = 0;
    if (DIR* d = opendir("/proc/self/task")) {
        while (struct dirent* e = readdir(d)) threads += e->d_name[0] != '.';
        closedir(d);
    }
    if (threads > 1) dirs += format("; applied with %d threads running (those it does not bind)", threads);
    return format("confined (Landlock ABI %ld): writes only beneath %s; no ptrace, %s; %s", abi, dirs.c_str(),
                  abi >= 6 ? "no signals outside it" : "signals not scoped (Landlock ABI < 6)", files.c_str());
}


// After this the process starts no other process: fork, vfork, clone without CLONE_THREAD, execve and execveat
// fail with EPERM (clone3, whose flags a filter cannot read, with ENOSYS: glibc then makes threads with clone).
// Threads still work. A helper process with a CUDA context of its own would do work no launch count, event or
// synchronize of the runner's sees (review i, finding 7), and could outlive the runner. Returns what was applied.
static std::string forbid_processes() {
#if defined(__x86_64__)
    const unsigned arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
    const unsigned arch = AUDIT_ARCH_AARCH64;
#else
    return "processes not forbidden: no seccomp filter for this architecture";
#endif
#define SB_DENY(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),  // another ABI's numbers (int 0x80): nothing
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1),  // x32 numbers: nothing either
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        SB_DENY(__NR_fork), SB_DENY(__NR_vfork),
#endif
        SB_DENY(__NR_execve), SB_DENY(__NR_execveat),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),  // clone's flags (low word)
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
#undef SB_DENY
    struct sock_fprog program = {(unsigned short)(sizeof filter / sizeof filter[0]), filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) return format("processes not forbidden: no_new_privs: %s", strerror(errno));
    // On every thread of the process: CUDA's and CUPTI's, started before this, run code of the candidate's too
    // (a host function, a callback).
    if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program))
        return format("processes not forbidden: seccomp: %s", strerror(errno));
    return "no new processes (seccomp: fork, exec and clone without CLONE_THREAD refused)";
}
