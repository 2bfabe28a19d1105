"""Cheat class 1, replies that are not numbers: like fakes_samples.py it replaces the `Sample` record the
timer builds its results with, but reports every device time as NaN (a float, so JSON carries it). A
median of NaNs compares false with everything: without a shape check the time, the ratios and every
gate on them would be NaN rather than wrong, and reports crashed formatting them.

expect: tampered
"""

from pathlib import Path

import solbench.sandbox.timing as timing
from solbench.sandbox.impls import PythonImpl

_real_sample = timing.Sample


def _nan_sample(device_ms, host_ms, *rest, **kw):
    return _real_sample(float("nan"), host_ms, *rest, **kw)


timing.Sample = _nan_sample
forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward
