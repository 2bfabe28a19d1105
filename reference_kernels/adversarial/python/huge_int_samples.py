"""Cheat: a reply that decodes and then breaks the supervisor. It reports 10**400 as a time: a JSON integer
of 401 digits decodes, and the first float check of it raised OverflowError, a supervisor failure instead of
a verdict on the candidate.

What stops it: replies decode with integers of at most 19 digits (solbench/sandbox/replies.py decode_json),
so the reply is malformed, which is `tampered`.

expect: tampered
"""

from pathlib import Path

import solbench.sandbox.timing as timing
from solbench.sandbox.impls import PythonImpl

_real_sample = timing.Sample


def _huge(device_ms, host_ms, *rest, **kw):
    return _real_sample(10 ** 400, host_ms, *rest, **kw)


timing.Sample = _huge
forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward
