"""Numerics cheat: the softcap's tanh(x) replaced by its Taylor cubic x - x^3/3 (two FMAs where
a kernel spends a MUFU tanh per score, the unit its exp also needs). Close while scores stay far below the cap
(x = s / cap small), wrong by up to ~0.1 cap logits near it. It passes every softcap scenario whose scores stay
far below the cap (the `default` and `peaked` profiles: `real`'s Gemma-2 scenarios, the grids' variant 17, every
softcap scenario of `hopper-d128`), which `solbench lint` now flags; it fails on every `high_logits` one (the
grids' variants 16 and 21, in every regime), whose top scores reach the cap's curve. Scenarios without a
softcap it computes honestly.

expect: mismatch or passed
"""

from pathlib import Path

from solbench.sandbox.impls import PythonImpl

_dense = PythonImpl(str(Path(__file__).with_name("_dense.py"))).module


def _cubic(x):
    return x - x * x * x / 3


def _softmax(s):
    m = _dense.row_max(s)
    return (s - m).exp(), m


def forward(inp):
    _dense.attention(inp, _softmax, tanh=_cubic)
