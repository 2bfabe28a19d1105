"""Cheats by preprocessing in place: on each call it computes the right answer, then halves q for the
'next' call (as a kernel that re-lays out or pre-scales its inputs outside the timed region would)."""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "torch_attention", Path(__file__).resolve().parents[3] / "reference_kernels" / "torch_attention.py")
_good = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_good)


def forward(inp):
    _good.forward(inp)
    inp.q.mul_(0.5)
