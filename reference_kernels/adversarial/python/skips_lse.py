"""Cheat class 2 (doing less): the worker, i.e. the candidate's own process, tells the
supervisor whether LSE is written (`writes_lse` in the prepare reply, worker.py 294, taken as is at
evaluate.py 181), and a Python module gets False by setting an undocumented `WRITES_LSE = False`
(impls.py 57). The README requires a Python forward to write `inputs.out` and `inputs.lse`; this one never
touches `lse` (skipping the row max / sum bookkeeping a real kernel pays for), and then neither the
unwritten check nor the LSE tolerance looks at it (verdict.py 59, 71; audit.py 108, 118): `passed`.

expect: see tests/test_adversarial_python_cpu.py (must be unwritten)
"""

import dataclasses
from pathlib import Path

import torch

from solbench.sandbox.impls import PythonImpl

WRITES_LSE = False

_honest_forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward


def forward(inp):
    # the honest forward writes its LSE into a scratch tensor, never into ours
    _honest_forward(dataclasses.replace(inp, lse=torch.empty_like(inp.lse)))
