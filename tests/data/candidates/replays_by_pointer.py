"""Cheats by replaying: computes once per input buffer, then copies the cached answer back on later calls
(correct values, no work). Only new contents behind the same pointers expose it."""

from pathlib import Path

from solbench.sandbox.impls import PythonImpl

_good = PythonImpl(str(Path(__file__).resolve().parents[3] / "reference_kernels" / "torch_attention.py")).module
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
