"""Cheat class 8, memory safety: computes the right answer but also writes past the end of `out` and
before the start of `lse` (as a kernel with an off-by-one tile bound does), into whatever lies beside
them. The supervisor puts guard bytes around every output buffer and checks them after every call.

expect: out_of_bounds
"""

from pathlib import Path

import torch

from solbench.sandbox.impls import PythonImpl

_honest_forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward


def _whole(t):
    """Every byte of the allocation t lives in (what a pointer past its end reaches)."""
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())


def forward(inp):
    _honest_forward(inp)
    out_end = (inp.out.storage_offset() + inp.out.numel()) * inp.out.element_size()
    whole = _whole(inp.out)
    if whole.numel() > out_end:
        whole[out_end:out_end + 2] = 0  # one bf16 element past the end
    lse_start = inp.lse.storage_offset() * inp.lse.element_size()
    if lse_start >= 4:
        _whole(inp.lse)[lse_start - 4:lse_start] = 0  # one float before the start
