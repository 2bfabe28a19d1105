"""The kernels one call of a Python-hosted implementation launches, for the gap triage (solbench triage):
names, grid and block sizes, durations, as the native runner's CUPTI records give them for a `.cu`.

Taken once per scenario after the warm-up, from one extra call under torch.profiler (Kineto, which is
CUPTI), never from a timed call. Informational only: no verdict or time rests on it, and a worker that
cannot profile (no CUPTI, profiling not permitted) reports None ("no kernel records").
"""

from __future__ import annotations

import json
import os
import tempfile

from solbench.core.kernels import MAX_RECORDS


def kernels_from_trace(trace: dict) -> list[dict]:
    """Kernel records from a Kineto (Chrome) trace: events of category "kernel", in start order."""
    events = [e for e in trace.get("traceEvents", []) if isinstance(e, dict) and e.get("cat") == "kernel"]
    events.sort(key=lambda e: e.get("ts", 0))
    out = []
    for e in events[:MAX_RECORDS]:
        args = e.get("args") or {}
        out.append({"name": str(e.get("name", "?"))[:300], "grid": list(args.get("grid") or [0, 0, 0]),
                    "block": list(args.get("block") or [0, 0, 0]), "duration_ms": float(e.get("dur", 0.0)) / 1e3,
                    "stream": int(args.get("stream", -1))})
    return out


def record_kernels(call) -> tuple[list[dict] | None, str]:
    """(records, "") from one call of `call` under torch.profiler, or (None, why not)."""
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile

        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            call()
            torch.cuda.synchronize()
        fd, path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            prof.export_chrome_trace(path)
            with open(path) as f:
                return kernels_from_trace(json.load(f)), ""
        finally:
            os.unlink(path)
    except Exception as exc:  # informational: never costs the scenario
        return None, f"{type(exc).__name__}: {exc}"
