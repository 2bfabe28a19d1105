"""Cheat: computes_ahead.py without writing ahead in place. The first call of a round that finds its output
poisoned computes every other copy that looks ready (output poisoned too) into buffers of its own, and a
later call finds its result there and copies it in: no output is written before its own call, so no check of
the outputs between calls can see it. Only the median hid the work; with the candidate's round sent in parts
of two calls, each made ready just before it, a call can do one other's work at most and the median of two
is their mean: it passes at ~1x, like computes_ahead.py (tests/test_adversarial_python_cpu.py).

expect: passed
"""

from dataclasses import replace
from pathlib import Path

import torch

from solbench.core.tensors import poisoned
from solbench.sandbox.impls import PythonImpl

_honest_forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward

_seen = {}  # where a copy's output lies -> its inputs, for the scenario at hand
_ahead = {}  # where a copy's output lies -> (out, lse) computed before its call


def _fresh(inp) -> bool:
    return bool(poisoned(inp.out.view(-1)[:1]).any())


def forward(inp):
    if any(other.out.shape != inp.out.shape for other in _seen.values()):
        _seen.clear(), _ahead.clear()  # a new scenario
    key = inp.out.data_ptr()
    _seen[key] = inp
    if key in _ahead and _fresh(inp):
        out, lse = _ahead.pop(key)
        inp.out.copy_(out)
        inp.lse.copy_(lse)
        return
    _honest_forward(inp)
    for other_key, other in list(_seen.items()):
        if other_key != key and _fresh(other):
            scratch = replace(other, out=torch.empty_like(other.out), lse=torch.empty_like(other.lse))
            _honest_forward(scratch)
            _ahead[other_key] = (scratch.out, scratch.lse)
