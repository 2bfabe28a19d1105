"""The trust boundary on a CPU: the Python cheats of reference_kernels/adversarial/python each get the
status their docstring names, decided in the supervisor; the record is the supervisor's even when the
candidate leaves a process behind to rewrite it."""

import json
import re
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

from solbench.core.model import Status  # noqa: E402
from solbench.core.policy import QUICK  # noqa: E402
from solbench.supervisor.runner import RunConfig, record_digest, run  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "reference_kernels" / "adversarial" / "python"
EXPECTED = {p.name: set(m.group(1).split(" or ")) for p in sorted(CORPUS.glob("*.py"))
            if (m := re.search(r"^expect: (\w+(?: or \w+)*)$", p.read_text(), re.M))}


def _run(candidate, tmp_path, n=2, **kw):
    kw = {"policy": QUICK, "seed": None, **kw}
    return run(RunConfig(candidate=str(candidate), suite="smoke", device="cpu", out_dir=tmp_path, max_scenarios=n,
                         **kw))


def test_every_cheat_in_the_corpus_names_its_expected_status():
    assert set(EXPECTED) >= {"partial_rows.py", "knows_when_timed.py", "permutes_inputs.py", "replays_by_content.py"}
    assert all(statuses <= {s.value for s in Status} for statuses in EXPECTED.values())


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_cheat_gets_its_status(name, tmp_path):
    result = _run(CORPUS / name, tmp_path)
    wrong = [(o.scenario_id, o.status.value, o.reason) for o in result.outcomes if o.status.value not in EXPECTED[name]]
    assert not wrong, wrong


def test_content_memoisation_never_replays_a_timed_call(tmp_path, monkeypatch):
    """Every timed call sees contents never seen before: each one is a miss, so the memo buys nothing."""
    monkeypatch.setenv("SOLBENCH_ADVERSARY_LOG", "1")
    result = _run(CORPUS / "replays_by_content.py", tmp_path / "run", n=1)
    (outcome,) = result.outcomes
    assert outcome.status is Status.PASSED, outcome.reason
    log = (tmp_path / "run" / "worker-candidate.log").read_text()
    calls = [line.split()[-1] for line in log.splitlines() if line.startswith("replays_by_content:")]
    timed = len(outcome.measurements["candidate"].samples_ms)
    # misses: the check, one per copy in warm-up, then every timed call; hits only in warm-up's repeats
    assert calls.count("miss") >= 1 + outcome.input_copies + timed


@pytest.mark.slow
def test_a_call_that_rewrites_another_copys_structure_is_caught(tmp_path):
    """rewrites_idle_copies.py passed all of smoke with 4 input copies while the rounds refreshed values only."""
    from dataclasses import replace

    policy = replace(QUICK, rotate_inputs=4)
    cheat = _run(CORPUS / "rewrites_idle_copies.py", tmp_path / "cheat", n=3, policy=policy)
    assert [o.status for o in cheat.outcomes] == [Status.MISMATCH] * 3, [(o.status, o.reason) for o in cheat.outcomes]
    assert all("was rewritten while it was not being called" in o.reason for o in cheat.outcomes)
    honest = _run(CORPUS.parents[1] / "torch_attention.py", tmp_path / "honest", n=3, policy=policy)
    assert [o.status for o in honest.outcomes] == [Status.PASSED] * 3, [(o.status, o.reason) for o in honest.outcomes]


def test_the_structure_the_audit_keeps_is_every_input_but_the_values():
    from solbench.core.tensors import INPUT_FIELDS
    from solbench.supervisor.inputs import STRUCTURE_FIELDS, VALUE_FIELDS

    assert set(STRUCTURE_FIELDS) == set(INPUT_FIELDS) - set(VALUE_FIELDS)
    assert not set(STRUCTURE_FIELDS) & set(VALUE_FIELDS)


def test_a_permutation_of_the_inputs_changes_the_fingerprint_but_not_a_plain_sum():
    import torch

    from solbench.core.suites import load_suite
    from solbench.supervisor.inputs import input_fingerprint, make_inputs

    inp = make_inputs(load_suite("smoke").scenarios[0])
    before = input_fingerprint(inp, key=12345)
    words = inp.k.view(torch.int16).view(-1)
    plain = int(words.sum())
    words[[0, 1]] = words[[1, 0]].clone()
    assert int(words.sum()) == plain
    assert input_fingerprint(inp, key=12345)["k"] != before["k"]
    assert input_fingerprint(inp, key=12346)["k"] != input_fingerprint(inp, key=12345)["k"]


