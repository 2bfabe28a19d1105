"""The agent summary: the same keys on every per-scenario row whatever the comparators did, null where a
value does not apply, each comparator under `comparators` on every row; the exit code it reports."""

import jsonschema
import pytest

from solbench import schemas
from solbench.core.model import ErrorStats, Measurement, Outcome, RunResult, Status
from solbench.report.summary import exit_code, summary_dict

ERROR = ErrorStats(max_abs=1e-3, mean_abs=1e-4, frac_outside_tol=0.0, atol=1e-2, rtol=1e-2)


def timed(*names, ms=1.0):
    return {n: Measurement(n, (ms, ms * 1.01, ms * 0.99), "cuda_events") for n in names}


def mixed_run(complete: bool = True) -> RunResult:
    """Three scenarios: all comparators timed; fa3 declined (skipped); the candidate wrong (nothing timed)."""
    all_timed = Outcome("s1", {}, Status.PASSED, error=ERROR, measurements=timed("candidate", "seed", "fa3"),
                        ratios={"seed": (2.0, 2.1), "fa3": (0.5, 0.6)},
                        comparators={"seed": {"status": "passed", "reason": ""}, "fa3": {"status": "passed", "reason": ""}},
                        bound={"bound_ms": 0.25})
    fa3_declined = Outcome("s2", {}, Status.PASSED, error=ERROR, measurements=timed("candidate", "seed"),
                           ratios={"seed": (3.0, 3.0)},
                           comparators={"seed": {"status": "passed", "reason": ""},
                                        "fa3": {"status": "skipped", "reason": "not supported: no sinks"}})
    wrong = Outcome("s3", {}, Status.MISMATCH, reason="3 % of elements off",
                    comparators={"seed": {"status": "passed", "reason": ""}, "fa3": {"status": "timeout", "reason": "hung"}})
    return RunResult("r", "smoke", "a" * 64, {"name": "k.cu", "implementations": {"candidate": "k.cu", "seed": "seed.cu",
                                                                                "fa3": "fa3 0.0.3"}},
                     "h200", {}, {}, (all_timed, fa3_declined, wrong), complete, 3)


def test_every_row_has_the_same_keys_and_every_comparator():
    doc = summary_dict(mixed_run())
    rows = doc["per_scenario"]
    assert doc["comparators"] == ["seed", "fa3"]
    assert len({tuple(r) for r in rows}) == 1
    assert all(list(r["comparators"]) == ["seed", "fa3"] for r in rows)
    assert all(set(cell) == {"status", "reason", "time_us", "speedup"} for r in rows for cell in r["comparators"].values())


def test_values_that_do_not_apply_are_null():
    s1, s2, s3 = summary_dict(mixed_run())["per_scenario"]
    assert s1["sol_pct"] == pytest.approx(25.0) and s1["comparators"]["fa3"]["speedup"] == pytest.approx(0.55)
    assert s2["sol_pct"] is None
    assert s2["comparators"]["fa3"] == {"status": "skipped", "reason": "not supported: no sinks", "time_us": None,
                                        "speedup": None}
    assert (s3["time_us"], s3["noise_pct"], s3["max_abs_err"], s3["input_copies"]) == (None, None, None, None)
    assert s3["comparators"]["seed"] == {"status": "passed", "reason": "", "time_us": None, "speedup": None}


def test_failures_and_the_exit_code():
    doc = summary_dict(mixed_run(), "reports/r/results.json")
    assert doc["exit_code"] == 1 and doc["passed"] is False and doc["ok"] is True
    assert doc["failed"] == [{"scenario": "s3", "status": "mismatch", "reason": "3 % of elements off"}]
    assert doc["comparator_failures"] == [{"scenario": "s3", "comparator": "fa3", "status": "timeout", "reason": "hung"}]
    jsonschema.Draft202012Validator(schemas.load("summary")).validate(doc)


def test_only_a_complete_run_of_passed_scenarios_exits_0():
    passed = RunResult("r", "smoke", "a" * 64, {}, "cpu", {}, {}, mixed_run().outcomes[:2], True, 2)
    assert exit_code(passed) == 0
    assert exit_code(RunResult("r", "smoke", "a" * 64, {}, "cpu", {}, {}, passed.outcomes, False, 3)) == 1
    skipped = Outcome("s4", {}, Status.SKIPPED, reason="declined")
    assert exit_code(RunResult("r", "smoke", "a" * 64, {}, "cpu", {}, {}, (*passed.outcomes, skipped), True, 3)) == 1
