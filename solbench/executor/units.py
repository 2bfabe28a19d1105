"""The unit of work, and the supervisor-side agent that evaluates it on one GPU.

A unit is one scenario with all its implementations (candidate, seed, baselines) on one GPU, interleaved
by `solbench.supervisor.evaluate.evaluate` exactly as a plain run does: an A/B pair never spans two GPUs
(same-model GPUs differ by several percent). The `Agent` is supervisor code: it owns the unit's inputs,
reference and verdict, and starts the workers; it never imports a candidate. A plain run has one, in the
`solbench` process itself; `--gpus` starts one per GPU as a child process (solbench.executor.local); a Ray
task is one (solbench.executor.ray_unit).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

from solbench.core.model import AFTER_CONTENTS, SUPERVISOR_FAILED, SUPERVISOR_OUT_OF_MEMORY, Outcome, Status
from solbench.core.policy import TimingPolicy
from solbench.core.scenario import Scenario
from solbench.sandbox.impls import ImplSpec


@dataclass(frozen=True)
class UnitContext:
    """What every unit of a run shares; a small picklable value that crosses to agents."""

    specs: dict[str, ImplSpec]
    """Implementations by result name, candidate first (built .so or module file, or baseline name)."""
    device: str
    """'cuda' or 'cpu'."""
    policy: TimingPolicy
    """The run's timing policy."""
    timeout_s: float
    """Per request to a worker."""
    arch: str
    """The run's arch (bounds)."""
    run_id: str
    """The run's id (part of each unit's key)."""
    log_dir: str
    """Folder of the worker logs."""
    executor: str = "inline"
    """Which executor the agents belong to (recorded in each placement)."""
    witnessed: tuple[str, ...] = ()
    """Scenario ids `--sanitize` will check: of each, one random scored call of the candidate is kept in the run
    folder (solbench.supervisor.witness)."""


def make_workers(ctx: UnitContext, log_tag: str = "") -> dict:
    """One worker per implementation, in ctx.specs order. The only place worker objects are made: a .cu
    implementation with runner 'native' on a GPU gets the native runner (same start / request / stop / pid /
    running interface), everything else the Python host."""
    from solbench.supervisor.python_worker import Worker
    from solbench.supervisor.native_worker import NativeWorker

    folder = Path(ctx.log_dir)
    workers = {}
    for n, s in ctx.specs.items():
        log = folder / f"worker-{n}{log_tag}.log"
        if s.kind == "cu" and s.runner == "native" and ctx.device.startswith("cuda"):
            workers[n] = NativeWorker(s, ctx.device, ctx.policy, log, arch=ctx.arch)
        else:
            workers[n] = Worker(s, ctx.device, ctx.policy, log, setup_s=setup_s(s))
    if ctx.witnessed and "candidate" in workers:
        from solbench.supervisor.witness import Witnessed

        workers["candidate"] = Witnessed(workers["candidate"], folder, ctx.witnessed)
    return workers


def setup_s(spec: ImplSpec) -> float:
    """A baseline's allowance for compiling a new configuration (0 for .cu and Python implementations)."""
    if spec.kind != "baseline":
        return 0.0
    from solbench.baselines import get_adapter_class

    return float(get_adapter_class(spec.path).setup_s)


def baseline_claims(specs: dict[str, ImplSpec], arch: str) -> dict:
    """Per baseline, scenario -> (ok, reason): a pair it does not claim is skipped, never run."""
    from solbench.baselines import claims

    def claim_for(name):
        def claim(sc):
            support = claims(name, sc, arch)
            return support.ok, support.reason
        return claim

    return {n: claim_for(s.path) for n, s in specs.items() if s.kind == "baseline"}


def bounds_here(arch: str, gpu_uuid: str | None):
    """(scenario -> Bound, profile provenance) for this GPU: its own calibrated profile
    (`<arch>@<uuid>.toml` beside `<arch>.toml` in the measured folder) when one exists, else the arch's."""
    from solbench.core.archspec import known_arches, load_arch, load_profile, measured_dir
    from solbench.core.roofline import bound, bounds_for, profile_provenance

    own = measured_dir() / f"{arch.lower()}@{gpu_uuid}.toml" if gpu_uuid else None
    if arch not in known_arches() or own is None or not own.exists():
        provenance = profile_provenance(arch)
        return bounds_for(arch), provenance
    spec, profile = load_arch(arch), load_profile(own)

    def bound_or_none(sc):
        return bound(sc, spec, profile) if spec.supports(sc.dtype) else None

    return bound_or_none, {"gpu": profile.gpu, "date": profile.date, "path": own.name}


MAX_OOM_RETRIES = 3
"""Second tries after running out of device memory, per agent: each one restarts every worker (comparators lose
their warm kernels), so a candidate that pins memory to force them costs the run little; past this, such a
scenario is a machine error for --retry-errors."""


