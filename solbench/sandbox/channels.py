"""Every way a worker can reach the supervisor (none may lead to code running there), and how
to see them from outside: tests/test_channels_cpu.py starts a real Python worker and fails on any fd of it not
in PYTHON_WORKER_FDS, on any listening socket of its supervisor's, on an environment that is not its
supervisor's, and on the supervisor's multiprocessing key in the worker.

A Python worker (solbench.sandbox.boot; a plain exec, not multiprocessing's spawn):

- fd 0: /dev/null (not the operator's terminal).
- fds 1, 2 and one more: its own log file in the run folder, appended to. The supervisor reads its last lines
  as text into a crash's reason.
- its socket: one end of an unnamed socketpair whose other end only the supervisor holds. Down: commands the
  supervisor pickled, with the fds of the tensors they name beside them (solbench.gpu.ipc). Up: replies, one
  bounded JSON frame each (solbench.sandbox.replies). Nothing it sends is unpickled.
- shared memory: one fd per CPU storage it was sent (torch keeps it for the mapping): a memfd, which no name
  leads to, sealed against shrinking and growing (solbench.gpu.ipc.sealed_cpu; a /dev/shm file it could
  truncate, and the supervisor's next read was a SIGBUS that ended the run). On a GPU, mappings of the
  supervisor's allocations, their fds closed once mapped. Their contents are checked by the supervisor.
- /proc/self: an O_PATH fd that keeps Landlock's rule for the CUDA driver's writes (confine.DRIVER_WRITES).
- environment: its supervisor's, unchanged; it then points confine.CACHE_VARIABLES at its scratch folder.
- inherited key: none. multiprocessing, if the candidate imports it, makes a fresh random one.
- command line: the interpreter's flags, the supervisor's sys.path, its socket's number, the supervisor's pid.
- listeners in the supervisor: none. Tensors go as fds over the socket, not from a resource_sharer listener
  (which unpickles what any client with the key sends); solbench starts no Manager, no torch_shm_manager.
- beyond its fds: writes only beneath its scratch folder and /dev/shm, no TCP (Landlock ABI >= 4), signals
  and abstract Unix sockets only within its own domain (ABI >= 6), no System V IPC (seccomp). A named Unix
  socket is not covered by Landlock: so the supervisor holds none. Other programs' named sockets on the
  machine stay reachable (a Ray cluster's raylet under `--gpus` with Ray, a Docker socket): not the
  supervisor's, but a service that runs what it is sent would run it unconfined.

The native runner (runner.cu) has fd 0 (its command lines), fd 1 (its reply lines, JSON the supervisor parses),
fd 2 (its log), its fd socket (the tensors' fds come in; it sends nothing the supervisor reads), the same
environment plus SOLBENCH_CUPTI_LIB, and no Python, so no key at all.
"""

from __future__ import annotations

import os

PYTHON_WORKER_FDS = {
    "null": "fd 0",
    "log": "fds 1 and 2, and the log _serve opens",
    "unix socket": "its end of the socketpair to the supervisor (unnamed, not listening; a second fd of it while "
                   "it waits for a command, ipc.recv_fds)",
    "sealed shared memory": "a CPU storage it was sent, mapped (a memfd it cannot shrink or grow)",
    "proc self": "the O_PATH fd behind Landlock's rule for /proc/self",
}
"""What a Python worker may hold open, by kind (observe's words): anything else is a channel not listed here."""


def _sockets() -> dict[int, str]:
    """socket inode -> its kind, from /proc/net/{unix,tcp,tcp6,udp,udp6} (this network namespace's)."""
    kinds = {}
    try:
        with open("/proc/net/unix") as f:
            for line in f.readlines()[1:]:
                parts = line.split()
                listening = int(parts[3], 16) & 0x10000  # __SO_ACCEPTCON
                named = len(parts) > 7
                kinds[int(parts[6])] = ("listening " if listening else "") + ("named " if named else "") + "unix socket"
    except OSError:
        pass
    for proto in ("tcp", "tcp6", "udp", "udp6"):
        try:
            with open(f"/proc/net/{proto}") as f:
                for line in f.readlines()[1:]:
                    parts = line.split()
                    kinds[int(parts[9])] = ("listening " if proto.startswith("tcp") and parts[3] == "0A" else "") + \
                        f"{proto} socket"
        except OSError:
            pass
    return kinds


def observe(pid: int, log_path: str | None = None) -> list[tuple[int, str, str]]:
    """(fd, kind, what it points at) for every fd of process `pid` (needs the right to read its /proc/<pid>/fd)."""
    sockets = _sockets()
    out = []
    for name in sorted(os.listdir(f"/proc/{pid}/fd"), key=int):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue  # closed meanwhile
        if target == "/dev/null":
            kind = "null"
        elif log_path is not None and target == os.path.realpath(log_path):
            kind = "log"
        elif target.startswith("socket:["):
            kind = sockets.get(int(target[8:-1]), "socket of another namespace")
        elif target.startswith("/memfd:solbench-tensor"):
            kind = "sealed shared memory"
        elif target == f"/proc/{pid}":
            kind = "proc self"
        else:
            kind = target.split(":")[0] if ":[" in target else "file"
        out.append((int(name), kind, target))
    return out


def listening(pid: int) -> list[tuple[int, str, str]]:
    """The fds of `pid` that a worker could connect or send to: listening sockets, named Unix sockets, UDP."""
    return [fd for fd in observe(pid) if "listening" in fd[1] or "named" in fd[1] or "udp" in fd[1]]
