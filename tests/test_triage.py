"""Gap triage and the tight estimate: synthetic cases per class, and the recorded H200 runs (no GPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solbench.core.archspec import load_arch
from solbench.core.errors import ConfigError
from solbench.core.model import Measurement, Outcome, RunResult, Status
from solbench.core.roofline import bound
from solbench.core.scenario import Scenario
from solbench.core.tight import estimate, tiles
from solbench.front import cli
from solbench.report.triage import TriagePolicy, policy_with, triage
from synthetic_runs import ERROR

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "baselines" / "h200"
DECODE = Scenario(q_lens=(1,) * 4, kv_lens=(65536,) * 4, heads_q=32, heads_kv=8, regime="decode")
PREFILL = Scenario(q_lens=(8192,) * 2, kv_lens=(8192,) * 2, heads_q=32, heads_kv=32, causal=True)


def _m(name, ms, launcher=None, kernels=None):
    telemetry = {}
    if launcher is not None:
        telemetry["launcher"] = {"graph_device_ms": ms, "graph_error": "", "eager_device_ms": ms,
                                 "eager_host_ms": ms + launcher, "eager_single_ms": ms + launcher,
                                 "host_floor_ms": 0.002, "overhead_ms": launcher}
    if kernels is not None:
        telemetry["kernels"] = [{"name": k, "grid": [1, 1, 1], "block": [128, 1, 1], "duration_ms": ms,
                                 "stream": 7} for k in kernels]
    return Measurement(name, (ms,) * 6, "cuda_events", telemetry=telemetry)


def _run(sc: Scenario, measurements: dict) -> RunResult:
    b = bound(sc, load_arch("h200")).to_dict()
    b["measured_bound_ms"] = b["bound_ms"] * 1.1
    o = Outcome("s", sc.to_dict(), Status.PASSED, error=ERROR, measurements=measurements, bound=b)
    return RunResult(run_id="r", suite="smoke", suite_hash="a" * 64, candidate={"name": "k.cu"}, arch="h200",
                     environment={}, policy={}, outcomes=(o,), complete=True, scenario_count=1)


def _cls(sc, measurements, impl="candidate"):
    return {r.impl: r for r in triage([_run(sc, measurements)])}[impl]


def test_tight_estimate_quantises_waves_and_never_undercuts_the_attainable_terms():
    spec = load_arch("h200")
    assert tiles(DECODE) == 8 * 4  # one 128-row tile per sequence and KV head (4 GQA rows packed)
    t = estimate(DECODE, spec, None)
    assert t.waves == 1 and t.wave_efficiency == pytest.approx(32 / 132)
    assert t.tight_ms >= bound(DECODE, spec).bound_ms and t.limit == "memory"
    p = estimate(PREFILL, spec, None)
    assert p.tiles == 2 * 32 * 64 and p.waves == 32 and p.limit == "compute"
    assert p.compute_ms == pytest.approx(bound(PREFILL, spec).compute_ms / p.wave_efficiency)


def test_each_class_with_its_evidence():
    b_ms = bound(DECODE, load_arch("h200")).bound_ms * 1.1  # the attainable bound of _run
    host = _cls(DECODE, {"candidate": _m("candidate", b_ms, launcher=b_ms)})
    assert host.classification == "host" and "launcher" in host.evidence
    at = _cls(DECODE, {"candidate": _m("candidate", b_ms / 0.9, launcher=0.0)})
    assert at.classification == "at-bound" and at.attainable_pct == pytest.approx(90.0)
    # Another library 4x faster, the seed's 32 tiles under-fill 132 SMs: routing, without kernel records.
    slow = {"candidate": _m("candidate", 8 * b_ms), "lib": _m("lib", 2 * b_ms)}
    r = _cls(DECODE, slow)
    assert r.classification == "routing" and "split-KV" in r.evidence and "no kernel records" in r.evidence
    # With kernel records naming the same kernel family, the gap is the kernel's own.
    same = {"candidate": _m("candidate", 8 * b_ms, kernels=["fwd"]), "lib": _m("lib", 2 * b_ms, kernels=["fwd"])}
    assert _cls(DECODE, same).classification == "kernel"
    split = {"candidate": _m("candidate", 8 * b_ms, kernels=["fwd"]),
             "lib": _m("lib", 2 * b_ms, kernels=["split_kv", "merge"])}
    assert "split_kv" in _cls(DECODE, split).evidence
    # A full-wave prefill slower than another library but no routing signal: kernel.
    pb = bound(PREFILL, load_arch("h200")).bound_ms
    assert _cls(PREFILL, {"candidate": _m("candidate", 4 * pb), "lib": _m("lib", 1.2 * pb)}).classification == "kernel"
    # Thresholds come from the policy.
    strict = triage([_run(DECODE, {"candidate": _m("candidate", b_ms / 0.9)})], policy=TriagePolicy(at_bound_pct=95))
    assert strict[0].classification == "kernel"
    with pytest.raises(ConfigError, match="--thresholds"):
        policy_with("nonsense=1")


@pytest.mark.slow
def test_recorded_h200_runs_classify_every_scenario_and_the_seed_splitkv_decode_is_routing():
    runs = ["hopper-d128.json", "hopper-d128+flashinfer.json", "hopper-d128+flex.json"]
    from solbench.supervisor.run_files import load_run

    rows = triage([load_run(H200 / r) for r in runs])
    seed = {r.scenario_id: r for r in rows if r.impl == "candidate"}
    assert len(seed) == 182
    assert {r.impl for r in rows} >= {"candidate", "fa3", "fa4", "cudnn", "flashinfer-fa2", "flashinfer-fa3", "flex"}
    splitkv = [r for sid, r in seed.items() if sid.startswith("splitkvdecode") and "fp8" not in sid]
    assert splitkv and all(r.classification == "routing" for r in splitkv)
    assert all("% of attainable" in r.evidence and "x faster" in r.evidence for r in splitkv)


@pytest.mark.slow
def test_triage_command_json_and_errors(capsys):
    assert cli.main(["triage", str(H200 / "real.json"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert sum(doc["counts"].values()) == len(doc["rows"]) > 0 and "datasheet" in doc["percentages"]["sol_pct"]
    assert cli.main(["triage", str(H200 / "real.json"), str(H200 / "hopper-d128.json")]) == 2
    assert "suite 'hopper-d128'" in capsys.readouterr().err
    assert cli.main(["triage", str(H200 / "real.json"), "--scenario", "nope"]) == 2


@pytest.mark.slow
def test_no_recorded_honest_implementation_is_faster_than_light():
    from solbench.core.roofline import FTL_TOLERANCE
    from solbench.core.stats import median
    from solbench.supervisor.run_files import load_run

    best = 0.0
    for path in sorted(H200.glob("*.json")):
        for o in load_run(path).outcomes:
            for m in (o.measurements.values() if o.bound else ()):
                best = max(best, o.bound["bound_ms"] / median(m.samples_ms))
    assert 0.85 < best < 1 - FTL_TOLERANCE  # FlashInfer's split-KV decode: 91 % of SOL (97.9 % of attainable)


def test_python_hosted_kernel_records_come_from_the_profilers_trace_and_ride_on_every_round(monkeypatch):
    """A Python worker takes one call's kernels after the warm-up (solbench.sandbox.kernel_records) and
    sends them with each round's telemetry, as the native runner's CUPTI records come."""
    from solbench.sandbox import kernel_records, worker

    trace = {"traceEvents": [
        {"cat": "cpu_op", "name": "aten::empty", "ts": 1},
        {"cat": "kernel", "name": "combine", "ts": 30, "dur": 4.0, "args": {"grid": [8, 1, 1], "block": [128, 1, 1], "stream": 7}},
        {"cat": "kernel", "name": "split_kv", "ts": 10, "dur": 120.0, "args": {"grid": [132, 8, 1], "block": [256, 1, 1], "stream": 7}},
        {"cat": "gpu_memset", "name": "Memset", "ts": 5, "dur": 1.0}]}
    recs = kernel_records.kernels_from_trace(trace)
    assert [r["name"] for r in recs] == ["split_kv", "combine"]
    assert recs[0] == {"name": "split_kv", "grid": [132, 8, 1], "block": [256, 1, 1], "duration_ms": 0.12, "stream": 7}

    state = object.__new__(worker._WorkerState)  # its commands without a process or a device
    state.device, state.calls, state.kernels = "cuda", [lambda: None], None
    state.timer = type("T", (), {"warm_up": lambda self, calls: None,
                                 "take": lambda self, calls, n: []})()
    monkeypatch.setattr(kernel_records, "record_kernels", lambda call: (recs, ""))
    state.warm_up(None)
    assert state.round({"order": []})["telemetry"]["kernels"] == recs
    state.release = worker._WorkerState.release.__get__(state)
    monkeypatch.setattr(state, "_release_memory", lambda: None)
    state.release()
    assert state.kernels is None  # the next scenario takes its own
    monkeypatch.setattr(kernel_records, "record_kernels", lambda call: (None, "CUPTI refused"))
    state.calls = [lambda: None]
    state.warm_up(None)
    assert "kernels" not in state.round({"order": []})["telemetry"]


@pytest.mark.parametrize("records", [[1, 2], "abc", {"name": "x"}, 7, [{"name": ["not", "hashable"]}],
                                     [{"name": "k", "grid": [1, 1], "block": [1, 1, 1], "duration_ms": 1.0}],
                                     [{"name": "k", "grid": [1, 1, 1], "block": [1, 1, 1], "duration_ms": float("nan")}]])
def test_malformed_kernel_records_are_no_records_not_a_crash(records):
    """A worker's telemetry comes from the implementation's own process; records of any other
    shape crashed the triage, and with it every report of the run. The supervisor drops them as they arrive
    (rounds.checked_telemetry) and the triage reads only the valid shape (solbench.core.kernels)."""
    from solbench.supervisor.rounds import checked_telemetry

    b_ms = bound(DECODE, load_arch("h200")).bound_ms * 1.1
    m = _m("candidate", 8 * b_ms)
    m.telemetry["kernels"] = records
    row = _cls(DECODE, {"candidate": m, "lib": _m("lib", 2 * b_ms, kernels=["split_kv"])})
    assert row.kernels is None and "no kernel records" in row.evidence
    assert "kernels" not in checked_telemetry({"power_w": 1.0, "kernels": records})
    good = [{"name": "k", "grid": [1, 2, 3], "block": [128, 1, 1], "duration_ms": 0.5, "stream": 7}]
    assert checked_telemetry({"kernels": good})["kernels"] == good


def test_replacing_the_kernel_recorder_is_tampering(monkeypatch):
    """The recorder runs in the candidate's process: replacing it is caught like the timer's replacement."""
    from solbench.sandbox import integrity, kernel_records

    before = integrity.snapshot()
    monkeypatch.setattr(kernel_records, "record_kernels", lambda call: ([1, 2, 3], ""))
    assert any("kernel_records" in name for name in integrity.changed(before))


@pytest.mark.parametrize("launcher", ["x", {"eager_host_ms": "1", "overhead_ms": 1.0}, {"eager_host_ms": 0.0, "overhead_ms": 1.0},
                                      {"eager_host_ms": 1.0}, {"eager_host_ms": float("inf"), "overhead_ms": 1.0}])
def test_a_malformed_launcher_ab_is_no_host_share_not_a_crash(launcher):
    b_ms = bound(DECODE, load_arch("h200")).bound_ms * 1.1
    m = _m("candidate", b_ms / 0.9)
    m.telemetry["launcher"] = launcher
    row = _cls(DECODE, {"candidate": m})
    assert row.host_share_pct is None and row.classification == "at-bound"
