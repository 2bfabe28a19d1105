"""benchmarks/ab_experiment.py on CPU: an A/A of the Python seed against itself on two smoke scenarios,
and the report it prints (the GPU experiment is the same code with the .cu seed)."""

import pytest
import argparse
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("ab_experiment", ROOT / "benchmarks" / "ab_experiment.py")
ab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ab)


@pytest.mark.slow
def test_cpu_aa_rows_and_report(tmp_path):
    args = argparse.Namespace(suite="smoke", filter=None, max_scenarios=2, out=str(tmp_path), policy="warmup_ms=7")
    row = ab.experiment(str(ROOT / "reference_kernels" / "torch_attention.py"), args, "aa-seed")
    from solbench.supervisor.run_files import load_run

    assert load_run(tmp_path / "aa-seed").policy["warmup_ms"] == 7  # the policy tried is the one recorded
    assert (row["scenarios"], row["timed"], row["failed"]) == (2, 2, 0)
    assert 0 <= row["p50_pct"] <= row["p95_pct"] <= row["max_pct"]
    assert row["ci"][0] <= row["geomean"] <= row["ci"][1]
    assert 0 <= row["confidently_slower"] <= row["ci_missing_1"] <= row["timed"] and row["wall_s"] > 0
    planted = {**row, "label": "planted-2pct", "confidently_slower": 1}
    text = ab.report([row, planted])
    assert "per-scenario 95 % CIs that miss 1" in text and "detection rate of the planted 2 % slowdown: 1/2 = 50.0%" in text
    assert text.splitlines()[1].split()[:3] == ["run", "timed", "fail"]
