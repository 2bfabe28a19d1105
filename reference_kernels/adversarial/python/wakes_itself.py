"""hogs_between_rounds.py's way past the stop: the supervisor stops the candidate's process
group between its requests (solbench/supervisor/pause.py) with SIGSTOP, and any SIGCONT wakes it again. This
candidate is hogs_between_rounds.py (honest answers; threads that load the CPUs while a comparator is timed)
that also has the kernel send it SIGCONT every millisecond (a POSIX timer, timer_create with SIGEV_SIGNAL; the
seccomp filter cannot read the sigevent), so it runs on while it is held. The supervisor checks each hold: its
threads are awake (and its CPU time grew) when the next request comes, so that request fails `tampered`.
Without a comparator (as the corpus test runs it) the holds last less than the timer's period and some
scenarios pass (nothing is timed beside it then); tests/test_confine_and_hold_cpu.py runs it against the seed, where
every scenario must be `tampered`.

expect: tampered or passed
"""

import ctypes
import signal
from pathlib import Path

from solbench.sandbox.impls import PythonImpl

# hogs_between_rounds.py whole: honest answers, and threads that load the CPUs while a comparator is timed
_hogs = PythonImpl(str(Path(__file__).with_name("hogs_between_rounds.py"))).module.forward
_timer = []


def forward(inp) -> None:
    _hogs(inp)
    _wake_every_millisecond()  # a stop that finds the timer's signal pending discards it, and the timer with it


class _SigEvent(ctypes.Structure):  # struct sigevent (64 bytes on Linux): value, signo, notify, then padding
    _fields_ = [("value", ctypes.c_void_p), ("signo", ctypes.c_int), ("notify", ctypes.c_int),
                ("pad", ctypes.c_byte * 48)]


class _ITimerSpec(ctypes.Structure):
    _fields_ = [("interval_s", ctypes.c_long), ("interval_ns", ctypes.c_long),
                ("value_s", ctypes.c_long), ("value_ns", ctypes.c_long)]


def _wake_every_millisecond() -> None:
    # A handler, so the signal is not ignored (the kernel parks a timer whose signal is ignored, SIGCONT's default)
    signal.signal(signal.SIGCONT, lambda *_: None)
    libc = ctypes.CDLL(None, use_errno=True)
    if not _timer:
        timer = ctypes.c_void_p()
        event = _SigEvent(signo=int(signal.SIGCONT), notify=0)  # SIGEV_SIGNAL
        if libc.timer_create(1, ctypes.byref(event), ctypes.byref(timer)):  # CLOCK_MONOTONIC
            return
        _timer.append(timer)
    period = _ITimerSpec(0, 1_000_000, 0, 1_000_000)
    libc.timer_settime(_timer[0], 0, ctypes.byref(period), None)


_wake_every_millisecond()
