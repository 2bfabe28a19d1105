"""FA3 and FA4 adapters against a CPU stand-in that implements FlashAttention's documented contract.

The stand-in reads its arguments the way FA does (hopper/flash_api.cpp, flash_attn/cute/interface.py):
batch [B, S, H, D] or varlen (cu_seqlens_q; cu_seqlens_k, or seqused_k + page_table), window (left,
right) counted from the bottom-right diagonal inclusive with -1 / None unbounded and causal meaning
right = 0, descales (B, Hkv), LSE [H, total_q] or [B, H, S] in natural log, FA4's LSE including the
sink. If the adapters pass anything in the wrong shape, layout or convention, the output disagrees
with solbench's reference. It says nothing about the real kernels: the GPU tier does.
"""

import sys
import types

import pytest
from adapter_checks import run_and_judge

torch = pytest.importorskip("torch")
from solbench.baselines import fa3, fa4  # noqa: E402
from solbench.core.model import Status  # noqa: E402
from solbench.core.suites import load_suite  # noqa: E402


def fa_contract(q, k, v, out, *, cu_seqlens_q=None, cu_seqlens_k=None, seqused_k=None, page_table=None,
                softmax_scale, causal, left, right, softcap, q_descale=None, k_descale=None, v_descale=None,
                sink=None):
    """Attention as FA defines it; writes `out`, returns the LSE in FA's layout (with the sink, if any)."""
    varlen = cu_seqlens_q is not None
    batch = len(cu_seqlens_q) - 1 if varlen else q.shape[0]
    hq, hkv = q.shape[-2], v.shape[-2]
    lse = torch.empty((hq, q.shape[0]) if varlen else (batch, hq, q.shape[1]), dtype=torch.float32)
    for b in range(batch):
        qb = q[int(cu_seqlens_q[b]):int(cu_seqlens_q[b + 1])] if varlen else q[b]
        if page_table is not None:
            n = int(seqused_k[b])
            kb = k[page_table[b].long()].reshape(-1, hkv, k.shape[-1])[:n]
            vb = v[page_table[b].long()].reshape(-1, hkv, v.shape[-1])[:n]
        elif varlen:
            kb, vb = (t[int(cu_seqlens_k[b]):int(cu_seqlens_k[b + 1])] for t in (k, v))
        else:
            kb, vb = k[b], v[b]
        sq, sk = qb.shape[0], kb.shape[0]
        rep = hq // hkv
        qf, kf, vf = (t.float() for t in (qb, kb, vb))
        if q_descale is not None:
            qf = qf * q_descale[b].repeat_interleave(rep)[None, :, None]
            kf, vf = kf * k_descale[b][None, :, None], vf * v_descale[b][None, :, None]
        kf, vf = kf.repeat_interleave(rep, 1), vf.repeat_interleave(rep, 1)
        s = torch.einsum("qhd,khd->hqk", qf, kf) * softmax_scale
        if softcap:
            s = softcap * torch.tanh(s / softcap)
        i = torch.arange(sq)[:, None] + sk - sq
        j = torch.arange(sk)[None, :]
        r = 0 if causal else right
        keep = torch.ones(sq, sk, dtype=torch.bool)
        if left >= 0:
            keep &= j >= i - left
        if r >= 0:
            keep &= j <= i + r
        s = s.masked_fill(~keep, float("-inf"))
        row_lse = torch.logsumexp(s, dim=-1)  # [H, sq]
        total = row_lse if sink is None else torch.logaddexp(row_lse, sink[:, None].float())
        p = torch.exp(s - total[..., None]).nan_to_num(0.0)
        o = torch.einsum("hqk,khd->qhd", p, vf)
        dst = out[int(cu_seqlens_q[b]):int(cu_seqlens_q[b + 1])] if varlen else out[b]
        dst.copy_(o)
        if varlen:
            lse[:, int(cu_seqlens_q[b]):int(cu_seqlens_q[b + 1])] = total
        else:
            lse[b] = total
    return lse


