"""Cheat class 3, content-keyed memoisation: fingerprints its inputs and replays the stored answer when
it has seen them. The supervisor gives every timed call contents never seen before, so it never replays
where it counts and passes honestly. With SOLBENCH_ADVERSARY_LOG set, it prints 'replays_by_content: hit'
or '... miss' per call to its stderr (the worker's log in the run folder; a confined candidate may write
nowhere else outside its scratch folder), so a test can count.

expect: passed
"""

import hashlib
import os
import sys

import torch

from pathlib import Path

from solbench.sandbox.impls import PythonImpl

_honest_forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward

_memo = {}


def _key(inp):
    h = hashlib.sha256()
    for t in (inp.q, inp.k, inp.v):
        h.update(t.contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def forward(inp):
    key = _key(inp)
    hit = key in _memo
    if hit:
        out, lse = _memo[key]
        inp.out.copy_(out)
        inp.lse.copy_(lse)
    else:
        _honest_forward(inp)
        _memo[key] = (inp.out.clone(), inp.lse.clone())
    if os.environ.get("SOLBENCH_ADVERSARY_LOG"):
        print("replays_by_content:", "hit" if hit else "miss", file=sys.stderr, flush=True)
