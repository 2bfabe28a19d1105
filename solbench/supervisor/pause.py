"""The candidate's process sleeps while it is not being asked anything (review k, finding 1): a candidate left
running between its own requests can watch for the comparators' rounds (/proc/<sibling>/task/*/stat) and load
the CPU, or the GPU, just then; on a CPU it got a ratio of 1.82 over the seed with the seed's own code. The
supervisor stops the candidate's process group (SIGSTOP, which the candidate cannot catch or block) as soon as
it has its reply, and continues it (SIGCONT) right before the next request. Trusted comparators run freely.
Nothing timed is affected: a worker times its calls after it has read a request. SOLBENCH_NO_PAUSE=1 leaves
the candidate running (for a debugger attached to it)."""

from __future__ import annotations

import os
import signal


def wanted(spec) -> bool:
    """Whether this implementation's process is held between requests: the candidate's."""
    return spec.name == "candidate" and not os.environ.get("SOLBENCH_NO_PAUSE")


def hold(pid: int | None) -> None:
    """Stop the process group `pid` leads (each worker leads its own)."""
    _signal_group(pid, signal.SIGSTOP)


def resume(pid: int | None) -> None:
    _signal_group(pid, signal.SIGCONT)


def _signal_group(pid: int | None, sig: int) -> None:
    if pid is None:
        return
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError, OSError):
        pass  # gone: its next request starts it afresh, or stop() reaps it
