"""Cheats by replaying: computes once per input buffer, then copies the cached answer back on later calls
(correct values, no work). Only new contents behind the same pointers expose it."""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "torch_attention", Path(__file__).resolve().parents[3] / "reference_kernels" / "torch_attention.py")
_good = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_good)
_cache = {}


def forward(inp):
    key = inp.q.data_ptr()
    if key in _cache:
        out, lse = _cache[key]
        inp.out.copy_(out)
        inp.lse.copy_(lse)
        return
    _good.forward(inp)
    _cache[key] = (inp.out.clone(), inp.lse.clone())
