"""Pictures for people: a roofline chart and a per-scenario %-of-SOL bar chart.

Both take plain data, so a report can draw them from a results.json made on another machine:
points / rows are dicts with scenario_id, impl, flops, bytes, time_ms, sol_fraction (and optionally
dtype). They never measure. matplotlib is imported inside the functions and drawn through the Agg
canvas directly, so no global backend is switched and no display is needed.

Each implementation has one colour and marker (`impl_style`) on every chart, report and leaderboard
board, whatever else is drawn beside it: vllm-fa3 is the same blue square everywhere.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from solbench.core.archspec import ArchSpec, MeasuredProfile

SOL_BAR_HEIGHT_IN = 0.07  # figure height per bar: 180 scenarios x 3 impls -> ~38 in


@dataclass(frozen=True)
class ImplStyle:
    """How one implementation is drawn."""

    color: str
    """'#rrggbb'."""
    marker: str
    """A matplotlib marker."""


IMPL_STYLES = {
    "candidate": ImplStyle("#d62728", "*"),
    "seed": ImplStyle("#7f7f7f", "o"),
    "vllm-fa3": ImplStyle("#1f77b4", "s"),
    "fa3-fwd": ImplStyle("#aec7e8", "d"),
    "fa4": ImplStyle("#ff7f0e", "D"),
    "cudnn": ImplStyle("#2ca02c", "^"),
    "torch-cudnn": ImplStyle("#bcbd22", "v"),
    "flashinfer-fa2": ImplStyle("#9467bd", "<"),
    "flashinfer-fa3": ImplStyle("#393b79", ">"),
    "sdpa-flash": ImplStyle("#8c564b", "p"),
    "sdpa-efficient": ImplStyle("#e377c2", "h"),
    "flex": ImplStyle("#17becf", "X"),
}
"""The candidate, the seed and every registered baseline (a test keeps this in step with the registry)."""
OTHER_COLORS = ("#ad494a", "#637939", "#8c6d31", "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1")
OTHER_MARKERS = "dP8H"  # filled: an fp8 point is drawn hollow


def impl_style(name: str) -> ImplStyle:
    """The fixed style of an implementation; any other name (a leaderboard entry) gets one chosen by a
    hash of the name, so it too looks the same on every board."""
    from solbench.baselines import current_name

    if current_name(name) in IMPL_STYLES:  # a recorded run's old 'fa3' is fa3-fwd
        return IMPL_STYLES[current_name(name)]
    h = int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big")
    return ImplStyle(OTHER_COLORS[h % len(OTHER_COLORS)], OTHER_MARKERS[h // len(OTHER_COLORS) % len(OTHER_MARKERS)])


def _figure(width_in: float, height_in: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in, height_in))
    FigureCanvasAgg(fig)
    return fig


def _impls(rows: Iterable[Mapping]) -> list[str]:
    return list(dict.fromkeys(str(r["impl"]) for r in rows))


def achieved_tflops(point: Mapping) -> float:
    """Useful TFLOP/s of one timed point: flops / time."""
    return point["flops"] / (point["time_ms"] * 1e9)


def roofline_chart(points: list[Mapping], spec: ArchSpec, profile: MeasuredProfile | None,
                   path: str | Path, title: str | None = None) -> Path:
    """Arithmetic intensity (FLOP/byte, log) vs achieved TFLOP/s (log), one marker per
    (scenario, impl), one legend entry per impl; datasheet roofline solid, measured dashed.

    Points without a positive time_ms are left out (failed or untimed pairs). A point's optional
    "style" names the implementation whose colour and marker it takes (default: its "impl").
    """
    import numpy as np

    timed = [p for p in points if p.get("time_ms") and p["time_ms"] > 0 and p.get("bytes")]
    intensities = [p["flops"] / p["bytes"] for p in timed]
    ridge = spec.bf16_tflops / spec.memory_tbps
    lo = min(intensities + [ridge / 20]) / 2
    hi = max(intensities + [ridge * 5]) * 2
    x = np.geomspace(lo, hi, 400)

    fig = _figure(9.0, 6.0)
    ax = fig.add_subplot()
    dtypes = ["bf16"] + (["fp8_e4m3"] if any(p.get("dtype") == "fp8_e4m3" for p in timed) else [])
    for dtype in dtypes:
        if not spec.supports(dtype):
            continue
        peak = spec.peak_tflops(dtype)
        name = "bf16/fp16" if dtype == "bf16" else "fp8"
        ax.plot(x, np.minimum(peak, spec.memory_tbps * x), color="black", lw=1.6 if dtype == "bf16" else 1.0,
                label=f"SOL {name} (datasheet): {peak:g} TFLOP/s, {spec.memory_tbps:g} TB/s")
        measured_peak = profile.peak_tflops(dtype) if profile is not None else None
        if measured_peak:
            ax.plot(x, np.minimum(measured_peak, profile.memory_tbps * x), color="dimgray", ls="--",
                    lw=1.4 if dtype == "bf16" else 0.9,
                    label=f"attainable {name} (measured): {measured_peak:g} TFLOP/s, {profile.memory_tbps:g} TB/s")
    for impl in _impls(timed):
        mine = [p for p in timed if str(p["impl"]) == impl]
        style = impl_style(str(mine[0].get("style") or impl))
        for fp8 in (False, True):  # fp8 points hollow: they may sit above the bf16 roof
            group = [p for p in mine if (p.get("dtype") == "fp8_e4m3") == fp8]
            if group:
                ax.scatter([p["flops"] / p["bytes"] for p in group], [achieved_tflops(p) for p in group],
                           marker=style.marker, s=28, alpha=0.8, zorder=3, gid=f"impl-{impl}",
                           facecolors="none" if fp8 else style.color, edgecolors=style.color,
                           label=None if fp8 and len(group) < len(mine) else f"{impl} ({len(mine)})")
    if len(dtypes) > 1:
        ax.scatter([], [], marker="o", facecolors="none", edgecolors="gray", label="hollow: fp8 scenario")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ys = [achieved_tflops(p) for p in timed] + [spec.memory_tbps * lo]
    ax.set_ylim(min(ys) / 2, spec.bf16_tflops * (2 if len(dtypes) > 1 else 1) * 1.6)
    ax.set_xlabel("arithmetic intensity (FLOP / byte, minimal bytes)")
    ax.set_ylabel("achieved TFLOP/s (useful FLOPs / median time)")
    ax.set_title(title or f"Roofline on {spec.gpu}")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)  # outside: never over points
    path = Path(path)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return path


def sol_percent_table(rows: list[Mapping], limit: int | None = None):
    """(scenario ids, impls, {(scenario_id, impl): % of SOL}, scenario count before `limit`).

    Rows without a sol_fraction are dropped. With `limit`, keeps the `limit` scenarios whose best
    implementation has the lowest %-of-SOL, in their original order.
    """
    valid = [r for r in rows if r.get("sol_fraction") is not None]
    scenarios = list(dict.fromkeys(str(r["scenario_id"]) for r in valid))
    value = {(str(r["scenario_id"]), str(r["impl"])): 100.0 * r["sol_fraction"] for r in valid}
    total = len(scenarios)
    if limit is not None and total > limit:
        best = {s: max(v for (sid, _), v in value.items() if sid == s) for s in scenarios}
        keep = set(sorted(scenarios, key=best.get)[:limit])
        scenarios = [s for s in scenarios if s in keep]
    return scenarios, _impls(valid), value, total


def sol_chart_title(title: str | None, shown: int, total: int, bound: str = "SOL") -> str:
    """The bar chart's title, always saying how many scenarios it leaves out."""
    which = f"{shown} of {total} scenarios (furthest from {bound})" if shown < total else f"{total} scenarios"
    return f"{title or '% of speed of light per scenario'}: {which}"


