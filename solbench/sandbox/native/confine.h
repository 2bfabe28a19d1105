// confine(): the Landlock rules of solbench/sandbox/confine.py for the native runner (a header of its own
// so a CPU test can compile and try it without a GPU: tests/test_native_runner.py).
#pragma once
#include <cerrno>
#include <csignal>
#include <algorithm>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <string>
#include <linux/audit.h>
#include <linux/capability.h>
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
static std::string limit_files() {
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim)) return format("open files not limited: %s", strerror(errno));
    rlim_t cap = lim.rlim_max == RLIM_INFINITY ? 4096 : std::min<rlim_t>(4096, lim.rlim_max / 2);
    struct rlimit lowered = {std::min(lim.rlim_cur, cap), cap};
    if (setrlimit(RLIMIT_NOFILE, &lowered)) return format("open files not limited: %s", strerror(errno));
    struct rlimit size = {16ull << 30, 16ull << 30};  // confine.py's FILE_SIZE_CAP: no disk filled
    if (setrlimit(RLIMIT_FSIZE, &size)) return format("open files <= %llu, file size not limited", (unsigned long long)cap);
    return format("open files <= %llu, each file <= 16 GiB", (unsigned long long)cap);
}

// What the CUDA driver opens for writing when it starts, which is after the runner confines itself: its
// threads' names, /proc/self/task/*/comm. Without it cudaSetDevice fails with cudaErrorOperatingSystem (H200,
// driver 580). /proc/self is this process's own folder: nothing there reaches another process. Its O_PATH
// descriptor stays open: Landlock ties the rule to the inode, which procfs makes anew once the dentry is
// reclaimed. solbench/sandbox/confine.py's DRIVER_WRITES.
static const char* const DRIVER_WRITES[] = {"/proc/self"};

// The device files the candidate may open for writing and use ioctls on: the GPU's (/dev/nvidia*, the
// /dev/nvidia-caps folder) and null, zero, full, random, urandom; not a raw disk, a loop device or the
// operator's terminal. confine.py's device_files().
static std::vector<std::string> device_files() {
    std::vector<std::string> files;
    if (DIR* d = opendir("/dev")) {
        while (struct dirent* e = readdir(d))
            if (!strncmp(e->d_name, "nvidia", 6)) files.push_back(std::string("/dev/") + e->d_name);
        closedir(d);
    }
    std::sort(files.begin(), files.end());
    for (const char* name : {"null", "zero", "full", "random", "urandom"})
        if (!access((std::string("/dev/") + name).c_str(), F_OK)) files.push_back(std::string("/dev/") + name);
    return files;
}

static int thread_count() {
    int threads = 0;
    if (DIR* d = opendir("/proc/self/task")) {
        while (struct dirent* e = readdir(d)) threads += e->d_name[0] != '.';
        closedir(d);
    }
    return threads;
}

