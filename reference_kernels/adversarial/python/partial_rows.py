"""Cheat class 2, doing less when timed: the first call on each output buffer (the check) is computed in
full; later calls compute only the first quarter of the query rows and write zeros elsewhere, so no
poison is left behind. The supervisor compares rows drawn at random after each timed round (and calls
the checked copy twice: the second call, partial, already differs from the first).

expect: mismatch or nonfinite or nondeterministic
"""

from pathlib import Path

from solbench.sandbox.impls import PythonImpl

_honest_forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward

_seen = set()


def forward(inp):
    _honest_forward(inp)
    if inp.out.data_ptr() in _seen:
        keep = max(1, inp.out.shape[0] // 4)
        inp.out[keep:].zero_()
        inp.lse[keep:].fill_(0.0)
    _seen.add(inp.out.data_ptr())
