"""Which keys each query sees: the causal/window interval, and the custom bitmask generator.

Pure numpy, so the reference, the input builder and the roofline model share one definition.
"""

from __future__ import annotations

import numpy as np

from solbench.core.scenario import Scenario


def row_intervals(sc: Scenario, b: int) -> tuple[np.ndarray, np.ndarray]:
    """Visible key interval [lo, hi) per query row of sequence b, from causal and window alone.

    Rows are bottom-right aligned: query i sits on diagonal d = i + kv_len - q_len. An empty
    interval has lo >= hi (the caller clips). Returned as int64 arrays of length q_lens[b].
    """
    q_len, kv_len = sc.q_lens[b], sc.kv_lens[b]
    d = np.arange(q_len, dtype=np.int64) + (kv_len - q_len)
    lo = np.zeros(q_len, dtype=np.int64)
    hi = np.full(q_len, kv_len, dtype=np.int64)
    if sc.window_left >= 0:
        lo = np.maximum(lo, d - sc.window_left)
    right = 0 if sc.causal else sc.window_right
    if right >= 0:
        hi = np.minimum(hi, d + right + 1)
    hi = np.maximum(hi, lo)
    return lo, hi


def row_words(sc: Scenario) -> int:
    """32-bit words per mask row: one row covers the longest sequence's keys."""
    return max(1, -(-max(sc.kv_lens) // 32))


def mask_bits(sc: Scenario) -> np.ndarray | None:
    """The custom bitmask as uint32 words, shape [heads_q, total_q, row_words]; None if no mask.

    Key j of a row is bit (j % 32) of word j // 32 (little-endian bit order). Bits at or past the
    sequence's kv_len are 0. Deterministic in (scenario, mask.seed).
    """
    spec = sc.mask
    if spec is None:
        return None
    words = row_words(sc)
    out = np.zeros((sc.heads_q, sc.total_q, words), dtype=np.uint32)
    rng = np.random.Generator(np.random.PCG64(spec.seed))
    start = 0
    for q_len, kv_len in zip(sc.q_lens, sc.kv_lens):
        if q_len and kv_len:
            dense = np.zeros((sc.heads_q, q_len, words * 32), dtype=bool)
            dense[:, :, :kv_len] = rng.random((sc.heads_q, q_len, kv_len)) < spec.density
            packed = np.packbits(dense, axis=-1, bitorder="little")
            out[:, start:start + q_len, :] = packed.view("<u4")
        start += q_len
    if spec.pattern == "iid_empty_rows":
        out[:, ::7, :] = 0
    return out


def unpack_rows(words: np.ndarray, kv_len: int) -> np.ndarray:
    """Bool [..., kv_len] from uint32 words [..., row_words]."""
    as_bytes = np.ascontiguousarray(words).view(np.uint8)
    return np.unpackbits(as_bytes, axis=-1, bitorder="little")[..., :kv_len].astype(bool)


def visible_pairs(sc: Scenario, bits: np.ndarray | None = None) -> int:
    """Exact number of visible (query head, query, key) triples; FLOPs are counted from this.

    Pass `bits` (from mask_bits) to avoid regenerating a large mask.
    """
    if sc.mask is None:
        total = 0
        for b in range(sc.batch):
            lo, hi = row_intervals(sc, b)
            total += int((hi - lo).sum())
        return total * sc.heads_q
    if bits is None:
        bits = mask_bits(sc)
    total, start = 0, 0
    for b, (q_len, kv_len) in enumerate(zip(sc.q_lens, sc.kv_lens)):
        if q_len and kv_len:
            lo, hi = row_intervals(sc, b)
            keys = np.arange(kv_len)
            structural = (keys[None, :] >= lo[:, None]) & (keys[None, :] < hi[:, None])
            dense = unpack_rows(bits[:, start:start + q_len, :], kv_len)
            total += int((dense & structural[None]).sum())
        start += q_len
    return total


def visible_key_span(sc: Scenario, b: int) -> int:
    """Keys of sequence b that at least one query can see (for the minimal-bytes model)."""
    lo, hi = row_intervals(sc, b)
    nonempty = hi > lo
    if not nonempty.any():
        return 0
    # The union of sliding intervals whose ends are monotone in i: a gap only appears when the
    # window is narrower than the step between rows, which cannot happen (rows step by one key).
    return int(hi[nonempty].max() - lo[nonempty].min())
