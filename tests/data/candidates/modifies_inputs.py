"""Cheats by preprocessing in place: on each call it computes the right answer, then halves q for the
'next' call (as a kernel that re-lays out or pre-scales its inputs outside the timed region would)."""

from pathlib import Path

from solbench.sandbox.impls import PythonImpl

_good = PythonImpl(str(Path(__file__).resolve().parents[3] / "reference_kernels" / "torch_attention.py")).module


def forward(inp):
    _good.forward(inp)
    inp.q.mul_(0.5)
