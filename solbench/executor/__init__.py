"""The executor layer, between the runner (solbench.supervisor.runner) and the workers: where each unit
(one scenario, all its implementations, on one GPU) is evaluated.

    inline   the plain run: one agent in the solbench process, suite order          (InlineExecutor)
    local    --gpus all|0,1,3: one agent process per GPU of this machine            (LocalExecutor)
    ray      --executor ray: one Ray task per unit, num_gpus=1, a fresh process each (RayExecutor)

Every executor has `start()` (loads the candidate and the seed where it can: LoadError), `outcomes(scenarios,
on_start)` (yields each Outcome as it finishes, in any order), `events` and `unfinished`, and `close()`.
The runner merges the outcomes into one RunResult in suite order and writes it after each.
"""

from __future__ import annotations

from solbench.core.errors import ConfigError
from solbench.executor.units import UnitContext

EXECUTORS = ("local", "ray")
"""`--executor` values: local = this machine (the plain run, or --gpus), ray = a Ray cluster."""


def make_executor(ctx: UnitContext, secret: bytes, executor: str = "local", gpus: str | None = None,
                  ray_address: str | None = None, workers: int | None = None):
    """The executor a run's options ask for; ConfigError for a combination that makes no sense."""
    from dataclasses import replace

    if executor not in EXECUTORS:
        raise ConfigError(f"--executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    if executor == "ray":
        if gpus is not None:
            raise ConfigError("--gpus picks GPUs of this machine; with --executor ray the cluster places units "
                              "(pass --workers N for how many run at once)")
        from solbench.executor.ray_executor import RayExecutor

        return RayExecutor(replace(ctx, executor="ray"), secret, ray_address, workers)
    if ray_address is not None or workers is not None:
        raise ConfigError("--ray-address and --workers go with --executor ray")
    if gpus is None:
        from solbench.executor.inline import InlineExecutor

        return InlineExecutor(ctx, secret)
    if ctx.device != "cuda":
        raise ConfigError("--gpus needs --device cuda (it spreads a run over this machine's GPUs)")
    import os

    import torch

    from solbench.executor.local import LocalExecutor, visible_label
    from solbench.executor.plan import parse_gpus

    ordinals = parse_gpus(gpus, torch.cuda.device_count())
    if list(ordinals) == [0] and torch.cuda.device_count() == 1:
        # The one GPU this process sees: an agent process would only add its own start-up (H200, fa3-h2h:
        # 102 s against 94 s plain) and has no other GPU to deal a lost unit to.
        from solbench.executor.inline import InlineExecutor

        return InlineExecutor(ctx, secret)
    labels = [visible_label(i, os.environ.get("CUDA_VISIBLE_DEVICES")) for i in ordinals]
    return LocalExecutor(replace(ctx, executor="local"), secret, labels)


def unit_order(scenarios: list, ctx: UnitContext, parallel: bool) -> list:
    """The order units are dealt in: suite order for the plain run, longest first (estimated from the
    roofline, solbench.executor.plan) when several run at once."""
    if not parallel:
        return list(scenarios)
    from solbench.core.roofline import bounds_for
    from solbench.executor.plan import estimate_s, longest_first

    bound_fn = bounds_for(ctx.arch)

    def bound_ms(sc):
        b = bound_fn(sc) if bound_fn else None
        return b.bound_ms if b else None

    costs = {sc.id: estimate_s(sc, len(ctx.specs), ctx.policy, bound_ms(sc)) for sc in scenarios}
    return longest_first(scenarios, costs)
