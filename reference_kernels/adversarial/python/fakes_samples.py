"""Cheat class 1, patching the harness where the snapshot does not look: it replaces the `Sample` record
the timer builds its results with (not one of the watched functions), so every reported time is a tenth
of the real one. The supervisor times each round on its own clock and compares with what was reported
(needs a trusted comparator, such as the seed, to know the loop's own overhead).

expect: tampered (with the seed beside it; see tests/test_trust_cpu.py)
"""

import time
from pathlib import Path

import solbench.sandbox.timing as timing
from solbench.sandbox.impls import PythonImpl

_real_sample = timing.Sample


def _fast_sample(device_ms, host_ms, *rest, **kw):
    return _real_sample(device_ms / 10, host_ms / 10, *rest, **kw)


timing.Sample = _fast_sample
_honest_forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward


def forward(inp):
    _honest_forward(inp)
    time.sleep(0.02)  # a kernel of 20 ms or more (reported as a tenth): smoke's own are too short to matter
