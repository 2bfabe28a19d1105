"""The arch's upstream library and the fastest available one: which comparator each is, per scenario and
over the suite (geomeans with intervals, over the scenarios each ran), in the summary and its schema."""

from dataclasses import replace

import jsonschema
import numpy as np
import pytest

from solbench import schemas
from solbench.core.model import Status
from solbench.report.summary import summary_dict
from solbench.report.tables import headline_line, headlines, scenario_rows
from solbench.report.yardsticks import Upstream, fastest, upstream
from synthetic_runs import outcome, run, scenario_ids

IDS = scenario_ids(4)


def four_scenarios(arch: str = "h200", fa3: str = "vllm-fa3"):
    """fa3 1.5x the candidate's time where it runs (not on scenario 3); flashinfer faster than fa3 on
    scenario 1; on scenario 2 the seed is the only fast one (not a library) and cudnn failed its check."""
    rng = np.random.default_rng(0)
    speedups = [{"seed": 4.0, fa3: 1.5, "flashinfer-fa2": 2.0},
                {"seed": 4.0, fa3: 1.5, "flashinfer-fa2": 1.2},
                {"seed": 0.5, fa3: 1.5, "cudnn": 0.8},
                {"seed": 4.0, "flashinfer-fa2": 3.0}]
    checks = [{}, {}, {"cudnn": "mismatch"}, {}]
    outcomes = [outcome(sid, rng, speedups=sp, comparator_status=c) for sid, sp, c in zip(IDS, speedups, checks)]
    outcomes[3] = replace(outcomes[3], comparators={**outcomes[3].comparators,
                                                    fa3: {"status": "skipped", "reason": "not supported: sinks"}})
    return run(outcomes, arch=arch)


@pytest.mark.parametrize("arch, names, expected", [
    ("h200", ("vllm-fa3", "fa3-fwd", "fa4"), Upstream("FA3", "vllm-fa3")),
    ("h100_pcie", ("fa3-fwd", "fa4"), Upstream("FA3", "fa3-fwd")),
    ("h200", ("fa3", "fa4"), Upstream("FA3", "fa3")),  # a recorded run's name for fa3-fwd
    ("b200", ("vllm-fa3", "fa4"), Upstream("FA4", "fa4")),
    ("h200", ("fa4", "cudnn"), None),  # no FA3 in the run
    ("rtx3080", ("flashinfer-fa2",), None),  # no upstream for Ampere
    ("cpu", ("seed",), None),
])
def test_upstream_is_the_arch_familys_library_as_the_run_names_it(arch, names, expected):
    result = run([], arch=arch)
    result = replace(result, candidate={"implementations": {"candidate": "k.cu", **{n: n for n in names}}})
    assert upstream(result) == expected


def test_fastest_is_the_quickest_library_that_passed_never_the_seed():
    result = four_scenarios()
    assert [fastest(o) for o in result.outcomes] == ["vllm-fa3", "flashinfer-fa2", "vllm-fa3", "flashinfer-fa2"]
    rows = scenario_rows(result)
    assert [r["fastest"] for r in rows] == ["vllm-fa3", "flashinfer-fa2", "vllm-fa3", "flashinfer-fa2"]
    assert rows[1]["x_fastest"] == pytest.approx(1.2, rel=0.02)
    assert rows[1]["fastest_us"] == pytest.approx(1.2e3, rel=0.02)


def test_headline_geomeans_count_the_scenarios_each_yardstick_ran():
    up, fast = headlines(four_scenarios())
    assert (up.label, up.comparator, up.score.scenarios, up.scenarios_total) == ("FA3", "vllm-fa3", 3, 4)
    assert up.score.geomean == pytest.approx(1.5, rel=0.02) and up.score.lo < up.score.geomean < up.score.hi
    assert (fast.label, fast.comparator, fast.score.scenarios) == ("fastest available", None, 4)
    assert fast.score.geomean == pytest.approx((1.5 * 1.2 * 1.5 * 3.0) ** 0.25, rel=0.02)
    line = headline_line([up, fast])
    assert line.startswith("headline: 1.5") and "vs FA3 (vllm-fa3) on 3 of 4;" in line
    assert "vs fastest available on 4 of 4" in line


def test_a_failed_scenario_zeroes_the_headline_and_says_why():
    result = four_scenarios()
    wrong = replace(result.outcomes[3], status=Status.MISMATCH, reason="planted")
    result = replace(result, outcomes=(*result.outcomes[:3], wrong))
    hs = headlines(result)
    assert [h.score.geomean for h in hs] == [0.0, 0.0]
    assert headline_line(hs) == "headline: 0 vs FA3 and vs fastest available (1 scenario(s) not passed)"


def test_summary_carries_the_headline_and_both_yardsticks_per_row():
    doc = summary_dict(four_scenarios(fa3="fa3"))
    jsonschema.Draft202012Validator(schemas.load("summary")).validate(doc)
    head = doc["headline"]
    assert head["upstream"]["library"] == "FA3" and head["upstream"]["comparator"] == "fa3"
    assert (head["upstream"]["scenarios"], head["upstream"]["scenarios_total"]) == (3, 4)
    assert head["fastest"]["comparator"] is None and len(head["fastest"]["ci95"]) == 2
    assert "vs FA3 (fa3-fwd) on 3 of 4" in head["text"]
    rows = doc["per_scenario"]
    assert rows[3]["upstream"] == {"library": "FA3", "comparator": "fa3", "time_us": None, "speedup": None}
    assert rows[1]["fastest"]["comparator"] == "flashinfer-fa2"
    assert rows[1]["fastest"]["speedup"] == pytest.approx(1.2, rel=0.02)


def test_a_run_without_libraries_has_no_headline():
    rng = np.random.default_rng(1)
    doc = summary_dict(run([outcome(sid, rng) for sid in IDS], arch="rtx3080"))
    jsonschema.Draft202012Validator(schemas.load("summary")).validate(doc)
    assert doc["headline"] == {"upstream": None, "fastest": None, "text": None}
    assert [(r["upstream"], r["fastest"]) for r in doc["per_scenario"]] == [(None, None)] * len(IDS)


def test_check_gates_the_geomean_vs_upstream_and_fastest():
    from solbench.report.check import Criteria, evaluate

    result = four_scenarios()
    up = evaluate(result, None, Criteria(min_geomean=1.4, comparator="upstream")).clause("min_geomean")
    assert up.passed is True and up.numbers["scenarios"] == 3 and "vs upstream over 3 scenarios" in up.summary
    fast = evaluate(result, None, Criteria(min_geomean=1.8, comparator="fastest")).clause("min_geomean")
    assert fast.passed is False and fast.numbers["geomean"] == pytest.approx(8.1 ** 0.25, rel=0.02)
    none = evaluate(run(result.outcomes, arch="rtx3080"), None, Criteria(min_geomean=1.0, comparator="upstream"))
    assert none.clause("min_geomean").passed is None and none.exit_code == 2


def test_the_pytest_plugin_prints_the_headline():
    from types import SimpleNamespace

    from solbench.front.pytest_summary import summary_lines

    session = SimpleNamespace(error=None, result=four_scenarios(), kernel="k.cu", base=None, run_id="r",
                              folder="out", benchmark_files=None)
    assert any(line.startswith("headline: ") and "vs FA3 (vllm-fa3) on 3 of 4" in line for line in summary_lines(session))
