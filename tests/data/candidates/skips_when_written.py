"""Cheats with a sentinel: does the work only when its output still holds the poison pattern, i.e. on
the harness's check calls, and nothing on timing calls where the buffer already holds an answer."""

from pathlib import Path

from solbench.sandbox.impls import PythonImpl
from solbench.core.tensors import poisoned

_good = PythonImpl(str(Path(__file__).resolve().parents[3] / "reference_kernels" / "torch_attention.py")).module


def forward(inp):
    if bool(poisoned(inp.out).any()):
        _good.forward(inp)
