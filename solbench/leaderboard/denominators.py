"""The fixed denominators of a leaderboard (rule in solbench.leaderboard.rank's docstring): which recorded
baseline run they come from, and per scenario the fastest baseline library that passed there, else the seed."""

from __future__ import annotations

from dataclasses import dataclass

from solbench.core.model import ERROR_BUDGET, RunResult, Status
from solbench.core.stats import median
from solbench.leaderboard.entry import CANDIDATE, Entry, gpu_model, major_version, observe, solbench_version
from solbench.supervisor.runner import DEFAULT_SEED

NOT_BASELINES = (CANDIDATE, "seed")
SEED_NAMES = tuple(DEFAULT_SEED.values())
"""File names of the shipped seeds: a run whose candidate is one of them is the seed's own."""

@dataclass(frozen=True)
class Denominator:
    """The fixed time of one scenario that every entry of a board is divided into."""

    time_ms: float
    """Median of the chosen implementation's samples in the baseline run."""
    impl: str
    """Which implementation set it: a baseline name, or 'seed' where no baseline passed."""
    seed_ms: float | None = None
    """The seed's median in the baseline run: what an unsupported scenario counts at where no other library ran it."""
    libraries_ms: dict[str, float] | None = None
    """Median of every baseline library that passed in the baseline run: where the weighted view's fallback
    comes from."""


def choose_baseline_run(runs: list[RunResult], suite_hash: str, gpu: str, major: str) -> RunResult | None:
    """The recorded run the denominators come from (rule in the module docstring), or None."""
    matching = [r for r in runs if r.suite_hash == suite_hash and gpu_model(r.environment, r.arch) == gpu
                and major_version(solbench_version(r.environment)) == major]
    return max(matching, key=lambda r: (r.error_budget == ERROR_BUDGET, len(baseline_names(r)), r.complete, r.run_id),
               default=None)


def baseline_names(run: RunResult) -> list[str]:
    """The baseline libraries a run timed (its implementations less the candidate and the seed)."""
    return [n for n in run.candidate.get("implementations", {}) if n not in NOT_BASELINES and n != seed_impl(run)]


def seed_impl(run: RunResult) -> str | None:
    """The name the seed kernel has in `run`: its 'seed' comparator, or the candidate when the run's
    candidate is the shipped seed (the recorded baseline runs), else None."""
    if "seed" in run.candidate.get("implementations", {"seed": "seed"}):
        return "seed"
    return CANDIDATE if run.candidate.get("name") in SEED_NAMES else None


def is_library(entry: Entry) -> bool:
    """A baseline library measured inside a run, not a candidate or the seed."""
    return entry.impl not in NOT_BASELINES


def denominators(run: RunResult) -> dict[str, Denominator]:
    """Per scenario: the fastest baseline that passed its check, else the seed, else none; with the
    seed's time and every passing library's time, the weighted view's fallbacks."""
    seed = seed_impl(run)
    out = {}
    for o in run.outcomes:
        timed = {}
        for name in o.measurements:
            seen = observe(o, name)
            if seen.status is Status.PASSED and seen.samples_ms and (name != CANDIDATE or name == seed):
                timed[name] = median(seen.samples_ms)
        baselines = {n: t for n, t in timed.items() if n not in NOT_BASELINES and n != seed}
        seed_ms = timed.get(seed) if seed else None
        if baselines:
            best = min(baselines, key=baselines.get)
            out[o.scenario_id] = Denominator(baselines[best], best, seed_ms, baselines)
        elif seed_ms is not None:
            out[o.scenario_id] = Denominator(seed_ms, "seed", seed_ms, {})
    return out
