"""The pytest plugin, driven through pytester with a fake runner (synthetic samples, fixed seeds).

The fake replaces solbench.supervisor.runner.run; everything else (suite loading, collection, verdicts, re-measuring,
summary, pytest-benchmark storage) is the real code. Tests with the real runner on CPU live in
tests/test_pytest_plugin_cpu.py.
"""

import json
import warnings
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest

import synthetic_runs as syn
# Imported here, before pytester snapshots sys.modules: a C extension (numpy.fft under scipy) first
# imported inside an in-process run would be dropped afterwards and could not be imported again.
import solbench.report.check  # noqa: F401
from solbench.front import cli
from solbench.supervisor import runner
from solbench.front.pytest_xdist_guard import shared_devices_problem, worker_devices
from solbench.core.suites import load_suite

pytest_plugins = ["pytester"]

SMOKE = load_suite("smoke")
IDS = [s.id for s in SMOKE.scenarios]


def plugin_args() -> list[str]:
    """Load the plugin explicitly unless the installed entry point already does."""
    installed = any(ep.name == "solbench" for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "solbench.front.pytest_plugin"]


def median_ms(sid: str) -> float:
    return 0.1 * (IDS.index(sid) + 1)


class FakeRunner:
    """Stands in for solbench.supervisor.runner.run: per call, per scenario, syn.outcome keyword arguments."""

    def __init__(self, behave=None):
        self.behave = behave or (lambda sid, call: {})
        self.calls = []

    def __call__(self, config, on_outcome=None):
        self.calls.append(config)
        call = len(self.calls)
        rng = np.random.default_rng(100 + call)
        scenarios = load_suite(config.suite).select(config.filter, config.max_scenarios).scenarios
        outcomes = [syn.outcome(sc.id, rng, **{"median_ms": median_ms(sc.id), **self.behave(sc.id, call)})
                    for sc in scenarios]
        return syn.run(outcomes, run_id=f"fake-{call}", suite=SMOKE.name, suite_hash=SMOKE.hash, arch="cpu", gpu=None)


@pytest.fixture
def fake(monkeypatch):
    def install(behave=None):
        fake_runner = FakeRunner(behave)
        monkeypatch.setattr(runner, "run", fake_runner)
        return fake_runner
    return install


def write_base(pytester, slow=None, noise=0.005, **run_kw) -> str:
    """BASE: the same kernel as the fake's default, from an independent draw."""
    rng = np.random.default_rng(7)
    outcomes = [syn.outcome(sid, rng, median_ms=median_ms(sid), noise=noise) for sid in IDS]
    kw = dict(suite=SMOKE.name, suite_hash=SMOKE.hash, arch="cpu", gpu=None, run_id="base-run")
    kw.update(run_kw)
    path = pytester.path / "base.json"
    path.write_text(json.dumps(syn.run(outcomes, **kw).to_dict()))
    return str(path)


def run_plugin(pytester, *args):
    (pytester.path / "kernel.py").write_text("def forward(inp):\n    raise AssertionError('the fake runner never calls me')\n")
    return pytester.runpytest(*plugin_args(), "--solbench-kernel", "kernel.py", "--solbench-device", "cpu", *args)


def test_correct_kernel_passes_one_item_per_scenario(pytester, fake):
    f = fake()
    result = run_plugin(pytester, "-v")
    result.assert_outcomes(passed=len(IDS))
    result.stdout.fnmatch_lines([f"*solbench[[]smoke[]]::{IDS[0]} PASSED*", "*= solbench =*",
                                 "*geomean speedup vs seed: *x (95% CI *) over 10 scenarios*"])
    assert "collected 10 items" in result.stdout.str()
    assert len(f.calls) == 1 and f.calls[0].device == "cpu" and f.calls[0].suite == "smoke"


def test_wrong_kernel_fails_on_the_wrong_scenario_only(pytester, fake):
    fake(lambda sid, call: {"status": "mismatch", "reason": "max_abs 0.31 > atol"} if sid == IDS[4] else {})
    result = run_plugin(pytester)
    result.assert_outcomes(passed=len(IDS) - 1, failed=1)
    result.stdout.fnmatch_lines([f"*{IDS[4]}: mismatch: max_abs 0.31 > atol*", "*score vs seed: 0 (1 scenario(s) not passed)*"])
    assert "Traceback" not in result.stdout.str()


def test_declined_scenario_fails(pytester, fake):
    """A candidate that declines a scenario (skipped) fails it: declining is no way around the gate."""
    fake(lambda sid, call: {"status": "skipped", "reason": "fp8 needs sm_89+"} if "fp8" in sid else {})
    result = run_plugin(pytester)
    result.assert_outcomes(passed=len(IDS) - 2, failed=2)
    result.stdout.fnmatch_lines(["*skipped: fp8 needs sm_89+*"])


