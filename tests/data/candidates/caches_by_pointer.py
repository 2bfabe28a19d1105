"""Cheats by caching: computes on the first call for a given output buffer, then returns at once
(as a kernel that skips work on inputs it has seen). Correct on every first call, so only a check
after timing catches it."""

from pathlib import Path

from solbench.sandbox.impls import PythonImpl

_good = PythonImpl(str(Path(__file__).resolve().parents[3] / "reference_kernels" / "torch_attention.py")).module
_seen = set()


def forward(inp):
    key = inp.out.data_ptr()
    if key in _seen:
        return
    _seen.add(key)
    _good.forward(inp)
