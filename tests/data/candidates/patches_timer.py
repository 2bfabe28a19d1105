"""Cheats by patching the harness from inside the worker: every timed sample divided by 10."""

import importlib.util
from pathlib import Path

import solbench.timing

_spec = importlib.util.spec_from_file_location(
    "torch_attention", Path(__file__).resolve().parents[3] / "reference_kernels" / "torch_attention.py")
_good = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_good)

_take = solbench.timing.Timer.take


def _fast_take(self, calls, n):
    return [type(s)(s.device_ms / 10, s.host_ms / 10) for s in _take(self, calls, n)]


solbench.timing.Timer.take = _fast_take
forward = _good.forward