class Agent:
    """Evaluates units on the GPU of the process it lives in, with one worker per implementation, kept
    from unit to unit (a baseline's compiled kernels stay warm) and restarted after any failure."""

    def __init__(self, ctx: UnitContext, log_tag: str = ""):
        from solbench.executor.placement import here
        from solbench.supervisor.processes import Reaper

        self.ctx = ctx
        self.reaper = Reaper()  # before any worker starts: every later child that is not a worker is an orphan
        self.workers = make_workers(ctx, log_tag)
        self.supports = baseline_claims(ctx.specs, ctx.arch)
        uuid = here(ctx.executor, ctx.device).gpu_uuid
        self.bound_fn, self.profile = bounds_here(ctx.arch, uuid)
        self.oom_retries = 0
        """Scenarios evaluated a second time after running out of device memory (at most MAX_OOM_RETRIES)."""

    def load(self) -> None:
        """Start the candidate's and the seed's workers: LoadError when one cannot be loaded, before any
        scenario runs. Baseline libraries start at their first scenario (a failure costs only their records)."""
        from solbench.core.errors import LoadError
        from solbench.supervisor.python_worker import WorkerFailure

        for name, worker in self.workers.items():
            if name != "candidate" and worker.spec.kind == "baseline":
                continue
            try:
                worker.start(self.ctx.timeout_s)
            except WorkerFailure as exc:
                raise LoadError(f"{exc}; see {worker.log_path}" if exc.kind != "load" else str(exc)) from None

    def evaluate(self, sc: Scenario, key: bytes, attempt: int = 1) -> Outcome:
        """The scenario's Outcome, with where it ran (Outcome.placement); inputs drawn from `key`."""
        from solbench.executor.keys import retry_key
        from solbench.executor.placement import here
        from solbench.supervisor.evaluate import evaluate

        placement = here(self.ctx.executor, self.ctx.device, self.profile)
        started = time.perf_counter()
        candidate, contents, retried = self.workers["candidate"], key, ""
        while True:
            given = candidate.prepares
            try:
                outcome = evaluate(sc, self.workers, self.ctx.policy, self.ctx.device, self.ctx.timeout_s,
                                   self.bound_fn, self.supports, contents)
                break
            except Exception as exc:  # torch.OutOfMemoryError, named so that torch is not imported here
                if type(exc).__name__ != "OutOfMemoryError":
                    # Whatever a worker's reply made go wrong here costs its scenario, never the run: the
                    # candidate must not choose where a run stops (before a scenario it would fail).
                    for worker in self.workers.values():
                        worker.stop(kill=True)
                    outcome = supervisor_failed(sc, exc)
                    break
                seen = candidate.prepares != given
                outcome = supervisor_out_of_memory(sc, exc, retried=bool(retried), seen=seen)
                # Every worker ends: memory a worker keeps (its caching allocator, or mappings of earlier
                # scenarios a candidate kept past `release`) comes back only with its process.
                for worker in self.workers.values():
                    worker.stop(kill=True)
                self.reaper.sweep()
                if retried or seen or self.oom_retries >= MAX_OOM_RETRIES:
                    break
                self.oom_retries += 1
                # Once more, with new contents, only while the candidate has seen none of this scenario: a
                # candidate that knew it failed could otherwise fill the device for a new draw.
                retried, contents = outcome.reason, retry_key(key)
        self.reaper.sweep({w.pid for w in self.workers.values() if w.pid})
        placement = replace(placement, wall_s=time.perf_counter() - started, attempt=attempt, retried=retried)
        return replace(outcome, placement=placement.to_dict())

    def close(self) -> None:
        """Stop every worker, then end whatever they left behind."""
        for worker in self.workers.values():
            worker.stop()
        self.reaper.sweep()


def supervisor_out_of_memory(sc: Scenario, exc: Exception, retried: bool = False, seen: bool = False) -> Outcome:
    """The record of a scenario whose inputs or reference did not fit in the device's memory beside what the
    workers hold (`retried`: also once every worker was started afresh): a machine error, which `--retry-errors`
    evaluates again unless the candidate had been given the scenario's contents (`seen`, AFTER_CONTENTS); the
    run goes on to the next one."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_initialized():
        torch.cuda.empty_cache()
    first = str(exc).splitlines()[0] if str(exc) else ""
    return Outcome(scenario_id=sc.id, scenario=sc.to_dict(), status=Status.RUNTIME_ERROR,
                   reason=f"{SUPERVISOR_OUT_OF_MEMORY}"
                          + (f" {AFTER_CONTENTS}" if seen else "")
                          + (" (again with every worker started afresh)" if retried else "")
                          + f": OutOfMemoryError: {first}")


def supervisor_failed(sc: Scenario, exc: Exception) -> Outcome:
    """The record of a scenario whose evaluation raised in the supervisor: a failure, with the exception's
    first line, so that the fault is seen and the run goes on."""
    first = str(exc).splitlines()[0] if str(exc) else ""
    return Outcome(scenario_id=sc.id, scenario=sc.to_dict(), status=Status.RUNTIME_ERROR,
                   reason=f"{SUPERVISOR_FAILED}: {type(exc).__name__}: {first}"[:500])


def lost_outcome(sc: Scenario, why: str) -> Outcome:
    """The record of a unit that no agent could finish (its GPUs died under it): a machine error, which
    `--retry-errors` evaluates again."""
    return Outcome(scenario_id=sc.id, scenario=sc.to_dict(), status=Status.RUNTIME_ERROR, reason=why)


def tampered_outcome(sc: Scenario, why: str) -> Outcome:
    """The record of a unit whose outcome came back altered (solbench.executor.keys.SealError)."""
    return Outcome(scenario_id=sc.id, scenario=sc.to_dict(), status=Status.TAMPERED, reason=why)
