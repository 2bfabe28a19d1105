"""The gate: a per-scenario predicate over a RunResult, for agent stop hooks, CI and the pytest plugin.

Clauses, each judged per scenario so an aggregate cannot hide a shape the candidate is bad at:
- correct: every scenario passed; a wrong or a declined (skipped) scenario fails it and zeroes the score;
- no_regression (with BASE): the candidate's time in RESULTS vs its time in BASE, from both runs' raw
  samples. speedup = t_base / t_new with a bootstrap CI (stats.ratio_ci). A regression only when the
  whole CI lies below 1 - epsilon; a CI straddling 1 - epsilon is ambiguous (reported; fails only
  when strict). epsilon defaults to 2 %: the CI already covers each run's own sampling noise, and
  epsilon covers what no single pair of runs can show, run-to-run drift of clocks, temperature and
  driver state. Raise it on a machine whose runs drift more;
- min_ratio: every scenario's median speedup vs its best (fastest correct) comparator >= R;
- min_geomean: the suite score vs one comparator >= G, the score `solbench run` reports
  (solbench.report.tables.scores, and its headline vs 'upstream' and 'fastest': 0 when any scenario failed or
  was skipped; point estimate, its CI reported);
- min_sol: every scenario reaches >= F % of the speed of light: 100 * bound_ms / median time, the
  datasheet roofline, as the report's sol_pct column. A scenario without a bound is noted, not failed.
A clause nothing could be evaluated for (no comparable scenario, no bound anywhere) is 'unevaluated':
the report then cannot say PASS and the command exits 2.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from solbench import schemas
from solbench.core import stats
from solbench.core.errors import ConfigError
from solbench.core.model import Outcome, RunResult, Status
from solbench.core.options import DEFAULT_EPSILON
from solbench.core.policy import measuring_differences


class Incomparable(ConfigError):
    """RESULTS and BASE cannot be compared: another suite or suite version, another arch or GPU."""


class Verdict(str, enum.Enum):
    """One scenario under one clause."""

    PASS = "pass"
    FAIL = "fail"
    AMBIGUOUS = "ambiguous"
    UNEVALUATED = "unevaluated"


@dataclass(frozen=True)
class Criteria:
    """What to assert beyond correctness (always asserted)."""

    epsilon: float = DEFAULT_EPSILON
    """Regression margin: fail only when the speedup's CI lies wholly below 1 - epsilon."""
    strict: bool = False
    """Count ambiguous comparisons as failures."""
    min_ratio: float | None = None
    """Least median speedup per scenario vs its best comparator."""
    min_geomean: float | None = None
    """Least geomean speedup vs `comparator`."""
    comparator: str = "seed"
    """Comparator for min_geomean: 'seed', a baseline, 'best' (per round, the fastest comparator), 'upstream' (the
    arch's FA3 / FA4) or 'fastest' (per scenario, the fastest library: tables.headlines)."""
    min_sol_pct: float | None = None
    """Least percent of the speed of light per scenario (0-100]."""
    confidence: float = 0.95
    """Confidence of the per-scenario BASE comparison intervals."""
    n_resamples: int = 2000
    """Bootstrap resamples per interval."""
    seed: int = 0
    """Bootstrap seed: the same inputs always give the same report."""

    def __post_init__(self):
        if not 0 <= self.epsilon < 1:
            raise ConfigError(f"--epsilon must be in [0, 1), got {self.epsilon}")
        if self.min_sol_pct is not None and not 0 < self.min_sol_pct <= 100:
            raise ConfigError(f"--min-sol is a percentage in (0, 100], got {self.min_sol_pct}")
        for name in ("min_ratio", "min_geomean"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ConfigError(f"--{name.replace('_', '-')} must be positive, got {value}")


@dataclass(frozen=True)
class Item:
    """One scenario's verdict under one clause, with the numbers behind it."""

    scenario_id: str
    """Scenario id ('' for a run-level item, e.g. an incomplete run)."""
    verdict: Verdict
    message: str
    """One line saying why, with the numbers."""
    numbers: dict = field(default_factory=dict)
    """The values the verdict was made from (medians in ms, ratios, CI ends, thresholds)."""


@dataclass(frozen=True)
class Clause:
    """One asserted property and its per-scenario items."""

    name: str
    """'correct', 'no_regression', 'min_ratio', 'min_geomean' or 'min_sol'."""
    passed: bool | None
    """None when nothing could be evaluated."""
    summary: str
    """One line."""
    items: tuple[Item, ...] = ()
    numbers: dict = field(default_factory=dict)
    """Clause-level values (the geomean and its CI)."""


@dataclass(frozen=True)
class CheckReport:
    """Every clause asked for, in a fixed order."""

    clauses: tuple[Clause, ...]
    results_run: str
    base_run: str | None = None

    @property
    def passed(self) -> bool | None:
        """False if any clause failed; None if none failed but one could not be evaluated."""
        if any(c.passed is False for c in self.clauses):
            return False
        return None if any(c.passed is None for c in self.clauses) else True

    @property
    def exit_code(self) -> int:
        return {True: 0, False: 1, None: 2}[self.passed]

    def clause(self, name: str) -> Clause:
        return next(c for c in self.clauses if c.name == name)

    def to_dict(self) -> dict:
        return {
            "schema": schemas.CHECK, "ok": True,
            "result": {True: "pass", False: "fail", None: "unevaluated"}[self.passed],
            "passed": self.passed, "exit_code": self.exit_code,
            "results_run": self.results_run, "base_run": self.base_run,
            "clauses": [{"name": c.name, "passed": c.passed, "summary": c.summary, "numbers": c.numbers,
                         "items": [{"scenario_id": i.scenario_id, "verdict": i.verdict.value, "message": i.message,
                                    "numbers": i.numbers} for i in c.items]} for c in self.clauses],
        }


def gpu_name(environment: dict) -> str | None:
    """The GPU named in a run's environment manifest, or None (a CPU run)."""
    gpu = environment.get("gpu")
    if isinstance(gpu, dict):
        return gpu.get("name")
    return gpu if isinstance(gpu, str) else environment.get("gpu_name")


def ensure_comparable(results: RunResult, base: RunResult) -> None:
    """Raise Incomparable unless both runs used the same suite version, were judged under the same error budget
    (RunResult.error_budget), on the same arch and GPU, timed the
    same way (policy.MEASURING_FIELDS, where both recorded them)."""
    if (results.suite, results.suite_hash) != (base.suite, base.suite_hash):
        what = "another version of suite" if results.suite == base.suite else "suite"
        raise Incomparable(f"BASE {base.run_id} ran {what} {base.suite!r} (hash {base.suite_hash[:12]}), RESULTS "
                           f"{results.run_id} ran {results.suite!r} (hash {results.suite_hash[:12]}): not comparable")
    if results.error_budget != base.error_budget:
        raise Incomparable(f"BASE {base.run_id} was judged under error budget {base.error_budget!r}, RESULTS "
                           f"{results.run_id} under {results.error_budget!r}: not comparable; rerun BASE with this solbench")
    if results.arch != base.arch:
        raise Incomparable(f"BASE ran on arch {base.arch!r}, RESULTS on {results.arch!r}: not comparable")
    ours, theirs = gpu_name(results.environment), gpu_name(base.environment)
    if ours != theirs:
        raise Incomparable(f"BASE ran on GPU {theirs or 'none'}, RESULTS on {ours or 'none'}: not comparable")
    differ = measuring_differences(base.policy, results.policy)
    if differ:
        raise Incomparable(f"BASE and RESULTS were timed differently ({', '.join(differ)}; e.g. --quick against a "
                           "full run): not comparable")


def _clause(name: str, items: list[Item], summary: str, strict: bool = False, numbers: dict | None = None) -> Clause:
    failing = {Verdict.FAIL, Verdict.AMBIGUOUS} if strict else {Verdict.FAIL}
    if any(i.verdict in failing for i in items):
        passed = False
    else:
        passed = True if any(i.verdict is not Verdict.UNEVALUATED for i in items) else None
    return Clause(name, passed, summary, tuple(items), numbers or {})


def _candidate_ms(o: Outcome) -> tuple[float, ...] | None:
    m = o.measurements.get("candidate")
    return m.samples_ms if (m is not None and o.status is Status.PASSED) else None


def _correctness(results: RunResult) -> Clause:
    # A skipped (declined) scenario fails too: otherwise a candidate could dodge every scenario it would
    # regress on by declining it.
    items = [Item(o.scenario_id, Verdict.PASS if o.status is Status.PASSED else Verdict.FAIL,
                  o.status.value if o.status is Status.PASSED else f"{o.status.value}: {o.reason}",
                  {"status": o.status.value, "reason": o.reason}) for o in results.outcomes]
    missing = results.scenario_count - len(results.outcomes)
    if missing > 0 or not results.outcomes:
        items.append(Item("", Verdict.FAIL, f"run incomplete: {len(results.outcomes)} of {results.scenario_count} "
                          "scenarios finished (finish it with solbench run --resume)",
                          {"finished": len(results.outcomes), "scenario_count": results.scenario_count}))
    wrong = sum(i.verdict is Verdict.FAIL for i in items)
    return _clause("correct", items, f"{len(results.outcomes) - wrong}/{results.scenario_count} scenarios correct")


def compare_to_base(new: Outcome, old: Outcome | None, criteria: Criteria) -> Item:
    """The no_regression verdict of one scenario: candidate time in `old` (BASE) vs in `new`."""
    sid = new.scenario_id
    new_ms = _candidate_ms(new)
    if new_ms is None:
        return Item(sid, Verdict.UNEVALUATED, f"no candidate timing in RESULTS ({new.status.value})")
    if old is None:
        return Item(sid, Verdict.UNEVALUATED, "not in BASE")
    old_ms = _candidate_ms(old)
    if old_ms is None:
        return Item(sid, Verdict.UNEVALUATED, f"no candidate timing in BASE ({old.status.value})")
    r, lo, hi = stats.ratio_ci(old_ms, new_ms, criteria.confidence, criteria.n_resamples, criteria.seed)
    threshold = 1.0 - criteria.epsilon
    numbers = {"speedup": r, "ci_low": lo, "ci_high": hi, "threshold": threshold, "confidence": criteria.confidence,
               "base_median_ms": stats.median(old_ms), "new_median_ms": stats.median(new_ms),
               "base_samples": len(old_ms), "new_samples": len(new_ms)}
    ci = f"{criteria.confidence:.0%} CI {lo:.3f}-{hi:.3f}"
    if hi < threshold:
        return Item(sid, Verdict.FAIL, f"{r:.3f}x vs BASE ({ci}): {1 / r - 1:.1%} slower "
                    f"({numbers['base_median_ms']:.4g} -> {numbers['new_median_ms']:.4g} ms); "
                    f"the whole CI is below {threshold:.3f}", numbers)
    if lo < threshold:
        return Item(sid, Verdict.AMBIGUOUS, f"{r:.3f}x vs BASE ({ci}) straddles {threshold:.3f}: "
                    "neither a regression nor clear of one", numbers)
    return Item(sid, Verdict.PASS, f"{r:.3f}x vs BASE ({ci})", numbers)


def _no_regression(results: RunResult, base: RunResult, criteria: Criteria) -> Clause:
    base_by_id = {o.scenario_id: o for o in base.outcomes}
    items = [compare_to_base(o, base_by_id.get(o.scenario_id), criteria) for o in results.outcomes]
    counts = {v: sum(i.verdict is v for i in items) for v in Verdict}
    summary = (f"{counts[Verdict.PASS] + counts[Verdict.FAIL] + counts[Verdict.AMBIGUOUS]} compared vs {base.run_id}: "
               f"{counts[Verdict.FAIL]} regressed, {counts[Verdict.AMBIGUOUS]} ambiguous (epsilon {criteria.epsilon:g})")
    return _clause("no_regression", items, summary, strict=criteria.strict)


def comparator_medians(o: Outcome) -> dict[str, float]:
    """Median speedup vs each comparator that ran and was itself correct on this scenario."""
    out = {}
    for name, ratios in o.ratios.items():
        status = (o.comparators.get(name) or {}).get("status", Status.PASSED.value)
        if ratios and status == Status.PASSED.value:
            out[name] = stats.median(ratios)
    return out


def _min_ratio(results: RunResult, min_ratio: float) -> Clause:
    items = []
    for o in results.outcomes:
        if _candidate_ms(o) is None:
            continue
        medians = comparator_medians(o)
        if not medians:
            items.append(Item(o.scenario_id, Verdict.UNEVALUATED, "no correct comparator ran on this scenario"))
            continue
        best = min(medians, key=medians.get)  # the fastest comparator gives the smallest speedup
        r = medians[best]
        verdict = Verdict.PASS if r >= min_ratio else Verdict.FAIL
        items.append(Item(o.scenario_id, verdict, f"{r:.3f}x vs {best} (best of {', '.join(sorted(medians))}) "
                          f"{'>=' if verdict is Verdict.PASS else '<'} {min_ratio:g}x",
                          {"speedup": r, "comparator": best, "min_ratio": min_ratio, "all": medians}))
    return _clause("min_ratio", items, f"median speedup vs the best comparator >= {min_ratio:g}x on every scenario")


def _min_geomean(results: RunResult, criteria: Criteria) -> Clause:
    """The suite score exactly as `solbench run` reports it (solbench.report.tables.scores): 0 when any scenario
    failed or was skipped, else the geomean over scenarios of the median per-round speedup, 95 % CI."""
    from solbench.report.tables import headlines, scores

    name, target = criteria.comparator, criteria.min_geomean
    every = [*scores(results), *(h.score for h in headlines(results))]
    score = next((s for s in every if s.comparator == name and (s.scenarios or s.failed)), None)
    if score is None:
        return Clause("min_geomean", None, f"no scenario has a {name} timing: geomean not evaluated")
    numbers = {"geomean": score.geomean, "ci_low": score.lo, "ci_high": score.hi, "comparator": name,
               "scenarios": score.scenarios, "min_geomean": target, "failed": list(score.failed)}
    passed = score.geomean >= target
    if score.failed:
        summary = (f"score 0 vs {name}: {len(score.failed)} scenario(s) not passed ({', '.join(score.failed[:3])}"
                   f"{', ...' if len(score.failed) > 3 else ''}) < {target:g}x")
    else:
        summary = (f"{score.geomean:.3f}x vs {name} over {score.scenarios} scenarios (95% CI {score.lo:.3f}-"
                   f"{score.hi:.3f}) {'>=' if passed else '<'} {target:g}x")
    return Clause("min_geomean", passed, summary, (), numbers)


def _min_sol(results: RunResult, min_pct: float) -> Clause:
    items = []
    for o in results.outcomes:
        ms = _candidate_ms(o)
        if ms is None:
            continue
        bound_ms = (o.bound or {}).get("bound_ms")
        if not bound_ms:
            items.append(Item(o.scenario_id, Verdict.UNEVALUATED, f"no roofline bound on arch {results.arch}: "
                              "%-of-SOL not evaluated for this scenario"))
            continue
        t = stats.median(ms)
        pct = 100.0 * bound_ms / t
        verdict = Verdict.PASS if pct >= min_pct else Verdict.FAIL
        items.append(Item(o.scenario_id, verdict, f"{pct:.1f}% of SOL (bound {bound_ms:.4g} ms, median {t:.4g} ms) "
                          f"{'>=' if verdict is Verdict.PASS else '<'} {min_pct:g}%",
                          {"pct_sol": pct, "bound_ms": bound_ms, "median_ms": t, "min_sol_pct": min_pct}))
    return _clause("min_sol", items, f">= {min_pct:g}% of the speed of light on every scenario with a bound")


def evaluate(results: RunResult, base: RunResult | None, criteria: Criteria) -> CheckReport:
    """Judge `results` (against `base` if given) on `criteria`; raises Incomparable for mismatched runs."""
    if base is not None:
        ensure_comparable(results, base)
    clauses = [_correctness(results)]
    if base is not None:
        clauses.append(_no_regression(results, base, criteria))
    if criteria.min_ratio is not None:
        clauses.append(_min_ratio(results, criteria.min_ratio))
    if criteria.min_geomean is not None:
        clauses.append(_min_geomean(results, criteria))
    if criteria.min_sol_pct is not None:
        clauses.append(_min_sol(results, criteria.min_sol_pct))
    return CheckReport(tuple(clauses), results.run_id, base.run_id if base is not None else None)


def render_lines(report: CheckReport) -> list[str]:
    """Text for people: a line per failing, ambiguous or unevaluated item, then the verdict line."""
    tags = {Verdict.FAIL: "FAIL", Verdict.AMBIGUOUS: "AMBIGUOUS", Verdict.UNEVALUATED: "NOTE"}
    lines = []
    for c in report.clauses:
        notes: dict[str, list[str]] = {}
        for i in c.items:
            if i.verdict is Verdict.UNEVALUATED:
                notes.setdefault(i.message, []).append(i.scenario_id)
            elif i.verdict in tags:
                lines.append(f"{tags[i.verdict]} {c.name} {i.scenario_id or '(run)'}: {i.message}")
        for message, ids in notes.items():  # the same note on many scenarios is one line
            where = ids[0] if len(ids) == 1 else f"({len(ids)} scenarios, e.g. {ids[0]})"
            lines.append(f"NOTE {c.name} {where}: {message}")
        if c.name == "min_geomean" or (c.passed is None and not c.items):
            lines.append(f"{'PASS' if c.passed else 'FAIL' if c.passed is False else 'NOTE'} {c.name}: {c.summary}")
    word = {True: "PASS", False: "FAIL", None: "COULD NOT EVALUATE"}[report.passed]
    lines.append(f"{word}: " + "; ".join(f"{c.name} {'ok' if c.passed else 'FAILED' if c.passed is False else 'unevaluated'}"
                                         f" ({c.summary})" for c in report.clauses))
    return lines
