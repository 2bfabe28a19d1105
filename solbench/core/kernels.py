"""Kernel records (name, grid, block, duration, stream of each kernel one call launched) as the gap triage reads
them. They come from the process an implementation runs in (the native runner's CUPTI for a `.cu`,
solbench.sandbox.kernel_records for a Python-hosted one), so a candidate's may be anything: the supervisor
keeps only this shape, and the triage reads nothing else."""

from __future__ import annotations

import math

MAX_RECORDS = 32
"""As many as the native runner sends (runner.cu kernels_json)."""


def valid_records(value) -> list[dict] | None:
    """The records as the triage reads them, or None: a worker's telemetry comes from the process its
    implementation runs in (a candidate's may send anything), so only this shape passes: a list of at most
    MAX_RECORDS dicts with a str name (300 characters), grid and block of 3 ints, a finite duration_ms >= 0
    and an int stream. One malformed record drops them all (they crashed every report)."""
    if not isinstance(value, list) or len(value) > MAX_RECORDS:
        return None
    out = []
    for k in value:
        if not isinstance(k, dict):
            return None
        name, grid, block = k.get("name"), k.get("grid"), k.get("block")
        duration, stream = k.get("duration_ms"), k.get("stream", -1)
        dims = all(isinstance(d, list) and len(d) == 3 and all(type(x) is int for x in d) for d in (grid, block))
        if not (isinstance(name, str) and len(name) <= 300 and dims and type(stream) is int
                and type(duration) in (int, float) and math.isfinite(duration) and duration >= 0):
            return None
        out.append({"name": name, "grid": grid, "block": block, "duration_ms": float(duration), "stream": stream})
    return out
