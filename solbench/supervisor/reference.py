"""The fp32 oracle: its output defines what a correct attention forward returns for a scenario.

Semantics are those of `solbench.core.scenario` (module docstring); this file is their executable form.
For query row i of sequence b and query head h (KV head h // group):

    s_j   = scale * q_i . k_j                 fp32, TF32 off
    s_j   = cap * tanh(s_j / cap)             if softcap, before masking
    V     = keys j in row_intervals(b)[i] whose custom-mask bit is set (if a mask)
    lse   = log sum_{j in V} exp(s_j)         natural log, the sink excluded; -inf if V is empty
    out   = sum_{j in V} exp(s_j - lse) v_j * sigmoid(lse - sink)     (no sink: factor 1)

The sink factor is the exact rewrite of  sum_j e^{s_j} v_j / (sum_j e^{s_j} + e^{sink}):  it never
overflows however far the sink is from the row's logits, and an empty row gets out = 0, lse = -inf.

Memory is bounded by `chunk_elems` fp32 score elements (4 bytes each): one sequence at a time, a chunk
of query rows (and, if one row is too wide, of query heads) at a time, and each row chunk reads only the
keys between its first row's first visible key and its last row's last visible key. The floor is one
query row x one query head x that row's visible keys.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np

from solbench.core import masks
from solbench.core.tensors import Inputs

DEFAULT_CHUNK_ELEMS = 2**26  # 256 MiB of fp32 scores per chunk; a few such temporaries live at once


def reference(inp: Inputs, *, chunk_elems: int = DEFAULT_CHUNK_ELEMS):
    """fp32 (out [total_q, heads_q, head_dim_v], lse [total_q, heads_q]) on the inputs' device.

    `chunk_elems` bounds rows x keys x heads of every score block (see the module docstring); the
    answer does not depend on it beyond fp32 rounding.
    """
    import torch

    if chunk_elems < 1:
        raise ValueError(f"chunk_elems must be >= 1, got {chunk_elems}")
    sc = inp.scenario
    out = torch.zeros(sc.total_q, sc.heads_q, sc.head_dim_v, dtype=torch.float32, device=inp.device)
    lse = torch.full((sc.total_q, sc.heads_q), float("-inf"), dtype=torch.float32, device=inp.device)
    with _ieee_fp32_matmul(), torch.no_grad():
        q_start = 0
        for b in range(sc.batch):
            q_len, kv_len = sc.q_lens[b], sc.kv_lens[b]
            if q_len and kv_len:
                _sequence(inp, b, q_start, chunk_elems, out[q_start:q_start + q_len], lse[q_start:q_start + q_len])
            q_start += q_len
    return out, lse


def reference_rows(inp: Inputs, tokens, *, chunk_elems: int = DEFAULT_CHUNK_ELEMS, cap_shape=None, products=None):
    """fp32 (out [n, heads_q, head_dim_v], lse [n, heads_q]) of the query rows `tokens` (indices into
    total_q) alone: checking a sample of a timed call's rows needs no full reference. `cap_shape` replaces
    the softcap's tanh, `products` the batched matmul of both Q K^T and P V (the lint asks whether a cheaper
    curve, or narrower sums, would pass)."""
    import torch

    sc = inp.scenario
    starts = np.concatenate([[0], np.cumsum(sc.q_lens)])
    out = torch.zeros(len(tokens), sc.heads_q, sc.head_dim_v, dtype=torch.float32, device=inp.device)
    lse = torch.full((len(tokens), sc.heads_q), float("-inf"), dtype=torch.float32, device=inp.device)
    kv = (None, None)  # (sequence, its gathered K/V): rows are visited by sequence, so each is gathered once
    with _ieee_fp32_matmul(), torch.no_grad():
        for j in sorted(range(len(tokens)), key=lambda j: tokens[j]):
            b = int(np.searchsorted(starts, tokens[j], side="right")) - 1
            row = int(tokens[j] - starts[b])
            if sc.kv_lens[b]:
                if kv[0] != b:
                    kv = (b, inp.sequence_kv(b))
                _sequence(inp, b, int(starts[b]), chunk_elems, out[j:j + 1], lse[j:j + 1], rows=(row, row + 1),
                          kv=kv[1], cap_shape=cap_shape, products=products)
    return out, lse


@dataclass(frozen=True)
class _Sequence:
    """One sequence's tensors, heads split as [heads_kv, group] so a KV head meets its own queries."""

    q: "torch.Tensor"  # [q_len, Hkv, G, dqk] fp32, descaled
    k: "torch.Tensor"  # [kv_len, Hkv, dqk] fp32, descaled
    v: "torch.Tensor"  # [kv_len, Hkv, dv] fp32, descaled
    lo: np.ndarray  # first visible key per row (causal/window), non-decreasing
    hi: np.ndarray  # one past the last visible key per row, non-decreasing
    words: "torch.Tensor | None"  # custom mask [Hkv, G, q_len, row_words] int32
    sinks: "torch.Tensor | None"  # [Hkv, G] fp32
    out: "torch.Tensor"  # [q_len, Hkv, G, dv] view into the result
    lse: "torch.Tensor"  # [q_len, Hkv, G] view into the result


