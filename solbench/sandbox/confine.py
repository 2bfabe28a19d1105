"""Confine the candidate's process with Landlock before its code is loaded (Linux >= 5.13, unprivileged).

Once confined, the process and everything it starts can write only beneath the directories it is given
(its scratch folder and /dev/shm, where POSIX shared memory lives) and to a few device files (the GPU's,
/dev/null and kin; ioctls on no other device from ABI 5): not the run folder, the build cache, solbench's
installation or its bytecode, other runs' records, the leaderboard. It can make no device node, use no
TCP (from ABI 4: a local service such as a Ray cluster would run code for it unconfined), ptrace no process
outside its own domain (so no reading or writing another process's memory through /proc/PID/mem), and from
ABI 6 (Linux 6.12) signal none and reach no abstract Unix socket outside it (not the supervisor, not the
comparators' workers). solbench.sandbox.privileges then takes every capability and what Landlock leaves
open against other processes of the same user. Reading stays open: a candidate reads its own files and
libraries. The native runner applies the same rules in C (solbench/sandbox/native/runner.cu). Where a
server hides its state (HIDDEN_VARIABLE), reading is confined too: nothing beneath the folders it names can be
read but the candidate's own (hidden_reads).

It may also hold at most CANDIDATE_OPEN_FILES files open, hard limit included (`limit_files`): Linux
charges every fd in flight over a Unix socket to the sending *user* and refuses a send once that count
passes the sender's own RLIMIT_NOFILE, so a candidate with the supervisor's limit could park fds in flight
and make the supervisor's sends of tensors to the comparators fail. A
process with CAP_SYS_RESOURCE (root) is exempt from that count, and so is a supervisor running as root.

The syscall numbers (444-446) are the same on every Linux architecture.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import tempfile

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1
_BIND_TCP, _CONNECT_TCP = 1 << 0, 1 << 1

# Rights that change the file system (LANDLOCK_ACCESS_FS_*): write, remove, make anything; REFER from ABI 2,
# TRUNCATE from ABI 3. Reading and executing are not handled, so they stay allowed everywhere.
_WRITE_V1 = sum(1 << bit for bit in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))
_WRITE_FILE, _MAKE_CHAR, _MAKE_BLOCK = 1 << 1, 1 << 6, 1 << 11
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_READ_FILE, _READ_DIR = 1 << 2, 1 << 3
_READ = _READ_FILE | _READ_DIR

HIDDEN_VARIABLE = "SOLBENCH_HIDDEN"
"""Files and folders (os.pathsep between them) no confined process may read, set in a job's environment by `solbench
serve`: its state folder (every client's candidates and records) and its build cache (every candidate's
binary). Each confined process keeps its own files readable (hidden_reads)."""
MAX_READ_RULES = 20000


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when there is none (old kernel, or disabled at boot)."""
    version = _libc().syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_RULESET_VERSION))
    return max(0, int(version))


CANDIDATE_OPEN_FILES = 4096
"""The candidate's RLIMIT_NOFILE (soft and hard), at most half of the hard limit the supervisor raises its
own soft limit to (solbench.supervisor.runner), so what it can park in flight stays below that."""


FILE_SIZE_CAP = 16 << 30
"""The largest file the candidate's process may write (RLIMIT_FSIZE, hard limit included)."""


def open_files_cap(hard: int) -> int:
    """CANDIDATE_OPEN_FILES, or half of `hard` when that is lower (RLIM_INFINITY is any large number)."""
    import resource

    return CANDIDATE_OPEN_FILES if hard == resource.RLIM_INFINITY else min(CANDIDATE_OPEN_FILES, hard // 2)


def limit_files() -> str:
    """Lower this process's RLIMIT_NOFILE, hard limit included, to open_files_cap, and its RLIMIT_FSIZE to
    FILE_SIZE_CAP; the words for the record."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    cap = open_files_cap(hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, cap), cap))
    # And no file past FILE_SIZE_CAP: its scratch folder, /dev/shm and its own log in the run folder would
    # otherwise fill the disk; a write past it gets SIGXFSZ, a crash of its scenario.
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_CAP, FILE_SIZE_CAP))
    return f"open files <= {cap}, each file <= {FILE_SIZE_CAP >> 30} GiB"


DRIVER_WRITES = ("/proc/self",)
"""Where existing files stay open to writing (nothing made or removed there): the CUDA driver names its threads
through /proc/self/task/*/comm when it starts, after the confinement, and cudaSetDevice fails if it cannot
(H200, driver 580). /proc/self is this process's own folder; nothing there reaches another process. Its
O_PATH descriptor stays open (_KEPT): Landlock ties the rule to the inode, which procfs makes anew once the
dentry is reclaimed."""

_KEPT: list[int] = []


def device_files() -> list[str]:
    """The device files a candidate may open for writing and use ioctls on: the GPU's (/dev/nvidia*, the
    /dev/nvidia-caps folder) and the harmless ones (null, zero, full, random, urandom). Not the rest of /dev:
    a raw disk, the operator's terminal (TIOCSTI works on a read-only open), a loop device."""
    found = sorted(f"/dev/{name}" for name in os.listdir("/dev") if name.startswith("nvidia"))
    found += [f"/dev/{name}" for name in ("null", "zero", "full", "random", "urandom")]
    return [path for path in found if os.path.exists(path)]


def shared_memory_dirs() -> list[str]:
    """/dev/shm where there is one: POSIX shared memory (torch's CPU tensors, semaphores)."""
    return [path for path in ("/dev/shm",) if os.path.isdir(path)]


class ConfinedTooLate(RuntimeError):
    """More than one thread was running: Landlock would not bind the others, so nothing is applied."""


def hidden() -> list[str]:
    """The files and folders HIDDEN_VARIABLE names, resolved; those that do not exist hide nothing."""
    names = filter(None, os.environ.get(HIDDEN_VARIABLE, "").split(os.pathsep))
    return sorted({os.path.realpath(n) for n in names if os.path.exists(n)})


def hidden_reads(hide: list[str], keep: list[str]) -> list[tuple[str, int]]:
    """Landlock read rules under which everything is readable but what lies beneath `hide`, with `keep` (within
    it) readable again. Landlock only allows, so "all but X" is every entry beside X and beside each of its
    folders up to /: what is made beside them afterwards is unreadable too (the candidate's own scratch folder
    is kept by its write rule). A symbolic link gets no rule: what it points to is read under that path's
    rules (a rule on a link to a hidden folder would open it)."""
    hide = sorted({os.path.realpath(h) for h in hide})
    hide = [h for h in hide if not any(h.startswith(o.rstrip("/") + "/") for o in hide if o != h)]
    if "/" in hide:
        raise OSError(f"{HIDDEN_VARIABLE} names / : nothing would be readable")
    inside = lambda path: any(path == h or path.startswith(h + "/") for h in hide)  # noqa: E731
    above = set()
    for h in hide:
        parent = os.path.dirname(h)
        while True:
            above.add(parent)
            if parent == "/":
                break
            parent = os.path.dirname(parent)
    rules = []
    for folder in sorted(above):
        for entry in os.scandir(folder):
            if entry.path in above or inside(entry.path) or entry.is_symlink():
                continue
            rules.append((entry.path, _READ if entry.is_dir(follow_symlinks=False) else _READ_FILE))
    for path in keep:
        real = os.path.realpath(path)
        if os.path.exists(real):
            rules.append((real, _READ if os.path.isdir(real) else _READ_FILE))
    if len(rules) > MAX_READ_RULES:
        raise OSError(f"hiding {', '.join(hide)} takes {len(rules)} rules (entries beside them and their folders), "
                      f"more than {MAX_READ_RULES}: keep the state folder where fewer entries lie beside it")
    return rules


class NotHidden(RuntimeError):
    """HIDDEN_VARIABLE is set and this process could not be kept from reading it: nothing of the candidate's
    may run then."""


def hide_reads(keep: list[str]) -> str:
    """Make what HIDDEN_VARIABLE names unreadable to this process and what it runs (`keep` excepted), as a
    Landlock layer of its own: reading only. NotHidden when the kernel cannot (a server that hides its state
    runs no candidate's build or runner where it cannot)."""
    hide = hidden()
    if not hide:
        return "nothing hidden"
    if abi_version() < 1:
        raise NotHidden(f"{HIDDEN_VARIABLE} is set and this kernel has no Landlock: {', '.join(hide)} cannot be "
                        "hidden")
    libc = _libc()
    attr = _RulesetAttr(_READ, 0, 0)
    try:
        ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(8), ctypes.c_uint32(0))
        if ruleset < 0:
            raise OSError(ctypes.get_errno(), f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
        try:
            _add_rules(libc, ruleset, hidden_reads(hide, keep))
            _restrict(libc, ruleset)
        finally:
            os.close(ruleset)
    except OSError as exc:
        raise NotHidden(f"{', '.join(hide)} could not be hidden: {exc}") from None
    return f"reads nothing beneath {', '.join(hide)} but {', '.join(keep) or 'nothing'}"


def _add_rules(libc, ruleset: int, rules) -> None:
    for path, allowed in rules:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
        except FileNotFoundError:  # gone since it was listed: nothing to allow
            continue
        try:
            _add_rule(libc, ruleset, path, fd, allowed)
        finally:
            os.close(fd)


def _add_rule(libc, ruleset: int, path: str, fd: int, allowed: int) -> None:
    rule = _PathBeneathAttr(allowed, fd)
    if libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0)):
        raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}: {os.strerror(ctypes.get_errno())}")


def _restrict(libc, ruleset: int) -> None:
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0):
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.syscall(_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)):
        raise OSError(ctypes.get_errno(), f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")


def confine(writable: list[str], keep: list[str] = ()) -> str:
    """Confine this process (see the module docstring); the directories in `writable` must exist; with
    HIDDEN_VARIABLE set, nothing beneath it is readable but `keep` (and `writable`). Returns
    what was applied, in words, for the run's telemetry; OSError when the kernel refuses a step (the run goes on
    unconfined, and says so); ConfinedTooLate when threads are already running.

    Landlock binds the calling thread and the threads it starts afterwards, not those already running: call it
    while the process has one thread, before CUDA (whose threads run the candidate's host functions) starts.
    Then: no capabilities and the seccomp filter of solbench.sandbox.privileges."""
    threads = len(os.listdir("/proc/self/task"))
    if threads > 1:
        raise ConfinedTooLate(f"{threads} threads were already running in the candidate's process when it was to be "
                              "confined (the confinement binds none of them)")
    from solbench.sandbox.privileges import drop_capabilities, filter_syscalls

    try:
        landlock = _landlock(writable)
    except OSError as exc:  # the rest still applies
        landlock = f"not confined: {exc}"
    words = [landlock]
    if hidden():  # NotHidden when it cannot be: a hidden state is never left readable
        words.append(hide_reads([*keep, *writable]))
    words.append(limit_files())
    words.append(drop_capabilities())
    words.append(filter_syscalls())
    return "; ".join(words)


def _landlock(writable: list[str]) -> str:
    abi = abi_version()
    if abi < 1:
        return "not confined: this kernel has no Landlock (Linux >= 5.13 with landlock among its LSMs)"
    libc = _libc()
    handled = _WRITE_V1 | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0) | (_IOCTL_DEV if abi >= 5 else 0)
    folder = handled & ~(_MAKE_CHAR | _MAKE_BLOCK | _IOCTL_DEV)  # no device nodes made anywhere
    device = _WRITE_FILE | (_TRUNCATE if abi >= 3 else 0) | (_IOCTL_DEV if abi >= 5 else 0)
    opened = _WRITE_FILE | (_TRUNCATE if abi >= 3 else 0)
    net = _BIND_TCP | _CONNECT_TCP if abi >= 4 else 0  # no rule allows a port: no TCP at all
    scoped = _SCOPE_SIGNAL | _SCOPE_ABSTRACT_UNIX if abi >= 6 else 0
    # The attribute struct grew with the ABI: pass only the size this kernel knows.
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    attr = _RulesetAttr(handled, net, scoped)
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    devices = device_files()
    try:
        rules = [(p, folder) for p in writable] + [(p, device) for p in devices] + [(p, opened) for p in DRIVER_WRITES]
        for path, allowed in rules:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                _add_rule(libc, ruleset, path, fd, allowed)
            finally:
                if path in DRIVER_WRITES:
                    _KEPT.append(fd)
                else:
                    os.close(fd)
        _restrict(libc, ruleset)
    finally:
        os.close(ruleset)
    return (f"confined (Landlock ABI {abi}): writes only beneath {', '.join(writable)}, to {len(devices)} device "
            f"files (the GPU's, null, zero, random) and to existing files beneath {' '.join(DRIVER_WRITES)}; "
            + ("device ioctls only on those; " if abi >= 5 else "device ioctls not limited (Landlock ABI < 5); ")
            + ("no TCP; " if net else "TCP not limited (Landlock ABI < 4); ") + "no ptrace, "
            + ("no signals or abstract sockets outside it" if scoped else "signals not scoped (Landlock ABI < 6)"))


CACHE_VARIABLES = ("TMPDIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "CUDA_CACHE_PATH", "XDG_CACHE_HOME")
"""Where a confined candidate's libraries keep their files (compiled kernels, temporary files): its scratch
folder, the one place it may write."""


def scratch_dir(spec) -> str | None:
    """A fresh private folder for the candidate's process to write in; None for the trusted implementations,
    which are not confined."""
    return tempfile.mkdtemp(prefix="solbench-candidate-") if spec.name == "candidate" else None


def remove_scratch(path: str | None) -> None:
    if path:
        shutil.rmtree(path, ignore_errors=True)
