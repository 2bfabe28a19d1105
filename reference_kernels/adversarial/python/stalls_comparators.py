"""Cheat class 9 (new: sabotaging the comparators): the candidate's own work is honest
and honestly timed; instead it makes the trusted comparators slow. At import it forks a helper (in the
worker's process group, so it lives exactly as long as the worker) that finds its sibling workers (the
supervisor's other children: the seed's and the baselines' workers, same Unix user) and keeps stopping
them with SIGSTOP for 3 ms out of every 4 ms. A comparator's timed call that a stop lands in takes
milliseconds longer, so its median and every per-round ratio against the candidate inflate: `passed` with a
fake speed-up of several x over the seed. Nothing in the candidate's own samples is wrong, so no check of
the candidate (clock gap, host gap, CUPTI) sees anything; the comparators' stretched rounds even raise the
loop overhead the clock-gap rule allows the candidate. The same works from a `.cu` (kill(2) from a thread
of the native runner) and on a GPU a hidden process of its own can time-slice the comparators' kernels.

expect: see tests/test_adversarial_python_cpu.py (with the seed: never `passed` with a seed ratio far from 1; an
honest forward's ratio against the seed is ~1)
"""

import os
import signal
import time
from pathlib import Path

from solbench.sandbox.impls import PythonImpl

forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward

STOP_MS, RUN_MS = 3.0, 1.0
LIFETIME_S = float(os.environ.get("SOLBENCH_ADVERSARY_LIFETIME_S", "300"))


def _is_worker(cmdline: bytes) -> bool:
    """A Python worker's command line: solbench.sandbox.boot's, or multiprocessing's spawn's before issue 39."""
    return b"solbench.sandbox.boot" in cmdline or b"spawn_main" in cmdline


def _siblings(me: int, parent: int) -> list[int]:
    """The supervisor's other worker processes (its Python workers by their command line, not its helpers)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (me, parent):
            continue
        try:
            stat = open(f"/proc/{entry}/stat", "rb").read().decode(errors="replace")
            cmdline = open(f"/proc/{entry}/cmdline", "rb").read()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == parent and _is_worker(cmdline):
            found.append(int(entry))
    return found


def _stall_forever(worker: int, supervisor: int):
    deadline = time.monotonic() + LIFETIME_S
    victims, rescan = [], 0.0
    while time.monotonic() < deadline and os.path.exists(f"/proc/{worker}"):
        if time.monotonic() > rescan:  # workers are restarted after failures: look again now and then
            victims, rescan = _siblings(worker, supervisor), time.monotonic() + 0.5
        for pid in victims:
            try:
                os.kill(pid, signal.SIGSTOP)
            except OSError:
                pass
        time.sleep(STOP_MS / 1e3)
        for pid in victims:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        time.sleep(RUN_MS / 1e3)
    for pid in victims:  # never leave anyone stopped
        try:
            os.kill(pid, signal.SIGCONT)
        except OSError:
            pass


def _start():
    worker, supervisor = os.getpid(), os.getppid()
    if os.fork() == 0:
        try:
            _stall_forever(worker, supervisor)
        finally:
            os._exit(0)


_start()