@pytest.mark.slow
def test_a_daemon_the_candidate_leaves_behind_cannot_change_the_record(tmp_path, monkeypatch):
    monkeypatch.setenv("SOLBENCH_ADVERSARY_DAEMON", "1")
    result = run(RunConfig(candidate=str(CORPUS / "detaches_daemon.py"), suite="smoke", device="cpu", policy=QUICK,
                           out_dir=tmp_path, max_scenarios=2, seed=None))
    digest = record_digest(tmp_path)
    time.sleep(1.5)  # the daemon rewrites every 0.2 s once the worker is gone, if it still lives
    assert record_digest(tmp_path) == digest
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["candidate"]["name"] == "detaches_daemon.py"
    assert [o["status"] for o in doc["outcomes"]] == [o.status.value for o in result.outcomes]


@pytest.mark.slow
def test_times_reported_short_are_caught_on_the_supervisors_clock(tmp_path):
    """A cheat the worker's snapshot does not see (it replaces the Sample record, not a watched function):
    the supervisor's clock around each round, against the seed's rounds, shows the missing time."""
    result = run(RunConfig(candidate=str(CORPUS / "fakes_samples.py"), suite="smoke", device="cpu", policy=QUICK,
                           out_dir=tmp_path, max_scenarios=3))
    wrong = [(o.scenario_id, o.status.value, o.reason) for o in result.outcomes if o.status is not Status.TAMPERED]
    assert not wrong, wrong
    assert all(o.reason.startswith("clock check:") and "unexplained" in o.reason for o in result.outcomes)


def test_the_clock_check_passes_an_honest_candidate_and_needs_a_trusted_comparator():
    from solbench.supervisor.audit import clock_gap, clock_outliers

    trusted = [(10.0, 8.0, 3), (11.0, 8.5, 3)]  # ~0.8 ms per call outside the samples
    assert not clock_gap([(40.0, 37.5, 3)] * 5, trusted)  # a slower honest kernel, same overhead
    assert clock_gap([(40.0, 4.0, 3)] * 5, trusted)  # reports a tenth
    # One round out of bound is out of bound (no majority): rounds.py takes fresh rounds before it flags.
    assert clock_outliers([(40.0, 4.0, 3), (40.0, 37.5, 3), (40.0, 37.5, 3)], trusted) == [0]
    assert not clock_gap([(40.0, 36.0, 3)] * 5, trusted)  # within the allowance and the noise share
    assert clock_gap([(40.0, 36.0, 3)] * 5, trusted, allowance_per_call_ms=-1.0) is False  # a share of the time told
    assert not clock_gap([(3.0, 0.3, 3)] * 5, trusted)  # under the absolute slack
    assert not clock_gap([(40.0, 4.0, 3)] * 5, [])  # nothing trusted to measure the loop with


def test_long_calls_are_bounded_by_a_quarter_of_their_reported_time_on_a_gpu():
    """Calls of 20 ms with 0.8 ms of loop each: reported as 20/1.3 they leave more than a quarter of the reported
    time unexplained and are out of bound; as 20/1.2 they pass (the bound). A CPU's share is twice as wide."""
    from solbench.supervisor.audit import CLOCK_GAP_SHARE_CPU, clock_gap

    trusted = [(3 * 20.8, 3 * 20.0, 3)] * 4
    assert clock_gap([(3 * 20.8, 3 * 20.0 / 1.3, 3)] * 4, trusted)
    assert not clock_gap([(3 * 20.8, 3 * 20.0 / 1.2, 3)] * 4, trusted)
    assert not clock_gap([(3 * 20.8, 3 * 20.0 / 1.3, 3)] * 4, trusted, share=CLOCK_GAP_SHARE_CPU)
    assert clock_gap([(3 * 20.8, 3 * 20.0 / 1.6, 3)] * 4, trusted, share=CLOCK_GAP_SHARE_CPU)


def test_an_honest_runner_whose_loop_costs_a_little_more_than_the_yardsticks_is_not_flagged():
    """The seed against itself through two native runners on the H200 (90 us decode calls, ~2.8 ms a call between
    them, 0.7 ms a call more in the candidate's runner): the bound's share of the loop's allowance covers the
    difference. A forger reporting a tenth is still flagged."""
    from solbench.supervisor.audit import clock_gap

    trusted = [(3 * (0.09 + 2.8), 3 * 0.09, 3)] * 4
    assert not clock_gap([(3 * (0.09 + 2.8 + 0.7), 3 * 0.09, 3)] * 4, trusted)
    assert clock_gap([(3 * (5.0 + 2.8), 3 * 0.5, 3)] * 4, trusted)


