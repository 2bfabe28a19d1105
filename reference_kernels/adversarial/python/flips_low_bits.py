"""Cheat class 8, a race that passes by luck: the output is right to well within tolerance, but which
low bits it gets depends on the call (as an unsynchronised reduction or uninitialised shared memory
makes it). The supervisor calls the checked copy twice on the same inputs and wants the same bits.

expect: nondeterministic
"""

from pathlib import Path

import torch

from solbench.sandbox.impls import PythonImpl

_honest_forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward
_calls = [0]


def forward(inp):
    _honest_forward(inp)
    _calls[0] += 1
    if _calls[0] % 2 == 0 and inp.out.numel():
        flat = inp.out.view(-1)
        bits = flat[:1].view(torch.int16)
        bits ^= 1  # the last mantissa bit of one element
