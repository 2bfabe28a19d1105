"""The supervisor's side of the native runner on a CPU: its pipe protocol against a fake runner (a script
speaking runner.cu's protocol), each failure of the runner as the WorkerFailure the evaluation loop maps
to a status, and the flags decided from the runner's raw numbers."""

import json
import socket
import sys
import textwrap

import pytest

pytest.importorskip("torch")

from solbench.core.model import Status  # noqa: E402
from solbench.core.policy import TimingPolicy  # noqa: E402
from solbench.sandbox.impls import ImplSpec  # noqa: E402
from solbench.sandbox.timing import HOST_GAP  # noqa: E402
from solbench.supervisor.python_worker import WorkerFailure  # noqa: E402
from solbench.supervisor.evaluate import FAILURE_STATUS  # noqa: E402
from solbench.supervisor.cupti_verdict import CUPTI_BLIND, WORK_OUTSIDE_EVENTS, round_flags  # noqa: E402
from solbench.supervisor.native_worker import NativeWorker, runner_argv  # noqa: E402

FLOORS = {"host_floor_ms": 0.01, "host_gap_slack_ms": 0.02}

FAKE = textwrap.dedent("""\
    #!{python}
    import json, os, sys, time
    mode = os.environ.get("FAKE_MODE", "")
    if mode == "load_failed":
        print("load_failed lib.so: missing entry point `solbench_attention_forward`", flush=True); sys.exit(0)
    fdsock = [int(a[7:]) for a in sys.argv if a.startswith("fdsock=")]
    import stat
    if mode != "silent":
        print("ready " + json.dumps({{"cupti": True, "launch_count": mode != "uncounted"}}), flush=True)
    if mode == "baddescribe":
        print("ok [1, 2]", flush=True)
    print("ok " + json.dumps({{"device": "cuda:0", "runner": "native", "host_floor_ms": 0.01,
                               "host_gap_slack_ms": 0.02, "cupti": True,
                               "fdsock": [stat.S_ISSOCK(os.fstat(n).st_mode) for n in fdsock]}}), flush=True)
    for line in sys.stdin:
        cmd = line.split()[0]
        if cmd == "quit":
            break
        if cmd == "check":
            if mode == "crash":
                os._exit(9)
            if mode == "hang":
                time.sleep(60)
            reply = {{"unsupported": "unsupported solbench_attention_forward returned 2 (SOLBENCH_ERR_UNSUPPORTED)",
                      "forbidden": "forbidden cublas was mapped into the candidate's process at run time (/x/libcublas.so)",
                      "error": "error solbench_attention_forward returned 3 (SOLBENCH_ERR_CUDA)",
                      "badjson": "ok {{not json"}}.get(mode, "ok null")
            print(reply, flush=True)
        elif cmd == "round" and mode == "badround":
            print('ok {{"device_ms": 1}}', flush=True)
        elif cmd == "round":
            n = len(line.split()) - 1
            raw = {{"device_ms": [1.0] * n, "host_ms": [1.05] * n, "launch_ms": [0.01] * n, "cover_ms": [0.02] * n,
                    "span_ms": [1.02] * n, "issued_ms": [0.03] * n, "flags": [], "work_span_ms": [0.99] * n,
                    "kernels": [{{"name": "attn", "grid": [1, 1, 1], "block": [128, 1, 1], "duration_ms": 0.99,
                                  "stream": 7}}], "stray_kernels": 1 if mode == "stray" else 0,
                    "unrecorded": 0, "launches": 6 * n, "foreign_launches": 0}}
            if mode == "flipped":  # CUPTI said on before the load, then nothing of it in a round
                raw = {{k: v for k, v in raw.items() if k not in ("work_span_ms", "kernels", "unrecorded")}}
            print("ok " + json.dumps(raw), flush=True)
        else:
            print("ok null", flush=True)
    """)


_MADE: list = []


@pytest.fixture
def fake_runner(tmp_path):
    path = tmp_path / "fake-runner"
    path.write_text(FAKE.format(python=sys.executable))
    path.chmod(0o755)
    yield path
    while _MADE:  # a runner left held would stay stopped after the tests (issue 39, class 7)
        _MADE.pop().stop(kill=True)


def _worker(fake_runner, tmp_path, monkeypatch, mode=""):
    monkeypatch.setenv("FAKE_MODE", mode)
    spec = ImplSpec("candidate", "cu", str(tmp_path / "lib.so"), "k.cu", runner="native")
    _MADE.append(NativeWorker(spec, "cpu", TimingPolicy(), tmp_path / "runner.log", runner=fake_runner))
    return _MADE[-1]


