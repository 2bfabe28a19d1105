"""The keyed, position-dependent hash of an input tensor's 32-bit words that the audit compares before and
after each timed round (solbench.supervisor.inputs.input_fingerprint):

    sum_i w_i * mix(i ^ key)  mod 2^64,    mix = splitmix64's finaliser, i counting words over all inputs.

On a CUDA device with Triton, where the candidate is confined (Landlock), it is one fused pass over the words,
used once it has given the torch form's value on a random sample in this process; elsewhere the chunked torch
computation (tests/test_fingerprint_gpu.py).
The torch form makes ~10 int64 passes over 8-byte temporaries: on the H200 that was most of a large scenario's
time between rounds (~0.1 s a round per GB of inputs, done twice per candidate copy), where the fused pass
reads each word once."""

from __future__ import annotations

import functools
import secrets
import sys

MIX = (0x9E3779B97F4A7C15 - 2**64, 0xBF58476D1CE4E5B9 - 2**64, 0x94D049BB133111EB - 2**64)
"""splitmix64's constants as int64 (torch and Triton multiply int64 with wrap-around, i.e. mod 2^64)."""
CHUNK = 1 << 22
"""Words per step of the torch form: bounds its int64 temporaries (8 B a word)."""
BLOCK = 4096
"""Words per Triton program (the one compile-time constant: the kernel is built once)."""


def word_sum(words, offset: int, key: int):
    """sum_j words[j] * mix((offset + j) ^ key) mod 2^64, as an int64 0-d tensor on the words' device
    (words: a 1-d int32 tensor)."""
    if words.device.type == "cuda" and _fused_agrees(words.device.index or 0):
        return _fused(words, offset, key)
    return _chunked(words, offset, key)


@functools.cache
def _fused_agrees(device_index: int) -> bool:
    """Whether the fused pass gives the torch form's values on this device (odd sizes, large offsets and keys):
    an input check that silently stopped seeing changes would let an input-rewriting candidate pass, so a
    Triton that fails to build or computes otherwise leaves the audit on the torch form."""
    import torch

    from solbench.sandbox.confine import abi_version

    # The supervisor loads the kernel from Triton's cache: only a confined candidate cannot plant a build there
    # (README: threat model); where none is, the torch form, which loads nothing.
    if abi_version() < 1 or _triton_kernel() is None:
        return False
    try:  # a sample nobody can know in advance: a planted build that special-cased a fixed one would pass it
        gen = torch.Generator(device=f"cuda:{device_index}").manual_seed(secrets.randbits(62))
        words = torch.randint(-2**31, 2**31, (3 * BLOCK + 1 + secrets.randbelow(BLOCK),), dtype=torch.int32,
                              device=f"cuda:{device_index}", generator=gen)
        cases = [(0, 0), (secrets.randbits(33), secrets.randbits(62)), (secrets.randbits(20), 2**62 - 1)]
        return all(int(_fused(words, o, k)) == int(_chunked(words, o, k)) for o, k in cases)
    except Exception as exc:  # noqa: BLE001 - any failure to build or run means: not this pass
        print(f"solbench: the fused input fingerprint is not used ({type(exc).__name__}: {exc}); the torch form is",
              file=sys.stderr)
        return False


def _chunked(words, offset: int, key: int):
    import torch

    total = torch.zeros((), dtype=torch.int64, device=words.device)
    for start in range(0, words.numel(), CHUNK):
        chunk = words[start:start + CHUNK].to(torch.int64)
        first = offset + start
        m = (torch.arange(first, first + chunk.numel(), device=chunk.device, dtype=torch.int64) ^ key) * MIX[0]
        m = (m ^ (m >> 31)) * MIX[1]  # >> on int64 is arithmetic, in torch and in Triton alike
        m = (m ^ (m >> 29)) * MIX[2]
        total += (chunk * m).sum()
    return total


def _fused(words, offset: int, key: int):
    import torch

    n = words.numel()
    if n == 0:
        return torch.zeros((), dtype=torch.int64, device=words.device)
    blocks = -(-n // BLOCK)
    partial = torch.empty(blocks, dtype=torch.int64, device=words.device)
    # Every scalar travels in one int64 tensor: Triton types a Python int by its value (i32 below 2^31) and
    # builds the kernel again for each typing, which the self-check on a small sample would not have tried.
    params = torch.tensor([n, offset, key, *MIX], dtype=torch.int64).to(words.device)
    _triton_kernel()[(blocks,)](words, partial, params, BLOCK=BLOCK)
    return partial.sum()  # int64 sums wrap: mod 2^64, as the torch form's


@functools.cache
def _triton_kernel():
    """The fused kernel, or None where Triton is not importable (the torch form is used then)."""
    try:
        import triton
        import triton.language as tl
    except Exception:  # noqa: BLE001 - not importable here (or broken): the torch form
        return None

    @triton.jit
    def fingerprint_kernel(words_ptr, partial_ptr, params_ptr, BLOCK: tl.constexpr):
        n, offset, key = tl.load(params_ptr), tl.load(params_ptr + 1), tl.load(params_ptr + 2)
        mix0, mix1, mix2 = tl.load(params_ptr + 3), tl.load(params_ptr + 4), tl.load(params_ptr + 5)
        j = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
        inside = j < n
        w = tl.load(words_ptr + j, mask=inside, other=0).to(tl.int64)  # sign-extended, as torch's .to(int64)
        m = ((j + offset) ^ key) * mix0  # the word's index over all inputs, as the torch form's arange
        m = (m ^ (m >> 31)) * mix1
        m = (m ^ (m >> 29)) * mix2
        tl.store(partial_ptr + tl.program_id(0), tl.sum(w * m, axis=0))

    return fingerprint_kernel
