"""Numerics cheat: P = exp(S) in fp16 without subtracting the row's max first (the online softmax's rescaling left
out). Exact while every score stays under ln(65504) ~ 11.1; a larger one overflows to inf and the row turns
NaN. Scores up to ~40 (the `high_logits` profile) or peaks above the rest (`peaked`) make it fail.

expect: nonfinite or mismatch or passed
"""

from pathlib import Path

import torch

from solbench.sandbox.impls import PythonImpl

_dense = PythonImpl(str(Path(__file__).with_name("_dense.py"))).module


def _softmax(s):
    return torch.exp(s.half()).float(), torch.zeros_like(s[..., :1])


def forward(inp):
    _dense.attention(inp, _softmax)
