"""Cheat class 1, replies that are not numbers: replaces the `Sample` record the timer builds its results
with so that every device time is the string "0" (JSON carries it). Without a shape check the supervisor
raised summing them and the whole run stopped: a crashing candidate must cost its scenario, never the run.

expect: tampered
"""

from pathlib import Path

import solbench.sandbox.timing as timing
from solbench.sandbox.impls import PythonImpl

_real_sample = timing.Sample


def _string_sample(device_ms, host_ms, *rest, **kw):
    return _real_sample("0", host_ms, *rest, **kw)


timing.Sample = _string_sample
forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward
