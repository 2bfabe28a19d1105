"""Numerics cheat: skip every key block (BLOCK keys) whose largest score is more than THRESHOLD below the row's max,
as if its keys weighed nothing: each weighs under e^-8 of the top key, below bf16's resolution, yet a long row's
many such keys carry a share of the mass. Scores that rise far above the rest of a long row (the `peaked` and
`sinks_lse` input profiles) make it fail; on flat rows it skips nothing and passes.

expect: mismatch or passed
"""

from pathlib import Path

import torch

from solbench.sandbox.impls import PythonImpl

_dense = PythonImpl(str(Path(__file__).with_name("_dense.py"))).module
BLOCK = 128
THRESHOLD = 8.0


def _softmax(s):
    m = _dense.row_max(s)
    keys = s.shape[-1]
    padded = torch.nn.functional.pad(s, (0, -keys % BLOCK), value=float("-inf"))
    block_max = padded.unflatten(-1, (-1, BLOCK)).amax(dim=-1)
    skip = (block_max < m - THRESHOLD).repeat_interleave(BLOCK, dim=-1)[..., :keys]
    return torch.exp(s.masked_fill(skip, float("-inf")) - m), m


def forward(inp):
    _dense.attention(inp, _softmax)
