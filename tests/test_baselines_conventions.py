"""Each library's mask convention, converted from the scenario's one convention, checked on CPU.

For every library the test writes the library's own visibility rule (from its source or reference
implementation) and checks that, fed the converted arguments, it sees exactly solbench's keys
(solbench.core.masks.row_intervals). This is where off-by-one window bugs would show.
"""

import itertools

import numpy as np
import pytest

from solbench.core import masks
from solbench.baselines import cudnn, fa3, fa4, flashinfer
from solbench.core.scenario import MaskSpec, Scenario

LENGTHS = [(1, 1), (4, 4), (3, 9), (1, 17), (9, 3), (5, 5)]
STRUCTURES = [
    dict(causal=True), dict(causal=False), dict(causal=True, window_left=0), dict(causal=True, window_left=3),
    dict(causal=False, window_left=2), dict(causal=False, window_right=1), dict(causal=False, window_left=1, window_right=4),
]


def scenario(q_lens, kv_lens, **kw):
    kw.setdefault("heads_q", 2)
    kw.setdefault("heads_kv", 1)
    return Scenario(q_lens=q_lens, kv_lens=kv_lens, head_dim_qk=16, head_dim_v=16, **kw)


def solbench_visible(sc, b=0):
    lo, hi = masks.row_intervals(sc, b)
    keys = np.arange(sc.kv_lens[b])
    return (keys[None, :] >= lo[:, None]) & (keys[None, :] < hi[:, None])


def cases():
    for (sq, sk), st in itertools.product(LENGTHS, STRUCTURES):
        yield pytest.param(scenario((sq,), (sk,), **st), id=f"sq{sq}-sk{sk}-" + "-".join(f"{k}{v}" for k, v in st.items()))


# --- conversion functions pinned on named cases ------------------------------------------------------


def test_model_sliding_window_converts_to_each_library():
    """A model's sliding window of 4096 tokens is solbench window_left = 4095."""
    sc = scenario((8,), (8,), window_left=4095)
    assert fa3.fa_window(sc) == (4095, 0)
    assert fa4.fa4_window(sc) == (True, 4095, None)
    assert flashinfer.fi_window_left(sc) == 4095
    assert cudnn.cudnn_bounds(sc) == (4096, 0)


def test_unbounded_and_non_causal_windows():
    assert fa3.fa_window(scenario((4,), (4,), causal=False)) == (-1, -1)
    assert fa4.fa4_window(scenario((4,), (4,), causal=False)) == (False, None, None)
    assert fa4.fa4_window(scenario((4,), (4,))) == (True, None, None)
    both = scenario((4,), (4,), causal=False, window_left=16, window_right=9)
    assert fa3.fa_window(both) == (16, 9)
    assert fa4.fa4_window(both) == (False, 16, 9)
    assert cudnn.cudnn_bounds(both) == (17, 9)
    assert cudnn.cudnn_bounds(scenario((4,), (4,), causal=False)) == (None, None)
    assert cudnn.cudnn_bounds(scenario((4,), (4,), window_left=0)) == (1, 0)


# --- each library's own rule, fed the converted arguments -----------------------------------------------


@pytest.mark.parametrize("sc", cases())
def test_fa_window_rule(sc):
    """FA3/FA4: key j visible iff i + sk - sq - L <= j <= i + sk - sq + R, -1 / None unbounded; causal => R = 0."""
    sq, sk = sc.q_lens[0], sc.kv_lens[0]
    left, right = fa3.fa_window(sc)
    i = np.arange(sq)[:, None]
    j = np.arange(sk)[None, :]
    ok = np.ones((sq, sk), dtype=bool)
    if left >= 0:
        ok &= j >= i + sk - sq - left
    if right >= 0:
        ok &= j <= i + sk - sq + right
    np.testing.assert_array_equal(ok, solbench_visible(sc))
    causal, l4, r4 = fa4.fa4_window(sc)
    assert (l4 if l4 is not None else -1) == left
    assert (0 if causal else (r4 if r4 is not None else -1)) == right


