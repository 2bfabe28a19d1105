"""Cheat class 5, input mutation a plain checksum cannot see: after computing, it swaps two key rows in
place (an order-blind sum of words stays the same). The supervisor's fingerprint is position-dependent.

expect: mismatch
"""

from pathlib import Path

from solbench.sandbox.impls import PythonImpl

_honest_forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward


def forward(inp):
    _honest_forward(inp)
    k = inp.k.view(-1, inp.k.shape[-1])
    if k.shape[0] > 1:
        first = k[0].clone()
        k[0].copy_(k[1])
        k[1].copy_(first)
