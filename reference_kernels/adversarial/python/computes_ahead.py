"""Cheat: does the next calls' work in the first call of a round. A round refills and poisons every copy it
calls before it starts, and the candidate keeps the copies it has been given; so the first call of a round
(the one that finds its output poisoned) computes every copy's output, and the others find theirs written
and return. Every output is right and every timed call's output is its own, but one call carries the work
of all of them: the median of the calls hides it. On a GPU a median near zero is faster than light; a
version that spreads the work (two of five calls do it) keeps the median above the bound.

expect: see tests/test_review18_cpu.py (a known escape while samples are judged per call: strict xfail)
"""

from pathlib import Path

from solbench.core.tensors import poisoned
from solbench.sandbox.impls import PythonImpl

_honest_forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward

_seen = {}  # where the output lies -> the copy's inputs, for the scenario at hand


def forward(inp):
    if any(other.out.shape != inp.out.shape for other in _seen.values()):
        _seen.clear()  # a new scenario
    _seen[inp.out.data_ptr()] = inp
    if not bool(poisoned(inp.out.view(-1)[:1]).any()):
        return  # done ahead by the first call of this round
    for other in list(_seen.values()):
        if bool(poisoned(other.out.view(-1)[:1]).any()):
            _honest_forward(other)