@pytest.mark.parametrize("sc", cases())
def test_cudnn_band_rule(sc):
    """cuDNN BOTTOM_RIGHT (cudnn-frontend test/python/sdpa/fp16_ref.py): the right bound R masks
    triu(diagonal = sk - sq + 1 + R); the left bound n masks tril(diagonal = sk - sq - n)."""
    sq, sk = sc.q_lens[0], sc.kv_lens[0]
    left, right = cudnn.cudnn_bounds(sc)
    masked = np.zeros((sq, sk), dtype=bool)
    if right is not None:
        masked |= np.triu(np.ones((sq, sk), dtype=bool), k=sk - sq + 1 + right)
    if left is not None:
        masked |= np.tril(np.ones((sq, sk), dtype=bool), k=sk - sq - left)
    np.testing.assert_array_equal(~masked, solbench_visible(sc))


@pytest.mark.parametrize("sc", [c for c in cases() if not c.values[0].window_right >= 0 or c.values[0].causal])
def test_flashinfer_rule(sc):
    """FlashInfer (attention/variants, mask.cuh): causal keeps kv_idx <= qo_idx + kv_len - qo_len; the
    window keeps kv_idx + qo_len + window_left >= kv_len + qo_idx. Only kv_len >= qo_len is claimed."""
    sq, sk = sc.q_lens[0], sc.kv_lens[0]
    if sc.causal and sq > sk:
        assert not flashinfer.FA2Adapter.supports(sc, "h200")
        return
    wl = flashinfer.fi_window_left(sc)
    qo = np.arange(sq)[:, None]
    kv = np.arange(sk)[None, :]
    ok = np.ones((sq, sk), dtype=bool)
    if sc.causal:
        ok &= kv <= qo + sk - sq
    ok &= kv + sq + (wl if wl >= 0 else sk) >= sk + qo
    np.testing.assert_array_equal(ok, solbench_visible(sc))


# --- FA3: replaying mha_fwd's normalisation and tile choice ---------------------------------------------


def test_fa3_effective_mask():
    decode = Scenario(q_lens=(1, 1), kv_lens=(50, 9), heads_q=8, heads_kv=2, regime="decode")
    assert fa3.effective_mask(decode)[:2] == (False, False)  # seqlen_q 1, no window: causal dropped
    paged = Scenario(q_lens=(1, 1), kv_lens=(50, 9), heads_q=8, heads_kv=2, regime="decode", kv_layout="paged",
                     page_size=16)
    assert fa3.effective_mask(paged)[:2] == (True, False)  # hdim 128 paged keeps causal (kBlockN 128)
    wide = scenario((300,), (300,), window_left=4096)
    assert fa3.effective_mask(wide)[:2] == (True, False)  # window past the sequence is dropped: plain causal
    assert fa3.effective_mask(scenario((300,), (300,), window_left=298))[:2] == (False, True)
    assert fa3.effective_mask(scenario((300,), (300,), window_left=299))[:2] == (True, False)


def test_fa3_tiles_and_paged_tma():
    assert fa3.tile_size_sm90(128, 128, True, False, False, False) == (128, 128)
    assert fa3.tile_size_sm90(128, 128, False, False, False, False) == (128, 176)
    assert fa3.tile_size_sm90(128, 128, True, False, True, False) == (128, 224)
    assert fa3.tile_size_sm90(64, 64, False, False, False, False) == (192, 192)
    page = dict(q_lens=(1024, 512), kv_lens=(1024, 512), heads_q=32, heads_kv=8, kv_layout="paged")
    assert fa3.paged_tma(Scenario(page_size=128, **page))[0]
    assert not fa3.paged_tma(Scenario(page_size=16, **page))[0]
    assert not fa3.paged_tma(Scenario(page_size=128, causal=False, **page))[0]  # non-causal kBlockN is 176
    short = Scenario(q_lens=(4, 4), kv_lens=(300, 300), heads_q=8, heads_kv=8, kv_layout="paged", page_size=128,
                     regime="chunked_prefill")
    assert not fa3.paged_tma(short)[0]  # seqlen_q * G = 4 <= kBlockM


