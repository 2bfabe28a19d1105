"""Nothing a worker starts outlives it: the supervisor is a child subreaper (Linux), so a process a
candidate detaches (double fork, its own session) is re-parented here instead of to init, and a sweep
after each worker stops ends every such orphan with its whole subtree.

Without this, a daemon the candidate left behind could rewrite results.json after the run, or load the
GPU while the comparators are timed.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys

from solbench.supervisor.pause import stat_fields

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants; False where the OS has no such thing."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process visible in /proc."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := stat_fields(entry)) is not None:  # None: ended meanwhile
            table[int(entry)] = int(fields[1])
    return table


def subtree(root: int, parents: dict[int, int]) -> list[int]:
    """root's descendants (not root itself), from a pid -> ppid table."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def _resource_tracker_pid() -> int | None:
    tracker = getattr(multiprocessing.resource_tracker, "_resource_tracker", None)
    return getattr(tracker, "_pid", None)


class Reaper:
    """Remembers this process's children before any worker starts; `sweep(live)` kills every later child
    that is not a live worker (an orphan re-parented here), with its subtree."""

    def __init__(self):
        self.enabled = become_subreaper() and os.path.isdir("/proc")
        self._before = set(self._children()) if self.enabled else set()

    def _children(self) -> list[int]:
        me = os.getpid()
        return [pid for pid, ppid in _parents().items() if ppid == me]

    def sweep(self, live_workers: set[int] = frozenset()) -> list[int]:
        """Kill every orphan (and its subtree); returns the pids killed. Repeats until none is left, since
        killing one hands its own children to us."""
        if not self.enabled:
            return []
        from solbench.supervisor.lifeline import watchdog_pid

        keep = self._before | set(live_workers) | {_resource_tracker_pid(), watchdog_pid()}
        killed: list[int] = []
        for _ in range(20):
            parents = _parents()
            me = os.getpid()
            orphans = [pid for pid, ppid in parents.items() if ppid == me and pid not in keep]
            if not orphans:
                break
            for pid in orphans:
                for victim in [pid, *subtree(pid, parents)]:
                    try:
                        os.kill(victim, signal.SIGKILL)
                        killed.append(victim)
                    except (ProcessLookupError, PermissionError):
                        pass
            for pid in orphans:
                try:
                    os.waitpid(pid, 0)  # reap: a zombie still shows in /proc with us as its parent
                except ChildProcessError:
                    pass
        return killed