def test_planted_regression_fails_exactly_those_scenarios(pytester, fake):
    slowed = {IDS[1], IDS[6]}
    fake(lambda sid, call: {"median_ms": median_ms(sid) * 1.05} if sid in slowed else {})
    result = run_plugin(pytester, "--solbench-against", write_base(pytester))
    result.assert_outcomes(passed=len(IDS) - 2, failed=2)
    failed = {r.nodeid.split("::")[-1] for r in result.reprec.getreports("pytest_runtest_logreport") if r.failed}
    assert failed == slowed
    result.stdout.fnmatch_lines([f"*{IDS[6]}: regression: 0.95?x vs BASE (95% CI 0.9*-0.9*): 5.?% slower*",
                                 "*vs BASE base-run: 2 regressed, 0 ambiguous*"])


def test_ambiguous_comparison_is_remeasured_then_judged(pytester, fake):
    # first run: 2 % slower with 3 % noise (CI straddles 0.98); the re-measurement is clean and not slower
    f = fake(lambda sid, call: {"median_ms": median_ms(sid) * 1.02, "noise": 0.03} if sid == IDS[0] and call == 1
             else ({"n": 400, "noise": 0.002} if call > 1 else {}))
    result = run_plugin(pytester, "--solbench-against", write_base(pytester), "-rA")
    result.assert_outcomes(passed=len(IDS))
    assert len(f.calls) == 2 and f.calls[1].filter == IDS[0]
    assert f.calls[1].out_dir == Path(f"{f.calls[0].out_dir}-remeasure", IDS[0])  # beside the run, not ./reports
    assert "vs BASE base-run: 0 regressed, 0 ambiguous" in result.stdout.str()


def test_ambiguous_that_stays_slow_fails_after_remeasuring(pytester, fake):
    f = fake(lambda sid, call: ({"median_ms": median_ms(sid) * 1.02, "noise": 0.03} if call == 1 else
                                {"median_ms": median_ms(sid) * 1.06, "n": 400, "noise": 0.002}) if sid == IDS[0] else {})
    result = run_plugin(pytester, "--solbench-against", write_base(pytester))
    result.assert_outcomes(passed=len(IDS) - 1, failed=1)
    result.stdout.fnmatch_lines([f"*{IDS[0]}: regression: *(re-measured: 40 + 400 samples)*"])
    assert [c.filter for c in f.calls] == [None, IDS[0]]


def test_base_from_another_suite_version_is_a_usage_error(pytester, fake):
    f = fake()
    result = run_plugin(pytester, "--solbench-against", write_base(pytester, suite_hash="0" * 64))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*solbench: BASE * ran suite 'smoke' (hash 000000000000)*not comparable*"])
    assert f.calls == []


def test_base_from_another_gpu_fails_every_item_with_one_line(pytester, fake):
    fake()
    result = run_plugin(pytester, "--solbench-against", write_base(pytester, arch="h200", gpu="NVIDIA H200"))
    result.assert_outcomes(failed=len(IDS))
    result.stdout.fnmatch_lines(["*: cannot judge against BASE: BASE ran on arch 'h200', RESULTS on 'cpu': not comparable*"])


def test_unreadable_base_is_a_usage_error(pytester, fake):
    fake()
    result = run_plugin(pytester, "--solbench-against", "missing.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*solbench: missing.json: cannot read*"])


def test_missing_kernel_or_unknown_suite_is_a_usage_error(pytester, fake):
    fake()
    result = pytester.runpytest(*plugin_args(), "--solbench-kernel", "nope.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*solbench: --solbench-kernel nope.py: no such file*"])
    result = run_plugin(pytester, "--solbench-suite", "no-such-suite")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*solbench: unknown suite 'no-such-suite'*"])


def test_run_folder_is_under_pytests_basetemp_or_solbench_out(pytester, fake):
    runs = fake()
    run_plugin(pytester, "--basetemp", "tmp").assert_outcomes(passed=len(IDS))
    default = runs.calls[0].out_dir
    assert default.parent == pytester.path / "tmp" / "solbench" and default.name.endswith("-kernel-smoke")
    run_plugin(pytester, "--solbench-out", "mine").assert_outcomes(passed=len(IDS))
    assert runs.calls[1].out_dir == Path("mine")
    assert not (pytester.path / "reports").exists()


def test_keyword_selection_and_filter(pytester, fake):
    fake()
    run_plugin(pytester, "-k", "decode").assert_outcomes(passed=1)
    f = fake()
    run_plugin(pytester, "--solbench-filter", "fp8").assert_outcomes(passed=2)
    assert f.calls[0].filter == "fp8"


def test_plugin_is_inert_without_a_kernel(pytester, fake):
    f = fake()
    pytester.makepyfile("def test_plain():\n    assert True\n")
    result = pytester.runpytest(*plugin_args())
    result.assert_outcomes(passed=1)
    assert "= solbench =" not in result.stdout.str() and "solbench[" not in result.stdout.str() and f.calls == []


def test_fixture_runs_and_judges(pytester, fake):
    fake(lambda sid, call: {"status": "mismatch", "reason": "planted"} if sid == IDS[2] else {})
    pytester.makepyfile("""
        def test_good(solbench):
            result = solbench.run("mine.py", suite="smoke", device="cpu", filter="decode")
            report = solbench.assert_ok(result, min_geomean=1.5)
            assert report.clause("min_geomean").numbers["geomean"] > 1.5

        def test_bad(solbench):
            solbench.assert_ok(solbench.run("mine.py", device="cpu"))
    """)
    result = pytester.runpytest(*plugin_args())
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"*FAIL correct {IDS[2]}: mismatch: planted*"])


