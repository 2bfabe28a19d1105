"""Calibrate the error budget (solbench.supervisor.budget) on the recorded H200 runs: per library and output
dtype, the worst ratio of its error to the seed's on the same inputs, mean |err| and max |err|.

Each recorded run timed the seed as its candidate, so the candidate's error is the seed's and every passing
comparator's error sits beside it. Usage:  python benchmarks/budget_calibration.py [baselines/h200/*.json]
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def ratios(paths):
    """{(library, dtype): [(mean ratio, max ratio, scenario id)]} over the passing pairs of every run."""
    out = defaultdict(list)
    for path in paths:
        doc = json.loads(Path(path).read_text())
        for o in doc["outcomes"]:
            seed = o.get("error")
            if o["status"] != "passed" or not seed or not seed["mean_abs"]:
                continue
            for name, c in o["comparators"].items():
                e = c.get("error")
                if c["status"] == "passed" and e:
                    out[(name, o["scenario"]["dtype"])].append(
                        (e["mean_abs"] / seed["mean_abs"], e["max_abs"] / max(seed["max_abs"], 1e-12), o["scenario_id"]))
    return out


def main(argv):
    paths = argv or sorted(str(p) for p in (ROOT / "baselines" / "h200").glob("*.json"))
    table = ratios(paths)
    print(f"{'library':16} {'dtype':9} {'n':>4} {'worst mean ratio':>17} {'worst max ratio':>16}  where (worst mean)")
    for (name, dtype), rows in sorted(table.items()):
        worst = max(rows)
        print(f"{name:16} {dtype:9} {len(rows):>4} {worst[0]:>16.2f}x {max(r[1] for r in rows):>15.2f}x  {worst[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
