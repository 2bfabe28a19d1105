"""Cheat: does the next calls' work in the first call of a round. A round refills and poisons every copy it
calls before it starts, and the candidate keeps the copies it has been given; so the first call of a round
(the one that finds its output poisoned) computes every copy that looks ready, and the others find theirs
written and return. Every output is right and every timed call's output is its own, but one call carries the
work of all of them, and the median of the calls hides it (26-63x the seed on a CPU before the decoys).

What stops it: the candidate's rounds call one copy fewer than it has, in a secret order, and the copy left
out is made ready like the others and must stay untouched (TimedCopies.before_round): computing ahead writes
it. With one copy (--quick) a round is one call and there is nothing ahead to do: it passes, doing the work.

expect: hidden_work or passed
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
