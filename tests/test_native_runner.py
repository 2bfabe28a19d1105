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


def test_the_runner_builds_and_is_cached(tmp_path):
    first = build_runner("h200", cache_dir=tmp_path)
    assert first.is_file() and first.stat().st_mode & 0o111
    assert build_runner("h200", cache_dir=tmp_path) == first  # the second call is a cache hit
    assert len(list((tmp_path / "runner").iterdir())) == 1


@pytest.mark.skipif(_has_gpu(), reason="a GPU is present: the runner would start")
def test_without_a_gpu_the_runner_answers_one_error_line_and_exits(tmp_path):
    runner = build_runner("h200", cache_dir=tmp_path)
    proc = subprocess.run([str(runner), f"so={tmp_path / 'missing.so'}"], input="quit\n", capture_output=True,
                          text=True, timeout=60)
    lines = proc.stdout.splitlines()
    assert proc.returncode != 0
    assert len(lines) == 1 and lines[0].startswith("error cudaSetDevice: CUDA error"), lines


def test_the_runners_confinement_allows_writes_only_beneath_its_folders(tmp_path):
    """confine.h (what the runner applies before the candidate loads), compiled alone and tried on a CPU: a
    write beneath the scratch folder works, one beside it does not, a file named to stay open to writing (as
    /proc/self's are: the driver names its threads after the confinement) can still be opened for writing while
    its sibling cannot, and (Landlock ABI >= 6) no signal reaches a process outside."""
    from pathlib import Path

    from solbench.sandbox.confine import abi_version

    header = Path(__file__).resolve().parents[1] / "solbench" / "sandbox" / "native" / "confine.h"
    scratch, outside = tmp_path / "scratch", tmp_path / "outside"
    scratch.mkdir()
    outside.mkdir()
    (outside / "device").write_text("")
    (outside / "sibling").write_text("")
    source = tmp_path / "try.cpp"
    source.write_text(f'''#include "{header}"
#include <csignal>
int main() {{
    std::string said = confine({{"{scratch}"}}, {{"{outside}/device", "/proc/self"}});
    printf("%s\\n", said.c_str());
    printf("scratch %d\\n", fopen("{scratch}/a", "w") != nullptr);
    printf("outside %d\\n", fopen("{outside}/a", "w") != nullptr);
    printf("signal %d\\n", kill(getppid(), 0) == 0);
    struct rlimit lim;
    getrlimit(RLIMIT_NOFILE, &lim);
    printf("nofile %llu %llu\\n", (unsigned long long)lim.rlim_cur, (unsigned long long)lim.rlim_max);
    printf("device %d sibling %d\\n", open("{outside}/device", O_RDWR) >= 0, open("{outside}/sibling", O_RDWR) >= 0);
    printf("comm %d\\n", fopen(("/proc/self/task/" + std::to_string(gettid()) + "/comm").c_str(), "w") != nullptr);
    auto driver = driver_writes();
    printf("driver %zu %s\\n", driver.size(), driver.back().c_str());
}}
''')
    exe = tmp_path / "try"
    subprocess.run(["nvcc", "-std=c++17", str(source), "-o", str(exe)], check=True, capture_output=True)
    lines = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60).stdout.splitlines()
    import resource

    from solbench.sandbox.confine import open_files_cap

    cap = open_files_cap(resource.getrlimit(resource.RLIMIT_NOFILE)[1])
    assert lines[4].split()[2] == str(cap) and int(lines[4].split()[1]) <= cap, lines  # see confine.py
    assert lines[0].endswith(f"; open files <= {cap}"), lines
    abi = abi_version()
    if abi < 1:
        assert lines[0].startswith("not confined") and lines[2] == "outside 1"
        return
    assert lines[0].startswith(f"confined (Landlock ABI {abi})"), lines
    assert lines[1:3] == ["scratch 1", "outside 0"], lines
    assert lines[3] == ("signal 0" if abi >= 6 else "signal 1"), lines
    assert lines[5] == "device 1 sibling 0" and f"opened for writing beneath {outside}/device /proc/self;" in lines[0], lines
    assert "threads running" not in lines[0], lines
    assert lines[6] == "comm 1", lines  # the driver names its threads
    assert lines[7] == "driver 1 /proc/self", lines


def test_the_runners_candidate_starts_threads_but_no_process(tmp_path):
    """confine.h's forbid_processes (applied with the confinement, before the candidate loads), compiled alone
    and tried on a CPU: a thread starts; fork, posix_spawn, system and execve do not, on a thread started before
    the filter too (review i2: without TSYNC it forked)."""
    from pathlib import Path

    header = Path(__file__).resolve().parents[1] / "solbench" / "sandbox" / "native" / "confine.h"
    source = tmp_path / "try.cpp"
    source.write_text(f'''#include "{header}"
#include <thread>
#include <spawn.h>
extern char** environ;
int main() {{
    int early_forked = -1, go = 0;
    std::thread early([&] {{  // started before the filter, as CUDA's and CUPTI's threads are
        while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE)) usleep(1000);
        pid_t p = fork();
        if (p == 0) _exit(0);
        early_forked = p > 0;
    }});
    printf("%s\\n", forbid_processes().c_str());
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
}}
''')
    exe = tmp_path / "try"
    subprocess.run(["nvcc", "-std=c++17", str(source), "-o", str(exe)], check=True, capture_output=True)
    lines = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60).stdout.splitlines()
    if lines[0].startswith("processes not forbidden"):  # no seccomp here: said so, and nothing else changed
        assert len(lines) == 1, lines  # execve replaced the program
        return
    assert lines == ["no new processes (seccomp: fork, exec and clone without CLONE_THREAD refused)",
                     "thread 1 fork 0 early 0 spawn 0 system 0 exec 0"], lines


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