def test_fa4_sm90_tile_n():
    assert fa4.tile_n_sm90(scenario((8,), (8,))) == 128
    big = dict(q_lens=(8,), kv_lens=(8,), heads_q=2, heads_kv=1)
    assert fa4.tile_n_sm90(Scenario(head_dim_qk=256, head_dim_v=256, **big)) == 80
    assert fa4.tile_n_sm90(Scenario(head_dim_qk=96, head_dim_v=96, causal=False, **big)) == 144


# --- Flex: the mask_mod evaluated on CPU ----------------------------------------------------------------

FLEX_CASES = [
    dict(q_lens=(5, 0, 9, 3), kv_lens=(5, 4, 20, 3), window_left=3),
    dict(q_lens=(6, 2), kv_lens=(11, 2), causal=False, window_left=2, window_right=1),
    dict(q_lens=(9, 3), kv_lens=(5, 13), regime="prefill"),  # q > kv: top rows see nothing
    dict(q_lens=(7, 1, 12), kv_lens=(17, 9, 30), kv_layout="paged", page_size=4, regime="chunked_prefill"),
    dict(q_lens=(6, 5), kv_lens=(40, 5), causal=False, heads_q=4, heads_kv=2, mask=MaskSpec(0.4, "iid_empty_rows", 3)),
    dict(q_lens=(6, 5), kv_lens=(33, 5), heads_q=4, heads_kv=2, kv_layout="paged", page_size=8,
         mask=MaskSpec(0.5, "iid", 5)),
]