class FakeFA3:
    """The pieces of the FA3 library the adapter touches: the fwd op and get_scheduler_metadata."""

    ARGS = {"q", "k", "v", "out", "cu_seqlens_q", "cu_seqlens_k", "seqused_k", "max_seqlen_q", "max_seqlen_k",
            "page_table", "q_descale", "k_descale", "v_descale", "softmax_scale", "is_causal", "window_size_left",
            "window_size_right", "softcap", "scheduler_metadata", "num_splits", "pack_gqa", "k_new", "q_v"}

    def __init__(self):
        self.metadata_calls = []

    def get_scheduler_metadata(self, batch_size, max_seqlen_q, max_seqlen_k, num_heads_q, num_heads_kv, headdim,
                               cache_seqlens, qkv_dtype=torch.bfloat16, headdim_v=None, cu_seqlens_q=None,
                               cu_seqlens_k_new=None, cache_leftpad=None, page_size=None, max_seqlen_k_new=0,
                               causal=False, window_size=(-1, -1), attention_chunk=0, has_softcap=False,
                               num_splits=0, pack_gqa=None, sm_margin=0):
        """hopper/flash_attn_interface.py's signature."""
        self.metadata_calls.append(((batch_size, max_seqlen_q, max_seqlen_k), dict(num_splits=num_splits)))
        return torch.zeros(8, dtype=torch.int32)

    def fwd(self, q, k, v, out, softmax_scale, is_causal, window_size_left, window_size_right, softcap,
            num_splits, pack_gqa, cu_seqlens_q=None, cu_seqlens_k=None, seqused_k=None, max_seqlen_q=None,
            max_seqlen_k=None, page_table=None, q_descale=None, k_descale=None, v_descale=None,
            scheduler_metadata=None):
        assert num_splits == 0 and out is not None
        assert not (page_table is not None and cu_seqlens_k is not None), "FA3 forbids cu_seqlens_k with a page table"
        for t in (q_descale, k_descale, v_descale):
            assert t is None or t.shape == (len(cu_seqlens_q) - 1 if cu_seqlens_q is not None else q.shape[0], k.shape[-2])
        if cu_seqlens_k is not None and seqused_k is not None:  # seqused_k wins over the cu_seqlens difference
            assert torch.equal(seqused_k, cu_seqlens_k[1:] - cu_seqlens_k[:-1])
        lse = fa_contract(q, k, v, out, cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k, seqused_k=seqused_k,
                          page_table=page_table, softmax_scale=softmax_scale, causal=is_causal,
                          left=window_size_left, right=window_size_right, softcap=softcap,
                          q_descale=q_descale, k_descale=k_descale, v_descale=v_descale)
        return out, lse, None, None


def fake_fa4_module():
    def _flash_attn_fwd(q, k, v, cu_seqlens_q=None, cu_seqlens_k=None, seqused_k=None, max_seqlen_q=None,
                        max_seqlen_k=None, page_table=None, softmax_scale=None, causal=False, softcap=None,
                        window_size_left=None, window_size_right=None, learnable_sink=None, num_splits=1,
                        pack_gqa=None, return_lse=False, out=None, lse=None, q_descale=None, k_descale=None,
                        v_descale=None):
        assert num_splits == 1, "SM90 (the stand-in's arch) must not split"
        assert not (page_table is not None and cu_seqlens_k is not None)
        if causal:
            window_size_right = 0  # _resolve_causal_local_window
        got = fa_contract(q, k, v, out, cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k, seqused_k=seqused_k,
                          page_table=page_table, softmax_scale=softmax_scale, causal=causal,
                          left=-1 if window_size_left is None else window_size_left,
                          right=-1 if window_size_right is None else window_size_right, softcap=softcap or 0.0,
                          sink=learnable_sink)
        if lse is not None:
            assert lse.shape == got.shape and return_lse
            lse.copy_(got)
        return out, lse

    interface = types.ModuleType("flash_attn.cute.interface")
    interface._flash_attn_fwd = _flash_attn_fwd
    return interface


def claimed(cls, suites=("smoke", "edge")):
    out = []
    for name in suites:
        out += [sc for sc in load_suite(name).scenarios if cls.supports(sc, "h200").ok and sc.total_q * max(sc.kv_lens) < 2e6]
    return out


def check(adapter, sc):
    verdict = run_and_judge(adapter, sc)
    assert verdict.status is Status.PASSED, f"{sc.id}: {verdict.reason}"


def claimed_by_full_fa3():
    flags = fa3.build_flags
    fa3.build_flags = lambda: {}
    try:
        return claimed(fa3.Adapter)
    finally:
        fa3.build_flags = flags


@pytest.fixture
def full_fa3(monkeypatch):
    fake = FakeFA3()
    monkeypatch.setattr(fa3, "build_flags", lambda: {})  # a full upstream build
    monkeypatch.setattr(fa3, "load_library", lambda: (fake, fake.fwd, FakeFA3.ARGS))
    return fake


@pytest.mark.parametrize("sc", claimed_by_full_fa3(), ids=lambda s: s.id)
def test_fa3_adapter_honours_the_fa_contract(sc, full_fa3):
    assert fa3.Adapter.supports(sc, "h200").ok
    check(fa3.Adapter(device="cpu"), sc)
    if not fa3.dense_batch(sc):
        (args, kw), = full_fa3.metadata_calls
        assert args[2] == fa3.call_seqlens(sc)[1] and kw["num_splits"] == 0


@pytest.mark.parametrize("sc", claimed(fa4.Adapter), ids=lambda s: s.id)
def test_fa4_adapter_honours_the_fa_contract(sc, monkeypatch):
    package = types.ModuleType("flash_attn")
    cute = types.ModuleType("flash_attn.cute")
    cute.interface = fake_fa4_module()
    package.cute = cute
    monkeypatch.setitem(sys.modules, "flash_attn", package)
    monkeypatch.setitem(sys.modules, "flash_attn.cute", cute)
    monkeypatch.setitem(sys.modules, "flash_attn.cute.interface", cute.interface)
    adapter = fa4.Adapter(device="cpu")
    check(adapter, sc)
    assert adapter.writes_lse == (not sc.sinks)
