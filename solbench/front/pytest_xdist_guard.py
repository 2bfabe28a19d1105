"""Timing under pytest-xdist only when every worker has a GPU of its own.

Two kernels timed at once on one GPU (or on one CPU) measure each other. The controller checks the
worker specs it will start: more than one worker needs `--tx popen//env:CUDA_VISIBLE_DEVICES=<id>`
per worker, each id different. Each worker then claims its device with an exclusive file, which also
catches GPUs assigned by other means (a conftest that sets CUDA_VISIBLE_DEVICES per worker).
"""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

import pytest

ENV = "CUDA_VISIBLE_DEVICES"
_CLAIM = pytest.StashKey[Path]()


def worker_devices(tx_specs: list[str]) -> list[str | None]:
    """CUDA_VISIBLE_DEVICES set by each xdist worker spec (e.g. 'popen//env:CUDA_VISIBLE_DEVICES=1'), or None."""
    devices = []
    for spec in tx_specs:
        found = None
        for part in spec.split("//"):
            if part.startswith(f"env:{ENV}="):
                found = part.split("=", 1)[1]
        devices.append(found)
    return devices


def shared_devices_problem(tx_specs: list[str]) -> str | None:
    """Why these workers would share a device, or None when each has its own (or there is one worker)."""
    if len(tx_specs) <= 1:
        return None
    devices = worker_devices(tx_specs)
    if None in devices:
        return (f"{len(tx_specs)} xdist workers but not each with its own GPU; give each one with "
                f"--tx popen//env:{ENV}=<id> (one per worker, ids distinct), or run without -n")
    seen = [d for d in devices if devices.count(d) > 1]
    if seen:
        return f"xdist workers share {ENV}={seen[0]}: timings on a shared GPU measure each other"
    return None


def _controller_specs(config) -> list[str]:
    option = config.option
    specs = list(getattr(option, "tx", None) or [])
    n = getattr(option, "numprocesses", None)
    if not specs and n:  # xdist turns -n N into N plain 'popen' specs
        specs = ["popen"] * (int(n) if str(n).isdigit() else 2)
    dist = getattr(option, "dist", "no")
    return specs if (dist and dist != "no") or n else []


def refuse_shared_devices(config) -> None:
    """Raise pytest.UsageError when this pytest run would time on a device another xdist worker uses."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        problem = shared_devices_problem(_controller_specs(config))
        if problem:
            raise pytest.UsageError(f"solbench: refusing to time under pytest-xdist: {problem}")
        return
    device = os.environ.get(ENV)
    if not device:
        raise pytest.UsageError(f"solbench: xdist worker {worker} has no {ENV} of its own; refusing to time")
    folder = Path(tempfile.gettempdir()) / f"solbench-xdist-{os.environ.get('PYTEST_XDIST_TESTRUNUID', 'run')}"
    folder.mkdir(exist_ok=True)
    claim = folder / f"{socket.gethostname()}-gpu-{device.replace(',', '_')}"
    try:
        fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        other = claim.read_text().strip() or "another worker"
        raise pytest.UsageError(f"solbench: xdist workers {other} and {worker} share {ENV}={device}; "
                                "refusing to time") from None
    with os.fdopen(fd, "w") as fh:
        fh.write(worker)
    config.stash[_CLAIM] = claim


def release(config) -> None:
    claim = config.stash.get(_CLAIM, None)
    if claim is not None:
        claim.unlink(missing_ok=True)
