"""solbench.report.check and `solbench check`: each clause fails for the right reason, and only then."""

import json

import numpy as np
import pytest

import synthetic_runs as syn
from solbench.front import cli
from solbench.supervisor import run_files
from solbench.report.check import Criteria, Incomparable, Verdict, evaluate, render_lines
from solbench.core.errors import ConfigError


def write(tmp_path, result, name):
    path = tmp_path / name
    path.write_text(json.dumps(result.to_dict()))
    return str(path)


def verdicts(report, clause):
    return {i.scenario_id: i.verdict for i in report.clause(clause).items}


def test_same_kernel_twice_passes():
    base, new = syn.pair()
    report = evaluate(new, base, Criteria())
    assert report.passed is True and report.exit_code == 0
    assert set(verdicts(report, "no_regression").values()) == {Verdict.PASS}
    assert render_lines(report)[-1].startswith("PASS")


def test_wrong_scenario_is_named_with_status_and_reason():
    rng = np.random.default_rng(1)
    ids = syn.scenario_ids(3)
    result = syn.run([syn.outcome(ids[0], rng), syn.outcome(ids[1], rng, status="mismatch", reason="max_abs 0.3 > tol"),
                      syn.outcome(ids[2], rng, status="skipped", reason="fp8 unsupported")])
    report = evaluate(result, None, Criteria())
    assert report.passed is False and report.exit_code == 1
    # A declined (skipped) scenario fails too: declining must not be a way around the gate.
    assert verdicts(report, "correct") == {ids[0]: Verdict.PASS, ids[1]: Verdict.FAIL, ids[2]: Verdict.FAIL}
    lines = render_lines(report)
    assert any(ids[1] in line and "mismatch" in line and "max_abs 0.3 > tol" in line for line in lines)
    assert lines[-1].startswith("FAIL")


def test_planted_regression_flags_exactly_those_scenarios():
    slowed = {1: 0.05, 4: 0.05, 6: 0.05}
    base, new = syn.pair(n=8, slow=slowed)
    report = evaluate(new, base, Criteria())
    v = verdicts(report, "no_regression")
    ids = syn.scenario_ids(8)
    assert {s for s, x in v.items() if x is Verdict.FAIL} == {ids[i] for i in slowed}
    assert {s for s, x in v.items() if x is Verdict.PASS} == {ids[i] for i in range(8) if i not in slowed}
    item = next(i for i in report.clause("no_regression").items if i.scenario_id == ids[4])
    assert item.numbers["speedup"] == pytest.approx(1 / 1.05, rel=0.01)
    assert item.numbers["ci_high"] < 0.98
    assert report.exit_code == 1
    assert any(ids[4] in line and "slower" in line and "CI" in line for line in render_lines(report))


def test_faster_candidate_is_not_a_regression():
    base, new = syn.pair(n=4, slow={0: -0.2, 1: -0.01})
    assert evaluate(new, base, Criteria()).passed is True


def test_ambiguous_is_reported_and_fails_only_when_strict():
    base, new = syn.pair(n=3, slow={0: 0.02}, noise=0.03)
    report = evaluate(new, base, Criteria())
    sid = syn.scenario_ids(3)[0]
    assert verdicts(report, "no_regression")[sid] is Verdict.AMBIGUOUS
    item = report.clause("no_regression").items[0]
    assert item.numbers["ci_low"] < 0.98 <= item.numbers["ci_high"]
    assert report.passed is True
    assert any(line.startswith("AMBIGUOUS no_regression " + sid) for line in render_lines(report))
    assert evaluate(new, base, Criteria(strict=True)).passed is False


def test_larger_epsilon_forgives_a_small_slowdown():
    base, new = syn.pair(n=2, slow={0: 0.05})
    assert evaluate(new, base, Criteria(epsilon=0.02)).passed is False
    assert evaluate(new, base, Criteria(epsilon=0.10)).passed is True


@pytest.mark.parametrize("change", [dict(suite="hopper"), dict(suite_hash="b" * 64), dict(gpu="NVIDIA H100"),
                                    dict(arch="b200"), dict(policy={"cold_l2": False})])
def test_mismatched_runs_cannot_be_compared(change):
    base, _ = syn.pair(n=2)
    _, new = syn.pair(n=2, **change)
    with pytest.raises(Incomparable):
        evaluate(new, base, Criteria())


def test_runs_judged_under_different_error_budgets_cannot_be_compared():
    """A recorded run judged under the legacy budget (no error_budget in its file) is no BASE for a run of today's."""
    from dataclasses import replace

    from solbench.core.model import LEGACY_ERROR_BUDGET, RunResult

    base, new = syn.pair(n=2)
    legacy = RunResult.from_dict({k: v for k, v in base.to_dict().items() if k != "error_budget"})
    assert legacy.error_budget == LEGACY_ERROR_BUDGET != new.error_budget
    with pytest.raises(Incomparable, match="error budget"):
        evaluate(new, legacy, Criteria())
    assert evaluate(replace(new, error_budget=LEGACY_ERROR_BUDGET), legacy, Criteria()).passed is True


