"""hogs_between_rounds.py's way past the stop, found in review l: the supervisor stops the candidate's process
group between its requests (solbench/supervisor/pause.py) with SIGSTOP, and any SIGCONT wakes it again. At
import this candidate has the kernel send it SIGCONT every millisecond (a POSIX timer: timer_create with
SIGEV_SIGNAL; the seccomp filter cannot read the sigevent), so it runs on while it is held, and a thread loads a
CPU whenever its own call is not running, comparators' rounds included. Its answers are honest. The supervisor
checks each hold: the group's CPU time grew while it was stopped, so the next request fails `tampered`.

expect: tampered
"""

import ctypes
import hashlib
import signal
import threading
import time
from pathlib import Path

from solbench.sandbox.impls import PythonImpl

_honest = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward
_inside = [False]
LIFETIME_S = 60.0


def forward(inp) -> None:
    _inside[0] = True
    try:
        _honest(inp)
    finally:
        _inside[0] = False


class _SigEvent(ctypes.Structure):  # struct sigevent (64 bytes on Linux): value, signo, notify, then padding
    _fields_ = [("value", ctypes.c_void_p), ("signo", ctypes.c_int), ("notify", ctypes.c_int),
                ("pad", ctypes.c_byte * 48)]


class _ITimerSpec(ctypes.Structure):
    _fields_ = [("interval_s", ctypes.c_long), ("interval_ns", ctypes.c_long),
                ("value_s", ctypes.c_long), ("value_ns", ctypes.c_long)]


def _wake_every_millisecond() -> None:
    # A handler, so the signal is not ignored (the kernel parks a timer whose signal is ignored, SIGCONT's default)
    signal.signal(signal.SIGCONT, lambda *_: None)
    librt = ctypes.CDLL(None, use_errno=True)
    timer = ctypes.c_void_p()
    event = _SigEvent(signo=int(signal.SIGCONT), notify=0)  # SIGEV_SIGNAL
    if librt.timer_create(1, ctypes.byref(event), ctypes.byref(timer)):  # CLOCK_MONOTONIC
        return
    period = _ITimerSpec(0, 1_000_000, 0, 1_000_000)
    librt.timer_settime(timer, 0, ctypes.byref(period), None)


def _hog() -> None:
    block, end = b"x" * (64 << 10), time.monotonic() + LIFETIME_S
    while time.monotonic() < end:
        if _inside[0]:
            time.sleep(0.0005)
        else:
            hashlib.sha256(block).digest()  # releases the GIL: a whole core


_wake_every_millisecond()
threading.Thread(target=_hog, daemon=True).start()
