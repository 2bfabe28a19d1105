"""Cheat class 1 (patching the harness): fakes_samples.py reports a tenth of its times
and the supervisor's clock catches it; the clock rule (audit.py 27-28, 133-135) flags a round only when the
unexplained time is more than half the round and more than 2 ms, and only when most rounds do. So this
module replaces the same `Sample` record to report 0.55 of every time: 45 % of each round is unexplained,
never more than half, and the candidate `passes` 1.8x faster than it ran, with the seed beside it, at any
kernel length (below 2 ms of unexplained time per round, any factor passes). The README's "not yet
guaranteed" section implies it; this file measures it (the forged native runner, forges_replies.cu, gets
the same 1.8x from a .cu).

expect: see tests/test_adversarial_python_cpu.py (must be tampered: a per-round bound on the supervisor's clock)
"""

import time
from pathlib import Path

import solbench.sandbox.timing as timing
from solbench.sandbox.impls import PythonImpl

FACTOR = 0.55
_real_sample = timing.Sample


def _fast_sample(device_ms, host_ms, *rest, **kw):
    return _real_sample(device_ms * FACTOR, host_ms * FACTOR, *rest, **kw)


timing.Sample = _fast_sample
_honest_forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward


def forward(inp):
    _honest_forward(inp)
    time.sleep(0.02)  # a kernel of 20 ms (as fakes_samples.py), reported as 11 ms
