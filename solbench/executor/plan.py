"""Which scenarios go where, and in what order: the GPU list a run asks for (`--gpus`), each scenario's
estimated cost (from the roofline), and the longest-first order units are dealt in.

Pure: no process, no device. Dealing longest-first to whichever GPU frees up first (list scheduling,
LPT) keeps the last GPU from finishing long after the others: a long scenario dealt last would be the
whole run's tail.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from solbench.core.errors import ConfigError
from solbench.core.policy import TimingPolicy, round_calls
from solbench.core.scenario import Scenario


@dataclass(frozen=True)
class CostModel:
    """Wall seconds one unit (a scenario with all its implementations on one GPU) is expected to take.

    Fitted on the H200's hopper A/A trace (reports/h200/timing/trace-aa-seed-hopper.txt): about 1.2 s per
    implementation per scenario of fixed cost (prepare, check, warm-up, launcher split, the refill and
    audit of each round), plus the calls themselves."""

    fixed_s_per_impl: float = 1.2
    """Per implementation and scenario, whatever its size."""
    sol_share: float = 0.25
    """Share of the speed-of-light bound the implementations are assumed to reach (the seed runs far below it)."""
    cpu_gflops: float = 2.0
    """Rate assumed on a CPU (no arch spec): FLOP/s of a Python reference in one thread, in G."""
    refill_tbps: float = 1.0
    """Rate at which the supervisor writes fresh input contents before each round, TB/s (GB/ms)."""


def calls_per_impl(policy: TimingPolicy, call_ms: float = 0.0) -> int:
    """Calls one implementation whose calls take `call_ms` makes per scenario at least: the check, the minimum
    rounds (the first with round_samples calls, the others with round_calls), the launcher split."""
    rounds = policy.round_samples + (policy.min_rounds - 1) * round_calls(policy, call_ms)
    return 1 + rounds + (8 if policy.launcher_ab else 0)


def estimate_s(sc: Scenario, impls: int, policy: TimingPolicy, bound_ms: float | None,
               model: CostModel = CostModel()) -> float:
    """Estimated wall seconds of one unit: `impls` implementations of `sc`, each called calls_per_impl times
    at sol_share of the bound (`bound_ms`, the scenario's roofline time; None: a CPU, from its FLOPs)."""
    from solbench.core.roofline import flops, min_bytes

    call_ms = (bound_ms / model.sol_share) if bound_ms else flops(sc) / (model.cpu_gflops * 1e6)
    refill_ms = policy.min_rounds * min_bytes(sc) / (model.refill_tbps * 1e9)
    calls_ms = calls_per_impl(policy, call_ms) * call_ms
    per_impl_s = model.fixed_s_per_impl + policy.warmup_ms / 1e3 + (calls_ms + refill_ms) / 1e3
    return impls * per_impl_s


def longest_first(scenarios: list[Scenario], cost_s: dict[str, float]) -> list[Scenario]:
    """Scenarios by estimated cost, largest first; equal costs keep suite order (deterministic)."""
    order = {sc.id: i for i, sc in enumerate(scenarios)}
    return sorted(scenarios, key=lambda sc: (-cost_s[sc.id], order[sc.id]))


def makespan_s(costs_s: list[float], gpus: int) -> float:
    """Wall seconds of dealing `costs_s` in the given order, each to the GPU that frees up first."""
    if gpus < 1:
        raise ConfigError(f"a run needs at least one GPU, got {gpus}")
    free_at = [0.0] * gpus
    for cost in costs_s:
        heapq.heapreplace(free_at, free_at[0] + cost)
    return max(free_at)


def deal(scenarios: list[Scenario], cost_s: dict[str, float], gpus: int) -> list[list[str]]:
    """Which scenario ids each GPU gets when every GPU takes the next longest one as soon as it is free
    and every unit costs what it was estimated to (the plan; the executor deals live, by the same rule)."""
    free_at = [(0.0, g) for g in range(gpus)]
    shares: list[list[str]] = [[] for _ in range(gpus)]
    for sc in longest_first(scenarios, cost_s):
        t, g = heapq.heappop(free_at)
        shares[g].append(sc.id)
        heapq.heappush(free_at, (t + cost_s[sc.id], g))
    return shares


def parse_gpus(raw: str | None, visible: int) -> tuple[int, ...] | None:
    """`--gpus` as device ordinals of this machine: 'all' = every visible one, '0,1,3' = those; None = the
    plain run (one GPU, the supervisor's own workers). Duplicates and ordinals not present are refused."""
    if raw is None:
        return None
    text = raw.strip().lower()
    if text == "all":
        if visible < 1:
            raise ConfigError("--gpus all: no CUDA GPU is visible")
        return tuple(range(visible))
    try:
        ids = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ConfigError(f"--gpus {raw!r}: expected 'all' or comma-separated GPU ordinals such as 0,1,3") from None
    if len(set(ids)) != len(ids):
        raise ConfigError(f"--gpus {raw!r}: a GPU is listed twice (two worker sets on one GPU would time each other)")
    missing = [i for i in ids if not 0 <= i < visible]
    if missing:
        raise ConfigError(f"--gpus {raw!r}: no GPU {missing[0]} here ({visible} visible: 0..{visible - 1})")
    return ids
