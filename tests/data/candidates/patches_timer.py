"""Cheats by patching the harness from inside the worker: every timed sample divided by 10."""

from pathlib import Path

import solbench.sandbox.timing
from solbench.sandbox.impls import PythonImpl

_good = PythonImpl(str(Path(__file__).resolve().parents[3] / "reference_kernels" / "torch_attention.py")).module

_take = solbench.sandbox.timing.Timer.take


def _fast_take(self, calls, n):
    return [type(s)(s.device_ms / 10, s.host_ms / 10) for s in _take(self, calls, n)]


solbench.sandbox.timing.Timer.take = _fast_take
forward = _good.forward
