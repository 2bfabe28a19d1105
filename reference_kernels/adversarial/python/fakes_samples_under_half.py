"""Patching the harness: fakes_samples.py reports a tenth of its times and the supervisor's clock catches it.
This module replaces the same `Sample` record to report 0.55 of every time: 45 % of each call is unexplained.
The clock flags a round whose unexplained time exceeds a share of its reported time and of the loop's cost, and
2 ms (solbench.supervisor.audit.clock_bound_ms): caught where calls are long against the loop's cost per request, within the bound where the loop costs about what the calls do
(smoke's calls on a CPU). docs/threat-model.md gives the bound.

expect: see tests/test_forgery_bound_cpu.py (caught on calls long against the loop; within the bound on short ones)
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
