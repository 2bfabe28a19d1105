"""Cheat: sets how many calls its rounds make, then hides the clock bound's 2 ms floor in each call. With
`--policy round_budget_ms=B`, round_calls() sizes every later round from the median of round 0's *reported*
device times. Reporting too much is never out of the clock's bound, so this module reports its first round as
1 s a call: every later round has one call, and with the whole floor a round, each call could be reported up
to ~2 ms short.

What stops it: a round of fewer calls gets its share of the floor (solbench/supervisor/audit.py,
clock_bound_ms; tests/test_runner_cpu.py, test_a_round_of_fewer_calls_gets_its_share_of_the_floor).
Run it with --policy round_budget_ms=20 to see the rounds shrink; it scores no more than the same hiding in
full rounds.

expect: passed
"""

import gc
from pathlib import Path

from solbench.sandbox.impls import PythonImpl
from solbench.sandbox.timing import Sample, Timer

forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward

HIDE_MS = 1.0
_state = {"requests": 0}


def _wrap(timer):
    real = timer.take

    def take(calls, n):
        out = real(calls, n)
        _state["requests"] += 1
        if _state["requests"] <= 2:  # round 0: parts of 2 and 1 calls -- a huge median
            return [Sample(1000.0, s.host_ms, s.launch_ms, s.cover_ms, s.flags) for s in out]
        if n == 1:
            return [Sample(max(0.05, s.device_ms - HIDE_MS), s.host_ms, s.launch_ms, s.cover_ms, s.flags) for s in out]
        return out

    real_warm = timer.warm_up

    def warm_up(*a, **k):  # once per scenario, before its rounds
        _state["requests"] = 0
        return real_warm(*a, **k)

    timer.take = take
    timer.warm_up = warm_up


for _obj in gc.get_objects():
    if type(_obj) is Timer and "take" not in vars(_obj):
        _wrap(_obj)
