"""The native runner (solbench/sandbox/native/runner.cu) compiles with the CUDA toolkit CI has, and a
runner that finds no usable GPU says so in one reply line and exits, instead of hanging its supervisor."""

import shutil
import subprocess

import pytest

from solbench.build.native import build_runner

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


def _has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


@pytest.mark.slow
def test_the_runner_builds_and_is_cached(tmp_path):
    first = build_runner("h200", cache_dir=tmp_path)
    assert first.is_file() and first.stat().st_mode & 0o111
    assert build_runner("h200", cache_dir=tmp_path) == first  # the second call is a cache hit
    assert len(list((tmp_path / "runner").iterdir())) == 1


@pytest.mark.slow
@pytest.mark.skipif(_has_gpu(), reason="a GPU is present: the runner would start")
def test_without_a_gpu_the_runner_answers_one_error_line_and_exits(tmp_path):
    runner = build_runner("h200", cache_dir=tmp_path)
    proc = subprocess.run([str(runner), f"so={tmp_path / 'missing.so'}"], input="quit\n", capture_output=True,
                          text=True, timeout=60)
    lines = proc.stdout.splitlines()
    assert proc.returncode != 0
    assert len(lines) == 1 and lines[0].startswith("error cudaSetDevice: CUDA error"), lines


def test_the_runners_confinement_allows_writes_only_beneath_its_folders(tmp_path):
    """confine.h (what the runner applies before CUDA starts), compiled alone and tried on a CPU: a write
    beneath the scratch folder works, one beside it does not; /dev/null and /proc/self's files (the driver names
    its threads after the confinement) can still be opened for writing; no device node can be made (
    as root, a block device in /dev/shm is the raw disk); no TCP connection (ABI >= 4: a local Ray cluster ran
    code for the candidate); (ABI >= 6) no signal reaches a process outside; no capability is left. A process
    that already runs a second thread is not confined at all, and says it was too late."""
    import socket
    from pathlib import Path

    from solbench.sandbox.confine import abi_version

    header = Path(__file__).resolve().parents[1] / "solbench" / "sandbox" / "native" / "confine.h"
    scratch, outside = tmp_path / "scratch", tmp_path / "outside"
    scratch.mkdir()
    outside.mkdir()
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    source = tmp_path / "try.cpp"
    source.write_text(f"""#include "{header}"
#include <csignal>
#include <thread>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
int main(int argc, char**) {{
    if (argc > 1) {{  // a thread first: too late
        std::thread t([] {{ sleep(1); }});
        printf("%s\\n", confine({{"{scratch}"}}).c_str());
        printf("outside %d\\n", fopen("{outside}/b", "w") != nullptr);
        t.join();
        return 0;
    }}
    std::string said = confine({{"{scratch}"}});
    printf("%s; %s\\n", said.c_str(), drop_capabilities().c_str());
    printf("scratch %d\\n", fopen("{scratch}/a", "w") != nullptr);
    printf("outside %d\\n", fopen("{outside}/a", "w") != nullptr);
    printf("signal %d\\n", kill(getppid(), 0) == 0);
    struct rlimit lim;
    getrlimit(RLIMIT_NOFILE, &lim);
    printf("nofile %llu %llu\\n", (unsigned long long)lim.rlim_cur, (unsigned long long)lim.rlim_max);
    printf("null %d\\n", open("/dev/null", O_RDWR) >= 0);
    printf("comm %d\\n", fopen(("/proc/self/task/" + std::to_string(gettid()) + "/comm").c_str(), "w") != nullptr);
    printf("mknod %d\\n", mknod("{scratch}/blk", S_IFBLK | 0600, makedev(7, 0)) == 0);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in to = {{}};
    to.sin_family = AF_INET;
    to.sin_port = htons({port});
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    printf("tcp %d\\n", connect(s, (struct sockaddr*)&to, sizeof to) == 0);
    char status[4096] = "";
    FILE* f = fopen("/proc/self/status", "r");
    size_t n = fread(status, 1, sizeof status - 1, f);
    status[n] = 0;
    printf("%s\\n", strstr(status, "CapEff:\\t0000000000000000") ? "no caps" : "caps");
}}
""")
    exe = tmp_path / "try"
    subprocess.run(["nvcc", "-std=c++17", str(source), "-o", str(exe)], check=True, capture_output=True)
    lines = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60).stdout.splitlines()
    late = subprocess.run([str(exe), "late"], capture_output=True, text=True, timeout=60).stdout.splitlines()
    listener.close()
    import resource

    from solbench.sandbox.confine import open_files_cap

    cap = open_files_cap(resource.getrlimit(resource.RLIMIT_NOFILE)[1])
    assert lines[4].split()[2] == str(cap) and int(lines[4].split()[1]) <= cap, lines  # see confine.py
    assert lines[0].endswith(f"; open files <= {cap}, each file <= 16 GiB; no capabilities") and lines[-1] == "no caps", lines
    assert late == ["too late: 2 threads were already running when the runner was to be confined", "outside 1"], late
    abi = abi_version()
    if abi < 1:
        assert lines[0].startswith("not confined") and lines[2] == "outside 1"
        return
    assert lines[0].startswith(f"confined (Landlock ABI {abi})"), lines
    assert lines[1:3] == ["scratch 1", "outside 0"], lines
    assert lines[3] == ("signal 0" if abi >= 6 else "signal 1"), lines
    assert lines[5:8] == ["null 1", "comm 1", "mknod 0"], lines
    assert lines[8] == ("tcp 0" if abi >= 4 else "tcp 1"), lines


