"""benchmarks/rebound_recorded.py: recorded runs get today's bounds; a would-be faster-than-light
candidate leaves the file alone."""

import importlib.util
import json
from pathlib import Path

from solbench.core.model import ErrorStats, Measurement, Outcome, RunResult, Status
from solbench.core.roofline import bounds_for, profile_provenance
from solbench.core.suites import load_suite

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("rebound_recorded", ROOT / "benchmarks" / "rebound_recorded.py")
rebound_recorded = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rebound_recorded)


def recorded(tmp_path, candidate_ms: float) -> Path:
    sc = load_suite("smoke").scenarios[0]
    stale = {**bounds_for("h200")(sc).to_dict(), "bound_ms": 1.0, "measured_bound_ms": 2.0}
    error = ErrorStats(max_abs=1e-3, mean_abs=1e-4, frac_outside_tol=0.0, atol=1e-2, rtol=1e-2)
    o = Outcome(sc.id, sc.to_dict(), Status.PASSED, bound=stale, error=error,
                measurements={"candidate": Measurement("candidate", (candidate_ms,) * 3, "cuda_events")})
    result = RunResult(run_id="r", suite="smoke", suite_hash="a" * 64, candidate={"name": "k.cu"}, arch="h200",
                       environment={"gpu": {"name": "NVIDIA H200"}}, policy={}, outcomes=(o,), complete=True,
                       scenario_count=1)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(result.to_dict()))
    return path


def test_bounds_are_recomputed_and_their_profile_recorded(tmp_path):
    path = recorded(tmp_path, candidate_ms=5.0)
    assert "1 of 1 bounds rewritten" in rebound_recorded.rebound(path, dry_run=False)
    doc = json.loads(path.read_text())
    sc = load_suite("smoke").scenarios[0]
    assert doc["outcomes"][0]["bound"] == bounds_for("h200")(sc).to_dict()
    assert doc["environment"]["roofline_profile"] == profile_provenance("h200")
    assert doc["outcomes"][0]["measurements"]["candidate"]["samples_ms"] == [5.0] * 3  # timings untouched


def test_a_candidate_that_would_be_faster_than_light_leaves_the_file_alone(tmp_path):
    path = recorded(tmp_path, candidate_ms=1e-7)
    before = path.read_text()
    assert "faster than light" in rebound_recorded.rebound(path, dry_run=False)
    assert path.read_text() == before