// Landlock, as confine.py's _landlock: writes only beneath `writable` (no device node made anywhere), to the
// device files above (ioctls on no other device from ABI 5) and to existing files beneath /proc/self; no TCP
// (ABI 4); no ptrace outside; no signals or abstract Unix sockets outside (ABI 6). Returns what was applied, or
// why nothing was (the run goes on unconfined then, as in the Python host); "too late: ..." when threads were
// already running (nothing applied: Landlock would bind none of them; the runner refuses to go on).
static std::string confine(const std::vector<std::string>& writable) {
    if (int threads = thread_count(); threads > 1)
        return format("too late: %d threads were already running when the runner was to be confined", threads);
    std::string files = limit_files();
    long abi = syscall(444, nullptr, 0, 1u);  // landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    if (abi < 1) return "not confined: this kernel has no Landlock (Linux >= 5.13 with landlock among its LSMs); " + files;
    const unsigned long long WRITE_FILE = 1ull << 1, MAKE_CHAR = 1ull << 6, MAKE_BLOCK = 1ull << 11;
    const unsigned long long TRUNCATE = abi >= 3 ? 1ull << 14 : 0, IOCTL_DEV = abi >= 5 ? 1ull << 15 : 0;
    unsigned long long handled = TRUNCATE | IOCTL_DEV | (abi >= 2 ? 1ull << 13 : 0);  // REFER
    for (int bit : {1, 4, 5, 6, 7, 8, 9, 10, 11, 12}) handled |= 1ull << bit;
    unsigned long long folder = handled & ~(MAKE_CHAR | MAKE_BLOCK | IOCTL_DEV);
    unsigned long long device = WRITE_FILE | TRUNCATE | IOCTL_DEV, opened = WRITE_FILE | TRUNCATE;
    unsigned long long net = abi >= 4 ? 3 : 0;  // BIND_TCP | CONNECT_TCP, and no rule allows a port
    unsigned long long scoped = abi >= 6 ? 3 : 0;  // SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
    struct { unsigned long long fs, net, scoped; } attr = {handled, net, scoped};
    size_t size = abi >= 6 ? 24 : abi >= 4 ? 16 : 8;
    int ruleset = (int)syscall(444, &attr, size, 0u);
    if (ruleset < 0) return format("not confined: landlock_create_ruleset: %s", strerror(errno));
    std::vector<std::pair<std::string, unsigned long long>> rules;
    for (auto& dir : writable) rules.push_back({dir, folder});
    std::vector<std::string> devices = device_files();
    for (auto& path : devices) rules.push_back({path, device});
    for (const char* path : DRIVER_WRITES) rules.push_back({path, opened});
    std::string why;
    for (auto& [path, allowed] : rules) {
        int fd = open(path.c_str(), O_PATH | O_CLOEXEC);
        struct __attribute__((packed)) { unsigned long long allowed; int parent_fd; } rule = {allowed, fd};
        if (fd < 0 || syscall(445, ruleset, 1, &rule, 0u))
            why = format("landlock_add_rule %s: %s", path.c_str(), strerror(errno));
        bool kept = false;
        for (const char* p : DRIVER_WRITES) kept |= path == p;
        if (fd >= 0 && !kept) close(fd);
        if (!why.empty()) break;
    }
    if (why.empty() && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) why = "prctl(PR_SET_NO_NEW_PRIVS) refused";
    if (why.empty() && syscall(446, ruleset, 0u)) why = format("landlock_restrict_self: %s", strerror(errno));
    close(ruleset);
    if (!why.empty()) return "not confined: " + why + "; " + files;
    std::string dirs;
    for (auto& dir : writable) dirs += dir + ", ";
    return format("confined (Landlock ABI %ld): writes only beneath %sto %zu device files (the GPU's, null, zero, "
                  "random) and to existing files beneath /proc/self; %s%sno ptrace, %s; %s", abi, dirs.c_str(),
                  devices.size(), abi >= 5 ? "device ioctls only on those; " : "device ioctls not limited (Landlock ABI < 5); ",
                  net ? "no TCP; " : "TCP not limited (Landlock ABI < 4); ",
                  scoped ? "no signals or abstract sockets outside it" : "signals not scoped (Landlock ABI < 6)",
                  files.c_str());
}

// Every capability gone, bounding and ambient sets included (privileges.py's drop_capabilities): a candidate
// running as root otherwise keeps mknod, TIOCSTI, adjtimex, bpf and the right to act on any process.
static std::string drop_capabilities() {
    int last = 63;
    if (FILE* f = fopen("/proc/sys/kernel/cap_last_cap", "r")) {
        if (fscanf(f, "%d", &last) != 1) last = 63;
        fclose(f);
    }
    for (int cap = 0; cap <= last; ++cap) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2] = {};
    if (syscall(SYS_capset, &header, data)) return format("capabilities kept: capset: %s", strerror(errno));
    return "no capabilities";
}

