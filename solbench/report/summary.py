"""The agent summary of a run: the one JSON object `solbench run --json` and `solbench report --format
json` print (`"schema": "solbench.summary/1"`, solbench/schemas/summary.schema.json).

Every per-scenario row has the same keys whatever the comparators: a value that does not apply is null,
and each comparator of the run has its own entry under `comparators`, on every row.
"""

from __future__ import annotations

from solbench import schemas
from solbench.core.model import Outcome, RunResult, Status
from solbench.core.stats import median
from solbench.report.tables import fewer_input_copies, noise_pct, scores, status_counts


def all_passed(result: RunResult) -> bool:
    """Every scenario of the suite ran and passed: the only case `run` and `report` exit 0."""
    return result.complete and all(o.status is Status.PASSED for o in result.outcomes)


def exit_code(result: RunResult) -> int:
    return 0 if all_passed(result) else 1


def comparators_of(result: RunResult) -> list[str]:
    """The run's comparators in report order: the implementations besides the candidate, then any other
    name an outcome mentions (an older file may lack the implementations list)."""
    names = [n for n in result.candidate.get("implementations", {}) if n != "candidate"]
    for o in result.outcomes:
        names += [n for n in (*o.comparators, *o.ratios) if n not in names]
    return names


def summary_dict(result: RunResult, results_path: str | None = None) -> dict:
    """What an agent needs from a run, as one JSON-able object: counts, each score with its interval (or
    why it is 0), every failing scenario and comparator with the reason, and the per-scenario rows."""
    from solbench.report.yardsticks import upstream

    names = comparators_of(result)
    up = upstream(result)
    return {
        "schema": schemas.SUMMARY, "ok": True, "exit_code": exit_code(result),
        "run_id": result.run_id, "suite": result.suite, "arch": result.arch, "complete": result.complete,
        "scenarios_done": len(result.outcomes), "scenarios_total": result.scenario_count,
        "passed": all_passed(result),
        "status_counts": status_counts(result),
        "comparators": names,
        "scores": [{"comparator": s.comparator, "geomean": s.geomean, "ci95": None if s.failed else [s.lo, s.hi],
                    "scenarios": s.scenarios, "zero_because": list(s.failed)} for s in scores(result)],
        "headline": _headline(result),
        "failed": [{"scenario": o.scenario_id, "status": o.status.value, "reason": o.reason}
                   for o in result.outcomes if o.status is not Status.PASSED],
        "comparator_failures": [{"scenario": o.scenario_id, "comparator": name, "status": c["status"],
                                 "reason": c["reason"]}
                                for o in result.outcomes for name, c in o.comparators.items()
                                if Status(c["status"]).is_failure],
        "fewer_input_copies": fewer_input_copies(result),
        "per_scenario": [scenario_row(o, names, up) for o in result.outcomes],
        "results": results_path,
        "triage": _triage(result),
    }


def _triage(result: RunResult) -> dict:
    from solbench.report.triage import run_triage, triage_dict

    return triage_dict(*run_triage(result))


def _headline(result: RunResult) -> dict:
    """The suite vs the arch's upstream library and vs the fastest available one (tables.headlines), each
    null where the run has no such yardstick, and the sentence the report prints."""
    from solbench.report.tables import headline_line, headlines

    hs = headlines(result)
    out = {"upstream": None, "fastest": None, "text": headline_line(hs) if hs else None}
    for h in hs:
        s = h.score
        out["upstream" if h.comparator else "fastest"] = {
            "library": h.label, "comparator": h.comparator, "geomean": s.geomean,
            "ci95": None if s.failed or not s.scenarios else [s.lo, s.hi], "scenarios": s.scenarios,
            "scenarios_total": h.scenarios_total, "zero_because": list(s.failed)}
    return out


def scenario_row(o: Outcome, comparators: list[str], up=None) -> dict:
    """One scenario: the candidate's verdict, error, time, noise and %-of-SOL; per comparator its own
    verdict, time and the candidate's speedup over it (median per-round t_comparator / t_candidate); the
    same for the arch's upstream library (`up`, yardsticks.upstream) and for the fastest library that passed."""
    from solbench.report.yardsticks import cell, fastest

    cand = o.measurements.get("candidate")
    time_ms = median(cand.samples_ms) if cand else None
    return {
        "scenario": o.scenario_id,
        "status": o.status.value,
        "reason": o.reason,
        "max_abs_err": o.error.max_abs if o.error else None,
        "time_us": time_ms * 1e3 if time_ms else None,
        "noise_pct": noise_pct(cand.samples_ms) if cand else None,
        "sol_pct": o.bound["bound_ms"] / time_ms * 100 if o.bound and time_ms else None,
        "input_copies": o.input_copies,
        "comparators": {name: _comparator_cell(o, name) for name in comparators},
        "upstream": {"library": up.library, **cell(o, up.comparator)} if up else None,
        "fastest": cell(o, name) if (name := fastest(o)) else None,
    }


def _comparator_cell(o: Outcome, name: str) -> dict:
    check = o.comparators.get(name) or {}
    timed = o.measurements.get(name)
    ratios = o.ratios.get(name)
    return {
        "status": check.get("status"),
        "reason": check.get("reason"),
        "time_us": median(timed.samples_ms) * 1e3 if timed else None,
        "speedup": median(ratios) if ratios else None,
    }