def test_the_runners_candidate_starts_threads_but_no_process_and_reaches_no_other(tmp_path):
    """confine.h's filter_syscalls (applied before the candidate loads), compiled alone and tried on a CPU: a
    thread starts; fork, posix_spawn, system and execve do not, on a thread started before the filter too
    (without TSYNC it forked). Another process of the same user (here the parent) keeps its limits,
    priority and CPUs (an RLIMIT_CPU under a comparator's CPU time got it killed by the kernel), while
    the process's own still change; no user namespace."""
    from pathlib import Path

    header = Path(__file__).resolve().parents[1] / "solbench" / "sandbox" / "native" / "confine.h"
    source = tmp_path / "try.cpp"
    source.write_text(f"""#include "{header}"
#include <sched.h>
#include <thread>
#include <spawn.h>
#include <sys/shm.h>
extern char** environ;
int main() {{
    int early_forked = -1, go = 0;
    std::thread early([&] {{  // started before the filter, as CUDA's and CUPTI's threads are
        while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE)) usleep(1000);
        pid_t p = fork();
        if (p == 0) _exit(0);
        early_forked = p > 0;
    }});
    pid_t parent = getppid();
    int nice_before = getpriority(PRIO_PROCESS, parent);
    cpu_set_t before, after, one;
    sched_getaffinity(parent, sizeof before, &before);
    struct rlimit cpu;
    prlimit(parent, RLIMIT_CPU, nullptr, &cpu);
    printf("%s\\n", filter_syscalls().c_str());
    __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
    early.join();
    int ran = 0;
    std::thread t([&] {{ ran = 1; }});
    t.join();
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    char* argv[] = {{(char*)"/bin/true", nullptr}};
    pid_t child;
    int spawned = posix_spawn(&child, "/bin/true", nullptr, nullptr, argv, environ) == 0;
    int shell = system("true") == 0;
    execve("/bin/true", argv, environ);
    printf("thread %d fork %d early %d spawn %d system %d exec 0\\n", ran, pid > 0, early_forked, spawned, shell);
    int limited = prlimit(parent, RLIMIT_CPU, &cpu, nullptr) == 0;  // the same value: harmless if it went through
    setpriority(PRIO_PROCESS, parent, 19);
    setpriority(PRIO_PROCESS, 0, 5);
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    sched_setaffinity(parent, sizeof one, &one);
    sched_getaffinity(parent, sizeof after, &after);
    struct rlimit own;
    getrlimit(RLIMIT_CORE, &own);
    printf("prlimit %d nice %d own nice %d cpus kept %d own limit %d userns %d\\n", limited,
           getpriority(PRIO_PROCESS, parent) != nice_before, getpriority(PRIO_PROCESS, 0), CPU_EQUAL(&before, &after),
           setrlimit(RLIMIT_CORE, &own) == 0, unshare(CLONE_NEWUSER) == 0);
    int segment = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
    printf("sysv %d %d\\n", segment, errno);
    long queue = syscall(__NR_mq_open, "solbench-try", O_CREAT | O_RDWR, 0600, nullptr);
    printf("mq %ld %d\\n", queue, errno);
    pid_t group = getpgid(0), session = getsid(0);
    int moved = setpgid(0, getpgid(parent)) == 0 && setsid() >= 0;
    printf("group kept %d %d\\n", moved, getpgid(0) == group && getsid(0) == session);
    char params[120] = {{0}};
    long ring = syscall(425, 4, params);  // io_uring_setup
    printf("io_uring %ld %d\\n", ring, errno);
    int woken = prctl(PR_SET_PDEATHSIG, SIGCONT);  // a SIGCONT when the thread that made it ends
    int woken_errno = errno;
    int kill_set = prctl(PR_SET_PDEATHSIG, SIGKILL), cleared = prctl(PR_SET_PDEATHSIG, 0), kept = -1;
    prctl(PR_GET_PDEATHSIG, &kept);  // issue 39, class 7: SIGKILL only, never cleared; other prctls still work
    printf("deathsig %d %d %d %d %d\\n", woken, woken_errno, kill_set, cleared, kept);
}}
""")
    exe = tmp_path / "try"
    subprocess.run(["nvcc", "-std=c++17", str(source), "-o", str(exe)], check=True, capture_output=True)
    lines = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60).stdout.splitlines()
    if lines[0].startswith("no syscall filter"):  # no seccomp here: said so, and nothing else changed
        assert len(lines) == 1, lines  # execve replaced the program
        return
    assert lines == ["no new processes; other processes' limits, priorities and CPUs out of reach, no user namespaces, "
                     "no System V IPC or message queues, no leaving the process group, no io_uring (seccomp)", "thread 1 fork 0 early 0 spawn 0 system 0 exec 0",
                     "prlimit 0 nice 0 own nice 5 cpus kept 1 own limit 1 userns 0", "sysv -1 1", "mq -1 1", "group kept 1 1", "io_uring -1 1",
                     "deathsig -1 1 0 -1 9"], lines


