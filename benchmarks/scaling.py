"""Estimated and measured wall time of a suite per GPU count.

    python benchmarks/scaling.py --suite hopper --impls 3                      # estimates, 1..8 GPUs
    python benchmarks/scaling.py --suite hopper --measured RUN/results.json    # + what RUN's units took,
                                                                               #   dealt longest first to N GPUs
    python benchmarks/scaling.py --suite fa3-h2h --runs plain.json gpus-all.json   # measured walls of whole runs

Estimates come from the roofline (solbench.executor.plan.estimate_s, dealt longest first: makespan_s).
With --measured, each scenario's unit wall time (Outcome.placement.wall_s, recorded on one GPU) is dealt the
same way: the expected wall time on N GPUs of that machine. --runs prints each run's own wall time (first
unit start to last unit end) and GPU count.
"""

from __future__ import annotations

import argparse

from solbench.core.policy import TimingPolicy
from solbench.core.roofline import bounds_for
from solbench.core.suites import load_suite
from solbench.executor.plan import estimate_s, longest_first, makespan_s


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="hopper")
    parser.add_argument("--arch", default="h200")
    parser.add_argument("--impls", type=int, default=3, help="implementations per scenario (candidate, seed, baseline)")
    parser.add_argument("--gpus", default="1,2,4,8")
    parser.add_argument("--measured", help="a results.json whose outcomes carry placement.wall_s")
    parser.add_argument("--runs", nargs="*", default=[], help="results.json files: their own wall time and GPU count")
    args = parser.parse_args(argv)
    from solbench.supervisor.run_files import load_run

    scenarios = list(load_suite(args.suite).scenarios)
    bound_fn = bounds_for(args.arch)
    est = {sc.id: estimate_s(sc, args.impls, TimingPolicy(), (bound_fn(sc).bound_ms if bound_fn and bound_fn(sc) else None))
           for sc in scenarios}
    ordered = [est[sc.id] for sc in longest_first(scenarios, est)]
    measured = None
    if args.measured:
        run = load_run(args.measured)
        walls = {o.scenario_id: o.placement["wall_s"] for o in run.outcomes if o.placement}
        measured = sorted(walls.values(), reverse=True)
        print(f"measured: {len(walls)} units from {args.measured}, {sum(measured):.1f} s of unit time")
    print(f"{'gpus':>5}{'estimated s':>14}{'from measured units s':>24}")
    for n in (int(g) for g in args.gpus.split(",")):
        from_units = f"{makespan_s(measured, n):24.1f}" if measured else f"{'-':>24}"
        print(f"{n:>5}{makespan_s(ordered, n):14.1f}{from_units}")
    for path in args.runs:
        run = load_run(path)
        placed = [o.placement for o in run.outcomes if o.placement]
        if not placed:
            print(f"{path}: no placements (recorded before the executor layer)")
            continue
        wall = max(p["started_at"] + p["wall_s"] for p in placed) - min(p["started_at"] for p in placed)
        gpus = len({(p["host"], p.get("gpu_uuid") or p.get("gpu_ordinal")) for p in placed})
        print(f"{path}: {gpus} GPU(s), {len(placed)} units, wall {wall:.1f} s (units only: start-up not counted)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