def sol_bar_chart(rows: list[Mapping], path: str | Path, limit: int | None = None,
                  title: str | None = None, bound: str = "SOL") -> Path:
    """Per-scenario %-of-SOL, one horizontal bar per implementation, scenarios in first-seen order.
    `bound` names what the rows' sol_fraction is of: "SOL" (the datasheet roofline) or "attainable" (the
    same roofline at the measured ceilings), the two words every report uses.

    Readable with ~180 scenarios: the figure grows with the bar count, labels are small, and the
    axis and legend repeat at the top. With `limit`, only the `limit` scenarios whose best
    implementation is furthest from the speed of light are drawn (where the headroom is).
    """
    scenarios, impls, value, total = sol_percent_table(rows, limit)
    # Only implementations with a bar here: an empty bar set would still get a legend entry, in the
    # default colour rather than its own.
    impls = [impl for impl in impls if any((sid, impl) in value for sid in scenarios)]
    n_bars = max(1, len(scenarios) * len(impls))
    fig = _figure(11.0, max(3.0, 1.6 + SOL_BAR_HEIGHT_IN * n_bars + 0.06 * len(scenarios)))
    ax = fig.add_subplot()
    slot = 0.8 / max(1, len(impls))
    for j, impl in enumerate(impls):
        ys, xs = [], []
        for i, sid in enumerate(scenarios):
            if (sid, impl) in value:
                ys.append(i - 0.4 + slot * (j + 0.5))
                xs.append(value[(sid, impl)])
        ax.barh(ys, xs, height=slot * 0.92, label=impl, color=impl_style(impl).color, gid=f"impl-{impl}")
    ax.axvline(100.0, color="crimson", ls="--", lw=1.0, label="speed of light" if bound == "SOL" else bound)
    ax.set_yticks(range(len(scenarios)))
    ax.set_yticklabels(scenarios, fontsize=6 if len(scenarios) > 40 else 8)
    ax.set_ylim(max(1, len(scenarios)) - 0.5, -0.5)  # first scenario on top
    top = max(value.values(), default=100.0)
    ax.set_xlim(0, max(105.0, top * 1.05))
    ax.set_xlabel(f"% of {bound} ({bound} bound / median time)")
    ax.tick_params(axis="x", labeltop=True, top=True)
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(sol_chart_title(title, len(scenarios), total, bound), pad=20)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    path = Path(path)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path
