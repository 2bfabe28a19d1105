"""Fair ranking of leaderboard entries: pure, no I/O.

Rules (each board is one suite on one arch and GPU model):

- Comparable: an entry ranks only when its suite hash equals the shipped suite's hash
  (`reference_hashes`) and it was made by the same solbench major version as the one ranking. Others
  are listed apart with the reason ("suite hash differs ...: made with an edited suite"). Different GPU
  models, arches or suites are different boards, never one ranking.
- Fixed denominator: per scenario, the median time of the fastest baseline library that passed its own
  check in the recorded baseline run (a RunResult under `baselines/<arch>/`); where no baseline passed
  a scenario, the seed's median in that run (its 'seed' comparator, or its candidate when that is the
  shipped seed kernel, as in the recorded runs). The run is chosen by `choose_baseline_run`: same suite
  hash, GPU model and solbench major; the one timing the most baseline libraries first (a run of one or
  two more libraries beside the seed gives entries, not the denominators); then complete runs; then the
  newest run id (run ids start with a UTC timestamp). Scenarios without any denominator are left out
  of every entry's score alike.
- Score: geomean over scenarios of denominator_ms / entry median time, with a 95 % bootstrap interval
  from stats.geomean_ci over each scenario's per-sample speedups (denominator_ms / t_i). The
  denominator is a constant shared by every entry on the board, so its own noise shifts all entries
  together and is left out of the interval; the interval is the entry's measurement noise.
  `drift_pct` reports how far the entry's run measured the denominator's own library from the
  recorded baseline, or the seed from the seed's recorded time where the run did not time that
  library (cross-run drift, which the interval does not see). Beside it, the geomean of
  bound_ms / median time (%-of-SOL).
- Any wrong scenario (any failure status, faster_than_light included) leaves the entry unranked with
  the scenarios and why.
- Coverage: a scenario the entry declares unsupported (a library's claim, a kernel's
  SOLBENCH_ERR_UNSUPPORTED) is scored at the seed's time in the baseline run, as a user of that library
  would fall back to a general kernel there; `Standing.fallback` lists them, so a library covering few
  scenarios still ranks, behind one covering more. An entry missing scored scenarios for any other
  reason (not run: a filtered or unfinished run) is unranked, its partial score shown for information.
- Ties: ranked entries are sorted by score; one whose interval overlaps the previous entry's shares
  its rank (competition ranking: 1, =1, 3).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from itertools import groupby

from solbench.leaderboard.entry import CANDIDATE, Entry, gpu_model, major_version, observe, solbench_version
from solbench.core.model import RunResult, Status
from solbench.core.policy import measuring_differences
from solbench.supervisor.runner import DEFAULT_SEED
from solbench.core.stats import geomean, geomean_ci, median

NOT_BASELINES = (CANDIDATE, "seed")
SEED_NAMES = tuple(DEFAULT_SEED.values())
"""File names of the shipped seeds: a run whose candidate is one of them is the seed's own."""
REASON_SCENARIOS_SHOWN = 5
"""Scenarios named in a one-line reason; the full list is in Standing.wrong and the drill-down."""


@dataclass(frozen=True)
class Denominator:
    """The fixed time of one scenario that every entry of a board is divided into."""

    time_ms: float
    """Median of the chosen implementation's samples in the baseline run."""
    impl: str
    """Which implementation set it: a baseline name, or 'seed' where no baseline passed."""
    fallback_ms: float | None = None
    """The seed's median in the baseline run: the time of an entry that does not support the scenario."""


@dataclass(frozen=True)
class ScenarioScore:
    """One entry on one scenario."""

    scenario_id: str
    status: str
    """Status value of the entry's implementation on this scenario."""
    reason: str
    time_ms: float | None
    """Median of its samples; None when not timed."""
    speedup: float | None
    """denominator_ms / time_ms (> 1: faster than the best baseline); None without both."""
    denominator_ms: float | None
    denominator_impl: str
    sol_pct: float | None
    """100 * bound_ms / time_ms."""
    flops: int | None
    bytes: int | None
    dtype: str
    fallback: bool = False
    """Not supported by the entry: scored at the seed's time (speedup = denominator / seed)."""


