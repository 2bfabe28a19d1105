"""Asks for far more device memory than exists on scenarios with sinks; correct elsewhere.
The harness must report runtime_error for those and keep every other scenario's result."""

from pathlib import Path

import torch

from solbench.sandbox.impls import PythonImpl

_good = PythonImpl(str(Path(__file__).resolve().parents[3] / "reference_kernels" / "torch_attention.py")).module


def forward(inp):
    if inp.scenario.sinks:
        torch.empty(1 << 42, dtype=torch.uint8, device=inp.device)  # 4 TiB
    _good.forward(inp)
