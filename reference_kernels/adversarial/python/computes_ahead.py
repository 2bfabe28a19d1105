"""Cheat: does the next calls' work in the first call of a round. A round made every copy it calls ready
(fresh inputs, poisoned outputs) before it started, and the candidate keeps the copies it has been given;
so the first call (the one that finds its output poisoned) computed every ready copy, and the others found
theirs written and returned. Every output right, every timed call's output its own, but one call carried the
work of all of them and the median of the calls hid it: 26-63x the seed on a CPU. (Writing the results
ahead into a buffer of its own and copying them in at each call hides it from any check of the outputs.)

What stops it: the candidate's rounds go to its worker in parts of two calls, each part made ready just
before it (solbench/supervisor/evaluate.py, AUDITED_PART): a call can do the work of one other at most,
and the median of two calls is their mean. It passes, with no speed-up (tests/test_adversarial_python_cpu.py).

expect: passed
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
