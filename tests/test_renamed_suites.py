"""Recorded runs of the first hopper/blackwell grids (named "hopper"/"blackwell" with their hash) read as
hopper-d128 / blackwell-d128, the names those scenarios have now: they still render, compare and rank."""

import pytest
import numpy as np

from solbench.core.model import RENAMED_SUITES, RunResult, current_suite_name
from solbench.core.suites import load_suite
from solbench.front import cli
from solbench.leaderboard.entry import Entry
from solbench.leaderboard.store import Store
from solbench.supervisor.run_files import load_run
from tests import synthetic_runs as syn
from tests.recorded import BASELINES, HOPPER_RUN

OLD_HOPPER = next(h for (name, h) in RENAMED_SUITES if name == "hopper")


def test_only_the_recorded_name_and_hash_together_are_renamed():
    assert current_suite_name("hopper", OLD_HOPPER) == "hopper-d128"
    assert current_suite_name("hopper", load_suite("hopper").hash) == "hopper"  # a run of the new grid
    assert current_suite_name("real", OLD_HOPPER) == "real"


def test_recorded_hopper_runs_read_as_hopper_d128_and_match_its_scenarios():
    paths = sorted((BASELINES / "h200").glob("hopper-d128*.json"))
    assert len(paths) == 3  # the seed with six libraries, + FlashInfer, + Flex: recorded as `hopper`
    for path in paths:
        run = load_run(path)
        assert run.suite == "hopper-d128" and run.suite_hash == load_suite("hopper-d128").hash, path
        assert {o.scenario_id for o in run.outcomes} <= {s.id for s in load_suite("hopper-d128").scenarios}
    for path in sorted((BASELINES / "h200").glob("hopper.json")) + sorted((BASELINES / "h200").glob("hopper+*.json")):
        assert load_run(path).suite_hash == load_suite("hopper").hash, f"{path} is not of today's hopper grid"


@pytest.mark.slow
def test_a_recorded_run_checks_against_itself_and_renders(capsys):
    assert cli.main(["check", str(HOPPER_RUN), "--against", str(HOPPER_RUN)]) in (0, 1)  # compared, not refused
    assert "cannot" not in capsys.readouterr().err
    assert cli.main(["report", str(HOPPER_RUN)]) in (0, 1)
    assert "hopper-d128" in capsys.readouterr().out


def test_entries_stored_under_the_old_name_are_found_under_the_new(tmp_path):
    old = syn.run([syn.outcome(s, np.random.default_rng(0)) for s in syn.scenario_ids(2)], suite="hopper",
                  suite_hash=OLD_HOPPER)
    with Store(tmp_path / "board.sqlite") as store:
        store.add(Entry.from_result(old, name="mine"))  # as a store made before the rename holds it
        (entry,) = store.entries(suite="hopper-d128")
        assert entry.suite == "hopper-d128" and entry.result.suite == "hopper-d128"
        assert not store.entries(suite="hopper")
    assert RunResult.from_dict(old.to_dict()).suite == "hopper-d128"
