"""Adversarial candidate: torch_attention with a planted off-by-one in the sliding window.

Each query sees one key too many on the left (key d - window_left - 1, where it exists). Everything
else is the correct candidate's code, so the harness must mark this wrong on scenarios with
window_left >= 0 and right everywhere else: a check that passes it misses window bugs; a check that
fails it elsewhere is blaming the wrong thing.

The sibling module is loaded by path, so this works whether or not reference_kernels is a package.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

_path = Path(__file__).with_name("torch_attention.py")
_spec = importlib.util.spec_from_file_location("_solbench_torch_attention_for_wrong_window", _path)
_correct = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_correct)


def forward(inp) -> None:
    _correct.attention(inp, window_left_slack=1)
