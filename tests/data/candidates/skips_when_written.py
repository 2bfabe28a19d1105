"""Cheats with a sentinel: does the work only when its output still holds the poison pattern, i.e. on
the harness's check calls, and nothing on timing calls where the buffer already holds an answer."""

import importlib.util
from pathlib import Path

from solbench.inputs import poisoned

_spec = importlib.util.spec_from_file_location(
    "torch_attention", Path(__file__).resolve().parents[3] / "reference_kernels" / "torch_attention.py")
_good = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_good)


def forward(inp):
    if bool(poisoned(inp.out).any()):
        _good.forward(inp)
