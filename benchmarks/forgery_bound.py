"""The clock check's forgery bound, measured: a candidate that does the honest work and reports FACTOR x the
times it measured, through each runner, on scenarios of short, medium and long calls, beside the seed as the
trusted comparator of the same runner. Factor 1.0 is the honest control. The table says, per runner and call
size, which factors pass and what they buy over the honest run: the largest forgery the bound lets through.

Native runner: reference_kernels/adversarial/forges_replies.cu built with -DFORGE_FACTOR=f (it owns the
runner's reply pipe and scales every time of a round reply). Python host: a candidate that replaces the
timer's Sample record (scaling device and host times) around reference_kernels/torch_attention.py.

For each runner and size it runs the honest control, computes from its rounds the smallest factor the rule
would let pass, and runs the forger at that factor (of GRID) and one step (0.1) below it.

    python3 benchmarks/forgery_bound.py --out /tmp/forgery [--runners native,python] [--budget 400]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "reference_kernels" / "seed_attention.cu"
FORGER_CU = ROOT / "reference_kernels" / "adversarial" / "forges_replies.cu"
HONEST_PY = ROOT / "reference_kernels" / "torch_attention.py"
# (suite, id substring): decode of tens of us, prefill of ~2 ms, prefill of tens of ms (the seed's times)
SIZES = [("real", "wl127-sink-gptoss_120b"), ("fa3-h2h", "b32-sq512-skv512-hq16-hkv16-d128-bf16-full"),
         ("fa3-h2h", "b1-sq16384-skv16384-hq16-hkv16-d128-bf16-causal")]
POLICY = "warmup_ms=30,launcher_budget_ms=60,max_time_s=3"
GRID = (0.95, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1)

PY_FORGER = '''"""Does the honest work of torch_attention.py and reports {factor} x every time it measured."""
import solbench.sandbox.timing as timing
from solbench.sandbox.impls import PythonImpl

FACTOR = {factor}
_real_sample = timing.Sample


def _forged(device_ms, host_ms, *rest, **kw):
    return _real_sample(device_ms * FACTOR, host_ms * FACTOR, *rest, **kw)


timing.Sample = _forged
_honest = PythonImpl({honest!r}).module.forward


def forward(inp):
    _honest(inp)
'''


def _candidate(runner: str, factor: float, out: Path) -> tuple[str, list[str]]:
    if runner == "native":
        return str(FORGER_CU), [f"--flag=-DFORGE_FACTOR={factor}", "--runner", "native", "--seed-runner", "native"]
    path = out / f"forger_{str(factor).replace('.', 'p')}.py"
    path.write_text(PY_FORGER.format(factor=factor, honest=str(HONEST_PY)))
    return str(path), ["--seed-runner", "python"]


def _row(results: Path) -> dict:
    d = json.loads(results.read_text())
    o = d["outcomes"][0]
    ms = o.get("measurements") or {}
    cand, seed = ms.get("candidate") or {}, ms.get("seed") or {}
    med = lambda m: statistics.median(m["samples_ms"]) if m.get("samples_ms") else float("nan")
    clock = (cand.get("telemetry") or {}).get("clock_rounds") or {}
    a = clock.get("allowance_per_call_ms") or 0.0
    from solbench.supervisor.audit import clock_bound_ms, unexplained_ms

    full = clock.get("full_calls")
    shares = [unexplained_ms(w, t, c, a) / clock_bound_ms(t, c, a, full_calls=full)
              for w, t, c in clock.get("rounds", []) if w > 0]
    return {"scenario": o["scenario_id"], "status": o["status"], "reason": (o.get("reason") or "")[:160],
            "candidate_ms": med(cand), "seed_ms": med(seed), "max_share": max(shares, default=float("nan")),
            "rounds": len(shares), "out_of_bound": len(clock.get("out_of_bound", []))}


def _bound(row_results: Path) -> float:
    """The smallest factor every round of an honest run would still pass at, by the rule in
    solbench/supervisor/audit.py (clock_bound_ms): a forger's round takes the wall time of the honest one and
    reports factor x its device time; it passes by the share of that time or by the slack, whichever is larger."""
    from solbench.supervisor.audit import CLOCK_GAP_SHARE, CLOCK_GAP_SLACK_MS, CLOCK_LOOP_SHARE

    d = json.loads(row_results.read_text())
    clock = (d["outcomes"][0]["measurements"]["candidate"]["telemetry"] or {}).get("clock_rounds") or {}
    a = clock.get("allowance_per_call_ms") or 0.0
    need = [min((w - c * a * (1 + CLOCK_LOOP_SHARE)) / ((1 + CLOCK_GAP_SHARE) * t), (w - c * a - CLOCK_GAP_SLACK_MS) / t)
            for w, t, c in clock.get("rounds", []) if t > 0]
    return max(need, default=1.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="/tmp/forgery-bound")
    ap.add_argument("--runners", default="native,python")
    ap.add_argument("--budget", type=float, default=480.0, help="seconds; runs not begun by then are skipped")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + args.budget
    if "native" in args.runners:  # every factor's build at once, so the runs only load them
        builds = [subprocess.Popen([sys.executable, "-m", "solbench", "build", str(FORGER_CU), "--arch", "auto",
                                    f"--flag=-DFORGE_FACTOR={f:g}"], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL) for f in GRID]
        for b in builds:
            b.wait()

    def run(runner: str, suite: str, pick: str, factor: float) -> dict | None:
        run_dir = out / f"{runner}-{suite}-{pick[:24]}-{factor:g}"
        results = run_dir / "results.json"
        if not results.exists():
            if time.monotonic() > deadline:
                print(f"skipped (budget): {run_dir.name}", flush=True)
                return None
            cand, extra = _candidate(runner, factor, out)
            cmd = [sys.executable, "-m", "solbench", "run", cand, "--suite", suite, "--filter", pick,
                   "--max-scenarios", "1", "--baselines", "none", "--seed", str(SEED), "--policy", POLICY,
                   "--out", str(run_dir), "--json", *extra]
            with open(out / "log.txt", "a") as log:
                subprocess.run(cmd, stdout=log, stderr=log, env=os.environ, timeout=300)
        return {"runner": runner, "factor": factor, **_row(results)} if results.exists() else None

    rows = []
    for runner in args.runners.split(","):
        for suite, pick in SIZES:
            honest = run(runner, suite, pick, 1.0)
            if not honest:
                continue
            rows.append(honest)
            predicted = _bound(out / f"{runner}-{suite}-{pick[:24]}-1" / "results.json")
            passing = min([f for f in GRID if f >= predicted] or [1.0])
            honest["predicted_bound"] = round(predicted, 3)
            for factor in (passing, round(passing - 0.1, 2)):
                if 0.05 < factor < 1.0 and (r := run(runner, suite, pick, factor)):
                    rows.append(r)
    from tabulate import tabulate

    base = {(r["runner"], r["scenario"]): r for r in rows if r["factor"] == 1.0}
    table = []
    for r in rows:
        h = base.get((r["runner"], r["scenario"]))
        gain = h["candidate_ms"] / r["candidate_ms"] if h and r["candidate_ms"] else float("nan")
        table.append([r["runner"], r["scenario"][:44], f"{h['candidate_ms']:.3f}" if h else "?",
                      h.get("predicted_bound") if h else "?", r["factor"], r["status"], f"{gain:.3f}",
                      f"{r['max_share']:.3f}", r["out_of_bound"], r["reason"][:70]])
    print(tabulate(table, headers=["runner", "scenario", "honest ms", "predicted bound", "factor", "status",
                                   "gain over honest", "max share of bound", "out of bound", "reason"]))
    (out / "forgery-bound.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
