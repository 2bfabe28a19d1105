"""Total the SOLBENCH_TRACE phase times of a run: where did the wall time go?

    SOLBENCH_TRACE=/tmp/trace.txt solbench run ...   then   python benchmarks/trace_summary.py /tmp/trace.txt

Phases: reference, check <impl> (prepare + check of each implementation), warm-up, rounds (n), launcher
split, check after timing; "timing" spans warm-up to launcher split. Prints seconds, share of the traced
total and count per phase, largest first.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict

LINE = re.compile(r"\[solbench trace\] (.*): ([0-9.]+) s$")


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
    print(f"{'phase':<28}{'seconds':>10}{'share':>8}{'count':>7}")
    for name, secs in sorted(total.items(), key=lambda kv: -kv[1]):
        share = f"{100 * secs / traced:7.1f}%" if name != "timing" and traced else "       "
        print(f"{name:<28}{secs:10.1f}{share}{count[name]:7d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
