"""Cheat class 1, replies that are not times: replaces the `Sample` record the timer builds its results
with so that every device time is 0.0. Without a shape check the supervisor raised computing a relative CI
of a zero median and the whole run stopped; no call takes no time.

expect: tampered
"""

from pathlib import Path

import solbench.sandbox.timing as timing
from solbench.sandbox.impls import PythonImpl

_real_sample = timing.Sample


def _zero_sample(device_ms, host_ms, *rest, **kw):
    return _real_sample(0.0, host_ms, *rest, **kw)


timing.Sample = _zero_sample
forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward
