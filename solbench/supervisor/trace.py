"""Phase times of a run, for finding where its wall time goes: with SOLBENCH_TRACE set, each phase of a
scenario's evaluation and timing rounds is a line (to stderr, or appended to the file it names), and
benchmarks/trace_summary.py totals them per phase."""

from __future__ import annotations

import os
import sys
import time

TRACE = os.environ.get("SOLBENCH_TRACE", "")
"""'1' prints phase times to stderr; any other non-empty value is a file they are appended to."""


def trace(what: str, since: float) -> float:
    """With SOLBENCH_TRACE set, record how long a phase took (to find where a slow run spends its time);
    benchmarks/trace_summary.py totals them per phase."""
    now = time.perf_counter()
    if TRACE:
        _emit(f"[solbench trace] {what}: {now - since:.3f} s")
    return now


def _emit(line: str) -> None:
    if TRACE in ("1", "true", "yes"):
        print(line, file=sys.stderr, flush=True)
    else:
        with open(TRACE, "a") as f:
            print(line, file=f)


def trace_rounds(spent: dict) -> None:
    """With SOLBENCH_TRACE set, where a scenario's rounds went per implementation, in seconds: preparing its
    copies (refill, fingerprint, structure), its worker's requests (of which the calls' device time), and the
    audit after them (the candidate's checks)."""
    if TRACE:
        _emit("[solbench rounds] " + "; ".join(
            f"{n} prepare {p:.3f} requests {r:.3f} device {d:.3f} audit {a:.3f}" for n, (p, r, d, a) in spent.items()))


def trace_clock(clocked: dict) -> None:
    """With SOLBENCH_TRACE set, each implementation's time per call that its reported device times leave unexplained
    on the supervisor's clock (the clock check's figure, audit.clock_gap), to see a yardstick that misfits."""
    if not TRACE:
        return
    import statistics

    parts = [f"{n} {statistics.median((w - d) / max(1, c) for w, _, d, c, _ in rounds):.3f}"
             f" (runner between calls {statistics.median(b / max(1, c) for _, _, _, c, b in rounds):.3f})"
             for n, rounds in clocked.items() if rounds]
    _emit("[solbench clock] unexplained ms per call: " + ", ".join(parts))