@dataclass(frozen=True)
class Standing:
    """An entry's place on its board: a rank, or the reason it has none."""

    entry: Entry
    rank: int | None
    """1-based competition rank; None when not ranked."""
    tied: bool
    """True when its interval overlaps a neighbour's and the rank is shared."""
    score: float | None
    """Geomean speedup against the denominators (partial when not ranked); None when wrong or incomparable."""
    lo: float | None
    hi: float | None
    sol_pct: float | None
    """Geomean %-of-SOL over its timed scenarios."""
    drift_pct: float | None
    """Geomean of (its run's time of the denominator library / the recorded denominator) - 1, in %;
    per scenario the seed against the seed's recorded time where the run did not time that library."""
    reason: str
    """Why it is not ranked ('' when ranked)."""
    wrong: tuple[str, ...]
    """Ids of scenarios it got wrong."""
    scenarios: tuple[ScenarioScore, ...]
    fallback: tuple[str, ...] = ()
    """Ids of scored scenarios it does not support, scored at the seed's time."""

    def to_dict(self) -> dict:
        """Plain JSON-able data: the entry's provenance without its run, and every scenario."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("entry", "scenarios")}
        d["wrong"] = list(self.wrong)
        d["fallback"] = list(self.fallback)
        d["entry"] = {f.name: getattr(self.entry, f.name) for f in fields(self.entry) if f.name != "result"}
        d["entry"]["build_flags"] = list(self.entry.build_flags)
        d["scenarios"] = [asdict(s) for s in self.scenarios]
        return d


@dataclass(frozen=True)
class Board:
    """One ranking: a suite on one arch and GPU model."""

    suite: str
    arch: str
    gpu_model: str
    suite_hash: str
    """The shipped suite's hash every ranked entry matches ('' when the suite is not shipped)."""
    solbench_major: str
    baseline_run_id: str
    """Run the denominators come from ('' when none was recorded)."""
    denominators: dict[str, Denominator]
    standings: tuple[Standing, ...]
    """Ranked entries in rank order, then the others."""
    note: str = ""

    @property
    def ranked(self) -> list[Standing]:
        return [s for s in self.standings if s.rank is not None]

    @property
    def apart(self) -> list[Standing]:
        return [s for s in self.standings if s.rank is None]

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in ("suite", "arch", "gpu_model", "suite_hash", "solbench_major",
                                           "baseline_run_id", "note")}
        d["denominators"] = {k: asdict(v) for k, v in self.denominators.items()}
        d["ranked"] = [s.to_dict() for s in self.ranked]
        d["apart"] = [s.to_dict() for s in self.apart]
        return d


def choose_baseline_run(runs: list[RunResult], suite_hash: str, gpu: str, major: str) -> RunResult | None:
    """The recorded run the denominators come from (rule in the module docstring), or None."""
    matching = [r for r in runs if r.suite_hash == suite_hash and gpu_model(r.environment, r.arch) == gpu
                and major_version(solbench_version(r.environment)) == major]
    return max(matching, key=lambda r: (len(baseline_names(r)), r.complete, r.run_id), default=None)


def baseline_names(run: RunResult) -> list[str]:
    """The baseline libraries a run timed (its implementations less the candidate and the seed)."""
    return [n for n in run.candidate.get("implementations", {}) if n not in NOT_BASELINES and n != seed_impl(run)]


def seed_impl(run: RunResult) -> str | None:
    """The name the seed kernel has in `run`: its 'seed' comparator, or the candidate when the run's
    candidate is the shipped seed (the recorded baseline runs), else None."""
    if "seed" in run.candidate.get("implementations", {"seed": "seed"}):
        return "seed"
    return CANDIDATE if run.candidate.get("name") in SEED_NAMES else None


def denominators(run: RunResult) -> dict[str, Denominator]:
    """Per scenario: the fastest baseline that passed its check, else the seed, else none; with the
    seed's time as the fallback of entries that do not support the scenario."""
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
            out[o.scenario_id] = Denominator(baselines[best], best, seed_ms)
        elif seed_ms is not None:
            out[o.scenario_id] = Denominator(seed_ms, "seed", seed_ms)
    return out


def _declined(status: Status, reason: str) -> bool:
    """Skipped because the entry does not support the scenario (claim or SOLBENCH_ERR_UNSUPPORTED)."""
    return status is Status.SKIPPED and ("not supported" in reason or "unsupported" in reason)


def build_boards(entries: list[Entry], baseline_runs: list[RunResult], reference_hashes: dict[str, str],
                 solbench_version_now: str, confidence: float = 0.95) -> list[Board]:
    """Group entries into boards and rank each (rules in the module docstring)."""
    major = major_version(solbench_version_now)
    boards = []
    for (suite, arch, gpu), group in groupby(sorted(entries, key=_board_key), key=_board_key):
        ref_hash = reference_hashes.get(suite, "")
        run = choose_baseline_run(baseline_runs, ref_hash, gpu, major) if ref_hash else None
        denoms = denominators(run) if run else {}
        standings = [_standing(e, ref_hash, major, denoms, arch, confidence, run.policy if run else None)
                     for e in group]
        note = ""
        if run and run.scenario_count > len(denoms):
            note = (f"denominators for {len(denoms)} of {run.scenario_count} scenarios; "
                    "the others are left out of every score")
        boards.append(Board(suite, arch, gpu, ref_hash, major, run.run_id if run else "", denoms,
                            tuple(_ranked(standings)), note))
    return boards


