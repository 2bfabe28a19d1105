"""Cheat class 1 (patching the harness) past the supervisor's clock. fakes_samples.py
reports a tenth of its times and is caught by clock_gap, which measures the loop's overhead on the trusted
comparators' rounds. But a comparator that fails while timed is dropped and the candidate is timed alone
(evaluate.py 92-103), and with no trusted rounds clock_gap answers False (audit.py 130). So at its first
timed call of each scenario this module SIGKILLs its sibling workers (same Unix user; the seed's worker
dies in the middle of the rounds, `crash`, and is started afresh for the next scenario only), then keeps
reporting a tenth of its time: `passed`, 10x faster than it ran, and the seed's record says it crashed.

expect: see tests/test_adversarial_python_cpu.py (must be hidden_work, as fakes_samples.py with the seed)
"""

import os
import signal
import time
from pathlib import Path

import solbench.sandbox.timing as timing
from solbench.sandbox.impls import PythonImpl

_real_sample = timing.Sample


def _fast_sample(device_ms, host_ms, *rest, **kw):
    return _real_sample(device_ms / 10, host_ms / 10, *rest, **kw)


timing.Sample = _fast_sample
_honest_forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward
_last_kill = [0.0]


def _is_worker(cmdline: bytes) -> bool:
    """A Python worker's command line: solbench.sandbox.boot's, or multiprocessing's spawn's before issue 39."""
    return b"solbench.sandbox.boot" in cmdline or b"spawn_main" in cmdline


def _kill_siblings():
    me, parent = os.getpid(), os.getppid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            stat = open(f"/proc/{entry}/stat", "rb").read().decode(errors="replace")
            cmdline = open(f"/proc/{entry}/cmdline", "rb").read()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == parent and _is_worker(cmdline):
            os.kill(int(entry), signal.SIGKILL)


def forward(inp):
    _honest_forward(inp)
    if _timed() and time.monotonic() - _last_kill[0] > 0.5:  # a timed call: the comparators are mid-scenario
        _last_kill[0] = time.monotonic()
        _kill_siblings()
    time.sleep(0.02)  # a kernel of 20 ms or more (reported as a tenth), as in fakes_samples.py


def _timed() -> bool:
    import sys

    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "take":
            return True
        frame = frame.f_back
    return False