def test_runner_error_fails_each_item_with_one_line(pytester, monkeypatch):
    from solbench.core.errors import LoadError

    def broken(config, on_outcome=None):
        raise LoadError("kernel.py: no forward(inputs) function")
    monkeypatch.setattr(runner, "run", broken)
    result = run_plugin(pytester, "--solbench-max-scenarios", "3")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(["*solbench run failed: kernel.py: no forward(inputs) function*"])
    assert "Traceback" not in result.stdout.str()


def test_saved_pytest_benchmark_run_serves_as_base(pytester, fake, capsys):
    pytest.importorskip("pytest_benchmark")
    fake()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pytest-benchmark's "Not saving anything" must not appear
        result = run_plugin(pytester, "--benchmark-json", "bench.json", "--benchmark-autosave")
    result.assert_outcomes(passed=len(IDS))
    doc = json.loads((pytester.path / "bench.json").read_text())
    assert [b["name"] for b in doc["benchmarks"]] == IDS and "solbench" in doc["machine_info"]
    assert len(list(Path(pytester.path, ".benchmarks").rglob("*.json"))) == 1
    slower = fake(lambda sid, call: {"median_ms": median_ms(sid) * 1.05} if sid == IDS[3] else {})
    result = run_plugin(pytester, "--solbench-against", "bench.json")
    result.assert_outcomes(passed=len(IDS) - 1, failed=1)
    # and `solbench check` reads the same file as BASE
    new = slower(runner.RunConfig(candidate="kernel.py"))
    (pytester.path / "new.json").write_text(json.dumps(new.to_dict()))
    assert cli.main(["check", str(pytester.path / "new.json"), "--against", str(pytester.path / "bench.json")]) == 1
    assert IDS[3] in capsys.readouterr().out


def test_benchmarks_of_its_own_and_the_solbench_run_share_pytest_benchmarks_files(pytester, fake):
    pytest.importorskip("pytest_benchmark")
    fake()
    pytester.makepyfile(test_mine="def test_sum(benchmark):\n    benchmark(sum, range(100))\n")
    result = run_plugin(pytester, "test_mine.py", "--benchmark-json", "bench.json", "--benchmark-save", "both")
    result.assert_outcomes(passed=len(IDS) + 1)
    (saved,) = Path(pytester.path, ".benchmarks").rglob("0001_both.json")
    for path in (pytester.path / "bench.json", saved):  # pytest-benchmark wrote each once, with the run added
        doc = json.loads(path.read_text())
        assert [b["name"] for b in doc["benchmarks"]] == ["test_sum", *IDS] and "solbench" in doc["machine_info"]
    assert "written for pytest-benchmark" not in result.stdout.str()


def test_xdist_worker_specs():
    assert worker_devices(["popen//env:CUDA_VISIBLE_DEVICES=1//python=python3", "popen"]) == ["1", None]
    assert shared_devices_problem(["popen"]) is None
    assert shared_devices_problem(["popen//env:CUDA_VISIBLE_DEVICES=0", "popen//env:CUDA_VISIBLE_DEVICES=1"]) is None
    assert "not each with its own GPU" in shared_devices_problem(["popen", "popen"])
    assert "share CUDA_VISIBLE_DEVICES=0" in shared_devices_problem(["popen//env:CUDA_VISIBLE_DEVICES=0"] * 2)


XDIST_OPTIONS = """
def pytest_addoption(parser):  # stand-ins for pytest-xdist's options
    parser.addoption("--dist", default="no")
    parser.addoption("--tx", action="append", default=[])
    parser.addoption("--numprocesses", dest="numprocesses", default=None)
"""


@pytest.mark.skipif(__import__("importlib").util.find_spec("xdist") is not None, reason="real xdist installed")
def test_refuses_to_time_under_xdist_with_shared_gpus(pytester, fake):
    f = fake()
    pytester.makeconftest(XDIST_OPTIONS)
    result = run_plugin(pytester, "-p", "no:benchmark", "--numprocesses", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*refusing to time under pytest-xdist: 2 xdist workers but not each with its own GPU*"])
    own = ["--dist", "load", "--tx", "popen//env:CUDA_VISIBLE_DEVICES=0", "--tx", "popen//env:CUDA_VISIBLE_DEVICES=1"]
    run_plugin(pytester, "-p", "no:benchmark", *own).assert_outcomes(passed=len(IDS))
    assert len(f.calls) == 1


def test_xdist_worker_without_its_own_gpu_refuses(pytester, fake, monkeypatch):
    fake()
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", f"test-{id(pytester)}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    result = run_plugin(pytester, "-p", "no:benchmark")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*xdist worker gw1 has no CUDA_VISIBLE_DEVICES of its own*"])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    run_plugin(pytester, "-p", "no:benchmark").assert_outcomes(passed=len(IDS))
