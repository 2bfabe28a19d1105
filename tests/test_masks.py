"""solbench.core.masks against brute force written from the scenario semantics."""

import itertools

import numpy as np
import pytest

from solbench.core import masks
from solbench.core.scenario import MaskSpec, Scenario


def visible(sc: Scenario, b: int, i: int, j: int) -> bool:
    """The structural (causal/window) rule for one (query, key), straight from the scenario docstring."""
    diag = i + sc.kv_lens[b] - sc.q_lens[b]
    if sc.causal and j > diag:
        return False
    if sc.window_left >= 0 and j < diag - sc.window_left:
        return False
    if not sc.causal and sc.window_right >= 0 and j > diag + sc.window_right:
        return False
    return True


LENGTHS = [(1, 1), (4, 4), (3, 9), (9, 3), (6, 0), (1, 17)]
STRUCTURES = [
    dict(causal=True),
    dict(causal=False),
    dict(causal=True, window_left=0),
    dict(causal=True, window_left=3),
    dict(causal=False, window_left=2),
    dict(causal=False, window_right=1),
    dict(causal=False, window_left=0, window_right=0),
    dict(causal=False, window_left=1, window_right=4),
]


def scenario(q_lens, kv_lens, **kw):
    return Scenario(q_lens=q_lens, kv_lens=kv_lens, heads_q=2, heads_kv=1, head_dim_qk=8, head_dim_v=8, **kw)


@pytest.mark.parametrize("lengths,structure", list(itertools.product(LENGTHS, STRUCTURES)))
def test_row_intervals_match_brute_force(lengths, structure):
    q_len, kv_len = lengths
    sc = scenario((q_len, 2), (kv_len, 2), **structure)
    lo, hi = masks.row_intervals(sc, 0)
    assert lo.dtype == np.int64 and lo.shape == (q_len,)
    for i in range(q_len):
        want = [j for j in range(kv_len) if visible(sc, 0, i, j)]
        got = list(range(max(0, lo[i]), min(kv_len, hi[i])))
        assert got == want, (i, lo[i], hi[i])
    assert (np.diff(lo) >= 0).all() and (np.diff(hi) >= 0).all()  # the reference relies on this


def bit(words, h, row, j) -> bool:
    return bool((int(words[h, row, j // 32]) >> (j % 32)) & 1)


def test_mask_bits_layout_density_and_padding():
    sc = scenario((40, 0, 25), (70, 9, 33), causal=False, mask=MaskSpec(0.3, seed=4))
    words = masks.mask_bits(sc)
    assert words.dtype == np.uint32 and words.shape == (2, 65, masks.row_words(sc)) and words.shape[2] == 3
    dense = masks.unpack_rows(words, 96)
    starts = [0, 40, 40]
    total = set_bits = 0
    for b, (q_len, kv_len) in enumerate(zip(sc.q_lens, sc.kv_lens)):
        rows = dense[:, starts[b]:starts[b] + q_len]
        assert not rows[..., kv_len:].any()  # bits at or past kv_len are zero
        set_bits += int(rows[..., :kv_len].sum())
        total += rows[..., :kv_len].size
    assert abs(set_bits / total - 0.3) < 0.03
    # unpack_rows agrees with bit j % 32 of word j // 32
    for h, row, j in [(0, 0, 0), (1, 39, 69), (0, 41, 31), (1, 64, 32), (0, 12, 63)]:
        assert dense[h, row, j] == bit(words, h, row, j)


def test_mask_bits_deterministic_in_seed():
    a = masks.mask_bits(scenario((5,), (40,), mask=MaskSpec(0.5, seed=1)))
    b = masks.mask_bits(scenario((5,), (40,), mask=MaskSpec(0.5, seed=1)))
    c = masks.mask_bits(scenario((5,), (40,), mask=MaskSpec(0.5, seed=2)))
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert masks.mask_bits(scenario((5,), (40,))) is None


def test_iid_empty_rows_zeroes_every_seventh_row():
    sc = scenario((10, 12), (30, 50), causal=False, mask=MaskSpec(1.0, "iid_empty_rows"))
    dense = masks.unpack_rows(masks.mask_bits(sc), 50)
    for row in range(sc.total_q):
        kv_len = 30 if row < 10 else 50
        if row % 7 == 0:
            assert not dense[:, row].any()
        else:
            assert dense[:, row, :kv_len].all()


@pytest.mark.parametrize("structure", STRUCTURES)
@pytest.mark.parametrize("mask", [None, MaskSpec(0.4, seed=7), MaskSpec(0.8, "iid_empty_rows")])
def test_visible_pairs_match_brute_force(structure, mask):
    sc = scenario((5, 0, 9, 3), (8, 4, 3, 40), mask=mask, **structure)
    words = masks.mask_bits(sc)
    want, start = 0, 0
    for b in range(sc.batch):
        for h in range(sc.heads_q):
            for i in range(sc.q_lens[b]):
                for j in range(sc.kv_lens[b]):
                    if visible(sc, b, i, j) and (words is None or bit(words, h, start + i, j)):
                        want += 1
        start += sc.q_lens[b]
    assert masks.visible_pairs(sc) == want
    if words is not None:
        assert masks.visible_pairs(sc, words) == want


@pytest.mark.parametrize("lengths,structure", list(itertools.product(LENGTHS, STRUCTURES)))
def test_visible_key_span_counts_keys_some_query_sees(lengths, structure):
    q_len, kv_len = lengths
    sc = scenario((q_len,), (kv_len,), **structure)
    seen = {j for i in range(q_len) for j in range(kv_len) if visible(sc, 0, i, j)}
    assert masks.visible_key_span(sc, 0) == len(seen)
