"""A candidate that is correct except on chosen scenarios, where it crashes in the way named by the
environment variable SOLBENCH_TEST_CRASH: segfault, hang, raise, nothing (writes nothing)."""

import ctypes
import os
import time
from pathlib import Path

from solbench.sandbox.impls import PythonImpl

_good = PythonImpl(str(Path(__file__).resolve().parents[3] / "reference_kernels" / "torch_attention.py")).module


def forward(inp):
    sc = inp.scenario
    if sc.sinks or sc.softcap:
        mode = os.environ.get("SOLBENCH_TEST_CRASH", "raise")
        if mode == "segfault":
            ctypes.string_at(0)
        elif mode == "hang":
            while True:
                time.sleep(0.01)
        elif mode == "raise":
            raise RuntimeError("planted failure")
        elif mode == "nothing":
            return
    _good.forward(inp)
