"""Confine the candidate's process with Landlock before its code is loaded (Linux >= 5.13, unprivileged).

Once confined, the process and everything it starts can write only beneath the directories it is given
(its scratch folder and /dev, where the GPU's device files and POSIX shared memory live): not the run
folder, the build cache, solbench's installation or its bytecode, other runs' records, the leaderboard.
From Landlock ABI 6 (Linux 6.12) it can also signal no process outside its own domain (not the
supervisor, not the comparators' workers), and from ABI 1 it can ptrace none (so no reading or writing
another process's memory through /proc/PID/mem). Reading stays open: a candidate reads its own files and
libraries. The native runner applies the same rules in C (solbench/sandbox/native/runner.cu).

It may also hold at most CANDIDATE_OPEN_FILES files open, hard limit included (`limit_open_files`): Linux
charges every fd in flight over a Unix socket to the sending *user* and refuses a send once that count
passes the sender's own RLIMIT_NOFILE, so a candidate with the supervisor's limit could park fds in flight
and make the supervisor's sends of tensors to the comparators fail (review of the fd path, finding 1). A
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
_SCOPE_SIGNAL = 1 << 1

# Rights that change the file system (LANDLOCK_ACCESS_FS_*): write, remove, make anything; REFER from ABI 2,
# TRUNCATE from ABI 3. Reading and executing are not handled, so they stay allowed everywhere.
_WRITE_V1 = sum(1 << bit for bit in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))
_WRITE_FILE, _REFER, _TRUNCATE = 1 << 1, 1 << 13, 1 << 14


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


def open_files_cap(hard: int) -> int:
    """CANDIDATE_OPEN_FILES, or half of `hard` when that is lower (RLIM_INFINITY is any large number)."""
    import resource

    return CANDIDATE_OPEN_FILES if hard == resource.RLIM_INFINITY else min(CANDIDATE_OPEN_FILES, hard // 2)


def limit_open_files() -> str:
    """Lower this process's RLIMIT_NOFILE, hard limit included, to open_files_cap; the words for the record."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    cap = open_files_cap(hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, cap), cap))
    return f"open files <= {cap}"


DRIVER_WRITES = ("/proc/self",)
"""Where existing files stay open to writing (nothing made or removed there): the CUDA driver names its threads
through /proc/self/task/*/comm when it starts, after the confinement, and cudaSetDevice fails if it cannot
(H200, driver 580). /proc/self is this process's own folder; nothing there reaches another process."""


def confine(writable: list[str], opened_for_writing: tuple[str, ...] = DRIVER_WRITES) -> str:
    """Confine this process (see the module docstring); the directories in `writable` must exist. Returns
    what was applied, in words, for the run's telemetry; OSError when the kernel refuses a step.

    Landlock binds the calling thread and the threads it starts afterwards, not those already running: call it
    while the process has one thread, before CUDA (whose threads run the candidate's host functions) starts."""
    files = limit_open_files()
    abi = abi_version()
    if abi < 1:
        return f"not confined: this kernel has no Landlock (Linux >= 5.13 with landlock among its LSMs); {files}"
    libc = _libc()
    write = _WRITE_V1 | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
    scoped = _SCOPE_SIGNAL if abi >= 6 else 0
    # The attribute struct grew with the ABI: pass only the size this kernel knows.
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    attr = _RulesetAttr(write, 0, scoped)
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        file_write = _WRITE_FILE | (_TRUNCATE if abi >= 3 else 0)
        for path, allowed in [(path, write) for path in writable] + [(path, file_write) for path in opened_for_writing]:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneathAttr(allowed, fd)
                if libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0)):
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}: {os.strerror(ctypes.get_errno())}")
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0):
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)):
            raise OSError(ctypes.get_errno(), f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(ruleset)
    signals = "no signals outside it" if scoped else "signals not scoped (Landlock ABI < 6)"
    opened = f"; existing files opened for writing beneath {' '.join(opened_for_writing)}" if opened_for_writing else ""
    threads = len(os.listdir("/proc/self/task"))
    if threads > 1:  # said, so a caller that confines too late shows in the record
        opened += f"; applied with {threads} threads running (those it does not bind)"
    return (f"confined (Landlock ABI {abi}): writes only beneath {', '.join(writable)}{opened}; no ptrace, {signals}; "
            f"{files}")


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
