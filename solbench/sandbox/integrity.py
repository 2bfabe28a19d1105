"""Integrity of the measuring code inside a worker: a candidate shares the worker's process (a Python
module, or a .so that can reach the Python C API), so it could replace the functions that check and time
it. The worker snapshots those functions before the candidate is loaded and compares before every reply.

This catches replacement of the named functions, the simple and likely attack; code determined to evade
it from inside the process can. What decides a verdict is out of reach in the supervisor's process: the
inputs' content, the fp32 reference, the checks of every timed call's outputs and of the inputs.
"""

from __future__ import annotations

import importlib

WATCHED = {
    "solbench.sandbox.worker": ("_WorkerState",),
    "solbench.sandbox.timing": ("Timer",),
    "solbench.gpu.cuda_ops": ("CudaOps",),
    "solbench.gpu.telemetry": ("TelemetrySampler",),
    "solbench.sandbox.kernel_records": ("record_kernels",),
    "time": ("perf_counter",),
}
TORCH_WATCHED = ("cuda.synchronize", "cuda.Event", "Tensor.cpu", "Tensor.copy_", "Tensor.fill_")


def _members(obj) -> dict[str, int]:
    """id of the object and, for a class, of each attribute defined on it (methods included)."""
    ids = {"": id(obj)}
    if isinstance(obj, type):
        for name, value in vars(obj).items():
            ids[name] = id(value)
    return ids


def snapshot() -> dict[str, dict[str, int]]:
    """ids of every watched function and class member, taken before the candidate is loaded."""
    snap = {}
    for module_name, names in WATCHED.items():
        module = importlib.import_module(module_name)
        for name in names:
            snap[f"{module_name}.{name}"] = _members(getattr(module, name))
    torch = importlib.import_module("torch")
    for dotted in TORCH_WATCHED:
        obj = torch
        for part in dotted.split("."):
            obj = getattr(obj, part)
        snap[f"torch.{dotted}"] = _members(obj)
    return snap


def changed(before: dict[str, dict[str, int]]) -> list[str]:
    """Watched names whose object (or a member of it) is no longer the one in `before`."""
    now = snapshot()
    out = []
    for key, members in before.items():
        for member, ident in members.items():
            if now.get(key, {}).get(member) != ident:
                out.append(f"{key}.{member}" if member else key)
    return out
