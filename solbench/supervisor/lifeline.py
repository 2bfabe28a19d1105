"""No worker outlives its supervisor, however the supervisor dies (SIGKILL included), stopped or not, with
everything it started: between requests the candidate's process group is stopped
(solbench.supervisor.pause), and a stopped group whose supervisor is gone stays stopped for ever.

Two kernel guarantees, neither of which needs the supervisor to run any code when it dies:

- The kernel closes every fd of a dead process. A watchdog (this file run as a script, in its own
  session, nothing else) reads a pipe only the supervisor can write: `watch(pgid)` when a worker starts,
  `forget(pgid)` when its group has ended. At end of file it sends SIGKILL to every group still watched, which
  kills stopped processes too, and the candidate's children with them: seccomp keeps them in the worker's
  group (solbench.sandbox.privileges).
- A worker's parent-death signal is SIGKILL (set first thing by the worker: solbench.sandbox.boot, runner.cu),
  which covers the worker itself before the watchdog knows its group. The kernel ties that signal to the
  *thread* that forked the worker, so `popen` forks every worker from one thread that lives as long as the
  supervisor: a worker restarted from a short-lived thread (evaluate's pool) would otherwise die with it.
  seccomp lets the candidate set no death signal but SIGKILL, so it cannot clear its own.

A candidate that kills the watchdog (only where Landlock cannot scope its signals, ABI < 6) loses that cover
for its children; the next `watch` starts a new one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

_lock = threading.Lock()
_state: dict = {}  # for the process that made them (a forked copy starts its own): pid, spawner, watchdog, groups


def _mine() -> dict:
    if _state.get("pid") != os.getpid():
        _state.clear()
        _state.update(pid=os.getpid(), spawner=None, watchdog=None, groups=set())
    return _state


def popen(argv, **kwargs) -> subprocess.Popen:
    """subprocess.Popen, forked from the supervisor's spawner thread (see the module's doc)."""
    with _lock:
        state = _mine()
        if state["spawner"] is None:
            state["spawner"] = ThreadPoolExecutor(max_workers=1, thread_name_prefix="solbench-spawner")
        spawner = state["spawner"]
    return spawner.submit(subprocess.Popen, argv, **kwargs).result()


def watch(pgid: int) -> None:
    """Have the watchdog kill group `pgid` if this process dies before `forget(pgid)`."""
    with _lock:
        state = _mine()
        state["groups"].add(pgid)
        if not _tell(state, f"+{pgid}\n"):  # none yet, or it was killed: a new one, told every group
            state["watchdog"] = _start_watchdog()
            _tell(state, "".join(f"+{g}\n" for g in state["groups"]))


def forget(pgid: int) -> None:
    """The group has ended (every process of it killed and reaped): the watchdog lets it be."""
    with _lock:
        state = _mine()
        state["groups"].discard(pgid)
        _tell(state, f"-{pgid}\n")


def watchdog_pid() -> int | None:
    """The watchdog's pid (processes.Reaper keeps it), None before the first `watch`."""
    dog = _state.get("watchdog") if _state.get("pid") == os.getpid() else None
    return dog.pid if dog is not None else None


def _tell(state: dict, lines: str) -> bool:
    dog = state["watchdog"]
    if dog is None or dog.poll() is not None:
        return False
    try:
        dog.stdin.write(lines.encode())
        dog.stdin.flush()
        return True
    except OSError:  # BrokenPipeError: it is gone
        return False


def _start_watchdog() -> subprocess.Popen:
    # -I -S: no environment, user site or site packages to import: nothing but this file runs in it. Its own
    # session: a signal to the supervisor's group or terminal (timeout, ^C) leaves it to do its work.
    return subprocess.Popen([sys.executable, "-I", "-S", os.path.abspath(__file__)], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def _watchdog_main() -> None:
    """The watchdog: note the groups the supervisor names, and kill those left when its pipe ends."""
    groups: set[int] = set()
    for line in sys.stdin.buffer:
        sign, pgid = line[:1], int(line[1:])
        (groups.add if sign == b"+" else groups.discard)(pgid)
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass


if __name__ == "__main__":
    _watchdog_main()
