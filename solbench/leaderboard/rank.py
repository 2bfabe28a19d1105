"""Fair ranking of leaderboard entries: pure, no I/O.

Rules (each board is one suite on one arch and GPU model):

- Comparable: an entry ranks only when its suite hash equals the shipped suite's hash
  (`reference_hashes`), it was made by the same solbench major version as the one ranking, and its run
  was judged under the same error budget as the baseline run (RunResult.error_budget: a looser budget
  passes what a tighter one fails, as `solbench check` refuses too). Others are listed apart with the
  reason ("suite hash differs ...: made with an edited suite"). Different GPU models, arches or suites
  are different boards, never one ranking.
- Fixed denominator: per scenario, the median time of the fastest baseline library that passed its own
  check in the recorded baseline run (a RunResult under `baselines/<arch>/`); where no baseline passed
  a scenario, the seed's median in that run (its 'seed' comparator, or its candidate when that is the
  shipped seed kernel, as in the recorded runs). The run is chosen by `choose_baseline_run`: same suite
  hash, GPU model and solbench major; one judged under this solbench's error budget first; then the one
  timing the most baseline libraries (a run of one or two more libraries beside the seed gives entries,
  not the denominators); then complete runs; then the newest run id (run ids start with a UTC timestamp).
  Scenarios without any denominator are left out of every entry's score alike: the others are the board's
  scored scenarios.
- An entry's speedup on a scenario is denominator_ms / its median time. Every geomean below comes with a
  95 % bootstrap interval from stats.geomean_ci over each scenario's per-sample speedups
  (denominator_ms / t_i): the denominator is a constant shared by every entry, so its noise shifts all
  entries together and is left out; the interval is the entry's measurement noise.
- A library is scored on what it claims. A scenario the entry declares unsupported (a library's claim,
  a kernel's SOLBENCH_ERR_UNSUPPORTED) is no failure; its **coverage** is the scored scenarios it
  claims, shown beside its **own score**, the geomean over those.
- Ranked only with enough coverage: an entry ranks when it supports at least MIN_RANKED_COVERAGE (half)
  of the board's scored scenarios. A narrower one is listed apart as "too narrow to rank", with its own
  score, its coverage and the reason ("covers 21 of 182 scored scenarios; ranking needs at least half").
  Ranked with the others, a narrow entry would shrink the common set to the few scenarios everyone runs
  (on the H200 `hopper` board sdpa-efficient's 21 and fa3-fwd's 28 of 182 left one), and in the weighted
  view it would be scored mostly on other libraries' times (sdpa-efficient, 0.128x where it runs, ranked
  3rd there, ahead of fa4 at 0.861x over 147).
- Three numbers per ranked entry:
  - headline (`score`, `rank`): the geomean over the board's **common set**, the scored scenarios that
    every ranked entry supports (the board says how many). Everyone is measured on the same scenarios,
    so no entry gains or loses by what it leaves out.
  - `own`: over every scored scenario it claims, with the coverage "claims/scored" beside it.
  - `weighted` (`weighted_rank`): over every scored scenario; one the entry does not support counts
    at the time of the fastest **other** library that ran it (the recorded baseline run's libraries and
    the library entries of the board, ranked or too narrow; a library never falls back on itself), as a
    user of that entry would route that scenario to the best library there; the seed's recorded time
    only where no other library ran it. `Standing.fallback` lists those scenarios.
  A library covering nearly everything thus never ranks behind one ten times slower: on the common set
  it is compared scenario for scenario with entries that cover at least half of the board too, and in
  the weighted view at most half of anyone's scenarios count at another library's time.
- Any wrong scenario (any failure status, faster_than_light included) leaves the entry unranked with
  the scenarios and why. So does an entry missing scored scenarios for any reason but a declared
  "not supported" (not run: a filtered or unfinished run; its own score is shown for information).
- Ties: in each ranking, entries are sorted by score; one whose interval overlaps the previous entry's
  shares its rank (competition ranking: 1, =1, 3). Drift: `drift_pct` reports how far the entry's run
  measured the denominator's own library from the recorded baseline, or the seed from the seed's
  recorded time where the run did not time that library (cross-run drift, which the interval does not
  see). Beside it, the geomean of bound_ms / median time (%-of-SOL) over the scenarios it ran.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, fields, replace
from itertools import groupby

from solbench.core.model import SUPERVISOR_OUT_OF_MEMORY, RunResult, Status
from solbench.core.policy import measuring_differences
from solbench.core.stats import geomean, geomean_ci, median
from solbench.leaderboard.entry import Entry, major_version, observe
from solbench.leaderboard.denominators import Denominator, choose_baseline_run, denominators, is_library, seed_impl

MIN_RANKED_COVERAGE = 0.5
"""The share of a board's scored scenarios an entry must support to be ranked (exactly half ranks)."""
REASON_SCENARIOS_SHOWN = 5
"""Scenarios named in a one-line reason; the full list is in Standing.wrong and the drill-down."""