def _sequence(inp: Inputs, b: int, q_start: int, chunk_elems: int, out, lse, rows=None, kv=None,
              cap_shape=None, products=None) -> None:
    """Fill out/lse ([rows, heads_q, ...] views) for sequence b's query rows [r_lo, r_hi) (all by
    default), chunk by chunk; `kv` is inp.sequence_kv(b) when the caller has it already."""
    sc = inp.scenario
    hkv, group = sc.heads_kv, sc.group_size
    r_lo, r_hi = rows or (0, sc.q_lens[b])
    q_len = r_hi - r_lo
    lo, hi = (a[r_lo:r_hi] for a in masks.row_intervals(sc, b))
    k, v = kv if kv is not None else inp.sequence_kv(b)
    words = None
    if inp.mask_bits is not None:
        words = inp.mask_bits.view(hkv, group, sc.total_q, -1)[:, :, q_start + r_lo:q_start + r_hi]
    seq = _Sequence(
        q=inp.sequence_q(b, rows=(r_lo, r_hi)).reshape(q_len, hkv, group, -1), k=k, v=v, lo=lo, hi=hi, words=words,
        sinks=inp.sinks.float().view(hkv, group) if sc.sinks else None,
        out=out.view(q_len, hkv, group, -1), lse=lse.view(q_len, hkv, group),
    )
    r0 = 0
    while r0 < q_len:
        # Keys of rows r0..r0+n-1 span [lo[r0], hi[r0+n-1]); take the most rows that fit the budget.
        widths = np.maximum(hi[r0:] - lo[r0], 1)
        cost = np.arange(1, q_len - r0 + 1, dtype=np.int64) * widths * sc.heads_q
        n = max(1, int(np.searchsorted(cost, chunk_elems, side="right")))
        r1 = r0 + n
        k_lo, k_hi = int(lo[r0]), int(hi[r1 - 1])
        if k_hi > k_lo:  # else every row of the chunk sees nothing: out stays 0, lse -inf
            heads_per_chunk = max(1, chunk_elems // (n * (k_hi - k_lo)))
            for heads in _head_chunks(hkv, group, heads_per_chunk):
                _block(seq, sc.scale, sc.softcap, (r0, r1), (k_lo, k_hi), heads, cap_shape, products)
        r0 = r1


def _head_chunks(heads_kv: int, group: int, heads_per_chunk: int):
    """(kv0, kv1, g0, g1): query heads kv*group + g for kv in [kv0, kv1), g in [g0, g1).

    Whole groups when the budget allows (K/V are then read once per group, never repeated);
    otherwise slices of one group.
    """
    if heads_per_chunk >= group:
        step = heads_per_chunk // group
        for kv0 in range(0, heads_kv, step):
            yield kv0, min(kv0 + step, heads_kv), 0, group
    else:
        for kv in range(heads_kv):
            for g0 in range(0, group, heads_per_chunk):
                yield kv, kv + 1, g0, min(g0 + heads_per_chunk, group)


def _block(seq: _Sequence, scale: float, softcap: float, rows, keys, heads, cap_shape=None, products=None) -> None:
    """One score block: rows [r0, r1) x keys [k_lo, k_hi) x query heads (kv, g), kv in [kv0, kv1), g in [g0, g1)."""
    import torch

    bmm = products or torch.bmm
    (r0, r1), (k_lo, k_hi), (kv0, kv1, g0, g1) = rows, keys, heads
    n, nk, ng, width = r1 - r0, kv1 - kv0, g1 - g0, k_hi - k_lo
    dev = seq.q.device
    # [nk, n * ng, dqk] @ [nk, dqk, width]: each KV head multiplies its own query heads.
    q_blk = seq.q[r0:r1, kv0:kv1, g0:g1].permute(1, 0, 2, 3).reshape(nk, n * ng, -1)
    k_blk = seq.k[k_lo:k_hi, kv0:kv1].permute(1, 2, 0)
    s = bmm(q_blk, k_blk).view(nk, n, ng, width) * scale
    if softcap:
        s = (cap_shape or torch.tanh)(s / softcap) * softcap

    key_idx = torch.arange(k_lo, k_hi, device=dev)
    row_lo = torch.from_numpy(seq.lo[r0:r1]).to(dev)
    row_hi = torch.from_numpy(seq.hi[r0:r1]).to(dev)
    visible = ((key_idx >= row_lo[:, None]) & (key_idx < row_hi[:, None])).view(1, n, 1, width)
    if seq.words is not None:
        bits = _unpack(seq.words[kv0:kv1, g0:g1, r0:r1], k_lo, k_hi)  # [nk, ng, n, width]
        visible = visible & bits.permute(0, 2, 1, 3)
    s = s.masked_fill(~visible, float("-inf"))

    row_max = s.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    p = torch.exp(s - row_max)  # masked keys: exp(-inf) = 0
    del s
    total = p.sum(dim=-1)  # [nk, n, ng]
    blk_lse = torch.where(total > 0, row_max.squeeze(-1) + torch.log(total), torch.full_like(total, float("-inf")))
    # [nk, n * ng, width] @ [nk, width, dv]
    v_blk = seq.v[k_lo:k_hi, kv0:kv1].permute(1, 0, 2)
    o = bmm(p.view(nk, n * ng, width), v_blk).view(nk, n, ng, -1)
    o = o / torch.where(total > 0, total, torch.ones_like(total)).unsqueeze(-1)
    if seq.sinks is not None:
        o = o * torch.sigmoid(blk_lse - seq.sinks[kv0:kv1, g0:g1].view(nk, 1, ng)).unsqueeze(-1)

    seq.out[r0:r1, kv0:kv1, g0:g1] = o.permute(1, 0, 2, 3)
    seq.lse[r0:r1, kv0:kv1, g0:g1] = blk_lse.permute(1, 0, 2)


def _unpack(words, k_lo: int, k_hi: int):
    """Bool [..., k_hi - k_lo] of keys k_lo..k_hi-1 from int32 mask words [..., row_words]."""
    import torch

    w0, w1 = k_lo // 32, -(-k_hi // 32)
    shifts = torch.arange(32, dtype=torch.int32, device=words.device)
    bits = (words[..., w0:w1].unsqueeze(-1) >> shifts) & 1  # arithmetic shift is fine: we keep bit 0
    bits = bits.flatten(-2)
    return bits[..., k_lo - 32 * w0:k_hi - 32 * w0].bool()


@contextlib.contextmanager
def _ieee_fp32_matmul():
    """True fp32 matmuls on GPU (no TF32) inside the block; the caller's setting is restored after.

    Uses the fp32_precision API where torch has it: mixing it with the legacy allow_tf32 flag makes
    torch raise on a later read of allow_tf32.
    """
    import torch

    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):
        previous = matmul.fp32_precision
        matmul.fp32_precision = "ieee"
        try:
            yield
        finally:
            matmul.fp32_precision = previous
    else:  # torch < 2.9
        previous = matmul.allow_tf32
        matmul.allow_tf32 = False
        try:
            yield
        finally:
            matmul.allow_tf32 = previous
