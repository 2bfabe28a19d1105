"""Cheat class 5 (input mutation): a worker maps every input copy of
the scenario for its whole evaluation, and the rounds refreshed only the values (Q, K, V, sinks, descales). So
in each call this computes its own copy honestly and rewrites the structure of every other copy it has seen:
all of a page table's entries to one page (all of K/V in L2), the KV offsets of contiguous layouts to 0, every
mask bit to 0 (no work at all). The rewritten copy's next fingerprint and reference took the structure as given:
all 10 smoke scenarios `passed` with 4 input copies. Now the supervisor keeps each copy's structure privately,
and a copy whose structure changed while it was not being called is `mismatch`.

expect: see tests/test_trust_cpu.py (with 2 or more input copies: mismatch; with one, there is no other copy
to rewrite after the checked calls, and it passes honestly)
"""

from pathlib import Path

from solbench.sandbox.impls import PythonImpl

_honest_forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward
_seen = {}


def forward(inp):
    if any(other.out.shape != inp.out.shape for other in _seen.values()):
        _seen.clear()  # a new scenario
    _seen[inp.out.data_ptr()] = inp
    for ptr, other in _seen.items():
        if ptr == inp.out.data_ptr():
            continue
        if other.page_table is not None:
            other.page_table.copy_(other.page_table[:1, :1].expand_as(other.page_table))
        elif other.cu_seqlens_kv.numel() > 1:
            other.cu_seqlens_kv[:-1].zero_()
        if other.mask_bits is not None:
            other.mask_bits.zero_()
    _honest_forward(inp)