@dataclass(frozen=True)
class View:
    """An entry's geomean speedup over one set of scenarios, with its 95 % interval."""

    score: float
    lo: float
    hi: float
    scenarios: int
    """How many scenarios it is over."""


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
    """Not supported by the entry: the weighted view counts it at fallback_ms."""
    fallback_impl: str = ""
    """Whose time it counts at: the fastest other library that ran it, else 'seed'."""
    fallback_ms: float | None = None
    """That time (None when the scenario is supported)."""


@dataclass(frozen=True)
class Standing:
    """An entry's place on its board: its ranks, or the reason it has none."""

    entry: Entry
    rank: int | None
    """1-based competition rank on the common set (the headline); None when not ranked."""
    tied: bool
    """True when its interval overlaps a neighbour's and the rank is shared."""
    score: float | None
    """Geomean speedup over the board's common set (the headline); None when not ranked."""
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
    """Ids of scored scenarios it does not support (the weighted view counts them at another library's time)."""
    own: View | None = None
    """Over every scored scenario it claims (partial, for information, when not ranked)."""
    claims: int = 0
    """Scored scenarios it supports: its coverage, of `scored`."""
    scored: int = 0
    """The board's scored scenarios (those with a denominator)."""
    weighted: View | None = None
    """Over every scored scenario, the unsupported ones at the fastest other library's time."""
    weighted_rank: int | None = None
    weighted_tied: bool = False
    narrow: bool = False
    """Too narrow to rank: it supports fewer than MIN_RANKED_COVERAGE of the scored scenarios (`reason` says
    how many)."""

    def to_dict(self) -> dict:
        """Plain JSON-able data: the entry's provenance without its run, and every scenario."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("entry", "scenarios")}
        d["wrong"] = list(self.wrong)
        d["fallback"] = list(self.fallback)
        d["own"] = asdict(self.own) if self.own else None
        d["weighted"] = asdict(self.weighted) if self.weighted else None
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
    """Ranked entries in headline order, then those too narrow to rank, then the others."""
    note: str = ""
    common: tuple[str, ...] = ()
    """The common set: scored scenarios every ranked entry supports, which the headline is over."""

    @property
    def ranked(self) -> list[Standing]:
        return [s for s in self.standings if not s.reason]

    @property
    def narrow(self) -> list[Standing]:
        """Correct, comparable entries supporting too few scored scenarios to rank, by own score."""
        return [s for s in self.standings if s.narrow]

    @property
    def apart(self) -> list[Standing]:
        """Entries not ranked for any other reason (wrong, incomparable, not run on every scenario)."""
        return [s for s in self.standings if s.reason and not s.narrow]

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in ("suite", "arch", "gpu_model", "suite_hash", "solbench_major",
                                           "baseline_run_id", "note")}
        d["common_scenarios"] = len(self.common)
        d["common"] = list(self.common)
        d["denominators"] = {k: asdict(v) for k, v in self.denominators.items()}
        d["min_ranked_coverage"] = MIN_RANKED_COVERAGE
        d["ranked"] = [s.to_dict() for s in self.ranked]
        d["narrow"] = [s.to_dict() for s in self.narrow]
        d["apart"] = [s.to_dict() for s in self.apart]
        return d


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
        standings = [_standing(e, ref_hash, major, denoms, arch, confidence, run.policy if run else None,
                               run.error_budget if run else None) for e in group]
        note = ""
        if run and run.scenario_count > len(denoms):
            note = (f"denominators for {len(denoms)} of {run.scenario_count} scenarios; "
                    "the others are left out of every score")
        standings, common = _rank_views(standings, denoms, confidence)
        boards.append(Board(suite, arch, gpu, ref_hash, major, run.run_id if run else "", denoms,
                            tuple(standings), note, common))
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
              confidence: float, base_policy: dict | None = None, base_budget: str | None = None) -> Standing:
    """The entry on its own: its scenarios, own score and coverage, or why it cannot rank (the common set
    and the weighted view need the whole board: _rank_views)."""
    reasons = _incomparable(e, ref_hash, major)
    if base_budget is not None and e.result.error_budget != base_budget:
        reasons.append(f"judged under error budget {e.result.error_budget!r}, the board's baselines under "
                       f"{base_budget!r}: record it again with this solbench")
    differ = measuring_differences(base_policy or {}, e.result.policy)
    if differ:
        reasons.append(f"timed differently from the recorded baselines ({', '.join(differ)})")
    if reasons:
        denoms = {}  # another suite's scenarios: their times are not comparable with these denominators
    rows, drifts = [], []
    seed = seed_impl(e.result)
    for o in e.result.outcomes:
        seen = observe(o, e.impl)
        t = median(seen.samples_ms) if seen.samples_ms else None
        d = denoms.get(o.scenario_id)
        b = o.bound or {}
        rows.append(ScenarioScore(
            o.scenario_id, seen.status.value, seen.reason, t, d.time_ms / t if d and t else None,
            d.time_ms if d else None, d.impl if d else "", 100.0 * b["bound_ms"] / t if t and b.get("bound_ms") else None,
            b.get("flops"), b.get("bytes"), str(o.scenario.get("dtype", "")) if o.scenario else "",
            bool(d and t is None and _declined(seen.status, seen.reason))))
        if d and t:
            own, anchor_ms = observe(o, d.impl), d.time_ms
            if not own.samples_ms and seed and d.seed_ms:  # the denominator's library is not in this run
                own, anchor_ms = observe(o, seed), d.seed_ms
            if own.samples_ms:
                drifts.append(median(own.samples_ms) / anchor_ms)
    # The supervisor running out of memory is not the entry being wrong: that scenario is only not timed, which
    # leaves it unranked where the scenario is scored (the coverage rule below), and costs nothing where not.
    wrong = [r for r in rows if Status(r.status).is_failure and not (r.reason or "").startswith(SUPERVISOR_OUT_OF_MEMORY)]
    timed = [r for r in rows if r.speedup is not None]
    narrow = False
    if wrong:
        named = "; ".join(f"{r.scenario_id} ({r.status}: {r.reason})" for r in wrong[:REASON_SCENARIOS_SHOWN])
        more = f"; and {len(wrong) - REASON_SCENARIOS_SHOWN} more" if len(wrong) > REASON_SCENARIOS_SHOWN else ""
        reasons.insert(0, f"wrong on {len(wrong)} scenario(s): {named}{more}")
    elif not reasons and not denoms:
        reasons.append(f"no recorded baseline run under baselines/{arch}/ for this suite hash on {e.gpu_model}")
    elif not reasons:
        accounted = {r.scenario_id for r in rows if r.speedup is not None or r.fallback}
        missing = [sid for sid in denoms if sid not in accounted]
        if missing:
            reasons.append(f"covers {len(accounted)} of {len(denoms)} scored scenarios; not timed: "
                           + ", ".join(missing[:REASON_SCENARIOS_SHOWN]) + (" ..." if len(missing) > REASON_SCENARIOS_SHOWN else ""))
        elif len(timed) < MIN_RANKED_COVERAGE * len(denoms):
            narrow = True
            why = "; ranking needs at least half"
            declined = Counter(r.reason for r in rows if r.speedup is None and r.reason)
            if not timed and declined:  # a library that claims none of the board: say why (its adapter's reason)
                why = f"; declines every one: {declined.most_common(1)[0][0]}"
            reasons.append(f"covers {len(timed)} of {len(denoms)} scored scenarios{why}")
    own = _view([_samples(e, r) for r in timed], confidence) if timed and not wrong else None
    sols = [r.sol_pct for r in rows if r.sol_pct]
    return Standing(e, None, False, None, None, None, geomean(sols) if sols and not wrong else None,
                    100.0 * (geomean(drifts) - 1.0) if drifts else None, "; ".join(reasons),
                    tuple(r.scenario_id for r in wrong), tuple(rows), own=own, claims=len(timed), scored=len(denoms),
                    narrow=narrow)


def _samples(e: Entry, row: ScenarioScore) -> list[float]:
    """Per-sample speedups of the entry on one scenario it ran."""
    o = next(o for o in e.result.outcomes if o.scenario_id == row.scenario_id)
    return [row.denominator_ms / x for x in observe(o, e.impl).samples_ms]


def _view(samples: list[list[float]], confidence: float) -> View:
    return View(*geomean_ci(samples, confidence), len(samples))


def _rank_views(standings: list[Standing], denoms: dict[str, Denominator],
                confidence: float) -> tuple[list[Standing], tuple[str, ...]]:
    """The headline on the common set of the ranked entries and the coverage-weighted view, each ranked;
    ranked entries in headline order (weighted order when no scenario is common), then those too narrow to
    rank, then the others; and the common set."""
    ok = [s for s in standings if not s.reason]
    claimed = [{r.scenario_id for r in s.scenarios if r.speedup is not None} for s in ok]
    common = tuple(sid for sid in denoms if all(sid in c for c in claimed)) if ok else ()
    others = _library_times([s for s in standings if not s.reason or s.narrow], denoms)
    scored = []
    for s in ok:
        rows = {r.scenario_id: _fallback(r, s.entry, others.get(r.scenario_id, {}), denoms[r.scenario_id])
                if r.fallback else r for r in s.scenarios}
        head = _view([_samples(s.entry, rows[sid]) for sid in common], confidence) if common else None
        per = [[r.denominator_ms / r.fallback_ms] if r.fallback else _samples(s.entry, r)
               for r in rows.values() if r.speedup is not None or (r.fallback and r.fallback_ms)]
        scored.append(replace(s, score=head and head.score, lo=head and head.lo, hi=head and head.hi,
                              scenarios=tuple(rows.values()), weighted=_view(per, confidence),
                              fallback=tuple(sid for sid, r in rows.items() if r.fallback)))
    scored = [replace(s, weighted_rank=r, weighted_tied=t) for s, (r, t) in _ranks(scored, lambda s: s.weighted)]
    if common:
        scored = [replace(s, rank=r, tied=t) for s, (r, t) in _ranks(scored, lambda s: s)]
    rest = sorted((s for s in standings if s.reason),
                  key=lambda s: (not s.narrow, s.own is None, -(s.own.score if s.own else 0), s.entry.name))
    return scored + rest, common


def _library_times(standings: list[Standing], denoms: dict[str, Denominator]) -> dict[str, dict[str, float]]:
    """Per scenario, {library: median ms}: the baseline run's passing libraries, then the library entries of
    `standings` (the board's ranked and too narrow ones) for libraries that run does not have."""
    out = {sid: dict(d.libraries_ms or {}) for sid, d in denoms.items()}
    for s in standings:
        if is_library(s.entry):
            for r in s.scenarios:
                if r.time_ms is not None and r.scenario_id in out:
                    out[r.scenario_id].setdefault(s.entry.impl, r.time_ms)
    return out


def _fallback(row: ScenarioScore, entry: Entry, libraries: dict[str, float], d: Denominator) -> ScenarioScore:
    """An unsupported scenario at the fastest other library's time, else the seed's (None: neither ran it)."""
    from solbench.baselines import current_name

    mine = current_name(entry.impl) if is_library(entry) else None
    others = {n: t for n, t in libraries.items() if current_name(n) != mine}
    if others:
        best = min(others, key=others.get)
        return replace(row, fallback_impl=current_name(best), fallback_ms=others[best])
    return replace(row, fallback_impl="seed", fallback_ms=d.seed_ms)


def _ranks(standings: list[Standing], view) -> list[tuple[Standing, tuple[int, bool]]]:
    """Standings sorted by view(s).score, best first, each with (competition rank, tied): one whose interval
    overlaps the previous one's shares its rank."""
    ordered = sorted(standings, key=lambda s: (-view(s).score, s.entry.name))
    ranks: list[tuple[int, bool]] = []
    for i, s in enumerate(ordered):
        prev = view(ordered[i - 1]) if i else None
        if prev and view(s).lo <= prev.hi and prev.lo <= view(s).hi:
            ranks[-1] = (ranks[-1][0], True)
            ranks.append((ranks[-1][0], True))
        else:
            ranks.append((i + 1, False))
    return list(zip(ordered, ranks))
