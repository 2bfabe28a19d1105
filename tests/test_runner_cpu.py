"""The whole pipeline on a CPU with Python candidates: verdicts, isolation, files on disk, resume."""

import json
from dataclasses import replace

import pytest
from pathlib import Path

from solbench.front.cli import main
from solbench.core.model import Status
from solbench.core.policy import QUICK
from solbench.core.errors import ConfigError
from solbench.supervisor.run_files import load_run
from solbench.supervisor.runner import RunConfig, errored, run

GOOD = "reference_kernels/torch_attention.py"
WRONG = "reference_kernels/torch_attention_wrong_window.py"
CRASHY = "tests/data/candidates/crashy.py"


@pytest.fixture(autouse=True)
def repo_cwd(monkeypatch, request):
    monkeypatch.chdir(request.config.rootpath)


@pytest.mark.slow
def test_correct_candidate_passes_and_writes_reports(tmp_path, capsys):
    assert main(["run", GOOD, "--suite", "smoke", "--device", "cpu", "--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "10/10 scenarios; passed 10" in out and "geomean speedup vs seed: " in out
    result = load_run(tmp_path / "results.json")
    assert result.complete and len(result.outcomes) == 10
    assert all(o.measurements["candidate"].samples_ms and o.ratios["seed"] for o in result.outcomes)
    assert (tmp_path / "summary.md").read_text().startswith("# solbench run")
    assert (tmp_path / "results.csv").read_text().count("\n") == 11
    assert result.environment and result.policy["method"] == "host_clock"


@pytest.mark.slow
def test_wrong_candidate_fails_naming_scenarios(tmp_path, capsys):
    assert main(["run", WRONG, "--suite", "smoke", "--device", "cpu", "--quick", "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    failed = [l for l in out.splitlines() if l.startswith("FAILED ")]
    assert len(failed) == 2 and all("-wl" in l and "mismatch" in l for l in failed)
    assert "score vs seed: 0" in out


@pytest.mark.slow
def test_report_rerenders_without_running(tmp_path, capsys):
    run(RunConfig(candidate=GOOD, suite="smoke", device="cpu", policy=QUICK, out_dir=tmp_path, max_scenarios=2))
    capsys.readouterr()
    assert main(["report", str(tmp_path / "results.json"), "--format", "markdown"]) == 0
    assert "## Per scenario" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.parametrize("mode, status", [("segfault", Status.RUNTIME_ERROR), ("raise", Status.RUNTIME_ERROR),
                                          ("nothing", Status.UNWRITTEN), ("hang", Status.TIMEOUT)])
def test_a_crash_costs_its_scenario_not_the_run(tmp_path, monkeypatch, mode, status):
    monkeypatch.setenv("SOLBENCH_TEST_CRASH", mode)
    result = run(RunConfig(candidate=CRASHY, suite="smoke", device="cpu", policy=QUICK, out_dir=tmp_path,
                           timeout_s=8 if mode == "hang" else 60))
    bad = [o for o in result.outcomes if o.scenario["sinks"] or o.scenario["softcap"]]
    good = [o for o in result.outcomes if not (o.scenario["sinks"] or o.scenario["softcap"])]
    assert len(bad) == 2 and all(o.status is status for o in bad)
    assert good and all(o.status is Status.PASSED for o in good)
    on_disk = json.loads((tmp_path / "results.json").read_text())
    assert len(on_disk["outcomes"]) == 10 and on_disk["complete"]


@pytest.mark.slow
def test_resume_skips_finished_scenarios(tmp_path):
    first = run(RunConfig(candidate=GOOD, suite="smoke", device="cpu", policy=QUICK, out_dir=tmp_path, max_scenarios=3))
    assert len(first.outcomes) == 3
    done = {o.scenario_id: o.measurements["candidate"].samples_ms for o in first.outcomes}
    second = run(RunConfig(candidate=GOOD, suite="smoke", device="cpu", policy=QUICK, resume=tmp_path))
    assert len(second.outcomes) == 10 and second.complete
    for o in second.outcomes:
        if o.scenario_id in done:
            assert o.measurements["candidate"].samples_ms == done[o.scenario_id]


@pytest.mark.slow
def test_retry_errors_evaluates_only_the_errored_scenarios_again_in_suite_order(tmp_path, monkeypatch):
    """A comparator's crash is evaluated again; the candidate's own crash is final (it had the contents and
    could crash on purpose to have the scenario drawn again)."""
    monkeypatch.setenv("SOLBENCH_TEST_CRASH", "segfault")
    first = run(RunConfig(candidate=GOOD, seed=CRASHY, suite="smoke", device="cpu", policy=QUICK, out_dir=tmp_path))
    errored = {o.scenario_id for o in first.outcomes if o.comparators.get("seed", {}).get("status") == "runtime_error"}
    assert len(errored) == 2
    kept = {o.scenario_id: o.measurements["candidate"].samples_ms for o in first.outcomes if o.scenario_id not in errored}
    monkeypatch.setenv("SOLBENCH_TEST_CRASH", "recovered")  # whatever failed was the machine's, not the kernel's
    again = run(RunConfig(candidate=GOOD, seed=CRASHY, suite="smoke", device="cpu", policy=QUICK, resume=tmp_path,
                          retry_errors=True))
    assert again.complete and all(o.status is Status.PASSED and o.comparators["seed"]["status"] == "passed"
                                  for o in again.outcomes)
    assert [o.scenario_id for o in again.outcomes] == [o.scenario_id for o in first.outcomes]
    for o in again.outcomes:  # the rest stay as recorded
        if o.scenario_id in kept:
            assert o.measurements["candidate"].samples_ms == kept[o.scenario_id]

    monkeypatch.setenv("SOLBENCH_TEST_CRASH", "segfault")
    crashed = run(RunConfig(candidate=CRASHY, suite="smoke", device="cpu", policy=QUICK, out_dir=tmp_path / "c",
                            max_scenarios=6))
    assert [o.status for o in crashed.outcomes].count(Status.RUNTIME_ERROR) == 1
    monkeypatch.setenv("SOLBENCH_TEST_CRASH", "recovered")
    final = run(RunConfig(candidate=CRASHY, suite="smoke", device="cpu", policy=QUICK, resume=tmp_path / "c",
                          retry_errors=True, max_scenarios=6))
    assert [(o.status, o.reason) for o in final.outcomes] == [(o.status, o.reason) for o in crashed.outcomes]


@pytest.mark.slow
def test_input_copies_shrink_when_device_memory_is_short(tmp_path, monkeypatch):
    from solbench.supervisor import evaluate

    monkeypatch.setattr(evaluate, "_device_bytes", lambda device: 1)  # nothing fits: one copy, workers released
    policy = replace(QUICK, rotate_inputs=3)
    result = run(RunConfig(candidate=GOOD, suite="smoke", device="cpu", policy=policy, out_dir=tmp_path, max_scenarios=3))
    assert [o.status for o in result.outcomes] == [Status.PASSED] * 3
    assert [o.input_copies for o in result.outcomes] == [1, 1, 1]
    from solbench.report.summary import summary_dict
    from solbench.report.tables import render_summary

    assert "timed on fewer than the policy's 3 input copies (device memory): 3 scenario(s)" in render_summary(result)
    assert summary_dict(result)["fewer_input_copies"] == [o.scenario_id for o in result.outcomes]
    made = []  # the comparators share one set of copies; the candidate keeps its own
    real_make = evaluate.TimedCopies.make
    monkeypatch.setattr(evaluate.TimedCopies, "make", classmethod(
        lambda cls, *a, **k: made.append(real_make(*a, **k)) or made[-1]))
    result = run(RunConfig(candidate=GOOD, suite="smoke", device="cpu", policy=policy, out_dir=tmp_path / "s",
                           max_scenarios=1, seed=GOOD, baselines=()))
    assert result.outcomes[0].status is Status.PASSED, result.outcomes[0].reason
    assert sorted(c.audited for c in made) == [False, True]
    monkeypatch.setattr(evaluate, "_device_bytes", lambda device: 0)  # no device to fill: the policy's count
    result = run(RunConfig(candidate=GOOD, suite="smoke", device="cpu", policy=policy, out_dir=tmp_path / "b", max_scenarios=1))
    assert result.outcomes[0].input_copies == 3


def test_retry_errors_needs_resume(tmp_path):
    with pytest.raises(ConfigError, match="--retry-errors goes with --resume"):
        run(RunConfig(candidate=GOOD, suite="smoke", device="cpu", policy=QUICK, out_dir=tmp_path, retry_errors=True))


def test_what_retry_errors_retries():
    from solbench.core.model import Outcome
    from solbench.core.scenario import Scenario

    sc = Scenario(q_lens=(4,), kv_lens=(4,), heads_q=2, heads_kv=2, head_dim_qk=8, head_dim_v=8).to_dict()
    base = dict(scenario_id="x", scenario=sc, status=Status.MISMATCH, reason="wrong")
    assert not errored(Outcome(**base))
    # the candidate's own failures are final, whatever their words: it can produce each of them on purpose
    for status, reason in ((Status.RUNTIME_ERROR, "candidate: worker died (signal SIGSEGV)"),
                           (Status.RUNTIME_ERROR, "candidate: RuntimeError: bug"),
                           (Status.RUNTIME_ERROR, "candidate: OutOfMemoryError: CUDA out of memory"),
                           (Status.TIMEOUT, "candidate: no answer to 'round' within 60 s")):
        assert not errored(Outcome(**{**base, "status": status, "reason": reason})), reason
    # the supervisor's side: its own out-of-memory before the contents were given, a lost agent
    from solbench.core.model import AGENT_DIED, AFTER_CONTENTS, SUPERVISOR_OUT_OF_MEMORY

    assert errored(Outcome(**{**base, "status": Status.RUNTIME_ERROR, "reason": f"{SUPERVISOR_OUT_OF_MEMORY}: x"}))
    assert not errored(Outcome(**{**base, "status": Status.RUNTIME_ERROR,
                                  "reason": f"{SUPERVISOR_OUT_OF_MEMORY} {AFTER_CONTENTS}: x"}))
    assert errored(Outcome(**{**base, "status": Status.RUNTIME_ERROR, "reason": f"{AGENT_DIED} on GPUs 0, 1"}))
    assert errored(Outcome(**base, comparators={"fa3-fwd": {"status": "timeout", "reason": "hung"}}))
    assert errored(Outcome(**base, comparators={"fa3-fwd": {"status": "runtime_error",
                                                        "reason": "fa3: OutOfMemoryError: CUDA out of memory"}}))
    assert not errored(Outcome(**base, comparators={"fa3-fwd": {"status": "skipped", "reason": "no"}}))
    # A comparator's failure of any kind is tried again: its adapter may have been fixed since.
    assert errored(Outcome(**base, comparators={"sdpa": {"status": "runtime_error", "reason": "No available kernel"}}))
    assert errored(Outcome(**base, comparators={"flex": {"status": "mismatch", "reason": "max err 0.5"}}))
    assert not errored(Outcome(**base, comparators={"fa3-fwd": {"status": "passed", "reason": ""}}))


@pytest.mark.slow
def test_an_interrupted_retry_keeps_the_outcomes_it_has_not_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("SOLBENCH_TEST_CRASH", "segfault")  # the seed (a comparator) crashes: that is retried
    first = run(RunConfig(candidate=GOOD, seed=CRASHY, suite="smoke", device="cpu", policy=QUICK, out_dir=tmp_path))
    calls = []

    def stop_after_one(outcome):
        calls.append(outcome.scenario_id)
        raise KeyboardInterrupt

    monkeypatch.setenv("SOLBENCH_TEST_CRASH", "recovered")
    with pytest.raises(KeyboardInterrupt):
        run(RunConfig(candidate=GOOD, seed=CRASHY, suite="smoke", device="cpu", policy=QUICK, resume=tmp_path,
                      retry_errors=True), on_outcome=stop_after_one)
    after = load_run(tmp_path)
    assert [o.scenario_id for o in after.outcomes] == [o.scenario_id for o in first.outcomes]
    seed = {o.scenario_id: o.comparators.get("seed", {}).get("status") for o in after.outcomes}
    assert seed[calls[0]] == "passed"
    assert list(seed.values()).count("runtime_error") == 1  # the other one is still the old record


def test_bad_arguments_give_one_line(tmp_path, capsys):
    assert main(["run", "nope.py", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope.py: no such file" in err
    assert main(["run", GOOD, "--device", "cpu", "--suite", "nosuch"]) == 2
    assert "unknown suite" in capsys.readouterr().err
    assert main(["run", "README.md", "--device", "cpu"]) == 5
    assert "a candidate is a .cu file or a Python module" in capsys.readouterr().err


@pytest.mark.slow
def test_other_arch_builds_bounds_and_exits_7(capsys):
    """--arch b200 without a B200: build for sm_100a, forbidden-library check, bounds, exit 7."""
    code = main(["run", "reference_kernels/seed_attention.cu", "--arch", "b200", "--suite", "smoke"])
    captured = capsys.readouterr()
    assert code == 7
    assert "for b200" in captured.out and "forbidden-library check passed" in captured.out
    assert "prefill-b2-sq64-skv64-hq4-hkv4-d128-bf16-causal" in captured.out and "bound_us" in captured.out
    assert captured.err.strip().endswith("(built and bounded only)") and captured.err.count("\n") == 1


def test_cu_candidate_on_cpu_is_a_clear_error(capsys):
    assert main(["run", "reference_kernels/seed_attention.cu", "--device", "cpu"]) == 2
    assert "needs a GPU" in capsys.readouterr().err


@pytest.mark.slow
def test_caching_by_pointer_is_caught_on_a_timed_call(tmp_path):
    result = run(RunConfig(candidate="tests/data/candidates/caches_by_pointer.py", suite="smoke", device="cpu",
                           policy=QUICK, out_dir=tmp_path, max_scenarios=3))
    assert all(o.status is Status.UNWRITTEN for o in result.outcomes)
    # The first scenario's buffers are all new, so its first call is honest: the second call on the checked
    # copy (the determinism check) is the first to catch it (later scenarios may reuse freed addresses it
    # has already seen, and fail on their first call).
    assert result.outcomes[0].reason.startswith("second checked call: ")


@pytest.mark.slow
def test_caching_by_pointer_is_caught_on_a_timed_call_too(tmp_path):
    """A candidate that caches only after its first two calls per buffer passes both checked calls; the
    supervisor's check of the timed calls catches it."""
    source = Path("tests/data/candidates/caches_by_pointer.py").read_text()
    late = tmp_path / "caches_after_two_calls.py"
    here = str(Path("tests/data/candidates/x.py").resolve())
    late.write_text(source.replace("Path(__file__).resolve().parents[3]", f"Path({here!r}).parents[3]")
                    .replace("_seen = set()", "_seen = {}").replace(
        "    if key in _seen:\n        return\n    _seen.add(key)\n",
        "    _seen[key] = _seen.get(key, 0) + 1\n    if _seen[key] > 2:\n        return\n"))
    assert "_seen[key] > 2" in late.read_text()
    result = run(RunConfig(candidate=str(late), suite="smoke", device="cpu", policy=QUICK, out_dir=tmp_path / "run",
                           max_scenarios=1))
    (outcome,) = result.outcomes
    assert outcome.status is Status.UNWRITTEN and outcome.reason.startswith("while timing: timed call on input copy")


@pytest.mark.slow
def test_a_baseline_can_be_the_candidate(tmp_path):
    """baseline:NAME evaluates a library itself (A/A experiments, leaderboard entries): scenarios it does
    not claim (judged for h200) are skipped with its reason; the others run in its worker, which on this
    CPU-only machine fails cleanly (SDPA's efficient backend is CUDA-only), costing just those scenarios."""
    result = run(RunConfig(candidate="baseline:sdpa-efficient", suite="smoke", arch="h200", device="cpu",
                           policy=QUICK, out_dir=tmp_path))
    skipped = [o for o in result.outcomes if o.status is Status.SKIPPED]
    ran = [o for o in result.outcomes if o.status is not Status.SKIPPED]
    assert skipped and all(o.reason.startswith("not supported: ") for o in skipped)
    assert ran and all(o.status is Status.RUNTIME_ERROR and "scaled_dot_product_attention" in o.reason for o in ran)
    assert result.candidate["kind"] == "baseline" and result.complete


def test_unknown_arch_is_a_config_error(capsys):
    assert main(["run", GOOD, "--arch", "a100", "--device", "cpu"]) == 2
    assert "unknown arch 'a100'" in capsys.readouterr().err


@pytest.mark.slow
def test_replaying_cached_results_is_caught(tmp_path):
    """Correct values copied back from a cache keyed by pointer: caught on the first timed round, since
    the supervisor refills every copy with new values (same pointers) after warm-up and each round."""
    result = run(RunConfig(candidate="tests/data/candidates/replays_by_pointer.py", suite="smoke", device="cpu",
                           policy=QUICK, out_dir=tmp_path, max_scenarios=3))
    assert all(o.status is not Status.PASSED for o in result.outcomes)
    # (later scenarios may trip over addresses the cache saw in an earlier scenario, and fail otherwise)
    first = result.outcomes[0]
    assert first.status is Status.MISMATCH and first.reason.startswith("while timing: timed call on input copy 0 in round 1")


@pytest.mark.slow
def test_skipping_work_on_timed_calls_is_caught(tmp_path):
    """A sentinel kernel that works only on poisoned buffers: every timed call gets freshly poisoned outputs."""
    result = run(RunConfig(candidate="tests/data/candidates/skips_when_written.py", suite="smoke", device="cpu",
                           policy=QUICK, out_dir=tmp_path, max_scenarios=3))
    assert all(o.status is Status.PASSED for o in result.outcomes)  # it always sees poison, so it always works


@pytest.mark.slow
def test_patching_the_harness_is_tampering(tmp_path):
    result = run(RunConfig(candidate="tests/data/candidates/patches_timer.py", suite="smoke", device="cpu",
                           policy=QUICK, out_dir=tmp_path, max_scenarios=2))
    assert all(o.status is Status.TAMPERED and "solbench.sandbox.timing.Timer.take" in o.reason for o in result.outcomes)


@pytest.mark.slow
def test_modifying_inputs_is_a_mismatch(tmp_path):
    result = run(RunConfig(candidate="tests/data/candidates/modifies_inputs.py", suite="smoke", device="cpu",
                           policy=QUICK, out_dir=tmp_path, max_scenarios=2))
    assert all(o.status is Status.MISMATCH and "modified its inputs in place: q" in o.reason for o in result.outcomes)


def test_policy_overrides_replace_named_fields_and_reject_unknown_ones():
    from solbench.core.errors import ConfigError
    from solbench.core.options import policy_value
    from solbench.core.policy import QUICK, TimingPolicy

    p = policy_value(False, "warmup_ms=30, launcher_budget_ms=50,launcher_ab=false,min_rounds=3")
    assert (p.warmup_ms, p.launcher_budget_ms, p.launcher_ab, p.min_rounds) == (30.0, 50.0, False, 3)
    assert p.max_rounds == TimingPolicy().max_rounds
    assert policy_value(True, None) == QUICK
    for bad in ("warmup=3", "warmup_ms", "min_rounds=two", "cold_l2=maybe", "min_rounds=0", "rotate_inputs=0",
                "method=bogus"):
        with pytest.raises(ConfigError, match="policy|TimingPolicy"):
            policy_value(False, bad)


def _raising_module(tmp_path):
    path = tmp_path / "raises.py"
    path.write_text("def forward(inputs):\n    raise ValueError('library says no')\n")
    return str(path)


@pytest.mark.slow
@pytest.mark.parametrize("name, kept", [("seed", True), ("fa3-fwd", True), ("candidate", False)])
def test_a_trusted_implementation_that_raises_keeps_its_worker(tmp_path, name, kept):
    from solbench.sandbox.impls import ImplSpec
    from solbench.core.policy import QUICK
    from solbench.core.suites import load_suite
    from solbench.supervisor.python_worker import Worker, WorkerFailure

    from solbench.supervisor.inputs import make_inputs

    sc = load_suite("smoke").scenarios[0]
    worker = Worker(ImplSpec(name, "python", _raising_module(tmp_path)), "cpu", QUICK, tmp_path / "w.log")
    try:
        worker.request("prepare", {"check": make_inputs(sc, 0), "rotation": [make_inputs(sc, 1)]}, 60)
        pid = worker._proc.pid
        with pytest.raises(WorkerFailure, match="library says no") as failure:
            worker.request("check", None, 60)
        assert failure.value.kind == "error"
        assert (worker._proc is not None and worker._proc.pid == pid) is kept
    finally:
        worker.stop(kill=True)


def test_a_worker_that_cannot_load_is_a_load_failure_and_mid_run_costs_its_scenario(tmp_path):
    """A comparator that stops loading after the run began (its worker restarted) is that scenario's runtime
    error; before the first scenario the runner turns the same failure into a LoadError (test_bad_input)."""
    from solbench.core.policy import QUICK
    from solbench.core.suites import load_suite
    from solbench.sandbox.impls import ImplSpec
    from solbench.supervisor.python_worker import Worker, WorkerFailure
    from solbench.supervisor.evaluate import _check

    broken = tmp_path / "broken.py"
    broken.write_text("raise ImportError('libfoo.so: cannot open shared object file')\ndef forward(inputs):\n    pass\n")
    worker = Worker(ImplSpec("seed", "python", str(broken)), "cpu", QUICK, tmp_path / "w.log")
    with pytest.raises(WorkerFailure, match=r"seed: .*broken.py:1: import failed: ImportError: libfoo.so") as failure:
        worker.start(60)
    assert failure.value.kind == "load" and not worker.running
    import random

    from solbench.supervisor.audit import TimedCopies
    from solbench.supervisor.inputs import make_inputs

    sc, rng = load_suite("smoke").scenarios[0], random.Random(0)
    copies = TimedCopies.make(sc, 1, "cpu", b"", audited=False, rng=rng)
    status, reason, _ = _check(sc, worker, make_inputs(sc), copies, None, None, 60, rng=rng)
    assert status is Status.RUNTIME_ERROR and "import failed: ImportError" in reason and not worker.running


def test_compiling_baselines_get_a_setup_allowance_and_others_none():
    from solbench.sandbox.impls import ImplSpec
    from solbench.executor.units import setup_s as _setup_s

    assert _setup_s(ImplSpec("flashinfer-fa3", "baseline", "flashinfer-fa3")) >= 300
    assert _setup_s(ImplSpec("flex", "baseline", "flex")) >= 300
    assert _setup_s(ImplSpec("fa3-fwd", "baseline", "fa3-fwd")) == 0
    assert _setup_s(ImplSpec("candidate", "python", "x.py")) == 0


def test_prepare_waits_for_the_setup_allowance_and_the_check_does_not():
    import random

    from solbench.core.suites import load_suite
    from solbench.supervisor.python_worker import WorkerFailure
    from solbench.supervisor.audit import TimedCopies
    from solbench.supervisor.evaluate import _check
    from solbench.supervisor.inputs import make_inputs

    class Recorder:
        setup_s = 500.0
        writes_lse = True

        def __init__(self):
            self.timeouts = {}

        def request(self, cmd, payload, timeout_s):
            self.timeouts[cmd] = timeout_s
            if cmd == "check":
                raise WorkerFailure("timeout", "stop here")
            return {"writes_lse": True}

    worker = Recorder()
    sc = load_suite("smoke").scenarios[0]
    rng = random.Random(0)
    copies = TimedCopies.make(sc, 1, "cpu", b"", audited=True, rng=rng)
    status, _, _ = _check(sc, worker, make_inputs(sc, 0), copies, None, None, 120.0, rng=rng)
    assert status.value == "timeout"
    assert worker.timeouts == {"prepare": 620.0, "check": 120.0}


def test_resume_refuses_another_set_of_implementations(tmp_path):
    from solbench.core.errors import ConfigError

    run(RunConfig(candidate=GOOD, suite="smoke", device="cpu", policy=QUICK, out_dir=tmp_path, max_scenarios=1, seed=None))
    with pytest.raises(ConfigError, match="set of implementations"):
        run(RunConfig(candidate=GOOD, suite="smoke", device="cpu", policy=QUICK, resume=tmp_path, seed=GOOD))


@pytest.mark.slow
def test_a_run_recorded_before_round_budget_ms_resumes_only_with_the_budget_off(tmp_path):
    """Runs recorded before round_budget_ms took round_samples calls every round: their policy reads as
    round_budget_ms 0, so --resume goes on the same way with round_budget_ms 0 and refuses another budget."""
    from solbench.core.errors import ConfigError

    off = replace(QUICK, round_budget_ms=0.0)
    run(RunConfig(candidate=GOOD, suite="smoke", device="cpu", policy=off, out_dir=tmp_path, max_scenarios=1, seed=None))
    doc = json.loads((tmp_path / "results.json").read_text())
    del doc["policy"]["round_budget_ms"]
    (tmp_path / "results.json").write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="timing policy"):
        run(RunConfig(candidate=GOOD, suite="smoke", device="cpu", policy=replace(QUICK, round_budget_ms=30.0),
                      resume=tmp_path, seed=None))
    assert run(RunConfig(candidate=GOOD, suite="smoke", device="cpu", policy=off, resume=tmp_path, seed=None)).complete


@pytest.mark.slow
def test_run_json_prints_one_object_for_agents(tmp_path, capsys):
    assert main(["run", GOOD, "--device", "cpu", "--quick", "--json", "--max-scenarios", "2", "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["passed"] is True and doc["scenarios_done"] == 2 and doc["results"].endswith("results.json")
    assert {s["comparator"] for s in doc["scores"]} and all(s["ci95"] for s in doc["scores"])
    assert [r["scenario"] for r in doc["per_scenario"]] == [o["scenario_id"] for o in
                                                            json.loads((tmp_path / "results.json").read_text())["outcomes"]]
    assert "passed" in captured.err  # progress lines go to stderr
    assert main(["report", str(tmp_path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["run_id"] == doc["run_id"]


@pytest.mark.slow
def test_report_json_lists_failures_and_zero_scores(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SOLBENCH_TEST_CRASH", "raise")
    run(RunConfig(candidate=CRASHY, suite="smoke", device="cpu", policy=QUICK, out_dir=tmp_path))
    capsys.readouterr()
    assert main(["report", str(tmp_path), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["passed"] is False and len(doc["failed"]) == 2
    assert all(s["geomean"] == 0.0 and s["ci95"] is None and len(s["zero_because"]) == 2 for s in doc["scores"])


def test_rounds_alternate_order_so_a_position_bias_cancels_in_the_ratios():
    """An A/A where whoever goes first in a round runs 1 % slow: with a fixed order every per-round ratio
    would be 0.99 and the CI would exclude 1; alternating the order leaves the pair geomean at 1."""
    from dataclasses import replace as dc_replace

    import random

    from solbench.core.policy import QUICK
    from solbench.core.stats import geomean_ci
    from solbench.core.suites import load_suite
    from solbench.supervisor.audit import TimedCopies
    from solbench.supervisor.rounds import round_order, time_interleaved

    assert round_order(["candidate", "seed", "fa3-fwd"], 0) == ["candidate", "seed", "fa3-fwd"]
    assert round_order(["candidate", "seed", "fa3-fwd"], 1) == ["fa3-fwd", "seed", "candidate"]
    calls = []

    class SameKernel:
        def request(self, cmd, payload, timeout_s):
            if cmd != "round":
                return {}
            calls.append(self)
            first = len(calls) % 2 == 1  # two workers: odd calls open a round
            ms = [1.01 if first else 1.0] * len(payload["order"])
            return {"device_ms": ms, "host_ms": ms, "flags": [], "telemetry": {}}

    policy = dc_replace(QUICK, min_rounds=3, max_rounds=9, launcher_ab=False)
    workers = {"candidate": SameKernel(), "seed": SameKernel()}
    sc = load_suite("smoke").scenarios[0]
    timed = {n: TimedCopies.make(sc, 1, "cpu", b"", audited=False, rng=random.Random(0)) for n in workers}
    _, ratios = time_interleaved(workers, timed, policy, 10.0, "host_clock")
    per_round = ratios["seed"]
    assert len(per_round) % 2 == 0  # stopped after whole pairs of rounds (at least min_rounds)
    assert min(per_round) < 1 < max(per_round)
    g, lo, hi = geomean_ci([per_round])
    assert abs(g - 1) < 1e-3 and lo <= 1 <= hi  # median of 1.01 and 1/1.01


@pytest.mark.parametrize("stalled_rounds, flagged", [(2, False), (99, True)])
def test_a_clock_gap_counts_only_when_fresh_rounds_show_it_again(stalled_rounds, flagged):
    """A loaded host stalls the candidate's first rounds (wall time far above the reported times): not
    hidden work, since the confirming rounds are clean. A worker that reports its calls short in every
    round (here: 50 ms of wall per call reported as 10 ms) is flagged."""
    from solbench.supervisor.audit import CLOCK_GAP

    workers = _clock_workers(lambda r, n: (0.050 * n if r <= stalled_rounds else 0.010 * n, 10.0))
    measurements = _time_fake(workers, min_rounds=2, max_rounds=2)
    assert (CLOCK_GAP in measurements["candidate"].flags) is flagged
    # the two rounds, then four that clear them, or twice four that confirm
    assert workers["candidate"].rounds == (2 + 2 * 4 if flagged else 2 + 4)
    if not flagged:  # the stalled rounds score at the clock's time (about 50 ms a call), not the 10 ms reported
        assert {0, 1} <= set(measurements["candidate"].telemetry["clock_rounds"]["out_of_bound"])
        samples = measurements["candidate"].samples_ms
        assert all(s > 30.0 for s in samples[:2]) and sorted(samples[2:])[len(samples[2:]) // 2] == 10.0, samples


def test_a_worker_that_forges_every_other_round_is_flagged():
    """A majority rule over an even count of rounds let a forger of every other round move the median halfway to
    any factor: every round is held to the supervisor's clock, and fresh rounds are forged as often."""
    from solbench.supervisor.audit import CLOCK_GAP

    honest = lambda r, n: (0.008 * n, 8.0)  # noqa: E731
    for forges in (True, False):
        reply = (lambda r, n: (0.008 * n, 0.8 if r % 2 == 0 else 8.0)) if forges else honest
        measurements = _time_fake(_clock_workers(reply, seed_reply=honest), min_rounds=4, max_rounds=4)
        assert (CLOCK_GAP in measurements["candidate"].flags) is forges
        if forges:
            assert measurements["candidate"].telemetry["clock_check"]["rounds"][0]["unexplained_ms"] > 5


@pytest.mark.slow
def test_comparators_are_checked_while_the_reference_is_computed_and_the_candidate_after(tmp_path, monkeypatch):
    """The comparators' prepare and check requests go out from threads of their own while the supervisor
    computes the reference (libraries' JIT and plan building hide behind it); the candidate's check, with its
    input fingerprints, runs alone afterwards on the supervisor's own thread. Verdicts are the same."""
    import threading
    import time

    from solbench.supervisor import evaluate, reference

    events = []
    real_reference, real_call = reference.reference, evaluate._checked_call

    def slow_reference(inp, **kw):
        events.append(("reference begins", threading.current_thread() is threading.main_thread()))
        time.sleep(0.5)
        out = real_reference(inp, **kw)
        events.append(("reference ends", None))
        return out

    def logged_call(worker, *args, **kw):
        events.append((f"check {worker.spec.name}", threading.current_thread() is threading.main_thread()))
        return real_call(worker, *args, **kw)

    monkeypatch.setattr(reference, "reference", slow_reference)
    monkeypatch.setattr(evaluate, "_checked_call", logged_call)
    result = run(RunConfig(candidate=GOOD, suite="smoke", device="cpu", policy=QUICK, out_dir=tmp_path,
                           max_scenarios=1, seed=GOOD, baselines=()))
    assert result.outcomes[0].status is Status.PASSED, result.outcomes[0].reason
    assert result.outcomes[0].comparators["seed"]["status"] == "passed"
    names = [e[0] for e in events]
    assert names.index("check seed") < names.index("reference ends") < names.index("check candidate")
    assert dict(events)["check seed"] is False and dict(events)["check candidate"] is True
    assert dict(events)["reference begins"] is True


def test_long_calls_get_fewer_calls_a_round_after_the_first():
    """round_budget_ms: a 50 ms implementation gets one call a round after its first round, a 12 ms one two,
    a 1 ms one round_samples; the ratios still rest on min_rounds rounds, and 0 turns the budget off."""
    from dataclasses import replace as dc_replace

    from solbench.core.policy import TimingPolicy, round_calls
    from solbench.executor.plan import calls_per_impl
    from solbench.supervisor.rounds import time_interleaved
    from tests.fake_rounds import Copies

    policy = TimingPolicy(warmup_ms=0, round_samples=3, min_rounds=6, max_rounds=6, round_budget_ms=30.0,
                          launcher_ab=False)
    assert [round_calls(policy, ms) for ms in (0.0, 1.0, 10.0, 12.0, 50.0)] == [3, 3, 3, 2, 1]
    assert round_calls(dc_replace(policy, round_budget_ms=0), 50.0) == 3
    assert calls_per_impl(policy, 50.0) == 1 + 3 + 5 and calls_per_impl(policy, 1.0) == 1 + 18

    class Fixed:
        def __init__(self, ms):
            self.ms, self.orders = ms, []

        def request(self, cmd, payload, timeout_s):
            if cmd != "round":
                return {}
            self.orders.append(len(payload["order"]))
            n = len(payload["order"])
            return {"device_ms": [self.ms] * n, "host_ms": [self.ms] * n, "flags": [], "telemetry": {}}

    workers = {"candidate": Fixed(1.0), "seed": Fixed(50.0), "lib": Fixed(12.0)}
    measurements, ratios = time_interleaved(workers, {n: Copies() for n in workers}, policy, 5.0, "cuda_events")
    # requests go in parts of at most two calls (AUDITED_PART): 3 = 2 + 1 (the clock check may add rounds after)
    assert workers["candidate"].orders[:12] == [2, 1] * 6
    assert workers["seed"].orders[:7] == [2, 1] + [1] * 5
    assert workers["lib"].orders[:7] == [2, 1] + [2] * 5
    # one sample a round (its mean), whatever its calls
    assert [len(measurements[n].samples_ms) for n in workers] == [6, 6, 6]
    assert len(ratios["seed"]) == len(ratios["lib"]) == 6 and set(ratios["seed"]) == {50.0}


def test_a_worker_that_says_it_was_throttled_gets_no_round_taken_again():
    """Throttling decides which rounds are taken again: it is read by the supervisor (NVML), never taken from a
    Python host's telemetry, which the candidate writes (a round it called throttled was retaken and scored)."""
    import random
    from dataclasses import replace as dc_replace
    from types import SimpleNamespace

    from solbench.core.policy import QUICK
    from solbench.core.suites import load_suite
    from solbench.supervisor.audit import TimedCopies
    from solbench.supervisor.rounds import time_interleaved

    class Worker:
        spec = SimpleNamespace(kind="py", runner="python")
        device = "cpu"

        def __init__(self):
            self.rounds = 0

        def request(self, cmd, payload, timeout_s):
            if cmd != "round":
                return {}
            self.rounds += 1
            n = len(payload["order"])
            return {"device_ms": [1.0] * n, "host_ms": [1.0] * n, "flags": [], "telemetry": {"throttled": True}}

    policy = dc_replace(QUICK, min_rounds=2, max_rounds=2, launcher_ab=False)
    workers = {"candidate": Worker(), "seed": Worker()}
    sc = load_suite("smoke").scenarios[0]
    timed = {n: TimedCopies.make(sc, 1, "cpu", b"", audited=False, rng=random.Random(0)) for n in workers}
    measurements, _ = time_interleaved(workers, timed, policy, 10.0, "host_clock")
    assert "throttled_retaken" not in measurements["candidate"].flags
    assert workers["candidate"].rounds == workers["seed"].rounds


def _clock_workers(candidate_reply, seed_reply=lambda r, n: (0.010 * n, 10.0)):
    """A candidate worker whose rounds are made by `candidate_reply(request, calls)` -> (seconds to take, ms to
    report a call) and a seed that reports what it takes (10 ms a call: a loaded host's stalls stay inside the
    bound's half of it), for time_interleaved on a CPU."""
    import time as _time

    class Worker:
        def __init__(self, reply):
            self.reply, self.rounds = reply, 0

        def request(self, cmd, payload, timeout_s):
            if cmd != "round":
                return {}
            self.rounds += 1
            n = len(payload["order"])
            took_s, told = self.reply(self.rounds, n)
            _time.sleep(took_s)
            return {"device_ms": [told] * n, "host_ms": [told] * n, "flags": [], "telemetry": {}}

    return {"candidate": Worker(candidate_reply), "seed": Worker(seed_reply)}


def _time_fake(workers, copies=1, **policy_fields):
    import random
    from dataclasses import replace as dc_replace

    from solbench.core.policy import QUICK
    from solbench.core.suites import load_suite
    from solbench.supervisor.audit import TimedCopies
    from solbench.supervisor.rounds import time_interleaved

    policy = dc_replace(QUICK, launcher_ab=False, **policy_fields)
    sc = load_suite("smoke").scenarios[0]
    timed = {n: TimedCopies.make(sc, copies, "cpu", b"", audited=False, rng=random.Random(0)) for n in workers}
    return time_interleaved(workers, timed, policy, 10.0, "host_clock")[0]


def test_a_round_pushed_out_of_its_bound_scores_at_the_clocks_time():
    """A worker that idles after its slow rounds pushes them out of the clock's bound; dropped, they would leave
    only its fast rounds to be scored (a selection it makes unflagged). They score at the clock's time instead:
    every round is kept, and the idled ones are slower than reported."""
    slow = {3, 6}  # requests: a round of one call (one input copy) is one request

    def reply(r, n):
        return (0.030 * n + 0.100, 30.0) if r in slow else (0.010 * n, 10.0)

    workers = _clock_workers(reply)
    m = _time_fake(workers, min_rounds=8, max_rounds=8)
    samples, out = m["candidate"].samples_ms, m["candidate"].telemetry["clock_rounds"]["out_of_bound"]
    assert len(samples) == workers["candidate"].rounds and {2, 5} <= set(out)
    assert samples[2] > 60.0 and samples[5] > 60.0, samples  # 30 ms reported, ~130 ms on the clock
    assert sorted(samples)[len(samples) // 2] == 10.0, samples


def test_a_trusted_round_out_of_its_own_bound_scores_at_the_clocks_time_too():
    """One timing method: a comparator's round stalled far past its own loop scores at the clock's time as the
    candidate's would, so an A/A pair pays a loaded host's stalls alike on both sides."""
    workers = _clock_workers(lambda r, n: (0.010 * n, 10.0),
                             seed_reply=lambda r, n: (0.010 * n + 0.100, 10.0) if r == 3 else (0.010 * n, 10.0))
    m = _time_fake(workers, min_rounds=8, max_rounds=8)
    assert m["seed"].samples_ms[2] > 60.0 and sorted(m["seed"].samples_ms)[4] == 10.0, m["seed"].samples_ms


def test_a_round_of_fewer_calls_gets_its_share_of_the_floor():
    """Under round_budget_ms a worker's calls a round follow its first round's report: reporting that round as
    1 s a call buys rounds of one call. Each short call then hides 1.5 ms: within the whole 2 ms floor, past
    its third of it, so flagged."""
    from solbench.supervisor.audit import CLOCK_GAP, clock_gap

    trusted = [(3.3, 3.0, 3)] * 4
    assert not clock_gap([(1.0 + 1.5, 1.0, 1)] * 4, trusted, share=0.25)
    assert clock_gap([(1.0 + 1.5, 1.0, 1)] * 4, trusted, share=0.25, full_calls=3)
    assert not clock_gap([(3 * (1.0 + 0.5), 3.0, 3)] * 4, trusted, share=0.25, full_calls=3)  # a full round's floor

    def reply(r, n):
        return (0.001 * n, 1000.0) if r == 1 else (0.0025 * n, 1.0)  # after round 0: 1.5 ms hidden a call

    workers = _clock_workers(reply)
    m = _time_fake(workers, copies=3, min_rounds=4, max_rounds=4, round_samples=3, round_budget_ms=20.0)
    assert CLOCK_GAP in m["candidate"].flags
    assert all(calls == 1 for _, _, calls in m["candidate"].telemetry["clock_rounds"]["rounds"][1:])


def test_throttled_rounds_are_taken_again_at_most_one_in_four_and_stay_evidence(monkeypatch):
    """The supervisor's sampler says every round is throttled: only one round in four (and one more) is taken
    again. A round taken again that was out of the clock's bound starts the confirming rounds."""
    import contextlib

    from solbench.gpu import telemetry

    class Throttled(contextlib.AbstractContextManager):
        def __init__(self, *a, **k):
            pass

        def __exit__(self, *exc):
            return None

        def summary(self):
            return {"throttled": True}

    monkeypatch.setattr(telemetry, "TelemetrySampler", Throttled)
    workers = _clock_workers(lambda r, n: (0.010 * n, 10.0))
    m = _time_fake(workers, min_rounds=8, max_rounds=8, retake_throttled=True)
    rounds = len(m["candidate"].samples_ms)  # 8, and 4 more where a loaded host put one out of bound
    assert workers["candidate"].rounds == workers["seed"].rounds == rounds + 1 + (rounds - 1) // 4  # 0, 4, 8...

    workers = _clock_workers(lambda r, n: (0.100 * n, 10.0) if r == 1 else (0.010 * n, 10.0))
    m = _time_fake(workers, min_rounds=8, max_rounds=8, retake_throttled=True)
    rounds = len(m["candidate"].samples_ms)
    assert rounds >= 8 + 4  # the forged round, taken again, still started the confirming rounds
    assert workers["candidate"].rounds == rounds + 1 + (rounds - 1) // 4
    assert m["candidate"].samples_ms[0] == 10.0 and "throttled_retaken" in m["candidate"].flags
