"""L2 flush method on the H200: write vs read vs both, on the scenarios of a suite (default hopper-d128: the
new hopper grid is sized past 2x L2 everywhere) whose working set is under 2x L2 (where leftover flush lines
matter most). Needs a GPU; not a unit test.

For each method (TimingPolicy.l2_flush) a full solbench run times FA3 against itself (`baseline:vllm-fa3` as
the candidate, `vllm-fa3` as the comparator: an A/A, same kernel in two processes) on those scenarios. Per
method it reports the A/A noise (|median per-round ratio - 1|: p50, p95, max, and how many 95 % CIs miss
1) and the geomean of the candidate's median time against the 'read' method's (a write flush that leaves
dirty lines to be written back inside the timed kernel shows as a longer time than read).

    python benchmarks/flush_compare.py [--suite hopper-d128] [--out reports/h200/flush] [--methods write,read,both]

Writes reports/h200/flush/<method>/ (each run) and reports/h200/flush_compare.md (the table).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from solbench.core.archspec import load_arch  # noqa: E402
from solbench.core.policy import TimingPolicy  # noqa: E402
from solbench.core.roofline import min_bytes  # noqa: E402
from solbench.core.stats import median, median_ci  # noqa: E402
from solbench.core.suites import load_suite  # noqa: E402
from solbench.supervisor.runner import RunConfig, run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def small_suite(folder: Path, name: str, arch: str = "h200") -> tuple[Path, int]:
    """A suite file of the scenarios of suite `name` whose minimal traffic is under 2x L2."""
    l2 = load_arch(arch).l2_bytes
    chosen = [sc for sc in load_suite(name).scenarios if min_bytes(sc) < 2 * l2 and sc.mask is None]
    lines = [f'name = "{name}-small-ws"', f'description = "{name} scenarios with working set < 2x L2"', f'arch = "{arch}"']
    for sc in chosen:
        lines.append("\n[[scenario]]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in sc.to_dict().items() if v is not None and k != "id"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-small-ws.toml"
    path.write_text("\n".join(lines) + "\n")
    return path, len(chosen)


def measure(method: str, suite: Path, out: Path, library: str) -> dict:
    start = time.perf_counter()
    config = RunConfig(candidate=f"baseline:{library}", suite=str(suite), baselines=(library,), seed=None,
                       policy=replace(TimingPolicy(), l2_flush=method), out_dir=out / method)
    result = run(config)
    ratios = [o.ratios[library] for o in result.outcomes if o.ratios.get(library)]
    dev = np.array([abs(median(r) - 1) for r in ratios])
    missed = sum(1 for lo, hi in map(median_ci, ratios) if hi < 1.0 or lo > 1.0)
    times = {o.scenario_id: median(o.measurements["candidate"].samples_ms)
             for o in result.outcomes if "candidate" in o.measurements}
    return {"method": method, "timed": len(ratios), "p50_pct": 100 * np.percentile(dev, 50),
            "p95_pct": 100 * np.percentile(dev, 95), "max_pct": 100 * dev.max(), "ci_missing_1": missed,
            "times_ms": times, "wall_s": time.perf_counter() - start}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "h200" / "flush")
    parser.add_argument("--methods", default="write,read,both")
    parser.add_argument("--suite", default="hopper-d128")
    parser.add_argument("--library", default="vllm-fa3", help="the baseline timed against itself (A/A)")
    args = parser.parse_args()
    suite, n = small_suite(args.out, args.suite)
    print(f"{n} {args.suite} scenarios with working set < 2x L2: {suite}", flush=True)
    rows = []
    for method in args.methods.split(","):  # each method's row is kept as it finishes: a call cut short keeps them
        rows.append(measure(method, suite, args.out, args.library))
        (args.out.parent / "flush_compare.json").write_text(json.dumps(rows, indent=1))
        print({k: v for k, v in rows[-1].items() if k != "times_ms"}, flush=True)
    ref = next((r for r in rows if r["method"] == "read"), rows[0])
    lines = ["| flush | timed | A/A p50 % | p95 % | max % | CIs missing 1 | geomean time / read | wall s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        common = [s for s in r["times_ms"] if s in ref["times_ms"]]
        g = float(np.exp(np.mean([np.log(r["times_ms"][s] / ref["times_ms"][s]) for s in common]))) if common else float("nan")
        lines.append(f"| {r['method']} | {r['timed']} | {r['p50_pct']:.3f} | {r['p95_pct']:.3f} | {r['max_pct']:.3f} | "
                     f"{r['ci_missing_1']}/{r['timed']} | {g:.4f} | {r['wall_s']:.0f} |")
    table = "\n".join(lines)
    print(table)
    report = args.out.parent / "flush_compare.md"
    report.write_text(f"# L2 flush: write vs read vs both ({args.library} A/A, {n} {args.suite} scenarios under 2x L2)"
                      f"\n\n{table}\n")
    (args.out.parent / "flush_compare.json").write_text(json.dumps(rows, indent=1))
    print(f"wrote {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
