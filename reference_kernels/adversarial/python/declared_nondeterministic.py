"""No false positive: the same low-bit flips as flips_low_bits.py, from a candidate that declares it is
non-deterministic (as a kernel with atomics in a split-KV reduction would): each call's output passes
the reference on its own, so it passes.

expect: passed
"""

from pathlib import Path

import torch

from solbench.sandbox.impls import PythonImpl

NONDETERMINISTIC = True

_honest_forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward
_calls = [0]


def forward(inp):
    _honest_forward(inp)
    _calls[0] += 1
    if _calls[0] % 2 == 0 and inp.out.numel():
        bits = inp.out.view(-1)[:1].view(torch.int16)
        bits ^= 1
