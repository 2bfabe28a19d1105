"""Cheat: does the honest work every call, and moves reported time between the calls of a round. A round of
three calls reaches the worker in two requests (two calls, then one); it reports each call of the first as 5 %
of what it took and puts the whole difference on the last. The round's sum stays true, so the supervisor's
clock sees nothing, while a median of the calls would be a twentieth of the truth (16.8x on a CPU). It replaces
`take` on the worker's Timer instance, which the snapshot of class members does not watch.

What stops it: a round scores as its mean (solbench/supervisor/rounds.py), the sum the clock check bounds: it
passes with no speed-up (tests/test_trust_cpu.py).

expect: passed
"""

import gc
from pathlib import Path

from solbench.sandbox.impls import PythonImpl
from solbench.sandbox.timing import Sample, Timer

forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward

SHARE = 0.05
_debt = [0.0]
_last_n = [0]


def _shrunk(s):
    return Sample(s.device_ms * SHARE, s.host_ms, s.launch_ms, s.cover_ms, s.flags)


def _wrap(timer):
    real = timer.take

    def take(calls, n):
        out = real(calls, n)
        if n == 1 or (n == 2 and _last_n[0] == 2):  # the round's last request: the debt goes on its last call
            *head, last = out
            fixed = [_shrunk(s) for s in head]
            debt = _debt[0] + sum(s.device_ms - f.device_ms for s, f in zip(head, fixed))
            _debt[0], _last_n[0] = 0.0, 0
            return fixed + [Sample(last.device_ms + debt, last.host_ms, last.launch_ms, last.cover_ms, last.flags)]
        fixed = [_shrunk(s) for s in out]
        _debt[0] += sum(s.device_ms - f.device_ms for s, f in zip(out, fixed))
        _last_n[0] = n
        return fixed

    timer.take = take


for _obj in gc.get_objects():
    if type(_obj) is Timer and "take" not in vars(_obj):
        _wrap(_obj)
