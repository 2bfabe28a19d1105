"""Cheats and false positives of reference_kernels/adversarial/python on a CPU: each test states what the harness must do with one file of
reference_kernels/adversarial/python. Those closed by the
candidate's confinement (solbench/sandbox/confine.py) skip on kernels without the Landlock it needs."""

import json
import os
import statistics
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("torch")

from solbench.core.model import Status  # noqa: E402
from solbench.core.policy import QUICK, TimingPolicy  # noqa: E402
from solbench.sandbox.confine import abi_version  # noqa: E402
from solbench.supervisor.runner import RunConfig, run  # noqa: E402

LANDLOCK = abi_version()
needs_landlock = pytest.mark.skipif(LANDLOCK < 1, reason="this kernel has no Landlock: the candidate is not confined")
needs_signal_scope = pytest.mark.skipif(LANDLOCK < 6, reason=f"Landlock ABI {LANDLOCK} < 6 does not scope signals")

CORPUS = Path(__file__).resolve().parents[1] / "reference_kernels" / "adversarial" / "python"


def _run(name, tmp_path, n=2, **kw):
    kw = {"seed": None, "policy": QUICK, **kw}
    return run(RunConfig(candidate=str(CORPUS / name), suite="smoke", device="cpu", out_dir=tmp_path,
                         max_scenarios=n, **kw))


def _cli(*args, env=None, check=False):
    return subprocess.run([sys.executable, "-m", "solbench", "run", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, check=check, timeout=300)


@pytest.mark.slow
@needs_signal_scope
def test_a_candidate_that_stalls_the_comparators_gets_no_speed_up(tmp_path):
    """An honest forward (torch_attention.py) against itself is ~1x; stalled comparators must not make it more.
    Five rounds: a stall lands in every round, while a round a loaded host preempts is one of the five, and
    the median of two (QUICK's least) would follow it halfway."""
    result = _run("stalls_comparators.py", tmp_path, seed="default", policy=replace(QUICK, min_rounds=5, max_rounds=5))
    inflated = [(o.scenario_id, statistics.median(o.ratios["seed"])) for o in result.outcomes
                if o.status is Status.PASSED and statistics.median(o.ratios["seed"]) > 1.5]
    assert not inflated, inflated


@pytest.mark.slow
@needs_landlock
def test_a_candidate_cannot_plant_code_the_supervisor_imports(tmp_path):
    proc = _cli(str(CORPUS / "plants_supervisor_bytecode.py"), "--suite", "smoke", "--device", "cpu", "--quick",
                "--max-scenarios", "2", "--out", str(tmp_path), env={"SOLBENCH_ADVERSARY_PLANT": "1"})
    doc = json.loads((tmp_path / "results.json").read_text())
    assert [o["status"] for o in doc["outcomes"]] == ["mismatch", "mismatch"], proc.stdout[-2000:]


@pytest.mark.slow
@needs_landlock
def test_a_resumed_run_keeps_no_outcome_the_candidate_forged(tmp_path):
    """The candidate (zeros) forges results.json and kills the supervisor; --resume must not believe it."""
    candidate = str(CORPUS / "forges_for_resume.py")
    common = ["--suite", "smoke", "--device", "cpu", "--quick", "--max-scenarios", "3", "--seed", "none"]
    first = _cli(candidate, *common, "--out", str(tmp_path), env={"SOLBENCH_ADVERSARY_RESUME": "1"})
    assert first.returncode != 0  # the supervisor was killed
    _cli(candidate, *common, "--resume", str(tmp_path))
    doc = json.loads((tmp_path / "results.json").read_text())
    assert all(o["status"] != "passed" for o in doc["outcomes"]), [o["status"] for o in doc["outcomes"]]


def test_a_python_candidate_that_leaves_lse_unwritten_is_unwritten(tmp_path):
    result = _run("skips_lse.py", tmp_path)
    assert [o.status for o in result.outcomes] == [Status.UNWRITTEN] * 2, [(o.status, o.reason) for o in result.outcomes]


@pytest.mark.slow
@needs_signal_scope
def test_killing_the_comparators_does_not_switch_the_clock_check_off(tmp_path):
    """Confined, the candidate cannot signal its siblings: its kill fails in its own process."""
    result = _run("kills_the_yardstick.py", tmp_path, seed="default")
    wrong = [(o.scenario_id, o.status.value, o.reason) for o in result.outcomes
             if o.status is Status.PASSED or "Operation not permitted" not in o.reason]
    assert not wrong, wrong


def test_outliers_the_full_check_accepts_also_pass_the_timed_checks(tmp_path, monkeypatch):
    import secrets

    monkeypatch.setattr(secrets, "token_bytes", lambda n: b"\x01" * n)  # the same rows drawn every time
    policy = TimingPolicy(warmup_ms=5.0, round_samples=3, min_rounds=8, max_rounds=8, target_rel_ci=0.05, max_time_s=60.0,
                          cold_l2=False, launcher_ab=False)
    result = _run("rare_outliers.py", tmp_path, policy=policy)
    assert [o.status for o in result.outcomes] == [Status.PASSED] * 2, [(o.status, o.reason) for o in result.outcomes]


@pytest.mark.slow
def test_a_candidate_cannot_run_code_in_the_supervisor_through_its_replies(tmp_path):
    """Replies are JSON: the pickled message is a malformed reply, and the candidate does not load."""
    proc = _cli(str(CORPUS / "unpickles_in_supervisor.py"), "--suite", "smoke", "--device", "cpu", "--quick",
                "--max-scenarios", "2", "--out", str(tmp_path), env={"SOLBENCH_ADVERSARY_PICKLE": "1"})
    assert proc.returncode == 5 and "malformed reply" in proc.stderr, (proc.returncode, proc.stderr[-2000:])
    record = tmp_path / "results.json"
    assert not record.exists() or not any(o["status"] == "passed" for o in json.loads(record.read_text())["outcomes"])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["computes_ahead.py", "computes_ahead_privately.py"])
def test_a_candidate_that_does_the_rounds_work_in_its_first_call_gets_no_speed_up(name, tmp_path):
    """An honest forward against itself is ~1x: computes_ahead.py does every ready copy's work in a round's first
    call and returns at once from the others, all outputs right (in place, or into buffers of its own that a later
    call copies from); with whole rounds ready at once its median was 26-63x the seed's on a CPU. In parts of two
    calls it does no better than the honest forward."""
    policy = TimingPolicy(warmup_ms=5.0, round_samples=5, rotate_inputs=4, min_rounds=2, max_rounds=4,
                          max_time_s=1.0, cold_l2=False, launcher_ab=False)
    result = _run(name, tmp_path, n=2, seed="default", policy=policy)
    assert [o.status for o in result.outcomes] == [Status.PASSED] * 2, [(o.status, o.reason) for o in result.outcomes]
    inflated = [(o.scenario_id, statistics.median(o.ratios["seed"])) for o in result.outcomes
                if statistics.median(o.ratios["seed"]) > 1.5]
    assert not inflated, inflated
    # every round of four calls went in two parts of two
    assert all(len(o.measurements["candidate"].samples_ms) % 4 == 0 for o in result.outcomes)
