"""The pytest plugin and `solbench check` with the real runner: Python candidates on --solbench-device cpu.

Timings on a CPU are noise; these tests judge correctness through both front-ends and that a run's own
results.json and its pytest-benchmark file serve as BASE (self-comparisons are not judged on speed).
"""

import json
from pathlib import Path

import pytest

import solbench.report.check  # noqa: F401  (before pytester snapshots sys.modules; see test_pytest_plugin.py)
from solbench.front import cli
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


def test_correct_python_candidate_passes(pytester):
    result = run_cpu(pytester, CORRECT, "--solbench-max-scenarios", "2", "--benchmark-json", "bench.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*= solbench =*", "*geomean speedup vs seed: *x (95% CI *) over 2 scenarios*"])
    folders = list((pytester.path / "reports").iterdir())
    assert len(folders) == 1 and (folders[0] / "results.json").exists()
    results = str(folders[0] / "results.json")
    assert cli.main(["check", results]) == 0
    # the run's own pytest-benchmark file reads back as the same run
    assert cli.main(["check", results, "--against", str(pytester.path / "bench.json"), "--epsilon", "0.99"]) == 0


def test_wrong_window_fails_only_where_a_window_applies(pytester):
    result = run_cpu(pytester, WRONG_WINDOW, "--solbench-max-scenarios", "5", "-rf")  # the 5th has a window
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines([f"*{WINDOWED}: mismatch: *", f"FAILED solbench[[]smoke[]]::{WINDOWED}*"])


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
