"""`solbench run` at first contact: what is wrong with the command line is said first (a missing file before
the missing GPU, what selected no scenario), and a run interrupted before its first scenario names its
folder, which --resume then starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solbench.front import cli

ROOT = Path(__file__).resolve().parents[1]
CANDIDATE = str(ROOT / "reference_kernels" / "torch_attention.py")
QUICK = ["--suite", "smoke", "--device", "cpu", "--quick", "--baselines", "none"]


def error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    return err


def test_a_missing_candidate_is_said_before_the_missing_gpu(capsys):
    assert cli.main(["run", "nonexistent.cu"]) == 2
    err = error_line(capsys)
    assert err.startswith("solbench run: error: nonexistent.cu: no such file") and "GPU" not in err
    assert cli.main(["run", "nonexistent.py", "--device", "cpu"]) == 2
    assert "nonexistent.py: no such file" in error_line(capsys)


def test_a_filter_that_selects_nothing_says_so(capsys):
    assert cli.main(["run", CANDIDATE, *QUICK, "--filter", "zzz"]) == 2
    err = error_line(capsys)
    assert "--filter 'zzz': no scenario id of suite 'smoke' contains it" in err and "None" not in err
    assert "solbench scenarios --suite smoke" in err


@pytest.mark.parametrize("argv", [["run", CANDIDATE, "--device", "cpu"], ["roofline", "--arch", "h200"],
                                  ["lint", "--arch", "h200"], ["scenarios"]], ids=lambda a: a[0])
def test_a_suite_without_scenarios_is_a_bad_suite_file(tmp_path, capsys, argv):
    suite = tmp_path / "empty.toml"
    suite.write_text('name = "empty"\ndescription = "every combination excluded"\n')
    assert cli.main([*argv, "--suite", str(suite)]) == 3  # ScenarioError: a bad suite file
    err = error_line(capsys)
    assert f"{suite}: suite 'empty' defines no scenario" in err and "None" not in err


def interrupt_before_the_first_scenario(monkeypatch, make_folder: bool):
    """runner.run as Ctrl-C finds it while the workers start: the folder made, a worker log, no results.json."""
    from solbench.supervisor import runner

    def interrupted(config, **_):
        if make_folder:
            Path(config.out_dir).mkdir(parents=True, exist_ok=True)
            (Path(config.out_dir) / "worker-candidate.log").write_text("starting\n")
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run", interrupted)


@pytest.mark.slow
def test_an_interrupt_before_the_first_scenario_names_the_folder_and_resume_starts_it(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "run"
    with monkeypatch.context() as patch:
        interrupt_before_the_first_scenario(patch, make_folder=True)
        assert cli.main(["run", CANDIDATE, *QUICK, "--out", str(folder)]) == 130
        err = error_line(capsys)
        assert f"--resume {folder}" in err and err.startswith("solbench run: interrupted; no scenario had finished")
        assert cli.main(["run", CANDIDATE, *QUICK, "--out", str(folder), "--json"]) == 130
        doc = json.loads(capsys.readouterr().out)
        assert doc["exit_code"] == 130 and f"--resume {folder}" in doc["error"]
    assert not (folder / "results.json").exists()
    assert cli.main(["run", CANDIDATE, *QUICK, "--max-scenarios", "1", "--resume", str(folder)]) == 0
    assert "holds no finished scenario: starting the run there" in capsys.readouterr().err
    assert json.loads((folder / "results.json").read_text())["scenario_count"] == 1


def test_an_interrupt_without_a_folder_says_there_is_nothing_to_resume(tmp_path, capsys, monkeypatch):
    interrupt_before_the_first_scenario(monkeypatch, make_folder=False)
    assert cli.main(["run", CANDIDATE, *QUICK, "--out", str(tmp_path / "never")]) == 130
    assert "before the run folder" in error_line(capsys)


@pytest.mark.slow
def test_an_interrupt_after_a_record_says_how_to_go_on(tmp_path, capsys, monkeypatch):
    from solbench.supervisor import runner

    folder = tmp_path / "run"
    assert cli.main(["run", CANDIDATE, *QUICK, "--max-scenarios", "1", "--out", str(folder)]) == 0
    capsys.readouterr()

    def interrupted(config, **_):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run", interrupted)
    assert cli.main(["run", CANDIDATE, *QUICK, "--max-scenarios", "1", "--resume", str(folder)]) == 130
    err = error_line(capsys)
    assert f"the finished scenarios are in {folder / 'results.json'}" in err and f"--resume {folder}" in err