@pytest.mark.slow
def test_the_candidates_confinement_is_recorded_with_its_times(tmp_path):
    """What the candidate's worker was confined by, said before the candidate loaded, rides with each round's
    telemetry; it was applied while the worker had one thread (Landlock binds no thread already running, and
    CUDA's threads run the candidate's host functions); the trusted comparators are not confined."""
    from solbench.sandbox.confine import abi_version

    result = run(RunConfig(candidate=str(CORPUS.parent.parent / "torch_attention.py"), suite="smoke", device="cpu",
                           policy=QUICK, out_dir=tmp_path, max_scenarios=1))
    (outcome,) = result.outcomes
    sandbox = outcome.measurements["candidate"].telemetry["sandbox"]
    assert sandbox.startswith("confined (Landlock ABI") if abi_version() >= 1 else sandbox.startswith("not confined")
    if abi_version() >= 1:
        assert "existing files beneath /proc/self;" in sandbox and "no capabilities" in sandbox, sandbox
    assert outcome.measurements["seed"].telemetry.get("sandbox", "") == ""


class _SlowLoopWorker:
    """A worker whose every call takes 1 ms but whose loop costs `between_ms` more per call outside its
    reported host times: the native runner's flush, syncs and CUPTI bookkeeping, or a Python host's pipe."""

    def __init__(self, kind: str, runner: str, between_ms: float, busy_reported: bool = True):
        from types import SimpleNamespace

        self.spec = SimpleNamespace(kind=kind, runner=runner)
        self.between_ms, self.busy_reported = between_ms, busy_reported

    def request(self, cmd, payload=None, timeout_s=0.0):
        import time

        if cmd != "round":
            return None
        calls = len(payload["order"])
        time.sleep(calls * (1.0 + self.between_ms) / 1e3)
        reply = {"device_ms": [0.9] * calls, "host_ms": [1.0] * calls, "flags": [], "telemetry": {}}
        if self.spec.runner == "native" or self.busy_reported == "forged":  # native_worker._round's figures
            wall = calls * (1.0 + self.between_ms) + 0.2
            reply["clock"] = (wall, wall - 0.2 if self.busy_reported else calls * 1.0)
        return reply


def _clock_flags(candidate, comparators):
    from fake_rounds import candidate_flags

    return candidate_flags(candidate, comparators, round_samples=5)


def test_the_native_runners_own_time_between_calls_is_not_hidden_work():
    """The native runner spends ~ms per call between calls (flush, syncs, CUPTI): timed beside Python-hosted
    libraries only (--seed none), an honest native candidate was flagged on the H200 where its calls took ~1-2 ms
    (hopper wl127 sink scenarios). The runner's own account of its round explains that time; a Python host
    that reports the same loop short is still caught."""
    python_lib = {"lib": _SlowLoopWorker("py", "python", between_ms=0.1)}
    assert "supervisor_clock_gap" not in _clock_flags(_SlowLoopWorker("cu", "native", between_ms=2.0), python_lib)
    assert "supervisor_clock_gap" in _clock_flags(_SlowLoopWorker("py", "python", between_ms=2.0), python_lib)
    # the runner's figures are read only from a native worker, whatever a Python host puts in its replies
    assert "supervisor_clock_gap" in _clock_flags(_SlowLoopWorker("cu", "native", 2.0, busy_reported=False), python_lib)
    assert "supervisor_clock_gap" in _clock_flags(_SlowLoopWorker("py", "python", 2.0, busy_reported="forged"), python_lib)


def test_a_reply_begun_and_never_finished_does_not_hang_the_supervisor():
    """A worker that writes a frame's length and part of its body, then stops, blocked the supervisor's read for
    good: the read has a deadline, after which the worker is stopped and the read ends."""
    import os
    import struct
    from multiprocessing import Pipe

    import solbench.sandbox.replies as replies

    ours, theirs = Pipe()
    os.write(theirs.fileno(), struct.pack("!i", 100) + b"[" * 10)
    stopped = []
    old, replies.FRAME_S = replies.FRAME_S, 0.5
    try:
        started = time.monotonic()
        with pytest.raises(replies.Stalled, match="not finished"):
            replies.recv_within(ours, 1.0, lambda: (stopped.append(1), theirs.close()))
        assert stopped == [1] and time.monotonic() - started < 5
        quiet, _kept = Pipe()
        with pytest.raises(replies.Stalled, match="no answer"):
            replies.recv_within(quiet, 0.2, lambda: None)
    finally:
        replies.FRAME_S = old