// The seccomp filter of privileges.py's filter_syscalls, on every thread (TSYNC: CUDA's and CUPTI's, started
// before this, run code of the candidate's too), and more: the process starts no other process. fork, vfork,
// clone without CLONE_THREAD, execve and execveat fail with EPERM (clone3, whose flags a filter cannot read,
// with ENOSYS: glibc then makes threads with clone); threads still work. A helper process with a CUDA context
// of its own would do work no launch count, event or synchronize of the runner's sees. Other
// processes' limits (prlimit: EPERM), priorities, CPUs and I/O priority (pretend to succeed) are out of reach,
// and so are user namespaces and System V IPC; setpgid and setsid do nothing (the
// supervisor stops the runner's process group between requests); io_uring is refused. Returns what was applied.
static std::string filter_syscalls() {
#if defined(__x86_64__)
    const unsigned arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
    const unsigned arch = AUDIT_ARCH_AARCH64;
#else
    return "no syscall filter for this architecture";
#endif
    const unsigned ALLOW = SECCOMP_RET_ALLOW, DENY = SECCOMP_RET_ERRNO | EPERM, PRETEND = SECCOMP_RET_ERRNO | 0;
    auto ld = [](unsigned offset) { return sock_filter BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset); };
    auto ret = [](unsigned value) { return sock_filter BPF_STMT(BPF_RET | BPF_K, value); };
    auto jeq = [](unsigned k, unsigned char jt, unsigned char jf) { return sock_filter BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, jt, jf); };
    auto jset = [](unsigned k, unsigned char jt, unsigned char jf) { return sock_filter BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, k, jt, jf); };
    auto arg = [](int i, bool high = false) { return (unsigned)(offsetof(struct seccomp_data, args) + 8 * i + (high ? 4 : 0)); };
    auto arg_is = [&](int i, unsigned value, unsigned then, unsigned otherwise) {  // the low word: an int there
        return std::vector<sock_filter>{ld(arg(i)), jeq(value, 0, 1), ret(then), ret(otherwise)};
    };
    auto own_only = arg_is(0, 0, ALLOW, PRETEND);
    std::vector<std::pair<int, std::vector<sock_filter>>> blocks = {
        // prlimit64(pid, resource, new, old): the caller's own (pid 0), or only reading (new == NULL)
        {__NR_prlimit64, {ld(arg(0)), jeq(0, 0, 1), ret(ALLOW), ld(arg(2)), jeq(0, 0, 3), ld(arg(2, true)), jeq(0, 0, 1),
                          ret(ALLOW), ret(DENY)}},
        // setpriority(PRIO_PROCESS, 0, n) and ioprio_set(IOPRIO_WHO_PROCESS, 0, n) only: not a group, not a user
        {__NR_setpriority, {ld(arg(0)), jeq(0, 0, 3), ld(arg(1)), jeq(0, 0, 1), ret(ALLOW), ret(PRETEND)}},
        {__NR_ioprio_set, {ld(arg(0)), jeq(1, 0, 3), ld(arg(1)), jeq(0, 0, 1), ret(ALLOW), ret(PRETEND)}},
        {__NR_sched_setaffinity, own_only}, {__NR_sched_setscheduler, own_only}, {__NR_sched_setparam, own_only},
        {__NR_sched_setattr, own_only},
        {__NR_unshare, {ret(DENY)}},
        {__NR_clone3, {ret(SECCOMP_RET_ERRNO | ENOSYS)}},
        // clone: a thread only (CLONE_THREAD), never a user namespace
        {__NR_clone, {ld(arg(0)), jset(CLONE_NEWUSER, 0, 1), ret(DENY), jset(CLONE_THREAD, 0, 1), ret(ALLOW), ret(DENY)}},
        {__NR_execve, {ret(DENY)}}, {__NR_execveat, {ret(DENY)}},
        // prctl(PR_SET_PDEATHSIG, n): SIGKILL only. A SIGCONT when the thread that made it ends wakes the held
        // process; 0 clears the runner's own, which ends it with its supervisor (main, lifeline.py)
        {__NR_prctl, {ld(arg(0)), jeq(PR_SET_PDEATHSIG, 0, 3), ld(arg(1)), jeq(SIGKILL, 1, 0), ret(DENY), ret(ALLOW)}},
        // System V IPC and POSIX message queues: objects that outlive the process, ids that reach others', a
        // signal of the candidate's choosing (privileges.py SYSV_IPC)
        {__NR_shmget, {ret(DENY)}}, {__NR_shmat, {ret(DENY)}}, {__NR_shmctl, {ret(DENY)}}, {__NR_shmdt, {ret(DENY)}},
        {__NR_semget, {ret(DENY)}}, {__NR_semop, {ret(DENY)}}, {__NR_semctl, {ret(DENY)}},
        {__NR_semtimedop, {ret(DENY)}}, {__NR_msgget, {ret(DENY)}}, {__NR_msgsnd, {ret(DENY)}},
        {__NR_msgrcv, {ret(DENY)}}, {__NR_msgctl, {ret(DENY)}},
        {__NR_mq_open, {ret(DENY)}}, {__NR_mq_unlink, {ret(DENY)}}, {__NR_mq_timedsend, {ret(DENY)}},
        {__NR_mq_timedreceive, {ret(DENY)}}, {__NR_mq_notify, {ret(DENY)}}, {__NR_mq_getsetattr, {ret(DENY)}},
        // the runner leads its own process group, which the supervisor stops between requests (pause.py)
        {__NR_setpgid, {ret(PRETEND)}}, {__NR_setsid, {ret(PRETEND)}},
        // io_uring: a kernel thread polling its queue works on while the process is stopped
        {__NR_io_uring_setup, {ret(DENY)}}, {__NR_io_uring_enter, {ret(DENY)}}, {__NR_io_uring_register, {ret(DENY)}},
#if defined(__x86_64__)
        {__NR_fork, {ret(DENY)}}, {__NR_vfork, {ret(DENY)}},
#endif
    };
    std::vector<sock_filter> filter = {ld(offsetof(struct seccomp_data, arch)), jeq(arch, 1, 0),
                                       ret(DENY),  // another ABI's numbers (int 0x80): nothing
                                       ld(offsetof(struct seccomp_data, nr))};
#if defined(__x86_64__)
    filter.push_back(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));  // x32 numbers: nothing either
    filter.push_back(ret(DENY));
#endif
    for (auto& [nr, block] : blocks) {
        filter.push_back(jeq((unsigned)nr, 0, (unsigned char)block.size()));
        filter.insert(filter.end(), block.begin(), block.end());
    }
    filter.push_back(ret(ALLOW));
    struct sock_fprog program = {(unsigned short)filter.size(), filter.data()};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) return format("no syscall filter: no_new_privs: %s", strerror(errno));
    if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program))
        return format("no syscall filter: seccomp: %s", strerror(errno));
    return "no new processes; other processes' limits, priorities and CPUs out of reach, no user namespaces, "
           "no System V IPC or message queues, no leaving the process group, no io_uring (seccomp)";
}
