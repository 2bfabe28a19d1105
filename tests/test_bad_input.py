"""Bad input, as a user meets it on the command line: one line on stderr saying what, where and how to fix,
the documented exit code, no traceback, and nothing run that should not be.

Exit codes (solbench.core.errors.EXIT_CODES): 2 bad input, 3 bad suite file, 4 build error or forbidden library,
5 candidate cannot be loaded, 6 missing optional library, 7 timing needs a GPU that is not here."""

import json
from pathlib import Path

import pytest

from solbench.core.errors import ConfigError, LoadError
from solbench.core.policy import TimingPolicy
from solbench.core.suites import load_suite
from solbench.front.cli import main
from solbench.supervisor.runner import RunConfig

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "reports" / "reference" / "h200-seed" / "smoke.json"


def one_line(capsys, command: str = "run") -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"solbench {command}: error: ")
    return err.strip()


def run_cpu(candidate, out, *extra) -> int:
    return main(["run", str(candidate), "--device", "cpu", "--quick", "--max-scenarios", "2", "--out", str(out), *extra])


@pytest.mark.parametrize("source, message", [
    ("def forward(inputs:\n    pass\n", "{path}:1:12: syntax error: '(' was never closed"),
    ("def fwd(inputs):\n    pass\n", "{path}: defines no top-level `forward`; add `def forward(inputs):`"),
])
def test_a_python_candidate_that_does_not_parse_or_has_no_forward_exits_5_before_any_worker(tmp_path, capsys, source,
                                                                                            message):
    path = tmp_path / "cand.py"
    path.write_text(source)
    assert run_cpu(path, tmp_path / "out") == LoadError.exit_code
    assert message.format(path=path) in one_line(capsys)
    assert not (tmp_path / "out").exists()  # checked by reading the source: no worker, no run folder


@pytest.mark.parametrize("source, message", [
    ("import no_such_module_anywhere\ndef forward(inputs):\n    pass\n",
     "candidate: {path}:1: import failed: ModuleNotFoundError: No module named 'no_such_module_anywhere'"),
    ("x = 1\nraise RuntimeError('planted at import')\ndef forward(inputs):\n    pass\n",
     "candidate: {path}:2: import failed: RuntimeError: planted at import"),
    ("import os\nos._exit(3)\ndef forward(inputs):\n    pass\n",
     "candidate: worker died while loading (exit code 3)"),
])
@pytest.mark.slow
def test_a_candidate_that_fails_to_import_in_its_worker_exits_5_before_any_scenario(tmp_path, capsys, source, message):
    path = tmp_path / "cand.py"
    path.write_text(source)
    assert run_cpu(path, tmp_path / "out") == LoadError.exit_code
    assert message.format(path=path) in one_line(capsys)
    assert not (tmp_path / "out" / "results.json").exists()  # no scenario was run, none recorded


def _wrong_shapes():
    good = json.loads(REFERENCE.read_text())

    def edited(change):
        doc = json.loads(json.dumps(good))
        change(doc)
        return doc

    return [
        ([1, 2], "top level is not an object"),
        ({"results": []}, "unsupported results schema None"),
        ({"schema": "solbench.run/1", "run_id": "x"}, "at the top level: 'suite' is a required property"),
        (edited(lambda d: d.update(candidate=5)), "at candidate: 5 is not of type 'object'"),
        (edited(lambda d: d["outcomes"][0].update(ratios={"seed": "fast"})), "at outcomes[0].ratios.seed:"),
        (edited(lambda d: d["outcomes"][0]["bound"].pop("bound_ms")), "at outcomes[0].bound: 'bound_ms' is a required"),
        (edited(lambda d: d["outcomes"][0].update(status="great")), "at outcomes[0].status: 'great' is not one of"),
        ({"benchmarks": [1], "machine_info": {"solbench": {"run": {}}}}, "pytest-benchmark file whose solbench data"),
    ]


@pytest.mark.parametrize("doc, message", _wrong_shapes())
def test_report_and_leaderboard_add_on_json_of_the_wrong_shape_exit_2(tmp_path, capsys, doc, message):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    assert main(["report", str(path)]) == ConfigError.exit_code
    assert message in one_line(capsys, "report")
    assert main(["leaderboard", "add", str(path), "--db", str(tmp_path / "lb.sqlite")]) == ConfigError.exit_code
    assert message in one_line(capsys, "leaderboard")


@pytest.mark.parametrize("value", ["0", "-1"])
def test_max_scenarios_below_one_is_refused(capsys, value):
    assert main(["run", "x.py", "--device", "cpu", "--max-scenarios", value]) == 2
    assert f"argument --max-scenarios: must be at least 1, got {value}" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="--max-scenarios must be at least 1"):
        load_suite("smoke").select(limit=int(value))


def test_timeout_must_be_positive(capsys):
    assert main(["run", "x.py", "--device", "cpu", "--timeout", "0"]) == 2
    assert "argument --timeout: must be a number above 0, got 0" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="--timeout must be above 0"):
        RunConfig(candidate="x.py", timeout_s=-5)


@pytest.mark.parametrize("override, field", [
    ("warmup_ms=-1", "warmup_ms must be >= 0"), ("max_time_s=0", "max_time_s must be > 0"),
    ("launcher_budget_ms=-10", "launcher_budget_ms must be >= 0"), ("launch_cover_ms=-0.1", "launch_cover_ms must be >= 0"),
    ("host_check_tolerance=-0.5", "host_check_tolerance must be >= 0 and < 1"),
    ("round_samples=0", "round_samples must be >= 1"), ("min_rounds=8,max_rounds=6", "max_rounds (6) must be >= min_rounds (8)"),
    ("target_rel_ci=1.5", "target_rel_ci must be > 0 and < 1"),
])
def test_out_of_range_policy_values_are_refused_naming_the_option(capsys, override, field):
    assert main(["run", "x.py", "--device", "cpu", "--policy", override]) == 2
    assert f"--policy '{override}': TimingPolicy.{field}" in one_line(capsys)


def test_policy_fields_are_checked_when_built_directly():
    with pytest.raises(ConfigError, match="TimingPolicy.warmup_ms must be >= 0, got -1"):
        TimingPolicy(warmup_ms=-1)
    with pytest.raises(ConfigError, match="TimingPolicy.max_time_s must be a number"):
        TimingPolicy(max_time_s="6")