def test_the_candidates_worker_holds_few_files_open_hard_limit_included(tmp_path):
    """Fds in flight over Unix sockets count against the user and a send is refused once the count passes
    the sender's RLIMIT_NOFILE: a candidate with the supervisor's limit could park enough of them to make the
    supervisor's sends to the comparators fail. Confined, it holds at most
    open_files_cap files, hard limit included, below the supervisor's own limit."""
    import resource
    import subprocess
    import sys

    from solbench.sandbox.confine import CANDIDATE_OPEN_FILES, open_files_cap

    said = subprocess.run([sys.executable, "-c", f"""
import resource
from solbench.sandbox.confine import confine
print(confine([{str(tmp_path)!r}]))
print(*resource.getrlimit(resource.RLIMIT_NOFILE))
"""], capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    cap = open_files_cap(hard)
    assert f"; open files <= {cap}, each file <= 16 GiB; no capabilities; " in said[0] and said[1].split()[1] == str(cap), said
    assert cap <= CANDIDATE_OPEN_FILES and (hard == resource.RLIM_INFINITY or 2 * cap <= hard)
    assert open_files_cap(1000) == 500 and open_files_cap(resource.RLIM_INFINITY) == CANDIDATE_OPEN_FILES


@pytest.mark.slow
def test_time_moved_between_the_calls_of_a_round_buys_nothing(tmp_path):
    """moves_time_within_a_round.py keeps each round's sum true and shrinks two calls of three: scored by the
    round's mean it is as fast as the seed (the same code on a CPU), not 16.8x."""
    from dataclasses import replace
    from statistics import median

    result = _run(CORPUS / "moves_time_within_a_round.py", tmp_path, n=2, seed="default",
                  policy=replace(QUICK, round_samples=3))
    for o in result.outcomes:
        assert o.status is Status.PASSED, (o.scenario_id, o.reason)
        assert median(o.ratios["seed"]) < 1.5, (o.scenario_id, o.ratios["seed"])


@pytest.mark.slow
def test_a_reply_nested_past_the_limit_costs_its_scenario_and_the_run_goes_on(tmp_path):
    """nested_reply.py sends 100,000 '[' on the softcap scenario: that scenario fails, the next ones are judged."""
    result = _run(CORPUS / "nested_reply.py", tmp_path, n=None, filter="-n2-")
    capped = [o for o in result.outcomes if "cap30" in o.scenario_id]
    rest = [o for o in result.outcomes if "cap30" not in o.scenario_id]
    assert len(capped) == 1 and capped[0].status.is_failure, [(o.status, o.reason) for o in capped]
    assert "malformed reply" in capped[0].reason, capped[0].reason
    assert len(rest) == 3 and all(o.status is Status.PASSED for o in rest), [(o.status, o.reason) for o in rest]


def test_a_reply_is_decoded_to_a_bounded_depth_whatever_the_decoder_raises():
    from solbench.sandbox.replies import MAX_REPLY_DEPTH, decode_json, read_reply

    assert read_reply(b'["ok", {"a": [1, 2]}]') == ("ok", {"a": [1, 2]})
    for bad in (b"[" * 100_000, b"[" * (MAX_REPLY_DEPTH + 1) + b"]" * (MAX_REPLY_DEPTH + 1), b"1" * 5000, b"{",
                b'["ok", {"device_ms": [1' + b"0" * 400 + b']}]'):
        with pytest.raises(ValueError):
            decode_json(bad)
    assert decode_json(b"[" * MAX_REPLY_DEPTH + b"]" * MAX_REPLY_DEPTH) is not None
    assert decode_json(b"[9223372036854775807, -5, 1e400]")[0] == 2 ** 63 - 1


def test_a_scenario_the_supervisor_failed_on_is_never_retried_whatever_its_reason_says():
    from solbench.core.scenario import Scenario
    from solbench.executor.units import supervisor_failed
    from solbench.supervisor.runner import errored

    sc = Scenario(q_lens=(8,), kv_lens=(8,), heads_q=1, heads_kv=1)
    outcome = supervisor_failed(sc, KeyError("worker died: out of memory"))
    assert outcome.status is Status.RUNTIME_ERROR and not errored(outcome), outcome.reason