def test_the_runner_receives_the_fds_in_the_order_they_were_sent(tmp_path):
    """fd_receive.h (how the runner takes the tensors' fds off its socket), compiled alone and fed by
    solbench.gpu.ipc.send_fds: every fd arrives, in order, past a batch boundary; an empty message is
    one empty batch; a batch that comes short is said to, and the next message is still read in step."""
    import os
    import socket
    import struct
    from pathlib import Path

    from solbench.gpu import ipc

    header = Path(__file__).resolve().parents[1] / "solbench" / "sandbox" / "native" / "fd_receive.h"
    source = tmp_path / "recv.cpp"
    source.write_text(f'''#include "{header}"
#include <cstdio>
#include <cstdlib>
int main(int argc, char** argv) {{
    for (int m = 0; m < 4; ++m) {{
        std::vector<int> fds;
        std::string why = receive_fds(atoi(argv[1]), &fds);
        printf("message %d: %zu fds [%s]", m, fds.size(), why.c_str());
        for (int fd : fds) {{
            char c = '?';
            printf(" %c", pread(fd, &c, 1, 0) == 1 ? c : '?');
            close(fd);
        }}
        printf("\\n");
    }}
}}
''')
    exe = tmp_path / "recv"
    subprocess.run(["nvcc", "-std=c++17", str(source), "-o", str(exe)], check=True, capture_output=True)
    ours, theirs = socket.socketpair()
    proc = subprocess.Popen([str(exe), str(theirs.fileno())], pass_fds=(theirs.fileno(),), stdout=subprocess.PIPE,
                            text=True)
    theirs.close()
    files = []
    for i in range(ipc.FD_BATCH + 6):
        fd = os.memfd_create(f"f{i}")
        os.write(fd, bytes([ord("A") + i % 26]))
        files.append(fd)
    try:
        ipc.send_fds(ours.fileno(), files)
        ipc.send_fds(ours.fileno(), [])
        socket.send_fds(ours, [struct.pack("<I", 3)], files[:1])  # says 3, brings 1
        ipc.send_fds(ours.fileno(), files[1:3])
        out, _ = proc.communicate(timeout=60)
    finally:
        for fd in files:
            os.close(fd)
        ours.close()
    lines = out.splitlines()
    letters = " ".join(chr(ord("A") + i % 26) for i in range(len(files)))
    assert lines[0] == f"message 0: {len(files)} fds [] {letters}", lines
    assert lines[1] == "message 1: 0 fds []"
    assert lines[2] == "message 2: 1 fds [a batch of 3 file descriptors arrived with 1] A"
    assert lines[3] == "message 3: 2 fds [] B C"
