"""The candidate's process sleeps while it is not being asked anything (review k, finding 1): a candidate left
running between its own requests can watch for the comparators' rounds (/proc/<sibling>/task/*/stat) and load
the CPU, or the GPU, just then; on a CPU it got a ratio of 1.82 over the seed with the seed's own code. The
supervisor stops the candidate's process group (SIGSTOP, which the candidate cannot catch or block) as soon as
it has its reply, and continues it (SIGCONT) right before the next request. Trusted comparators run freely.
Nothing timed is affected: a worker times its calls after it has read a request.

A stop can be undone from inside: any SIGCONT the kernel sends the process wakes it, and a POSIX timer, F_SETSIG,
a death signal or mq_notify can be made to send one (review l; the filter cannot read a timer's sigevent). So
the hold is checked, whatever woke it: when the next request comes, every thread of the group must be stopped
and the group's CPU time may not have grown (`Hold.release` says otherwise; the worker then fails the scenario
as `tampered`).
SOLBENCH_NO_PAUSE=1 leaves the candidate running (for a debugger attached to it)."""

from __future__ import annotations

import os
import signal
import time

RAN_S = 0.03
"""CPU time a held group may show at most (the scheduler's accounting rounds to ticks of 10 ms, and threads
stop a few microseconds after the signal); a timer-woken hog shows ~1 s of it per second held."""
SETTLE_S = 0.5
"""How long a release waits for threads still awake to take the stop (a thread takes it when it next runs,
which on a loaded host can be ms away; one woken by its own SIGCONT stays awake until it stops itself). The
clock check does not count this wait (python_worker.last_request_ms, native_worker._round)."""


def wanted(spec) -> bool:
    """Whether this implementation's process is held between requests: the candidate's."""
    return spec.name == "candidate" and not os.environ.get("SOLBENCH_NO_PAUSE")


class Hold:
    """One worker's process group, stopped from each reply to the next request."""

    def __init__(self):
        self._pgid: int | None = None
        self._cpu_s: float | None = None

    def hold(self, pgid: int | None) -> None:
        """Stop the group `pgid` leads (each worker leads its own; None: nothing to hold) and note its CPU time.
        The group is signalled even when its leader is gone: what the candidate left in it stops too."""
        self._pgid, self._cpu_s = pgid, None
        if pgid is not None and _signal_group(pgid, signal.SIGSTOP):
            self._cpu_s = cpu_s(group(pgid))

    def release(self) -> str | None:
        """Continue the group; why it was not really held (a thread of it awake, or its CPU time grew), else None."""
        pgid, before = self._pgid, self._cpu_s
        self._pgid = self._cpu_s = None
        if pgid is None or before is None:
            return None
        deadline = time.monotonic() + SETTLE_S
        while (awake := awake_threads(pids := group(pgid))) and time.monotonic() < deadline:
            time.sleep(0.001)  # a thread takes the stop when it next leaves the kernel
        ran = cpu_s(pids) - before
        _signal_group(pgid, signal.SIGCONT)
        if awake or ran > RAN_S:
            return (f"the candidate's processes ran while they were stopped between requests ({len(awake)} thread(s) "
                    f"awake, {ran * 1e3:.0f} ms of CPU time): something sent them SIGCONT (a timer, F_SETSIG, a "
                    f"death signal)")
        return None


def group(pgid: int) -> list[int]:
    """The processes in group `pgid` solbench can find: its leader and the leader's descendants, and this
    process's children in it (orphans re-parented to the subreaper)."""
    todo, seen, out = [pgid, *_children(os.getpid())], set(), []
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        fields = _stat(pid)
        if fields is not None and fields[2] == str(pgid):
            out.append(pid)
            todo.extend(_children(pid))
    return out


def cpu_s(pids: list[int]) -> float:
    """CPU seconds (user and system, with the reaped children's) of processes `pids`."""
    ticks = sum(sum(int(x) for x in fields[11:15]) for fields in map(_stat, pids) if fields is not None)
    return ticks / os.sysconf("SC_CLK_TCK")


def awake_threads(pids: list[int]) -> list[str]:
    """'pid/tid state' of each thread of processes `pids` that is neither stopped nor dead nor in an
    uninterruptible wait (it stops when that ends)."""
    out = []
    for pid in pids:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            fields = _stat(f"{pid}/task/{tid}")
            if fields is not None and fields[0] not in "TtZXD":
                out.append(f"{pid}/{tid} {fields[0]}")
    return out


def _stat(pid: int | str) -> list[str] | None:
    """/proc/<pid>/stat's fields after the name: state, ppid, pgrp, ..., utime at 11; None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()


def _children(pid: int) -> list[int]:
    out = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out.extend(int(x) for x in f.read().split())
        except OSError:
            pass
    return out


def end_group(pgid: int) -> bool:
    """SIGKILL to every process of group `pgid`, its leader alive or not; False when none is left."""
    return _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError, OSError):
        return False  # no process left in it: its next request starts a fresh worker, or stop() reaps it