@pytest.mark.parametrize("kw", FLEX_CASES)
def test_flex_mask_mod_matches_reference_visibility(kw):
    torch = pytest.importorskip("torch")
    from solbench.baselines import flex
    from solbench.supervisor.inputs import make_inputs

    kw = dict(kw)
    kw.setdefault("heads_q", 2)
    kw.setdefault("heads_kv", 1)
    sc = Scenario(head_dim_qk=16, head_dim_v=16, **kw)
    inputs = make_inputs(sc)
    mask_mod = flex.make_mask_mod(flex.mask_tensors(inputs))
    kv_tokens = inputs.k.shape[0] * (sc.page_size or 1)
    q_idx = torch.arange(sc.total_q)[:, None]
    kv_idx = torch.arange(kv_tokens)[None, :]
    bits = masks.mask_bits(sc)
    start = 0
    for h in range(sc.heads_q):
        got = mask_mod(torch.tensor(0), torch.tensor(h), q_idx, kv_idx).numpy()
        start = 0
        for b in range(sc.batch):
            q_len, kv_len = sc.q_lens[b], sc.kv_lens[b]
            want = np.zeros((q_len, kv_tokens), dtype=bool)
            vis = solbench_visible(sc, b)
            if bits is not None:
                vis = vis & masks.unpack_rows(bits[h, start:start + q_len], kv_len)
            for j in range(kv_len):  # logical key j -> its physical token
                phys = (int(inputs.page_table[b, j // sc.page_size]) * sc.page_size + j % sc.page_size
                        if sc.kv_layout == "paged" else int(inputs.cu_seqlens_kv[b]) + j)
                want[:, phys] = vis[:, j]
            np.testing.assert_array_equal(got[start:start + q_len], want, err_msg=f"head {h} sequence {b}")
            start += q_len


# --- FlashInfer per-head custom masks: regrouping round trip ------------------------------------------


def test_flashinfer_per_head_rows_round_trip():
    torch = pytest.importorskip("torch")
    from solbench.baselines.flashinfer_mask import gather_index, per_head_rows

    sc = Scenario(q_lens=(3, 0, 5), kv_lens=(3, 2, 5), heads_q=4, heads_kv=2, head_dim_qk=8, head_dim_v=8,
                  causal=False, mask=MaskSpec(0.5))
    t = torch.arange(sc.total_q * sc.heads_q * 8, dtype=torch.float32).view(sc.total_q, sc.heads_q, 8)
    rows = per_head_rows(t, sc)
    assert rows.shape == (sc.total_q * sc.heads_q, 8)
    back = rows.index_select(0, gather_index(sc)).view_as(t)
    torch.testing.assert_close(back, t)
    assert torch.equal(rows[3 * 0 + 1 * 3], t[0, 1])  # sequence 0, head 1, token 0 -> row Hq*0 + 1*q_len


def test_flashinfer_page_metadata():
    pytest.importorskip("torch")
    from solbench.baselines.layout import flashinfer_pages
    from solbench.supervisor.inputs import make_inputs

    sc = Scenario(q_lens=(1, 1, 1), kv_lens=(17, 8, 64), heads_q=4, heads_kv=2, regime="decode",
                  kv_layout="paged", page_size=8)
    inputs = make_inputs(sc)
    indptr, indices, last = flashinfer_pages(inputs)
    assert indptr.tolist() == [0, 3, 4, 12]
    assert last.tolist() == [1, 8, 8]
    assert indices[:3].tolist() == inputs.page_table[0, :3].tolist()
    assert indices[4:12].tolist() == inputs.page_table[2, :8].tolist()


def test_cudnn_band_keywords_follow_the_bindings_signature():
    """FE 1.32 (read from its wheel): `cudnn.pygraph.sdpa_fp8` is a generic keyword capture whose doc names no
    argument; the binding behind it (`cudnn._pybind_module.backend_graph`) takes `left_bound`/`right_bound` for
    sdpa_fp8 and `diagonal_band_*_bound` for sdpa. Passing the long names to sdpa_fp8 was refused on the H200
    ("incompatible function arguments"). FE 1.23: `pygraph` is the binding, sdpa_fp8 takes the short names."""
    from types import SimpleNamespace

    from solbench.baselines.cudnn import _spelled_for

    def method(name, doc):
        def m(**kw):
            return kw
        m.__name__, m.__doc__ = name, doc
        return m

    fp8_sig = "sdpa_fp8(self, q: tensor, sliding_window: object | None = None, left_bound: object | None = None, right_bound: object | None = None) -> list"
    sdpa_sig = "sdpa(self, q: tensor, diagonal_band_left_bound: object | None = None, diagonal_band_right_bound: object | None = None) -> list"
    capture = SimpleNamespace(sdpa_fp8=method("sdpa_fp8", "sdpa_fp8(...) -> ('O', 'Stats') (generic kwarg capture; see _CAPTURED_OPS)."),
                              sdpa=method("sdpa", "sdpa(...) -> ('O', 'Stats') (generic kwarg capture; see _CAPTURED_OPS)."))
    binding = SimpleNamespace(sdpa_fp8=method("sdpa_fp8", fp8_sig + "\n\n  Args: diagonal_band_left_bound ..."),
                              sdpa=method("sdpa", sdpa_sig))
    fe132 = SimpleNamespace(pygraph=capture, _pybind_module=SimpleNamespace(backend_graph=binding))
    fe123 = SimpleNamespace(pygraph=binding)
    kw = {"q": 1, "diagonal_band_left_bound": 128, "diagonal_band_right_bound": 0}
    short = {"q": 1, "left_bound": 128, "right_bound": 0}
    assert _spelled_for(fe132, "sdpa_fp8", kw) == short
    assert _spelled_for(fe132, "sdpa", kw) == kw
    assert _spelled_for(fe123, "sdpa_fp8", kw) == short
    assert _spelled_for(SimpleNamespace(pygraph=capture), "sdpa_fp8", kw) == kw  # no typed signature: as given
