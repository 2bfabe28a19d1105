"""Total the SOLBENCH_TRACE phase times of a run: where did the wall time go?

    SOLBENCH_TRACE=/tmp/trace.txt solbench run ...   then   python benchmarks/trace_summary.py /tmp/trace.txt

Phases: reference, check <impl> (prepare + check of each implementation), warm-up, rounds (n), launcher
split, check after timing; "timing" spans warm-up to launcher split. Prints seconds, share of the traced
total and count per phase, largest first; then, per implementation, the clock check's figures.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict

LINE = re.compile(r"\[solbench trace\] (.*): ([0-9.]+) s$")
CLOCK = re.compile(r"([\w.+-]+) (-?[0-9.]+) \(runner between calls (-?[0-9.]+)\)")
"""One implementation in a `[solbench clock]` line: unexplained ms per call, and the native runner's own time
between calls per call (0 for a Python host): what NATIVE_BETWEEN_CAP_MS in solbench/supervisor/audit.py
must stay above for an honest runner."""


def clock_summary(paths: list[str]) -> list[str]:
    """Per implementation: the median and max over scenarios of both figures of the clock lines."""
    import statistics

    seen = defaultdict(list)
    for path in paths:
        for line in open(path):
            if line.startswith("[solbench clock]"):
                for name, unexplained, between in CLOCK.findall(line):
                    seen[name].append((float(unexplained), float(between)))
    return [f"{name:<16} unexplained ms/call median {statistics.median(u for u, _ in v):.3f} max "
            f"{max(u for u, _ in v):.3f}; runner between calls median {statistics.median(b for _, b in v):.3f} "
            f"max {max(b for _, b in v):.3f} ({len(v)} scenarios)" for name, v in sorted(seen.items())]


ROUNDS = re.compile(r"([\w.+-]+) prepare ([0-9.]+) requests ([0-9.]+) device ([0-9.]+) audit ([0-9.]+)")
"""One implementation in a `[solbench rounds]` line: seconds its rounds spent preparing copies, in requests to
its worker (of which the calls' device time), and auditing after them."""


def rounds_summary(paths: list[str]) -> list[str]:
    """Per implementation, the rounds' time totalled over scenarios: where a round goes beyond the calls."""
    seen = defaultdict(lambda: [0.0] * 4)
    for path in paths:
        for line in open(path):
            if line.startswith("[solbench rounds]"):
                for name, *figures in ROUNDS.findall(line):
                    seen[name] = [a + float(b) for a, b in zip(seen[name], figures)]
    return [f"{name:<16} prepare {p:7.1f} s  requests {r:7.1f} s (device {d:7.1f} s, worker's own {r - d:6.1f} s)  "
            f"audit {a:6.1f} s" for name, (p, r, d, a) in sorted(seen.items())]


def phase(what: str) -> str:
    """'prefill-...-causal check fa4' -> 'check fa4'; 'rounds (4)' -> 'rounds'."""
    what = re.sub(r" \(\d+\)$", "", what)
    for name in ("check after timing", "reference", "timing"):
        if what.endswith(name):
            return name
    if " check " in what:
        return "check " + what.rsplit(" check ", 1)[1]
    return what


def main(paths: list[str]) -> int:
    total, count = defaultdict(float), defaultdict(int)
    for path in paths:
        for line in open(path):
            m = LINE.search(line.strip())
            if m:
                total[phase(m.group(1))] += float(m.group(2))
                count[phase(m.group(1))] += 1
    traced = sum(v for k, v in total.items() if k != "timing")  # timing overlaps its parts
    scenarios = max(count.get("reference", 0), 1)
    print(f"{'phase':<28}{'seconds':>10}{'share':>8}{'count':>7}")
    for name, secs in sorted(total.items(), key=lambda kv: -kv[1]):
        share = f"{100 * secs / traced:7.1f}%" if name != "timing" and traced else "       "
        print(f"{name:<28}{secs:10.1f}{share}{count[name]:7d}")
    print(f"\nper scenario ({scenarios}): " + ", ".join(f"{k} {v / scenarios:.3f} s" for k, v in sorted(total.items(),
                                                                                          key=lambda kv: -kv[1])))
    split = total.get("launcher split", 0.0)
    print(f"cut: the comparators' launcher split (recorded, never read; after the rounds, so no ratio moves): "
          f"about {split / 2:.0f} s of {split:.0f} s with one comparator, more with baselines (done)")
    for line in rounds_summary(paths):
        print("rounds: " + line)
    for line in clock_summary(paths):
        print("clock: " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