def test_policies_differing_only_in_sampling_effort_compare():
    base, _ = syn.pair(n=2, policy={"cold_l2": True, "warmup_ms": 100.0, "min_rounds": 4})
    _, new = syn.pair(n=2, policy={"cold_l2": True, "warmup_ms": 30.0, "min_rounds": 3})
    assert evaluate(new, base, Criteria()).passed is True


def test_incomplete_run_is_not_correct():
    rng = np.random.default_rng(0)
    result = syn.run([syn.outcome(s, rng) for s in syn.scenario_ids(2)], scenario_count=5)
    report = evaluate(result, None, Criteria())
    assert report.passed is False
    assert "2 of 5" in report.clause("correct").items[-1].message


def test_min_ratio_names_the_best_comparator():
    rng = np.random.default_rng(2)
    ids = syn.scenario_ids(3)
    result = syn.run([syn.outcome(ids[0], rng, speedups={"seed": 3.0, "fa3": 1.2}),
                      syn.outcome(ids[1], rng, speedups={"seed": 3.0, "fa3": 0.8}),
                      # a wrong comparator does not count as the best one
                      syn.outcome(ids[2], rng, speedups={"seed": 3.0, "cudnn": 0.5}, comparator_status={"cudnn": "mismatch"})])
    report = evaluate(result, None, Criteria(min_ratio=1.0))
    assert verdicts(report, "min_ratio") == {ids[0]: Verdict.PASS, ids[1]: Verdict.FAIL, ids[2]: Verdict.PASS}
    failing = next(i for i in report.clause("min_ratio").items if i.verdict is Verdict.FAIL)
    assert failing.numbers["comparator"] == "fa3" and "fa3" in failing.message


def test_min_geomean_point_ci_and_zero_score_when_wrong():
    rng = np.random.default_rng(3)
    ids = syn.scenario_ids(2)
    result = syn.run([syn.outcome(ids[0], rng, speedups={"seed": 2.0}), syn.outcome(ids[1], rng, speedups={"seed": 8.0})])
    clause = evaluate(result, None, Criteria(min_geomean=3.0)).clause("min_geomean")
    assert clause.passed is True
    assert clause.numbers["geomean"] == pytest.approx(4.0, rel=0.01)
    assert clause.numbers["ci_low"] < clause.numbers["geomean"] < clause.numbers["ci_high"]
    assert evaluate(result, None, Criteria(min_geomean=5.0)).clause("min_geomean").passed is False
    unknown = evaluate(result, None, Criteria(min_geomean=1.0, comparator="fa4"))
    assert unknown.clause("min_geomean").passed is None and unknown.exit_code == 2
    wrong = syn.run([syn.outcome(ids[0], rng, speedups={"seed": 9.0}), syn.outcome(ids[1], rng, status="nonfinite")])
    clause = evaluate(wrong, None, Criteria(min_geomean=1.0)).clause("min_geomean")
    assert clause.passed is False and clause.numbers["geomean"] == 0.0


def test_min_sol_judges_scenarios_with_a_bound_and_notes_the_rest():
    rng = np.random.default_rng(4)
    ids = syn.scenario_ids(3)
    result = syn.run([syn.outcome(ids[0], rng, median_ms=1.0, bound_ms=0.6), syn.outcome(ids[1], rng, median_ms=1.0, bound_ms=0.3),
                      syn.outcome(ids[2], rng, median_ms=1.0)])
    report = evaluate(result, None, Criteria(min_sol_pct=50))
    assert verdicts(report, "min_sol") == {ids[0]: Verdict.PASS, ids[1]: Verdict.FAIL, ids[2]: Verdict.UNEVALUATED}
    assert report.clause("min_sol").items[1].numbers["pct_sol"] == pytest.approx(30, rel=0.02)
    assert any(line.startswith("NOTE min_sol " + ids[2]) for line in render_lines(report))
    no_bounds = syn.run([syn.outcome(ids[2], rng)])
    assert evaluate(no_bounds, None, Criteria(min_sol_pct=50)).exit_code == 2


@pytest.mark.parametrize("kw", [dict(epsilon=1.5), dict(min_sol_pct=0), dict(min_sol_pct=150), dict(min_ratio=-1)])
def test_criteria_validation(kw):
    with pytest.raises(ConfigError):
        Criteria(**kw)


