"""Cheat class 4's twin on the comparators' side: honest answers (torch_attention.py), but
between its own calls the module's threads watch the comparators' workers (its siblings: the supervisor's other
Python workers, found through /proc, which Landlock leaves readable) and load the CPUs only while one of them
runs. The seed is timed slower and the candidate's ratio grows: 1.82x on a CPU with the seed's own code, 1.00
honest. The supervisor stops the candidate's process group from each reply to its next request
(solbench/supervisor/pause.py): its threads never run while a comparator is timed. tests/test_confine_and_hold_cpu.py
runs it against the seed; without a comparator (as the corpus test runs it) it is just honest.

expect: passed
"""

import hashlib
import os
import threading
import time
from pathlib import Path

from solbench.sandbox.impls import PythonImpl

_honest = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward
_inside = [False]
_left = [0.0]  # when its last call returned: the harness's own loop around its calls runs for a while after
_comparator_running = [False]
LIFETIME_S = 120.0


def forward(inp) -> None:
    _inside[0] = True
    try:
        _honest(inp)
    finally:
        _inside[0] = False
        _left[0] = time.monotonic()


def _is_worker(cmdline: bytes) -> bool:
    """A Python worker's command line: solbench.sandbox.boot's, or multiprocessing's spawn's before issue 39."""
    return b"solbench.sandbox.boot" in cmdline or b"spawn_main" in cmdline


def _siblings() -> list[int]:
    """The supervisor's other Python workers (the comparators'), from its children lists."""
    parent, children = os.getppid(), set()
    for task in os.listdir(f"/proc/{parent}/task"):
        try:
            children.update(int(pid) for pid in open(f"/proc/{parent}/task/{task}/children").read().split())
        except OSError:
            pass
    children.discard(os.getpid())
    workers = []
    for pid in children:
        try:
            if _is_worker(open(f"/proc/{pid}/cmdline", "rb").read()):
                workers.append(pid)
        except OSError:
            pass
    return workers


def _running(pid: int) -> bool:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for task in tasks:
        try:
            stat = open(f"/proc/{pid}/task/{task}/stat").read()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] == "R":
            return True
    return False


def _watch() -> None:
    end, siblings, rescan = time.monotonic() + LIFETIME_S, [], 0.0
    while time.monotonic() < end:
        if time.monotonic() > rescan:
            siblings, rescan = _siblings(), time.monotonic() + 1.0
        own = _inside[0] or time.monotonic() - _left[0] < 0.002  # its own round, never slowed
        _comparator_running[0] = not own and any(_running(pid) for pid in siblings)
        time.sleep(0.002)


def _hog() -> None:
    block = b"x" * (64 << 10)
    end = time.monotonic() + LIFETIME_S
    while time.monotonic() < end:
        if _comparator_running[0] and not _inside[0] and time.monotonic() - _left[0] >= 0.002:
            hashlib.sha256(block).digest()  # releases the GIL: a whole core
        else:
            time.sleep(0.0005)


for target in (_watch, _hog, _hog):
    threading.Thread(target=target, daemon=True).start()