def test_a_round_comes_back_in_the_python_hosts_shape_with_the_kernels_kept(fake_runner, tmp_path, monkeypatch):
    worker = _worker(fake_runner, tmp_path, monkeypatch)
    worker.start(10)
    assert worker.running and worker.description["runner"] == "native"
    assert worker.request("check", {"keep": True}, 10) is None
    reply = worker.request("round", {"order": [0, 1, 2]}, 10)
    assert reply["device_ms"] == [1.0] * 3 and reply["host_ms"] == [1.05] * 3 and reply["flags"] == []
    assert reply["telemetry"]["kernels"][0]["name"] == "attn"
    worker.stop()
    assert not worker.running


@pytest.mark.parametrize("mode, kind, status", [
    ("forbidden", "forbidden", Status.FORBIDDEN_LIBRARY), ("error", "error", Status.RUNTIME_ERROR),
    ("crash", "crash", Status.RUNTIME_ERROR)])
def test_each_failure_of_the_runner_is_the_failure_the_loop_maps_to_a_status(fake_runner, tmp_path, monkeypatch,
                                                                               mode, kind, status):
    worker = _worker(fake_runner, tmp_path, monkeypatch, mode)
    with pytest.raises(WorkerFailure) as caught:
        worker.request("check", None, 10)
    assert caught.value.kind == kind and FAILURE_STATUS[caught.value.kind] is status
    assert not worker.running  # the next request starts a fresh runner


@pytest.mark.parametrize("mode, cmd, payload", [("badjson", "check", None), ("badround", "round", {"order": [0, 1]})])
def test_a_malformed_runner_reply_is_tampering_not_a_crash_of_the_run(fake_runner, tmp_path, monkeypatch, mode, cmd,
                                                                     payload):
    """The runner's lines are the candidate's to forge (ten malformed replies raised
    JSONDecodeError, KeyError or TypeError out of evaluate() and ended the run)."""
    worker = _worker(fake_runner, tmp_path, monkeypatch, mode)
    with pytest.raises(WorkerFailure) as caught:
        worker.request(cmd, payload, 10)
    assert caught.value.kind == "tampered" and "malformed reply from the runner" in str(caught.value)
    assert not worker.running


def test_a_hanging_runner_is_a_timeout_and_is_killed(fake_runner, tmp_path, monkeypatch):
    worker = _worker(fake_runner, tmp_path, monkeypatch, "hang")
    with pytest.raises(WorkerFailure) as caught:
        worker.request("check", None, 1.0)
    assert caught.value.kind == "timeout" and not worker.running


def test_a_declined_scenario_and_a_load_failure(fake_runner, tmp_path, monkeypatch):
    assert "unsupported" in _worker(fake_runner, tmp_path, monkeypatch, "unsupported").request("check", None, 10)
    with pytest.raises(WorkerFailure) as caught:
        _worker(fake_runner, tmp_path, monkeypatch, "load_failed").start(10)
    assert caught.value.kind == "load" and "missing entry point" in str(caught.value)


def test_kernels_landing_between_calls_are_work_outside_the_events(fake_runner, tmp_path, monkeypatch):
    reply = _worker(fake_runner, tmp_path, monkeypatch, "stray").request("round", {"order": [0]}, 10)
    assert WORK_OUTSIDE_EVENTS in reply["flags"]


def test_rounds_are_held_to_what_cupti_recorded_before_the_candidate_loaded(fake_runner, tmp_path, monkeypatch):
    """The runner says what CUPTI records before it loads the candidate; a round without that evidence (a
    constructor switched the runner's own CUPTI state off, so it also describes itself as without) is blind."""
    worker = _worker(fake_runner, tmp_path, monkeypatch)
    assert worker.request("round", {"order": [0]}, 10)["flags"] == []
    assert worker.description["before_load"] == {"cupti": True, "launch_count": True}
    flipped = _worker(fake_runner, tmp_path, monkeypatch, "flipped").request("round", {"order": [0]}, 10)
    assert CUPTI_BLIND in flipped["flags"]
    with pytest.raises(WorkerFailure) as caught:  # a runner that never said it
        _worker(fake_runner, tmp_path, monkeypatch, "silent").start(10)
    assert caught.value.kind == "crash" and "before it loaded the candidate" in str(caught.value)
    with pytest.raises(WorkerFailure) as caught:  # its description after the load is the candidate's to forge
        _worker(fake_runner, tmp_path, monkeypatch, "baddescribe").start(10)
    assert caught.value.kind == "tampered" and "not a JSON object" in str(caught.value)


def _raw(device, work=None, host=None, span=None):
    n = len(device)
    raw = {"device_ms": device, "host_ms": host or [d + 0.05 for d in device], "span_ms": span or device,
           "issued_ms": [0.02] * n, "flags": []}
    if work is not None:
        raw["work_span_ms"] = work
    return raw


