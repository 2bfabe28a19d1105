"""A candidate that crashes, poisons its CUDA context, hangs or exhausts device memory on one scenario
costs that scenario only: the run goes on, every other scenario passes, and all of them are on disk.

reference_kernels/adversarial/fault_on_one.cu is the seed everywhere except on the smoke suite's one
scenario with 8 query heads, where it fails the way SOLBENCH_TEST_FAULT says. The seed runs beside it as
a comparator and must be untouched by the candidate's failure.
"""

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from solbench.core.model import Status  # noqa: E402
from solbench.core.policy import QUICK  # noqa: E402
from solbench.supervisor.runner import RunConfig, run  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]
KERNEL = Path(__file__).resolve().parents[1] / "reference_kernels" / "adversarial" / "fault_on_one.cu"


@pytest.mark.parametrize("fault, status, says", [
    ("segfault", Status.RUNTIME_ERROR, "SIGSEGV"),
    ("illegal_address", Status.RUNTIME_ERROR, "illegal memory access"),
    ("infinite_loop", Status.TIMEOUT, "no answer"),
    ("oom", Status.RUNTIME_ERROR, "SOLBENCH_ERR_CUDA"),
])
def test_a_failing_scenario_costs_only_itself(tmp_path, monkeypatch, fault, status, says):
    monkeypatch.setenv("SOLBENCH_TEST_FAULT", fault)  # the workers inherit it
    result = run(RunConfig(candidate=str(KERNEL), suite="smoke", baselines=(), policy=QUICK,
                           out_dir=tmp_path, timeout_s=20))
    on_disk = json.loads((tmp_path / "results.json").read_text())
    assert on_disk["complete"] and len(on_disk["outcomes"]) == result.scenario_count == 10
    faulty = [o for o in result.outcomes if o.scenario["heads_q"] == 8]
    others = [o for o in result.outcomes if o.scenario["heads_q"] != 8]
    assert len(faulty) == 1 and faulty[0].status is status and says in faulty[0].reason, faulty[0].reason
    assert all(o.status is Status.PASSED and o.measurements.get("candidate") for o in others), \
        [(o.scenario_id, o.status, o.reason) for o in others if o.status is not Status.PASSED]
    # The seed, in its own worker, is checked and timed on every scenario, the faulty one included.
    assert all(o.comparators["seed"]["status"] == "passed" for o in result.outcomes)


def test_a_python_hosted_implementation_reports_its_kernels_for_the_triage(tmp_path):
    """Python workers take one call's kernel records (torch.profiler) after the warm-up; the native seed's
    come from its runner's CUPTI. Both reach the measurement's telemetry, where solbench triage reads them."""
    reference = Path(__file__).resolve().parents[1] / "reference_kernels" / "torch_attention.py"
    result = run(RunConfig(candidate=str(reference), suite="smoke", baselines=(), policy=QUICK, out_dir=tmp_path,
                           max_scenarios=2))
    for o in result.outcomes:
        assert o.status is Status.PASSED, o.reason
        for name in ("candidate", "seed"):
            kernels = o.measurements[name].telemetry.get("kernels")
            assert kernels and all(k["name"] and len(k["grid"]) == 3 and k["duration_ms"] > 0 for k in kernels), \
                (name, kernels)
