"""Per implementation of one run judged under the current error budget (seed-emulated/2): the worst ratio of
its mean |err| and of its worst row's mean |err| to the emulated seed's, and the budget they must stay under.
For the H200 acceptance:

    solbench run reference_kernels/seed_attention.cu --suite hopper --arch h200 --out reports/budget-hopper
    python benchmarks/budget_ratios.py reports/budget-hopper/results.json
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict

from solbench.supervisor.budget import BUDGET_ID, BUDGETS


def worst(doc: dict) -> dict:
    """{(impl, dtype): [worst mean ratio, worst row ratio, scenario of the worst mean, failures]}."""
    out = defaultdict(lambda: [0.0, 0.0, "", 0])
    for o in doc["outcomes"]:
        dtype = o["scenario"]["dtype"]
        pairs = [("candidate", o["status"], o.get("error"))]
        pairs += [(n, c["status"], c.get("error")) for n, c in o["comparators"].items()]
        for name, status, e in pairs:
            if not e or e.get("budget") != BUDGET_ID:
                continue
            row = out[(name, dtype)]
            mean = e["mean_abs"] / e["seed_mean_abs"] if e["seed_mean_abs"] else 0.0
            if mean > row[0]:
                row[0], row[2] = mean, o["scenario_id"]
            if e["seed_row_max_mean_abs"]:
                row[1] = max(row[1], e["row_max_mean_abs"] / e["seed_row_max_mean_abs"])
            row[3] += status == "mismatch"
    return out


def main(argv):
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    table = worst(json.loads(open(argv[0]).read()))
    print(f"{'implementation':16} {'dtype':9} {'mean ratio':>10} {'budget':>7} {'row ratio':>10} {'budget':>7} "
          f"{'mismatch':>8}  worst mean at")
    for (name, dtype), (mean, row, where, bad) in sorted(table.items()):
        b = BUDGETS[dtype]
        print(f"{name:16} {dtype:9} {mean:>9.2f}x {b.mean_factor:>6g}x {row:>9.2f}x {b.row_factor:>6g}x {bad:>8}  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
