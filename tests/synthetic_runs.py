"""Synthetic RunResults for tests of the gates: raw samples drawn with a fixed numpy seed.

Used by tests/test_check.py and copied into pytester folders by tests/test_pytest_plugin.py.
"""

from __future__ import annotations

import numpy as np

from solbench.core.model import ErrorStats, Measurement, Outcome, RunResult, Status

GPU = "NVIDIA H200"
ERROR = ErrorStats(max_abs=1e-3, mean_abs=1e-4, frac_outside_tol=0.0, atol=1e-2, rtol=1e-2)


def outcome(sid: str, rng: np.random.Generator, median_ms: float = 1.0, noise: float = 0.005, n: int = 40,
            status: str = "passed", reason: str = "", speedups: dict | None = None, bound_ms: float | None = None,
            comparator_status: dict | None = None) -> Outcome:
    """One scenario: `n` lognormal candidate samples around `median_ms`; per-round ratios per comparator."""
    status = Status(status)
    if status is not Status.PASSED:
        return Outcome(sid, {}, status, reason=reason or f"planted {status.value}")
    speedups = {"seed": 2.0} if speedups is None else speedups
    samples = median_ms * rng.lognormal(0.0, noise, n)
    measurements = {"candidate": Measurement("candidate", tuple(samples), "cuda_events")}
    ratios = {}
    for name, speedup in speedups.items():
        measurements[name] = Measurement(name, tuple(speedup * median_ms * rng.lognormal(0.0, noise, n)), "cuda_events")
        ratios[name] = tuple(speedup * rng.lognormal(0.0, noise, max(2, n // 5)))
    comparators = {name: {"status": (comparator_status or {}).get(name, "passed"), "reason": ""} for name in speedups}
    bound = None if bound_ms is None else {"bound_ms": bound_ms, "measured_bound_ms": None}
    return Outcome(sid, {}, status, error=ERROR, measurements=measurements, ratios=ratios,
                   comparators=comparators, bound=bound)


def run(outcomes, run_id: str = "run", suite: str = "smoke", suite_hash: str = "a" * 64, arch: str = "h200",
        gpu: str | None = GPU, scenario_count: int | None = None, policy: dict | None = None) -> RunResult:
    env = {"device": "cuda" if gpu else "cpu", "gpu": {"name": gpu} if gpu else None}
    outcomes = tuple(outcomes)
    return RunResult(run_id=run_id, suite=suite, suite_hash=suite_hash, candidate={"name": "k.cu"}, arch=arch,
                     environment=env, outcomes=outcomes,
                     policy=policy if policy is not None else {"cold_l2": True, "rotate_inputs": 4, "method": "cuda_events"}, complete=True,
                     scenario_count=len(outcomes) if scenario_count is None else scenario_count)


def scenario_ids(n: int) -> list[str]:
    return [f"prefill-b1-sq{128 * (i + 1)}-skv{128 * (i + 1)}-hq8-hkv8-d128-bf16-causal" for i in range(n)]


def pair(n: int = 8, slow: dict | None = None, seed: int = 0, noise: float = 0.005, **kw):
    """(base, new): the same kernel twice, except new is slower by slow[i] (a fraction) on scenario i."""
    rng = np.random.default_rng(seed)
    ids = scenario_ids(n)
    slow = slow or {}
    base = run([outcome(s, rng, median_ms=0.1 * (i + 1), noise=noise) for i, s in enumerate(ids)], run_id="base", **kw)
    new = run([outcome(s, rng, median_ms=0.1 * (i + 1) * (1 + slow.get(i, 0.0)), noise=noise)
               for i, s in enumerate(ids)], run_id="new", **kw)
    return base, new
