"""What the candidate's process may still do to other processes and to the machine, cut down after Landlock
(solbench.sandbox.confine), which limits files, ports and signals but not the rest:

- `drop_capabilities`: none left, bounding set and ambient set included. A candidate running as root (the
  GPU machines run everything as root) otherwise keeps mknod (a block device in /dev/shm is the raw disk),
  TIOCSTI into the operator's terminal, adjtimex (the supervisor's clock), bpf, and the right to act on any
  process.
- `filter_syscalls`: a seccomp filter. For another process of the same user the kernel asks nothing more
  than the uid, so `prlimit` (an RLIMIT_CPU under its CPU time gets a comparator killed by the kernel),
  `setpriority`, `sched_setaffinity` and kin (slow the seed while it is timed) and `ioprio_set` are refused
  for anyone but the caller: prlimit with EPERM; the others pretend to succeed (a library that pins or
  renices its own threads by id carries on, without effect). New user namespaces (`unshare`, `clone` with
  CLONE_NEWUSER) are refused: namespace root is where kernel privilege escalations start. So is System V
  IPC (SYSV_IPC). `setpgid` and `setsid` pretend to succeed: every process of the candidate's stays in the
  worker's process group, which the supervisor stops between requests (a child in its own session, or
  the worker moved into the supervisor's group, ran on while the comparators were timed); io_uring is
  refused (a kernel thread polling its queue works on while the process is stopped), and so are a child's
  exit signal other than SIGCHLD (it wakes the held group when a process of it dies), and so is
  any parent-death signal but SIGKILL (SIGCONT wakes the group too; clearing the worker's own would let it
  outlive its supervisor: solbench.supervisor.lifeline). The native runner
  applies the same rules, and forbids starting processes as well (native/confine.h).
"""

from __future__ import annotations

import ctypes
import os
import platform
import signal

_PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, _PR_SET_PDEATHSIG, _PR_SET_NO_NEW_PRIVS = 22, 2, 1, 38
_CAP_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> str:
    """Every capability of this process gone for good; the words for the record. OSError if capset fails."""
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        last = int(open("/proc/sys/kernel/cap_last_cap").read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):  # needs CAP_SETPCAP; without it the bounding set cannot grow back anyway
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header, data = _CapHeader(_CAP_VERSION_3, 0), (_CapData * 2)()
    if libc.capset(ctypes.byref(header), data):
        raise OSError(ctypes.get_errno(), f"capset: {os.strerror(ctypes.get_errno())}")
    return "no capabilities"


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


_NUMBERS = {  # name: (x86_64, aarch64)
    "prlimit64": (302, 261), "setpriority": (141, 140), "sched_setaffinity": (203, 122),
    "sched_setscheduler": (144, 119), "sched_setparam": (142, 118), "sched_setattr": (314, 274),
    "ioprio_set": (251, 30), "unshare": (272, 97), "clone": (56, 220), "clone3": (435, 435), "setpgid": (109, 154),
    "setsid": (112, 157), "io_uring_setup": (425, 425), "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427), "mq_open": (240, 180), "mq_unlink": (241, 181), "mq_timedsend": (242, 182),
    "mq_timedreceive": (243, 183), "mq_notify": (244, 184), "mq_getsetattr": (245, 185), "shmget": (29, 194),
    "shmat": (30, 196), "shmctl": (31, 195), "shmdt": (67, 197), "semget": (64, 190), "semop": (65, 193),
    "semctl": (66, 191), "semtimedop": (220, 192), "msgget": (68, 186), "msgsnd": (69, 189), "msgrcv": (70, 188),
    "msgctl": (71, 187), "prctl": (157, 167)
}
_SYSCALLS = {  # per architecture: (AUDIT_ARCH_*, syscall numbers)
    "x86_64": (0xC000003E, {name: pair[0] for name, pair in _NUMBERS.items()}),
    "aarch64": (0xC00000B7, {name: pair[1] for name, pair in _NUMBERS.items()}),
}

SYSV_IPC = ("shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semctl", "semtimedop",
            "msgget", "msgsnd", "msgrcv", "msgctl",
            "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr")
"""System V IPC and POSIX message queues, refused: their objects outlive the process (host memory filled after
the run), System V ids are small numbers (shmat reaches another process's segment without a name), and
mq_notify can send the process a signal of its choosing (SIGCONT undoes the hold); nothing the hosts
load uses them (Python's and CUDA's shared memory are POSIX, files in /dev/shm)."""
_LD, _JEQ, _JGE, _JSET, _AND, _RET = 0x20, 0x15, 0x35, 0x45, 0x54, 0x06
_ALLOW, _EPERM, _ENOSYS, _PRETEND = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38, 0x00050000  # errno 0: "done"
_NR, _ARCH = 0, 4
_CLONE_NEWUSER = 0x10000000


