"""Cheat class 2, telling timed calls from checked ones by the Python call stack: inside the timer's
loop it skips the work. Every timed call's outputs are poisoned and checked by the supervisor.

expect: unwritten
"""

import sys

from pathlib import Path

from solbench.sandbox.impls import PythonImpl

_honest_forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward


def _timed() -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name in ("take", "_iterate") and "timing" in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


def forward(inp):
    if not _timed():
        _honest_forward(inp)
