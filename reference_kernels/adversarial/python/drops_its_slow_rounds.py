"""Cheat: tries to choose which of its rounds are scored. The candidate knows each round's true time before it
replies; when a round ran slower than its running median it idles past the clock's bound after timing
(unexplained time), at most once in any 4 consecutive rounds, so no batch of confirming rounds holds 2. Were
rounds out of bound dropped, its slowest rounds (and their per-round ratios) would never reach the score.

What stops it: a round out of its bound scores at the clock's time, its idling included
(solbench/supervisor/rounds.py; tests/test_runner_cpu.py, test_a_round_pushed_out_of_its_bound_scores_at_the_clocks_time).

expect: passed
"""

import gc
import statistics
import time
from pathlib import Path

from solbench.sandbox.impls import PythonImpl
from solbench.sandbox.timing import Timer

forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward

_state = {"sum": 0.0, "calls": 0, "hist": [], "since": 99, "drops": 0}
ROUND_CALLS = 3


def _wrap(timer):
    real = timer.take

    def take(calls, n):
        out = real(calls, n)
        s = _state
        s["sum"] += sum(x.device_ms for x in out)
        s["calls"] += n
        if s["calls"] >= ROUND_CALLS:  # the round's last part
            total, s["sum"], s["calls"] = s["sum"], 0.0, 0
            hist = s["hist"]
            s["since"] += 1
            if len(hist) >= 3 and total > statistics.median(hist) and s["since"] >= 4:
                time.sleep(max(0.012, 2.0 * total / 1e3))  # past max(0.5 told + loop, 2 ms)
                s["since"], s["drops"] = 0, s["drops"] + 1
            hist.append(total)
        return out

    timer.take = take


for _obj in gc.get_objects():
    if type(_obj) is Timer and "take" not in vars(_obj):
        _wrap(_obj)
