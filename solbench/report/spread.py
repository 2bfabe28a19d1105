"""How a run was spread: which GPUs and hosts its units ran on, and whether those GPUs differ in model or
clocks (then its per-scenario ratios are still same-GPU pairs, but scenarios timed on different boards
are not comparable with each other to a few percent). Reads Outcome.placement only."""

from __future__ import annotations

from collections import Counter

from solbench.core.model import RunResult


def spread_lines(result: RunResult) -> list[str]:
    """Nothing for a run on one GPU of one host; else one line of where units ran, and one warning line
    when the GPUs differ in model or in maximum SM / memory clock."""
    placed = [o.placement for o in result.outcomes if o.placement]
    gpus = Counter(f"{p['host']}/{p.get('gpu_uuid') or p.get('gpu_ordinal') or p.get('gpu_name')}" for p in placed)
    if len(gpus) <= 1:
        return []
    hosts = {p["host"] for p in placed}
    lines = [f"spread over {len(gpus)} GPUs on {len(hosts)} host(s): "
             + ", ".join(f"{g} {n}" for g, n in sorted(gpus.items()))]
    models = {p.get("gpu_name") for p in placed}
    clocks = {(p.get("sm_clock_max_mhz"), p.get("mem_clock_max_mhz")) for p in placed}
    if len(models) > 1 or len(clocks) > 1:
        lines.append("WARNING: the run's GPUs differ in "
                     + " and ".join(w for w, bad in (("model", len(models) > 1), ("clocks", len(clocks) > 1)) if bad)
                     + f" ({', '.join(sorted(str(m) for m in models))}; max SM/mem MHz "
                     + ", ".join(f"{a}/{b}" for a, b in sorted(clocks, key=str))
                     + "): compare scenarios timed on different GPUs with care")
    return lines
