"""Summarise recorded runs per implementation: verdicts, failures, %-of-SOL and faster-than-light cases.

For each results.json given: per implementation (candidate, seed, each baseline) how many scenarios it
passed, failed (with the first reasons) or did not claim; its median and best %-of-SOL against the
measured-ceiling bound and against the datasheet bound; and every scenario where it was faster than the
measured or the datasheet bound. With --focus ID_PART also the per-scenario %-of-SOL of those scenarios.
With --rebound the bounds are computed afresh from today's arch spec and measured profile
(roofline/<arch>.toml, roofline/measured/<arch>.toml) instead of read from the run, which keeps the ones
of the profile it was recorded with.

    python benchmarks/recorded_summary.py baselines/h200/*.json [--focus s16384] [--rebound]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from solbench.baselines import REGISTRY, get_adapter_class  # noqa: E402
from solbench.core.roofline import bounds_for  # noqa: E402
from solbench.supervisor.run_files import load_run  # noqa: E402
from solbench.core.scenario import Scenario  # noqa: E402


def withdrawn(impl: str, scenario: dict, arch: str) -> str:
    """' (claim since withdrawn: REASON)' when today's adapter no longer claims the scenario, else ''."""
    if impl not in REGISTRY:
        return ""
    support = get_adapter_class(impl).supports(Scenario.from_dict(scenario), arch)
    return "" if support.ok else f" (claim since withdrawn: {support.reason})"


def verdicts(outcome) -> dict[str, tuple[str, str]]:
    """{impl: (status, reason)} for the candidate and every comparator of one outcome."""
    seen = {"candidate": (outcome.status.value, outcome.reason)}
    for name, c in outcome.comparators.items():
        seen[name] = (str(c.get("status")), str(c.get("reason", "")))
    return seen


def fresh_bounds(arch: str):
    """Scenario dict -> bound dict (or None) from today's arch spec and measured profile."""
    bound_for = bounds_for(arch)

    def fresh(scenario: dict) -> dict | None:
        b = bound_for(Scenario.from_dict(scenario)) if bound_for else None
        return b.to_dict() if b else None

    return fresh


def summarise(path: str, focus: str | None, rebound: bool = False) -> None:
    result = load_run(path)
    bound_of = fresh_bounds(result.arch) if rebound else None
    counts: dict[str, Counter] = defaultdict(Counter)
    reasons: dict[str, list[str]] = defaultdict(list)
    sol_measured: dict[str, list[float]] = defaultdict(list)
    sol_datasheet: dict[str, list[float]] = defaultdict(list)
    ftl: dict[str, list[str]] = defaultdict(list)
    focus_rows = []
    for o in result.outcomes:
        cells = []
        for impl, (status, reason) in verdicts(o).items():
            counts[impl][status] += 1
            if status not in ("passed", "skipped"):
                reasons[impl].append(f"{o.scenario_id}: {status} {reason[:90]}{withdrawn(impl, o.scenario, result.arch)}")
        b = bound_of(o.scenario) if bound_of and o.bound else o.bound
        if not b:
            continue
        for impl, m in o.measurements.items():
            t = statistics.median(m.samples_ms)
            b_meas = b.get("measured_bound_ms") or b["bound_ms"]
            sol_measured[impl].append(b_meas / t)
            sol_datasheet[impl].append(b["bound_ms"] / t)
            if t < b_meas or t < b["bound_ms"]:
                ftl[impl].append(f"{o.scenario_id} {t:.4f} ms < bound {b_meas:.4f} (measured) / "
                                 f"{b['bound_ms']:.4f} (datasheet)")
            cells.append(f"{impl} {b['flops'] / t / 1e9:.0f} TF/s {100 * b_meas / t:.0f}%")
        if focus and focus in o.scenario_id:
            focus_rows.append(f"  {o.scenario_id}: " + ", ".join(cells))
    print(f"== {path}: suite {result.suite}, {len(result.outcomes)} outcomes, "
          f"GPU {result.environment.get('gpu', {}).get('name', '?') if isinstance(result.environment.get('gpu'), dict) else result.environment.get('gpu_name', '?')}")
    print(f"  {'impl':<15} {'passed':>6} {'skipped':>7} {'failed':>6}  {'SOL% med':>8} {'SOL% max':>8} {'DS% max':>7} {'FTL':>3}")
    for impl in sorted(counts, key=lambda k: (k != "candidate", k)):
        c = counts[impl]
        failed = sum(v for k, v in c.items() if k not in ("passed", "skipped"))
        sm, sd = sol_measured.get(impl, []), sol_datasheet.get(impl, [])
        med = f"{100 * statistics.median(sm):8.1f}" if sm else f"{'-':>8}"
        mx = f"{100 * max(sm):8.1f}" if sm else f"{'-':>8}"
        dmx = f"{100 * max(sd):7.1f}" if sd else f"{'-':>7}"
        print(f"  {impl:<15} {c['passed']:>6} {c['skipped']:>7} {failed:>6}  {med} {mx} {dmx} {len(ftl[impl]):>3}")
    for impl, lines in reasons.items():
        for line in lines[:4]:
            print(f"  FAIL {impl}: {line}")
        if len(lines) > 4:
            print(f"  FAIL {impl}: ... {len(lines) - 4} more")
    for impl, lines in ftl.items():
        for line in lines[:3]:
            print(f"  FTL {impl}: {line}")
    for row in focus_rows:
        print(row)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("--focus", help="also print per-scenario %%-of-SOL for scenario ids containing this")
    ap.add_argument("--rebound", action="store_true", help="bounds from today's arch spec and measured profile")
    args = ap.parse_args()
    for path in args.results:
        summarise(path, args.focus, args.rebound)
    return 0


if __name__ == "__main__":
    sys.exit(main())