def _arg(i: int, high: bool = False) -> int:
    return 16 + 8 * i + (4 if high else 0)  # seccomp_data.args[i], little-endian words


def _program(arch: int, nr: dict) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k): each syscall's block follows a test that skips it when the number
    differs, and every block ends in a return."""
    def ret(value):
        return [(_RET, 0, 0, value)]

    def arg_is(i, value, then, otherwise):  # args[i]'s low word (the kernel reads an int there) == value
        return [(_LD, 0, 0, _arg(i)), (_JEQ, 0, 1, value), *ret(then), *ret(otherwise)]

    blocks = {
        # prlimit64(pid, resource, new, old): the caller's own (pid 0), or only reading (new == NULL)
        "prlimit64": [(_LD, 0, 0, _arg(0)), (_JEQ, 0, 1, 0), *ret(_ALLOW), (_LD, 0, 0, _arg(2)), (_JEQ, 0, 3, 0),
                      (_LD, 0, 0, _arg(2, True)), (_JEQ, 0, 1, 0), *ret(_ALLOW), *ret(_EPERM)],
        # setpriority(PRIO_PROCESS, 0, n) and ioprio_set(IOPRIO_WHO_PROCESS, 0, n) only: not a group, a user
        "setpriority": [(_LD, 0, 0, _arg(0)), (_JEQ, 0, 3, 0), *arg_is(1, 0, _ALLOW, _PRETEND)],
        "ioprio_set": [(_LD, 0, 0, _arg(0)), (_JEQ, 0, 3, 1), *arg_is(1, 0, _ALLOW, _PRETEND)],
        **{name: arg_is(0, 0, _ALLOW, _PRETEND)
           for name in ("sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr")},
        "unshare": ret(_EPERM),
        "clone3": ret(_ENOSYS),  # its flags are behind a pointer the filter cannot read; glibc falls back to clone
        # no user namespace; the child's exit signal none or SIGCHLD: a SIGCONT there wakes the held parent
        # when the child dies
        "clone": [(_LD, 0, 0, _arg(0)), (_JSET, 0, 1, _CLONE_NEWUSER), *ret(_EPERM), (_AND, 0, 0, 0xFF),
                  (_JEQ, 2, 0, 0), (_JEQ, 1, 0, int(signal.SIGCHLD)), *ret(_EPERM), *ret(_ALLOW)],
        # prctl(PR_SET_PDEATHSIG, n): SIGKILL only. SIGCONT would wake the held group when the parent dies;
        # 0 would clear the worker's own, which ends it with its supervisor (lifeline.py)
        "prctl": [(_LD, 0, 0, _arg(0)), (_JEQ, 0, 3, _PR_SET_PDEATHSIG),
                  (_LD, 0, 0, _arg(1)), (_JEQ, 1, 0, int(signal.SIGKILL)), *ret(_EPERM), *ret(_ALLOW)],
        **{name: ret(_EPERM) for name in SYSV_IPC},
        # the worker leads its own process group, which the supervisor stops between requests
        # (solbench.supervisor.pause): no process of the candidate's may leave it, or move into another
        "setpgid": ret(_PRETEND), "setsid": ret(_PRETEND),
        # io_uring: a kernel thread that polls its queue works on while the process is stopped
        **{name: ret(_EPERM) for name in ("io_uring_setup", "io_uring_enter", "io_uring_register")},
    }
    program = [(_LD, 0, 0, _ARCH), (_JEQ, 1, 0, arch), *ret(_EPERM), (_LD, 0, 0, _NR)]
    if arch == _SYSCALLS["x86_64"][0]:
        program += [(_JGE, 0, 1, 0x40000000), *ret(_EPERM)]  # x32 numbers
    for name, block in blocks.items():
        program += [(_JEQ, 0, len(block), nr[name]), *block]
    return program + ret(_ALLOW)


def filter_syscalls(new_privs: bool = False) -> str:
    """Install the filter (this thread and the threads and processes it starts later); the words for the
    record. Needs no_new_privs, which Landlock's confinement set (`new_privs`: set it here). OSError when
    refused."""
    machine = platform.machine()
    if machine not in _SYSCALLS:
        return f"no syscall filter for {machine}"
    program = _program(*_SYSCALLS[machine])
    filters = (_SockFilter * len(program))(*program)
    fprog = _SockFprog(len(program), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    if new_privs and libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0):
        raise OSError(ctypes.get_errno(), f"no_new_privs: {os.strerror(ctypes.get_errno())}")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0):
        raise OSError(ctypes.get_errno(), f"seccomp: {os.strerror(ctypes.get_errno())}")
    return ("other processes' limits, priorities and CPUs out of reach, no user namespaces, no System V IPC or "
            "message queues, no leaving the process group, no io_uring (seccomp)")