def test_flags_from_raw_numbers():
    assert round_flags(_raw([1.0, 1.0], work=[0.99, 1.0]), FLOORS, 0.5) == []
    # one call whose kernels (any stream) outlast its events: enough, no majority needed
    assert round_flags(_raw([1.0, 1.0, 1.0], work=[0.99, 1.5, 1.0]), FLOORS, 0.5) == [WORK_OUTSIDE_EVENTS]
    # kernels that ran before the cover's end or after the end mark (a private stream, a host thread)
    assert round_flags({**_raw([0.1, 0.1], work=[0.05, 0.05]), "outside_ms": [0.0, 0.03]}, FLOORS, 0.5) == [
        WORK_OUTSIDE_EVENTS]
    assert round_flags({**_raw([0.1, 0.1], work=[0.05, 0.05]), "outside_ms": [0.0, 0.0005]}, FLOORS, 0.5) == []
    # an iteration without the runner's own marks: CUPTI was switched off inside (disables_cupti.cu)
    assert round_flags({**_raw([0.1, 0.1], work=[0.0, 0.0]), "unmarked": 1}, FLOORS, 0.5) == [CUPTI_BLIND]
    # launches the driver-API callback counted whose work left no record: off only inside the call (toggles_cupti.cu)
    assert round_flags({**_raw([0.1, 0.1], work=[0.0, 0.0]), "unrecorded": 3}, FLOORS, 0.5) == [CUPTI_BLIND]
    assert round_flags({**_raw([0.1, 0.1], work=[0.05, 0.05]), "unrecorded": 0}, FLOORS, 0.5) == []
    # a runner that counted launches before the candidate loaded and then leaves the count out of a round
    counting = {**FLOORS, "before_load": {"cupti": True, "launch_count": True}}
    assert round_flags(_raw([0.1, 0.1], work=[0.05, 0.05]), counting, 0.5) == [CUPTI_BLIND]
    assert round_flags({**_raw([0.1, 0.1], work=[0.05, 0.05]), "unrecorded": 0}, counting, 0.5) == []
    # launches into another CUDA context: work the runner's synchronize and events never see
    assert round_flags({**_raw([0.1, 0.1], work=[0.05, 0.05]), "foreign_launches": 2}, FLOORS, 0.5) == [
        WORK_OUTSIDE_EVENTS]
    # no CUPTI: the host-gap rule of the Python host, a majority of the round
    assert round_flags(_raw([0.1, 0.1, 0.1], host=[2.0, 2.0, 0.2], span=[0.1] * 3), FLOORS, 0.5) == [HOST_GAP]
    assert round_flags(_raw([0.1, 0.1, 0.1], host=[2.0, 0.2, 0.2], span=[0.1] * 3), FLOORS, 0.5) == []


def test_the_runner_gets_the_policys_timing_fields(tmp_path):
    spec = ImplSpec("candidate", "cu", "/k.so", "k.cu", runner="native", allow=("cutlass",))
    argv = runner_argv(tmp_path / "r", spec, TimingPolicy(l2_flush="both", warmup_ms=30.0), 2)
    assert {"so=/k.so", "device=2", "flush=both", "warmup_ms=30", "cold_l2=1", "allow=cutlass"} <= set(argv)


def test_runs_pick_the_native_runner_for_cu_on_a_gpu_only():
    from solbench.executor.units import UnitContext, make_workers
    from solbench.supervisor.python_worker import Worker

    specs = {"candidate": ImplSpec("candidate", "cu", "/k.so", "k.cu", runner="native"),
             "seed": ImplSpec("seed", "cu", "/s.so", "s.cu", runner="python"),
             "flex": ImplSpec("flex", "baseline", "flex", "flex")}
    on_gpu = make_workers(UnitContext(specs, "cuda", TimingPolicy(), 10, "h200", "r", "/tmp"))
    assert [type(w).__name__ for w in on_gpu.values()] == ["NativeWorker", "Worker", "Worker"]
    on_cpu = make_workers(UnitContext(specs, "cpu", TimingPolicy(), 10, "h200", "r", "/tmp"))
    assert all(isinstance(w, Worker) for w in on_cpu.values())
    assert json.dumps(specs["candidate"].allow) == "[]"


def test_the_runner_gets_a_socket_for_the_tensors_fds_unless_it_owns_its_tensors(fake_runner, tmp_path, monkeypatch):
    """A runner that maps the supervisor's tensors inherits one end of a socketpair (fdsock=N names it) and
    the supervisor keeps the other, closed with the runner; a sanitizing runner (own tensors) gets none."""
    worker = _worker(fake_runner, tmp_path, monkeypatch)
    worker.start(30.0)
    try:
        assert worker.description["fdsock"] == [True]
        assert worker._fds.family == socket.AF_UNIX
    finally:
        worker.stop()
    assert worker._fds is None
    sanitizing = _worker(fake_runner, tmp_path, monkeypatch)
    sanitizing.own_memory = tmp_path / "data.bin"
    sanitizing.start(30.0)
    try:
        assert sanitizing.description["fdsock"] == [] and sanitizing._fds is None
    finally:
        sanitizing.stop()
