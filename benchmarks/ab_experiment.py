"""A/A and planted-slowdown experiments for the timing policy (run on a GPU; not a unit test).

A/A: the seed kernel as candidate against the seed as comparator (with --runners: through the native
runner against through the Python host, and each against itself) (and, with --fast NAME, a baseline
library against itself): every per-scenario ratio should be 1 within noise. Planted: a copy of the seed that spends ~2 % more device time per call
(benchmarks/planted_slowdown.cu) against the seed: the slowdown should be detected (ratio CI wholly
below 1) on nearly every scenario. Prints |ratio - 1| p50 / p95 / max, the geomean with its CI, how
many A/A CIs miss 1 (their real coverage), the detection rate and the wall time of each run.

    python benchmarks/ab_experiment.py --suite hopper [--fast fa3] [--filter ID_PART] [--max-scenarios N]
        [--policy max_time_s=4,min_rounds=4]   (a candidate policy: does it keep the A/A figures?)
    python benchmarks/ab_experiment.py --cpu-copies 5 --suite smoke   (no GPU: a byte-identical copy of the
        Python reference against the Python seed, five times)
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from solbench.core.errors import ConfigError
from solbench.core.policy import TimingPolicy, with_overrides
from solbench.supervisor.run_files import load_run
from solbench.supervisor.runner import RunConfig, run
from solbench.core.stats import geomean_ci, median, median_ci

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "reference_kernels" / "seed_attention.cu"
PYTHON_SEED = ROOT / "reference_kernels" / "torch_attention.py"
PLANTED = ROOT / "benchmarks" / "planted_slowdown.cu"


def experiment(candidate: str, args, label: str, comparator: str = "seed", runner: str = "auto",
               seed_runner: str | None = None) -> dict:
    """Run `candidate` against `comparator` (the seed, or a baseline of the same name for a fast A/A);
    `runner` / `seed_runner`: the processes the .cu candidate and seed are timed in (RunConfig)."""
    start = time.perf_counter()
    baselines = () if comparator == "seed" else (comparator,)
    folder = Path(args.out) / label
    policy = with_overrides(TimingPolicy(), args.policy)
    config = RunConfig(candidate=candidate, suite=args.suite, baselines=baselines, policy=policy,
                       seed="default" if comparator == "seed" else None, out_dir=folder,
                       filter=args.filter, max_scenarios=args.max_scenarios, runner=runner, seed_runner=seed_runner,
                       device=None if getattr(args, "device", "auto") == "auto" else args.device)
    previous = load_run(folder) if (folder / "results.json").exists() else None
    try:
        # An interrupted experiment goes on; a finished one is run again from scratch.
        result = run(replace(config, resume=folder) if previous and not previous.complete else config)
    except ConfigError as exc:  # another suite version, candidate or GPU: start over
        print(f"{label}: not resuming {folder} ({exc})")
        result = run(config)
    wall_s = time.perf_counter() - start
    if previous and not previous.complete:
        label += " (resumed)"  # its wall time covers only this part
    ratios = [o.ratios[comparator] for o in result.outcomes if o.ratios.get(comparator)]
    dev = np.array([abs(median(r) - 1) for r in ratios])
    g, lo, hi = geomean_ci(ratios)
    cis = [median_ci(r) for r in ratios]
    slower = sum(1 for lo, hi in cis if hi < 1.0)
    missed = sum(1 for lo, hi in cis if hi < 1.0 or lo > 1.0)  # in an A/A: ~5 % at 95 % if the CIs are honest
    return {"label": label, "scenarios": len(result.outcomes), "timed": len(ratios),
            "failed": len(result.failures()), "p50_pct": 100 * np.percentile(dev, 50),
            "p95_pct": 100 * np.percentile(dev, 95), "max_pct": 100 * dev.max(), "geomean": g,
            "ci": (lo, hi), "confidently_slower": slower, "ci_missing_1": missed, "wall_s": wall_s,
            "wall_per_scenario_s": wall_s / max(1, len(result.outcomes))}


def report(rows: list[dict]) -> str:
    """The table of experiment() rows, then the A/A coverage and planted detection lines."""
    out = []
    out.append(f"\n{'run':<20}{'timed':>6}{'fail':>5}{'|r-1| p50%':>11}{'p95%':>7}{'max%':>7}"
               f"{'geomean':>9}{'95% CI':>19}{'slower':>8}{'CI!=1':>7}{'wall s':>8}")
    for r in rows:
        out.append(f"{r['label']:<20}{r['timed']:>6}{r['failed']:>5}{r['p50_pct']:>11.3f}{r['p95_pct']:>7.3f}"
                   f"{r['max_pct']:>7.3f}{r['geomean']:>9.4f}  [{r['ci'][0]:.4f}, {r['ci'][1]:.4f}]"
                   f"{r['confidently_slower']:>8}{r['ci_missing_1']:>7}{r['wall_s']:>8.1f}"
                   f"  ({r['wall_per_scenario_s']:.2f} s/scenario)")
    for r in rows:
        if r["label"].startswith("aa"):
            out.append(f"{r['label']}: per-scenario 95 % CIs that miss 1: {r['ci_missing_1']}/{r['timed']} "
                       f"= {r['ci_missing_1'] / max(1, r['timed']):.1%} (honest intervals: about 5 %, more where two "
                       "processes really differ by a hair)")
        if r["label"].startswith("planted"):
            out.append(f"detection rate of the planted 2 % slowdown: {r['confidently_slower']}/{r['timed']} "
                       f"= {r['confidently_slower'] / max(1, r['timed']):.1%}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="hopper")
    ap.add_argument("--filter")
    ap.add_argument("--max-scenarios", type=int)
    ap.add_argument("--out", default="reports/ab-experiment")
    ap.add_argument("--skip-aa", action="store_true")
    ap.add_argument("--skip-planted", action="store_true")
    ap.add_argument("--runners", action="store_true", help="the seed timed through the native runner against the "
                    "seed timed through the Python host (and each runner against itself): no bias beyond A/A noise")
    ap.add_argument("--runner-pairs", default="native-python,python-python,native-native",
                    help="with --runners: which candidate-comparator runner pairs, comma-separated")
    ap.add_argument("--device", default="auto", help="cpu for --cpu-copies")
    ap.add_argument("--cpu-copies", type=int, metavar="N", help="on a CPU: N A/A runs of a byte-identical copy of "
                    "the Python reference against the Python seed (the same file), then nothing else")
    ap.add_argument("--fast", metavar="BASELINE", help="also an A/A of this baseline against itself (e.g. fa3)")
    ap.add_argument("--policy", metavar="K=V,...", help="overrides of the default timing policy (as solbench run "
                    "--policy): try a cut in wall time against the A/A and planted figures before making it the default")
    args = ap.parse_args(argv)
    rows = []
    if args.cpu_copies:
        import shutil

        args.device = "cpu"
        copy = Path(args.out) / "copy" / PYTHON_SEED.name
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PYTHON_SEED, copy)
        rows = [experiment(str(copy), args, f"aa-cpu-copy-{i + 1}") for i in range(args.cpu_copies)]
        print(report(rows))
        return 0
    if args.runners:
        for cand, seed in (pair.split("-") for pair in args.runner_pairs.split(",")):
            rows.append(experiment(str(SEED), args, f"aa-{cand}-vs-{seed}", runner=cand, seed_runner=seed))
    elif not args.skip_aa:
        rows.append(experiment(str(SEED), args, "aa-seed"))
    if args.fast:
        rows.append(experiment(f"baseline:{args.fast}", args, f"aa-{args.fast}", comparator=args.fast))
    if not args.skip_planted:
        rows.append(experiment(str(PLANTED), args, "planted-2pct"))
    print(report(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
