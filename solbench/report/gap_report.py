"""The gap to the speed of light: per scenario the candidate, the fastest available library and the
roofline bound side by side, sorted by remaining headroom, plus the roofline and %-of-SOL charts.

Consumes a RunResult only (the bound each outcome recorded), so it renders on any machine.
"""

from __future__ import annotations

from pathlib import Path

from solbench.core.model import RunResult


def _median(samples) -> float:
    from solbench.core.stats import median

    return median(samples)


def timed_points(result: RunResult) -> list[dict]:
    """One point per (scenario, implementation) with a time and a bound: the charts' input."""
    points = []
    for o in result.outcomes:
        if not o.bound:
            continue
        measured = o.bound.get("measured_bound_ms")
        for impl, m in o.measurements.items():
            t = _median(m.samples_ms)
            points.append({
                "scenario_id": o.scenario_id, "impl": impl, "dtype": o.scenario.get("dtype"),
                "flops": o.bound["flops"], "bytes": o.bound["bytes"], "time_ms": t,
                "sol_fraction": (measured or o.bound["bound_ms"]) / t,
                "sol_datasheet": o.bound["bound_ms"] / t,
            })
    return points


def gap_rows(result: RunResult) -> list[dict]:
    """Scenario, candidate time, the fastest library that passed (yardsticks.fastest), bounds, %-of-SOL;
    largest remaining gap first."""
    from solbench.report.yardsticks import cell, fastest

    rows = []
    for o in result.outcomes:
        cand = o.measurements.get("candidate")
        if not (o.bound and cand):
            continue
        t = _median(cand.samples_ms)
        fast = cell(o, fastest(o))
        measured = o.bound.get("measured_bound_ms")
        rows.append({
            "scenario": o.scenario_id,
            "candidate_us": t * 1e3,
            "fastest": fast["comparator"] or "-",
            "fastest_us": fast["time_us"],
            "bound_us": o.bound["bound_ms"] * 1e3,
            "measured_bound_us": measured * 1e3 if measured else None,
            "limit": o.bound.get("measured_limit") or o.bound["limit"],
            "sol_pct": 100 * o.bound["bound_ms"] / t,
            "sol_measured_pct": 100 * measured / t if measured else None,
            "launch_bound": o.bound.get("launch_bound"),
        })
    return sorted(rows, key=lambda r: r["sol_measured_pct"] or r["sol_pct"])


SOL_CHART_LIMIT = 60
"""The %-of-SOL chart shows this many scenarios, those furthest from the speed of light."""


def write_charts(result: RunResult, folder: Path) -> dict[str, Path]:
    """roofline.png and sol.png when the run has bounds on a known arch; {} otherwise (no_charts_reason)."""
    from solbench.core.archspec import find_profile, load_arch
    from solbench.report.plots import roofline_chart, sol_bar_chart

    if no_charts_reason(result):
        return {}
    points = timed_points(result)
    title = f"{result.suite} on {result.arch}"
    bound = sol_chart_bound(result)
    return {
        "roofline": roofline_chart(points, load_arch(result.arch), find_profile(result.arch),
                                   folder / "roofline.png", title=title),
        "sol": sol_bar_chart(points, folder / "sol.png", limit=SOL_CHART_LIMIT, title=f"% of {bound}, {title}",
                             bound=bound),
    }


def sol_chart_bound(result: RunResult) -> str:
    """What the %-of chart is of, in the product's words: "attainable" (the roofline at the measured
    ceilings, which timed_points prefers) when the run recorded measured bounds, else "SOL" (datasheet)."""
    measured = any(o.bound and o.bound.get("measured_bound_ms") for o in result.outcomes)
    return "attainable" if measured else "SOL"


def no_charts_reason(result: RunResult) -> str | None:
    """Why write_charts draws nothing for this run, in one line; None when it draws."""
    from solbench.core.archspec import known_arches

    if result.arch not in known_arches():
        return (f"No charts: a run on {result.arch} has no roofline to draw against (no spec file for it; "
                "the charts come with a GPU run).")
    if not timed_points(result):
        return "No charts: no scenario has both a time and a roofline bound."
    return None
