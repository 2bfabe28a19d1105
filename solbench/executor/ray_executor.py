"""`--executor ray`: each unit is a Ray task that reserves one GPU (num_gpus=1) and runs in a fresh
process (max_calls=1): a per-task, supervisor-side agent on the GPU host (solbench.executor.ray_unit).
The submitting `solbench` process stays the supervisor: it holds the run's secret, deals units longest
first, derives each unit's key, checks the seal of every outcome that comes back, and alone writes the
record. Works on an existing cluster (`--ray-address`) or on a local one it starts (on a CPU machine with
`--workers` fake GPUs, so the Python reference candidate can run the same path without a GPU).

Ray is an optional dependency (`pip install "solbench[ray]"`), imported here only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterator

from solbench.core.errors import LoadError, MissingDependencyError
from solbench.core.model import AGENT_DIED, Outcome
from solbench.core.scenario import Scenario
from solbench.executor.keys import SealError, unit_key, unseal
from solbench.executor.local import MAX_ATTEMPTS
from solbench.executor.units import UnitContext, lost_outcome, tampered_outcome


def import_ray():
    try:
        import ray
    except ImportError:
        raise MissingDependencyError("--executor ray needs Ray: pip install \"solbench[ray]\"") from None
    return ray


class RayExecutor:
    """Units as Ray tasks, at most `workers` in flight."""

    def __init__(self, ctx: UnitContext, secret: bytes, address: str | None = None, workers: int | None = None):
        """address: an existing cluster ('auto', 'ray://host:10001', ...); None starts a local one.
        workers: tasks in flight at once (default: the cluster's GPUs; a local cluster on a CPU gets that
        many fake GPUs, 1 by default)."""
        self.ctx = ctx
        self._secret = secret
        self.address = address
        self.workers = workers
        self.events: list[str] = []
        """What happened to tasks, in order, one line each (kept in environment['executor'])."""
        self.unfinished: list[str] = []
        """Scenario ids left when the cluster could take no more."""
        self._ray = None
        self._packed = None

    def start(self) -> None:
        """Connect to (or start) the cluster and put the implementations in its object store once."""
        from solbench.executor.artefacts import pack

        ray = self._ray = import_ray()
        if self.address:
            ray.init(address=self.address, log_to_driver=False)
        else:
            fake = (self.workers or 1) if self.ctx.device == "cpu" else None
            ray.init(num_gpus=fake, num_cpus=max(os.cpu_count() or 1, self.workers or 1), include_dashboard=False,
                     log_to_driver=False)
        if not self.workers:
            self.workers = max(1, int(ray.cluster_resources().get("GPU", 1)))
        self._packed = ray.put(pack(self.ctx.specs))  # built once here; travels to each node once

    def outcomes(self, scenarios: list[Scenario], on_start: Callable[[str, int, int], None] | None = None
                 ) -> Iterator[Outcome]:
        from solbench.executor.ray_unit import run_unit

        ray = self._ray
        task = ray.remote(num_gpus=1, max_calls=1, max_retries=0)(run_unit)
        queue, pending, done = list(scenarios), {}, 0
        attempts: dict[str, int] = {}
        while queue or pending:
            while queue and len(pending) < self.workers:
                sc = queue.pop(0)
                attempt = attempts[sc.id] = attempts.get(sc.id, 0) + 1
                key = unit_key(self._secret, self.ctx.run_id, sc.id, attempt)
                pending[task.remote(self.ctx, self._packed, sc, key, attempt)] = (sc, attempt, key)
                if on_start:
                    on_start(sc.id, done, len(scenarios))
            (ref,), _ = ray.wait(list(pending), num_returns=1)
            sc, attempt, key = pending.pop(ref)
            try:
                reply = ray.get(ref)
            except ray.exceptions.RayError as exc:
                why = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
                self.events.append(f"{sc.id}: task lost on attempt {attempt} ({why})")
                if attempt >= MAX_ATTEMPTS:
                    done += 1
                    yield lost_outcome(sc, f"{AGENT_DIED} in {MAX_ATTEMPTS} Ray tasks while evaluating it: {why}")
                else:
                    queue.insert(0, sc)
                continue
            if "load_error" in reply:
                for other in pending:
                    ray.cancel(other, force=True)
                raise LoadError(reply["load_error"])
            self._keep_logs(sc, reply.get("logs", {}))
            done += 1
            try:
                yield Outcome.from_dict(unseal(reply["outcome"], reply["mac"], key, f"{sc.id} (Ray task)"))
            except SealError as exc:
                yield tampered_outcome(sc, str(exc))

    def _keep_logs(self, sc: Scenario, logs: dict[str, str]) -> None:
        """Append each worker log's tail, under a header naming the scenario, to the run folder's log."""
        for stem, text in logs.items():
            with open(Path(self.ctx.log_dir) / f"{stem}.log", "a") as f:
                f.write(f"==== {sc.id} (Ray task) ====\n{text}\n")

    def close(self) -> None:
        if self._ray is not None and self._ray.is_initialized():
            self._ray.shutdown()
