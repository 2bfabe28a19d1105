"""wakes_itself.py made quiet: the supervisor holds the candidate's process group stopped
between its requests (solbench/supervisor/pause.py), and a check of a hold by its end state (every
thread stopped) and the group's CPU time (30 ms of slack, in ticks of 10 ms) alone is not enough. This
candidate answers honestly (torch_attention.py) and has a POSIX timer send one of its threads SIGCONT every
2 ms (SIGEV_THREAD_ID; that thread blocks the signal and takes it with sigwaitinfo). Any SIGCONT wakes the
whole process; when the thread finds it was woken while held (no SIGCONT of the supervisor's since, the main thread waiting in read() on the
request pipe with nothing there), it does what it came to do in a fraction of a millisecond (on a GPU: launch
work that runs while a comparator is timed, wakes_briefly.cu) and stops the process again itself, so a hold
ends with every thread stopped. In Python each wake costs ~0.3 ms of CPU, so that check alone still caught it
by CPU time on 3 of 4 smoke scenarios against the seed on a 2-core CPU (one passed); the .cu's one wake of
microseconds a hold it could not. The supervisor now counts each stopped thread's runs (schedstat): the next
request fails `tampered`. tests/test_confine_and_hold_cpu.py runs it against the seed, where every scenario must be
`tampered`; alone some holds are shorter than the timer's period.

expect: tampered or passed
"""

import ctypes
import fcntl
import gc
import os
import signal
import struct
import termios
import threading
import time
from pathlib import Path

from solbench.sandbox.impls import PythonImpl

_honest = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward
PERIOD_NS = 2_000_000
WORK_S = 0.0001
SIGEV_THREAD_ID = 4
READ = {"x86_64": 0, "aarch64": 63}.get(os.uname().machine)
_libc = ctypes.CDLL(None, use_errno=True)
_timer = ctypes.c_void_p()  # the first timer's id is 0
_armed = [False]
_fds: list[int] = []


def forward(inp) -> None:
    _honest(inp)
    _arm()  # a stop that finds the timer's signal pending discards it, and the timer with it


class _SigEvent(ctypes.Structure):  # struct sigevent: value, signo, notify, then the thread id (a union)
    _fields_ = [("value", ctypes.c_void_p), ("signo", ctypes.c_int), ("notify", ctypes.c_int),
                ("tid", ctypes.c_int), ("pad", ctypes.c_byte * 44)]


def _arm() -> None:
    if _armed[0]:
        _libc.timer_settime(_timer, 0, (ctypes.c_long * 4)(0, PERIOD_NS, 0, PERIOD_NS), None)


def _request_fds() -> list[int]:
    """The pipe the worker reads its requests from (the harness's Connection, found among live objects)."""
    from multiprocessing.connection import Connection

    return [o.fileno() for o in gc.get_objects() if isinstance(o, Connection) and not o.closed]


def _waiting(fds: list[int]) -> bool:
    """A request has come (the supervisor continued the process to serve it)."""
    for fd in fds:
        try:
            if struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]:
                return True
        except OSError:
            pass
    return False


def _held() -> bool:
    """Woken while held: no SIGCONT of the supervisor's since (its byte on the wake-up pipe), the main thread waits
    in read() on the request pipe (not in a call), and no request has come."""
    fds = _fds or _fds.extend(_request_fds()) or _fds
    try:
        if os.read(_woken_r, 64):
            return False  # the supervisor continued the process: a request is coming
    except BlockingIOError:
        pass
    if _waiting(fds):
        return False
    try:
        with open(f"/proc/self/task/{os.getpid()}/syscall") as f:
            call = f.read().split()
    except OSError:
        return False
    return len(call) >= 2 and call[0] == str(READ) and int(call[1], 16) in fds


def _waker() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCONT})
    event = _SigEvent(signo=int(signal.SIGCONT), notify=SIGEV_THREAD_ID, tid=threading.get_native_id())
    if _libc.timer_create(1, ctypes.byref(event), ctypes.byref(_timer)):  # CLOCK_MONOTONIC
        return
    _armed[0] = True
    _arm()
    while True:
        signal.sigwaitinfo({signal.SIGCONT})
        if _held():
            end = time.perf_counter() + WORK_S
            while time.perf_counter() < end:
                pass
            _arm()  # first: its next signal comes after the stop, which would discard one pending (and the timer)
            os.kill(os.getpid(), signal.SIGSTOP)


# The supervisor's SIGCONT goes to the process (a thread that does not block it), its timer's to the waker alone
# (which blocks it): a handler marks the first kind on a pipe, from whichever thread takes it.
_woken_r, _woken_w = os.pipe2(os.O_NONBLOCK)
signal.signal(signal.SIGCONT, lambda *_: None)
signal.set_wakeup_fd(_woken_w, warn_on_full_buffer=False)
threading.Thread(target=_waker, daemon=True).start()