def _board_key(e: Entry) -> tuple[str, str, str]:
    return e.suite, e.arch, e.gpu_model


def _incomparable(e: Entry, ref_hash: str, major: str) -> list[str]:
    reasons = []
    if not ref_hash:
        reasons.append(f"suite {e.suite!r} is not shipped with this solbench: no reference hash to check it against")
    elif e.suite_hash != ref_hash:
        reasons.append(f"suite hash differs ({e.suite_hash[:12]} vs shipped {ref_hash[:12]}): made with an edited suite")
    if e.solbench_major != major:
        reasons.append(f"made with solbench {e.solbench_version}; this board ranks major version {major}")
    return reasons


def _standing(e: Entry, ref_hash: str, major: str, denoms: dict[str, Denominator], arch: str,
              confidence: float, base_policy: dict | None = None) -> Standing:
    reasons = _incomparable(e, ref_hash, major)
    differ = measuring_differences(base_policy or {}, e.result.policy)
    if differ:
        reasons.append(f"timed differently from the recorded baselines ({', '.join(differ)})")
    if reasons:
        denoms = {}  # another suite's scenarios: their times are not comparable with these denominators
    rows, samples, drifts, fallback = [], [], [], []
    seed = seed_impl(e.result)
    for o in e.result.outcomes:
        seen = observe(o, e.impl)
        t = median(seen.samples_ms) if seen.samples_ms else None
        d = denoms.get(o.scenario_id)
        b = o.bound or {}
        falls_back = bool(d and t is None and d.fallback_ms and _declined(seen.status, seen.reason))
        speedup = d.time_ms / t if d and t else (d.time_ms / d.fallback_ms if falls_back else None)
        rows.append(ScenarioScore(
            o.scenario_id, seen.status.value, seen.reason, t, speedup,
            d.time_ms if d else None, d.impl if d else "", 100.0 * b["bound_ms"] / t if t and b.get("bound_ms") else None,
            b.get("flops"), b.get("bytes"), str(o.scenario.get("dtype", "")) if o.scenario else "", falls_back))
        if falls_back:
            fallback.append(o.scenario_id)
            samples.append([speedup])  # the seed's recorded time: a constant shared by every entry
        if d and t:
            samples.append([d.time_ms / x for x in seen.samples_ms])
            own, anchor_ms = observe(o, d.impl), d.time_ms
            if not own.samples_ms and seed and d.fallback_ms:  # the denominator's library is not in this run
                own, anchor_ms = observe(o, seed), d.fallback_ms
            if own.samples_ms:
                drifts.append(median(own.samples_ms) / anchor_ms)
    wrong = [r for r in rows if Status(r.status).is_failure]
    if wrong:
        named = "; ".join(f"{r.scenario_id} ({r.status}: {r.reason})" for r in wrong[:REASON_SCENARIOS_SHOWN])
        more = f"; and {len(wrong) - REASON_SCENARIOS_SHOWN} more" if len(wrong) > REASON_SCENARIOS_SHOWN else ""
        reasons.insert(0, f"wrong on {len(wrong)} scenario(s): {named}{more}")
    elif not reasons and not denoms:
        reasons.append(f"no recorded baseline run under baselines/{arch}/ for this suite hash on {e.gpu_model}")
    elif not reasons:
        scored = {r.scenario_id for r in rows if r.speedup is not None}
        missing = [sid for sid in denoms if sid not in scored]
        if missing:
            reasons.append(f"covers {len(scored)} of {len(denoms)} scored scenarios; not timed: "
                           + ", ".join(missing[:REASON_SCENARIOS_SHOWN]) + (" ..." if len(missing) > REASON_SCENARIOS_SHOWN else ""))
    score = lo = hi = None
    if samples and not wrong:
        score, lo, hi = geomean_ci(samples, confidence)
    sols = [r.sol_pct for r in rows if r.sol_pct]
    return Standing(e, None, False, score, lo, hi, geomean(sols) if sols and not wrong else None,
                    100.0 * (geomean(drifts) - 1.0) if drifts else None, "; ".join(reasons),
                    tuple(r.scenario_id for r in wrong), tuple(rows), tuple(fallback))


def _ranked(standings: list[Standing]) -> list[Standing]:
    ok = sorted((s for s in standings if not s.reason), key=lambda s: (-s.score, s.entry.name))
    out: list[Standing] = []
    for i, s in enumerate(ok):
        prev = out[-1] if out else None
        tied = prev is not None and s.lo <= prev.hi and prev.lo <= s.hi
        if tied:
            out[-1] = replace(prev, tied=True)
        out.append(replace(s, rank=prev.rank if tied else i + 1, tied=tied))
    rest = sorted((s for s in standings if s.reason), key=lambda s: (s.score is None, -(s.score or 0), s.entry.name))
    return out + rest
