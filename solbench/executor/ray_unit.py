"""The body of one Ray task: a per-task, supervisor-side agent on the GPU host.

Ray starts a fresh process for each task (max_calls=1) with CUDA_VISIBLE_DEVICES naming the one GPU it
reserved (num_gpus=1). In it the agent unpacks the implementations (checked against their sha256), makes
the unit's inputs from the unit's key, starts a fresh worker per implementation, evaluates the scenario
exactly as a plain run does, stops every worker and sweeps what they left, and returns the outcome
sealed with the unit's key (solbench.executor.keys), with the tail of each worker's log. Nothing here
imports Ray: the executor (solbench.executor.ray) wraps it.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from solbench.core.scenario import Scenario
from solbench.executor.units import UnitContext

LOG_TAIL_BYTES = 16_000
"""Of each worker's log, at most this much comes back with the outcome."""


def run_unit(ctx: UnitContext, packed: dict, sc: Scenario, key: bytes, attempt: int) -> dict:
    """{'outcome', 'mac', 'logs'}, or {'load_error'} when the candidate or the seed cannot be loaded here."""
    from solbench.core.errors import LoadError
    from solbench.executor.artefacts import unpack
    from solbench.executor.keys import seal
    from solbench.executor.units import Agent

    folder = Path(tempfile.mkdtemp(prefix="solbench-unit-"))
    try:
        here = replace(ctx, specs=unpack(packed, str(folder / "impl")), log_dir=str(folder), executor="ray")
        agent = Agent(here)
        try:
            try:
                agent.load()
            except LoadError as exc:
                return {"load_error": str(exc)}
            doc = agent.evaluate(sc, key, attempt).to_dict()
        finally:
            agent.close()
        return {"outcome": doc, "mac": seal(doc, key), "logs": _tails(folder)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _tails(folder: Path) -> dict[str, str]:
    out = {}
    for log in sorted(folder.glob("worker-*.log")):
        data = log.read_bytes()[-LOG_TAIL_BYTES:]
        out[log.stem] = data.decode(errors="replace")
    return out