def test_cli_exit_codes(tmp_path, capsys):
    base, new = syn.pair(n=4)
    _, slow = syn.pair(n=4, slow={2: 0.05})
    _, other_gpu = syn.pair(n=4, gpu="NVIDIA H100")
    _, other_suite = syn.pair(n=4, suite_hash="c" * 64)
    b, n, s = write(tmp_path, base, "base.json"), write(tmp_path, new, "new.json"), write(tmp_path, slow, "slow.json")
    assert cli.main(["check", n, "--against", b]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("PASS")
    assert cli.main(["check", s, "--against", b]) == 1
    out = capsys.readouterr().out
    assert syn.scenario_ids(4)[2] in out and out.splitlines()[-1].startswith("FAIL")
    assert cli.main(["check", write(tmp_path, other_gpu, "gpu.json"), "--against", b]) == 2
    assert cli.main(["check", write(tmp_path, other_suite, "suite.json"), "--against", b]) == 2
    err = capsys.readouterr().err
    assert "NVIDIA H100" in err and "not comparable" in err and "Traceback" not in err
    assert cli.main(["check", str(tmp_path / "missing.json")]) == 2
    (tmp_path / "bad.json").write_text("{not json")
    assert cli.main(["check", str(tmp_path / "bad.json")]) == 2
    (tmp_path / "schema.json").write_text(json.dumps({"schema": "other/9"}))
    assert cli.main(["check", str(tmp_path / "schema.json")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 3


def test_cli_json_shape(tmp_path, capsys):
    base, _ = syn.pair(n=4)
    _, slow = syn.pair(n=4, slow={0: 0.05})
    args = ["check", write(tmp_path, slow, "slow.json"), "--against", write(tmp_path, base, "base.json"),
            "--min-geomean", "1.5", "--json"]
    assert cli.main(args) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["result"] == "fail" and doc["passed"] is False and doc["exit_code"] == 1
    clauses = {c["name"]: c for c in doc["clauses"]}
    assert list(clauses) == ["correct", "no_regression", "min_geomean"]
    assert clauses["no_regression"]["passed"] is False
    item = clauses["no_regression"]["items"][0]
    assert set(item) == {"scenario_id", "verdict", "message", "numbers"} and item["verdict"] == "fail"
    assert {"speedup", "ci_low", "ci_high", "threshold"} <= set(item["numbers"])
    assert clauses["min_geomean"]["numbers"]["geomean"] == pytest.approx(2.0, rel=0.02)
    assert cli.main(["check", str(tmp_path / "nope.json"), "--json"]) == 2
    err_doc = json.loads(capsys.readouterr().out)
    assert err_doc["result"] == "error" and "nope.json" in err_doc["error"]


def test_pytest_benchmark_file_serves_as_base(tmp_path, capsys):
    pytest.importorskip("pytest_benchmark")
    base, new = syn.pair(n=3)
    doc = run_files.add_to_benchmark_doc({"machine_info": {"node": "x"}, "benchmarks": [], "version": "5"}, base)
    samples_ms = base.outcomes[0].measurements["candidate"].samples_ms
    assert doc["benchmarks"][0]["stats"]["median"] == pytest.approx(np.median(samples_ms) / 1e3)
    (tmp_path / "0001_bench.json").write_text(json.dumps(doc))
    assert run_files.load_run(tmp_path / "0001_bench.json") == base
    assert cli.main(["check", write(tmp_path, new, "new.json"), "--against", str(tmp_path / "0001_bench.json")]) == 0
    (tmp_path / "plain.json").write_text(json.dumps({"machine_info": {}, "benchmarks": []}))
    assert cli.main(["check", write(tmp_path, new, "new.json"), "--against", str(tmp_path / "plain.json")]) == 2
    assert "without solbench data" in capsys.readouterr().err


def test_run_folder_is_accepted(tmp_path):
    base, _ = syn.pair(n=2)
    folder = tmp_path / "reports" / "run1"
    folder.mkdir(parents=True)
    write(folder, base, "results.json")
    assert run_files.load_run(folder) == base


def test_help_names_every_option(capsys):
    with pytest.raises(SystemExit):
        cli.main(["check", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for flag in ("--against", "--min-ratio", "--min-geomean", "--comparator", "--min-sol", "--epsilon", "--strict", "--json"):
        assert flag in out
    assert "default 0.02" in out


def test_report_score_line_says_how_much_of_an_incomplete_run_is_missing():
    from dataclasses import replace

    from solbench.report.tables import score_line, scores

    rng = np.random.default_rng(0)
    result = syn.run([syn.outcome(s, rng) for s in syn.scenario_ids(2)], scenario_count=5)
    [score] = scores(replace(result, complete=False))
    assert score_line(score) == "score vs seed: 0 (run incomplete: 3 of 5 scenarios not run)"
    wrong = syn.run([syn.outcome(s, rng, status="mismatch") for s in syn.scenario_ids(1)], scenario_count=3)
    [score] = scores(replace(wrong, outcomes=wrong.outcomes + result.outcomes[:1], complete=False))
    assert score_line(score) == "score vs seed: 0 (1 scenario(s) not passed; run incomplete: 1 of 3 scenarios not run)"
