"""The fp32 reference against an element-by-element float64 loop written from the spec, against torch
SDPA where torch has the feature, and against itself under every chunking."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from solbench.core import masks
from solbench.supervisor.inputs import make_inputs
from solbench.supervisor.reference import reference
from solbench.core.scenario import MaskSpec, Scenario


def small(**kw) -> Scenario:
    base = dict(q_lens=(5, 3), kv_lens=(9, 6), heads_q=4, heads_kv=2, head_dim_qk=16, head_dim_v=16)
    base.update(kw)
    return Scenario(**base)


FEATURES = {
    "plain_full": small(causal=False, q_lens=(6,), kv_lens=(6,)),
    "causal_q_lt_kv": small(),
    "causal_q_gt_kv": small(q_lens=(7, 4), kv_lens=(3, 4)),
    "full_q_gt_kv": small(causal=False, q_lens=(7,), kv_lens=(3,)),
    "window_left_only": small(window_left=2, q_lens=(6, 4), kv_lens=(11, 4)),
    "window_left_only_full": small(causal=False, window_left=1, q_lens=(6,), kv_lens=(8,)),
    "window_left_right": small(causal=False, window_left=2, window_right=1, q_lens=(6, 5), kv_lens=(10, 3)),
    "window_right_only": small(causal=False, window_right=1, q_lens=(6,), kv_lens=(9,)),
    "window_zero_causal": small(window_left=0),
    "window_zero_both": small(causal=False, window_left=0, window_right=0, q_lens=(5,), kv_lens=(3,)),
    "softcap_large_logits": small(softcap=5.0, input_profile="large_logits"),
    "large_logits": small(input_profile="large_logits", causal=False),
    "sinks_default": small(sinks=True),
    "sinks_positive": small(sinks=True, input_profile="sinks_positive"),
    "sinks_negative": small(sinks=True, input_profile="sinks_negative"),
    "sinks_empty_rows": small(sinks=True, input_profile="sinks_positive", q_lens=(6,), kv_lens=(2,)),
    "mask_iid": small(causal=False, mask=MaskSpec(0.5, seed=3)),
    "mask_empty_rows": small(causal=False, mask=MaskSpec(0.6, "iid_empty_rows"), q_lens=(9, 6), kv_lens=(9, 12)),
    "mask_sparse_causal": small(mask=MaskSpec(0.2, seed=1)),
    "mask_long_rows": small(causal=False, mask=MaskSpec(0.5), q_lens=(3,), kv_lens=(70,)),
    "paged_1": small(kv_layout="paged", page_size=1),
    "paged_16_partial": small(kv_layout="paged", page_size=16, q_lens=(4, 2), kv_lens=(21, 37)),
    "paged_3_ragged": small(kv_layout="paged", page_size=3, q_lens=(2, 0, 3), kv_lens=(7, 5, 0)),
    "empty_sequences": small(q_lens=(0, 4, 3, 0), kv_lens=(5, 0, 6, 0)),
    "mqa": small(heads_q=4, heads_kv=1),
    "gqa_group3": small(heads_q=6, heads_kv=2),
    "dqk_gt_dv": small(head_dim_qk=32, head_dim_v=8),
    "dqk_lt_dv": small(head_dim_qk=8, head_dim_v=24),
    "fp8_per_tensor": small(dtype="fp8_e4m3", descale="per_tensor"),
    "fp8_per_head": small(dtype="fp8_e4m3", descale="per_head", heads_q=6, heads_kv=3),
    "fp16": small(dtype="fp16"),
    "explicit_scale": small(softmax_scale=0.3),
    "decode_paged": small(regime="decode", q_lens=(1, 1, 1), kv_lens=(13, 1, 0), kv_layout="paged", page_size=4),
    "everything": small(
        q_lens=(5, 0, 4), kv_lens=(12, 3, 2), heads_q=6, heads_kv=2, head_dim_qk=24, head_dim_v=8,
        dtype="fp8_e4m3", descale="per_head", kv_layout="paged", page_size=5, window_left=3, softcap=7.0,
        sinks=True, mask=MaskSpec(0.7, "iid_empty_rows", seed=5), softmax_scale=0.2),
    "everything_full": small(
        q_lens=(6, 2), kv_lens=(4, 9), heads_q=4, heads_kv=1, causal=False, window_left=1, window_right=2,
        sinks=True, input_profile="sinks_negative", mask=MaskSpec(0.8, seed=2), kv_layout="paged", page_size=2),
}


def brute_force(inp, rows=None):
    """(out, lse) in float64 from the raw tensors: one (b, h, i, j) at a time, straight from the spec.

    rows: the global query rows to compute (default all); the others stay 0 / -inf."""
    sc = inp.scenario
    q, k, v = (t.to(torch.float64).numpy() for t in (inp.q, inp.k, inp.v))
    group = sc.heads_q // sc.heads_kv

    def descale(t, kv_head):
        if t is None:
            return 1.0
        return float(t[0]) if t.numel() == 1 else float(t[kv_head])

    bits = None if inp.mask_bits is None else inp.mask_bits.numpy().view(np.uint32)
    cu_q, cu_kv = inp.cu_seqlens_q.tolist(), inp.cu_seqlens_kv.tolist()
    out = np.zeros((sc.total_q, sc.heads_q, sc.head_dim_v))
    lse = np.full((sc.total_q, sc.heads_q), -math.inf)
    for b in range(sc.batch):
        q_len, kv_len = sc.q_lens[b], sc.kv_lens[b]
        for h in range(sc.heads_q):
            kh = h // group
            qd, kd, vd = descale(inp.q_descale, kh), descale(inp.k_descale, kh), descale(inp.v_descale, kh)
            for i in range(q_len):
                row = cu_q[b] + i
                if rows is not None and row not in rows:
                    continue
                diag = i + kv_len - q_len
                scores, values = [], []
                for j in range(kv_len):
                    if sc.causal and j > diag:
                        continue
                    if sc.window_left >= 0 and j < diag - sc.window_left:
                        continue
                    if not sc.causal and sc.window_right >= 0 and j > diag + sc.window_right:
                        continue
                    if bits is not None and not (int(bits[h, row, j // 32]) >> (j % 32)) & 1:
                        continue
                    if sc.kv_layout == "paged":
                        page = int(inp.page_table[b, j // sc.page_size])
                        key, value = k[page, j % sc.page_size, kh], v[page, j % sc.page_size, kh]
                    else:
                        key, value = k[cu_kv[b] + j, kh], v[cu_kv[b] + j, kh]
                    s = float(np.dot(q[row, h] * qd, key * kd)) * sc.scale
                    if sc.softcap:
                        s = sc.softcap * math.tanh(s / sc.softcap)
                    scores.append(s)
                    values.append([value[x] * vd for x in range(sc.head_dim_v)])
                if not scores:
                    continue  # out stays 0, lse stays -inf
                m = max(scores)
                lse[row, h] = m + math.log(sum(math.exp(s - m) for s in scores))
                if sc.sinks:
                    sink = float(inp.sinks[h])
                    m = max(m, sink)
                    denom = sum(math.exp(s - m) for s in scores) + math.exp(sink - m)
                else:
                    denom = sum(math.exp(s - m) for s in scores)
                for x in range(sc.head_dim_v):
                    out[row, h, x] = sum(math.exp(s - m) * val[x] for s, val in zip(scores, values)) / denom
    return torch.from_numpy(out), torch.from_numpy(lse)


def assert_matches(got, want, atol):
    got64 = got.to(torch.float64)
    both_inf = torch.isinf(got64) & torch.isinf(want) & (torch.sign(got64) == torch.sign(want))
    assert not torch.isnan(got64).any()
    torch.testing.assert_close(torch.where(both_inf, 0.0, got64), torch.where(both_inf, 0.0, want), atol=atol, rtol=1e-5)


@pytest.mark.parametrize("name", sorted(FEATURES))
def test_reference_matches_brute_force(name):
    inp = make_inputs(FEATURES[name], trial=1)
    out, lse = reference(inp)
    assert out.dtype == torch.float32 and lse.dtype == torch.float32 and out.device == inp.device
    want_out, want_lse = brute_force(inp)
    assert_matches(out, want_out, atol=1e-5)
    assert_matches(lse, want_lse, atol=1e-5)
    assert torch.equal(torch.isinf(lse), torch.isinf(want_lse))


def test_features_cover_empty_rows_and_nonempty_rows():
    """Guard the table above: the scenarios meant to have rows with nothing visible do have them."""
    for name in ("causal_q_gt_kv", "mask_empty_rows", "empty_sequences", "sinks_empty_rows", "window_zero_both"):
        _, lse = reference(make_inputs(FEATURES[name]))
        assert torch.isinf(lse).any() and torch.isfinite(lse).any(), name


# --- torch SDPA, float64 on CPU, where it has the feature ---------------------------------------

SDPA_CASES = {
    "plain": small(causal=False, q_lens=(6, 4), kv_lens=(9, 4)),
    "causal_square": small(q_lens=(7, 5), kv_lens=(7, 5)),
    "causal_bottom_right": small(q_lens=(3, 5), kv_lens=(10, 8)),
    "window": small(causal=False, window_left=3, window_right=2, q_lens=(8,), kv_lens=(12,)),
    "custom_mask": small(causal=False, mask=MaskSpec(0.5, seed=9), q_lens=(10,), kv_lens=(40,)),
    "gqa_dv": small(heads_q=8, heads_kv=2, head_dim_qk=32, head_dim_v=16, causal=False),
    "scale": small(softmax_scale=0.05, causal=False, input_profile="large_logits"),
}


def dense_visibility(sc, inp, b):
    """Bool [heads_q, q_len, kv_len] from the scenario semantics (written here, not from the reference)."""
    q_len, kv_len = sc.q_lens[b], sc.kv_lens[b]
    i = torch.arange(q_len)[:, None]
    j = torch.arange(kv_len)[None, :]
    diag = i + kv_len - q_len
    vis = torch.ones(q_len, kv_len, dtype=torch.bool)
    if sc.causal:
        vis &= j <= diag
    if sc.window_left >= 0:
        vis &= j >= diag - sc.window_left
    if sc.window_right >= 0 and not sc.causal:
        vis &= j <= diag + sc.window_right
    vis = vis.expand(sc.heads_q, q_len, kv_len).clone()
    if inp.mask_bits is not None:
        start = int(inp.cu_seqlens_q[b])
        words = inp.mask_bits.numpy().view(np.uint32)[:, start:start + q_len]
        vis &= torch.from_numpy(masks.unpack_rows(words, kv_len))
    return vis


@pytest.mark.parametrize("name", sorted(SDPA_CASES))
def test_reference_matches_sdpa(name):
    sc = SDPA_CASES[name]
    inp = make_inputs(sc, trial=2)
    out, lse = reference(inp)
    for b in range(sc.batch):
        s0, s1 = int(inp.cu_seqlens_q[b]), int(inp.cu_seqlens_q[b + 1])
        q = inp.sequence_q(b).double().transpose(0, 1)  # [Hq, q_len, d]
        k, v = (t.double().transpose(0, 1).repeat_interleave(sc.group_size, dim=0) for t in inp.sequence_kv(b))
        vis = dense_visibility(sc, inp, b)
        if name == "causal_square":
            want = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=sc.scale)
        else:
            want = F.scaled_dot_product_attention(q, k, v, attn_mask=vis, scale=sc.scale)
        scores = (q @ k.transpose(1, 2) * sc.scale).masked_fill(~vis, -math.inf)
        want_lse = torch.logsumexp(scores, dim=-1)
        has_keys = vis.any(-1)  # [Hq, q_len]; older torch returns NaN for rows with nothing visible
        got = out[s0:s1].transpose(0, 1).double()
        torch.testing.assert_close(got[has_keys], want[has_keys], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(lse[s0:s1].T.double()[has_keys], want_lse[has_keys], atol=1e-5, rtol=1e-5)


# --- chunking, empty rows, precision flag, memory bound -------------------------------------------

CHUNK_CASES = {
    "causal_gqa": small(q_lens=(40, 17), kv_lens=(70, 17), heads_q=6, heads_kv=2),
    "window_mask_sinks": small(q_lens=(33,), kv_lens=(90,), window_left=9, sinks=True, mask=MaskSpec(0.6, "iid_empty_rows")),
    "full_paged_mqa": small(q_lens=(20, 9), kv_lens=(50, 64), heads_q=4, heads_kv=1, causal=False,
                            kv_layout="paged", page_size=16, softcap=4.0),
    "q_gt_kv_window_right": small(q_lens=(30,), kv_lens=(12,), causal=False, window_left=2, window_right=3),
}


@pytest.mark.parametrize("name", sorted(CHUNK_CASES))
@pytest.mark.parametrize("chunk_elems", [1, 5, 64, 700, 5000])
def test_chunking_does_not_change_the_answer(name, chunk_elems):
    inp = make_inputs(CHUNK_CASES[name])
    big_out, big_lse = reference(inp, chunk_elems=2**40)
    out, lse = reference(inp, chunk_elems=chunk_elems)
    assert_matches(out, big_out.double(), atol=1e-6)
    assert_matches(lse, big_lse.double(), atol=1e-6)


def test_rows_with_nothing_visible_give_zero_and_minus_inf():
    sc = small(q_lens=(8,), kv_lens=(3,), sinks=True, input_profile="sinks_positive", mask=MaskSpec(1.0, "iid_empty_rows"))
    out, lse = reference(make_inputs(sc))
    assert not out.isnan().any() and not lse.isnan().any()
    assert (out[:5] == 0).all() and (lse[:5] == -math.inf).all()  # rows 0..4 sit left of key 0
    assert (out[7] == 0).all() and (lse[7] == -math.inf).all()  # row 7: every 7th row is masked out
    assert torch.isfinite(lse[5:7]).all()


def test_strong_sink_shrinks_output_without_overflow():
    sc = small(sinks=True, q_lens=(4,), kv_lens=(4,))
    inp = make_inputs(sc)
    inp.sinks.fill_(500.0)  # e^500 overflows fp32: the reference must not form it
    out, lse = reference(inp)
    assert torch.isfinite(out).all() and (out.abs() < 1e-30).all()
    inp.sinks.fill_(-500.0)
    out_neg, lse_neg = reference(inp)
    torch.testing.assert_close(lse_neg, lse)  # lse excludes the sink
    assert (out_neg.abs() > 1e-6).any()


def test_tf32_setting_is_ieee_inside_and_restored(monkeypatch):
    matmul = torch.backends.cuda.matmul
    seen = []
    real_bmm = torch.bmm

    def spy(*a, **kw):
        seen.append(matmul.fp32_precision)
        return real_bmm(*a, **kw)

    previous = matmul.fp32_precision
    matmul.fp32_precision = "tf32"
    monkeypatch.setattr(torch, "bmm", spy)
    try:
        reference(make_inputs(small()))
        assert seen and set(seen) == {"ieee"}
        assert matmul.fp32_precision == "tf32"
    finally:
        matmul.fp32_precision = previous


def test_score_blocks_respect_the_budget_and_skip_masked_keys(monkeypatch):
    sc = small(q_lens=(256,), kv_lens=(256,), heads_q=4, heads_kv=4, head_dim_qk=8, head_dim_v=8)
    budget = 4 * 256 * 16
    score_blocks = []
    real_bmm = torch.bmm

    def spy(a, b):
        result = real_bmm(a, b)
        score_blocks.append(result.numel())
        return result

    monkeypatch.setattr(torch, "bmm", spy)
    reference(make_inputs(sc), chunk_elems=budget)
    scores = score_blocks[0::2]  # each block: the score bmm, then the PV bmm
    assert max(scores) <= budget
    assert sum(scores) < 0.6 * 256 * 256 * 4  # causal: about half the square, not all of it


def sampled_rows(sc, per_seq=12):
    """First, last and evenly spaced rows of every sequence (all rows of a short one)."""
    rows, start = set(), 0
    for q_len in sc.q_lens:
        if q_len:
            picks = np.linspace(0, q_len - 1, min(q_len, per_seq)).round().astype(int)
            rows.update(start + int(i) for i in picks)
        start += q_len
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("suite_name", ["smoke", "edge"])
def test_reference_matches_brute_force_on_every_smoke_and_edge_scenario(suite_name):
    from solbench.core.suites import load_suite

    from solbench.supervisor.inputs import drawn_profile

    for sc in load_suite(suite_name).scenarios:
        inp = make_inputs(sc, trial=0)
        rows = sampled_rows(sc)
        want_out, want_lse = brute_force(inp, rows)
        got_out, got_lse = reference(inp)
        idx = torch.tensor(sorted(rows))
        # Rows offset by up to 40 logits (smoke's fp16 scenario draws high_logits: inputs.drawn_profile) carry
        # fp32's rounding of scores that large, ~1.6e-5 at most here: still 30x below half an fp16 ulp of 1.
        atol = 1e-5 * (1 + drawn_profile(sc).logit_offset_max / 10)
        assert_matches(got_out[idx], want_out[idx], atol=atol)
        assert_matches(got_lse[idx], want_lse[idx], atol=atol)


@pytest.mark.parametrize("index", range(10))
def test_reference_rows_match_the_full_reference(index):
    """The rows the supervisor checks after each timed round: the same numbers as the full reference."""
    from solbench.core.suites import load_suite
    from solbench.supervisor.reference import reference_rows

    sc = load_suite("smoke").scenarios[index]
    inp = make_inputs(sc, trial=3)
    out, lse = reference(inp)
    tokens = sorted({0, sc.total_q // 2, sc.total_q - 1}) if sc.total_q else []
    rows_out, rows_lse = reference_rows(inp, tokens)
    assert torch.allclose(rows_out, out[tokens], atol=1e-5, rtol=1e-5)  # fp32 rounding of other chunks
    assert torch.equal(torch.isneginf(rows_lse), torch.isneginf(lse[tokens]))
    finite = torch.isfinite(lse[tokens])
    assert torch.allclose(rows_lse[finite], lse[tokens][finite], atol=1e-5)
