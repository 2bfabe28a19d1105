"""How a Python worker's process starts (solbench.supervisor.python_worker starts it with `command`): a plain
exec of the interpreter, not multiprocessing's spawn, so it inherits exactly what the supervisor hands it
(solbench.sandbox.channels lists it): no multiprocessing authentication key (with it, a worker could talk to
any listener of the supervisor's that unpickles what it is sent), no resource tracker, no
spawn sentinel, no terminal on stdin. Its orders come as the first message on its socket, from the supervisor.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1

BOOT = ("import sys, json; sys.path[:] = json.loads(sys.argv[1]); from solbench.sandbox.boot import main; "
        "main(int(sys.argv[2]), int(sys.argv[3]))")


def command(fd: int) -> list[str]:
    """The worker's command line: this interpreter and its flags, the supervisor's sys.path (as spawn passed
    it), the worker's end of its socket and the supervisor's pid."""
    import subprocess

    return [sys.executable, *subprocess._args_from_interpreter_flags(), "-c", BOOT, json.dumps(sys.path), str(fd),
            str(os.getpid())]


def die_with_parent(parent: int) -> None:
    """SIGKILL when the supervisor ends (solbench.supervisor.lifeline), even while stopped; at once if it
    already has (it died before the signal was set)."""
    if sys.platform.startswith("linux"):  # elsewhere: the supervisor's watchdog alone
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def main(fd: int, parent: int) -> None:
    die_with_parent(parent)  # first: nothing of the worker's may run without it
    from multiprocessing.connection import Connection

    from solbench.sandbox.worker import _serve

    os.set_inheritable(fd, False)  # nothing the candidate starts gets the supervisor's socket by inheritance
    conn = Connection(fd)
    orders = conn.recv()  # the supervisor's own pickle: nothing of the candidate's exists here yet
    _serve(conn, **orders)
