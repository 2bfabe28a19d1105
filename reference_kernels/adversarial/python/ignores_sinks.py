"""Numerics cheat: attention sinks left out of the softmax denominator (output as if the scenario had none), LSE
right. It fails where a sink carries a visible share of a row's mass (short rows, or sinks on the scale of the
rows' LSE); where the sinks are far below every row's LSE it passes, which is why the grids draw their sinks on
that scale (the `sinks_lse` input profile).

expect: mismatch or passed
"""

from pathlib import Path

import torch

from solbench.sandbox.impls import PythonImpl

_honest_forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward


def forward(inp):
    _honest_forward(inp)
    if inp.sinks is None:
        return
    factor = torch.sigmoid(inp.lse - inp.sinks.float()[None, :])  # what the sink scaled each row by
    undone = inp.out.float() / torch.where(factor > 0, factor, torch.ones_like(factor))[..., None]
    inp.out.copy_(undone.to(inp.out.dtype))
