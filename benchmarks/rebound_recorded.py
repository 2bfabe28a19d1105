"""Recompute the roofline bounds stored in recorded runs from today's arch spec and measured profile.

A run stores each scenario's bound as computed when it ran. After `solbench calibrate` writes a new
profile, the committed recorded runs (baselines/h200/*.json, reports/reference/...) would still show
%-of-SOL against the old one; this rewrites their bounds and records which profile they now come from
(environment.roofline_profile). Timings and verdicts are left as measured. A file in which the
candidate would now be faster than light is reported and left unchanged: that verdict needs a new run.

    python benchmarks/rebound_recorded.py baselines/h200/*.json [--dry-run]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from solbench.core.model import Status  # noqa: E402
from solbench.core.roofline import bounds_for, is_faster_than_light, profile_provenance  # noqa: E402
from solbench.supervisor.run_files import load_run  # noqa: E402
from solbench.core.scenario import Scenario  # noqa: E402


def rebound(path: Path, dry_run: bool) -> str:
    result = load_run(path)
    bound_of = bounds_for(result.arch)
    if bound_of is None:
        return f"{path}: arch {result.arch!r} has no spec: unchanged"
    outcomes, changed, ftl = [], 0, []
    for o in result.outcomes:
        new = bound_of(Scenario.from_dict(o.scenario)) if o.bound else None
        cand = o.measurements.get("candidate")
        if new and cand and o.status is Status.PASSED and is_faster_than_light(statistics.median(cand.samples_ms), new):
            ftl.append(o.scenario_id)
        if new and new.to_dict() != o.bound:
            changed += 1
            o = replace(o, bound=new.to_dict())
        outcomes.append(o)
    if ftl:
        return f"{path}: the candidate would be faster than light on {', '.join(ftl[:3])}: unchanged (run it again)"
    provenance = profile_provenance(result.arch)
    if not dry_run:
        environment = {**result.environment, "roofline_profile": provenance}
        doc = replace(result, outcomes=tuple(outcomes), environment=environment).to_dict()
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(doc, indent=1, allow_nan=False))
        os.replace(tmp, path)
    return f"{path}: {changed} of {len(outcomes)} bounds {'would change' if dry_run else 'rewritten'} (profile {provenance})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    for path in args.results:
        print(rebound(path, args.dry_run))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
