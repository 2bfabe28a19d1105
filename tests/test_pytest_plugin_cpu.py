"""The pytest plugin and `solbench check` with the real runner: Python candidates on --solbench-device cpu.

Timings on a CPU are noise; these tests judge correctness through both front-ends and that a run's own
results.json and its pytest-benchmark file serve as BASE (self-comparisons are not judged on speed).
"""

import json
from pathlib import Path

import pytest

import solbench.report.check  # noqa: F401  (before pytester snapshots sys.modules; see test_pytest_plugin.py)
from solbench.front import cli
from solbench.supervisor.run_files import load_run
from test_pytest_plugin import plugin_args

pytest_plugins = ["pytester"]
pytest.importorskip("torch")

KERNELS = Path(__file__).resolve().parent.parent / "reference_kernels"
CORRECT = str(KERNELS / "torch_attention.py")
WRONG_WINDOW = str(KERNELS / "torch_attention_wrong_window.py")
WINDOWED = "prefill-b1-sq96-skv96-hq4-hkv2-d128-bf16-causal-wl15"


REPO = str(Path(__file__).resolve().parent.parent)


@pytest.fixture(autouse=True)
def importable(monkeypatch):
    """A subprocess run (numpy and torch extension modules cannot be re-imported in one process) that
    finds solbench whether or not it is installed."""
    monkeypatch.setenv("PYTHONPATH", REPO + ":" + __import__("os").environ.get("PYTHONPATH", ""))


def run_cpu(pytester, kernel, *args):
    # --solbench-kernel=PATH, joined: pytest picks its rootdir from path-like arguments, and a kernel
    # outside the test folder would make node ids print relative to that kernel's repository.
    return pytester.runpytest_subprocess(*plugin_args(), f"--solbench-kernel={kernel}", "--solbench-device", "cpu",
                                         "--solbench-quick", "--solbench-suite", "smoke", *args)


@pytest.mark.slow
def test_correct_python_candidate_passes_and_fills_pytest_benchmark_files(pytester):
    """--benchmark-json and --benchmark-save through the current pytest-benchmark, which has no benchmark of
    its own here; the run folder goes under pytest's basetemp, not ./reports."""
    result = run_cpu(pytester, CORRECT, "--solbench-max-scenarios", "2", "--benchmark-json", "bench.json",
                     "--benchmark-save", "seed-cpu")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*= solbench =*", "*geomean speedup vs seed: *x (95% CI *) over 2 scenarios*",
                                 "written for pytest-benchmark: bench.json, *.benchmarks (seed-cpu)"])
    assert "Not saving anything" not in result.stdout.str() + result.stderr.str()
    assert not (pytester.path / "reports").exists()
    (results,) = pytester.path.glob("runpytest-0/solbench/*-torch_attention-smoke/results.json")  # the subprocess's basetemp
    (saved,) = (pytester.path / ".benchmarks").rglob("0001_seed-cpu.json")
    run = load_run(results)
    for doc in (pytester.path / "bench.json", saved):
        assert [b["name"] for b in json.loads(doc.read_text())["benchmarks"]] == [o.scenario_id for o in run.outcomes]
        assert load_run(doc).to_dict() == run.to_dict()  # each file reads back as the same run
    assert cli.main(["check", str(results)]) == 0
    assert cli.main(["check", str(results), "--against", str(saved), "--epsilon", "0.99"]) == 0


@pytest.mark.slow
def test_wrong_window_fails_only_where_a_window_applies(pytester):
    result = run_cpu(pytester, WRONG_WINDOW, "--solbench-max-scenarios", "5", "-rf")  # the 5th has a window
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines([f"*{WINDOWED}: mismatch: *", f"FAILED solbench[[]smoke[]]::{WINDOWED}*"])


@pytest.mark.slow
def test_check_names_the_wrong_scenario_of_a_real_run(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = cli.main(["run", WRONG_WINDOW, "--device", "cpu", "--quick", "--filter", "wl15", "--out", "run"])
    assert code == 1
    capsys.readouterr()
    assert cli.main(["check", "run", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    correct = doc["clauses"][0]
    assert correct["name"] == "correct" and correct["passed"] is False
    assert [(i["scenario_id"], i["numbers"]["status"]) for i in correct["items"]] == [(WINDOWED, "mismatch")]
