"""FlashInfer adapters against a CPU stand-in implementing FlashInfer's wrapper contract.

The stand-in follows FlashInfer's documented semantics: qo/kv indptrs, paged metadata (kv_indptr,
kv_indices, last_page_len; NHD pages), bottom-right causal `kv_idx <= qo_idx + kv_len - qo_len`,
window `kv_idx + qo_len + window_left >= kv_len + qo_idx`, a flattened per-request custom mask that
replaces causal/window, softcap, LSE in base 2 with layout [tokens, heads], the sink wrapper's LSE
including the sink. It checks the adapters' plumbing, not the kernels (the GPU tier does that).
"""

import math
import sys
import types

import pytest
from adapter_checks import run_and_judge

torch = pytest.importorskip("torch")
from solbench.baselines import flashinfer as fi  # noqa: E402
from solbench.core.model import Status  # noqa: E402
from solbench.core.scenario import MaskSpec, Scenario  # noqa: E402
from solbench.core.suites import load_suite  # noqa: E402

CALLS = []


def attend(qb, kb, vb, *, causal, window_left, scale, softcap, custom=None, sink=None):
    """One request: q [sq, Hq, D], k/v [sk, Hkv, d] -> (o [sq, Hq, Dv], lse base 2 [sq, Hq])."""
    sq, sk, hq, hkv = qb.shape[0], kb.shape[0], qb.shape[1], kb.shape[1]
    kf = kb.float().repeat_interleave(hq // hkv, 1)
    vf = vb.float().repeat_interleave(hq // hkv, 1)
    s = torch.einsum("qhd,khd->hqk", qb.float(), kf) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    qo = torch.arange(sq)[:, None]
    kv = torch.arange(sk)[None, :]
    if custom is not None:
        keep = custom.view(sq, sk)
    else:
        keep = torch.ones(sq, sk, dtype=torch.bool)
        if causal:
            assert sk >= sq, "FlashInfer's causal needs kv_len >= qo_len"
            keep &= kv <= qo + sk - sq
        if window_left >= 0:
            keep &= kv + sq + window_left >= sk + qo
    s = s.masked_fill(~keep, float("-inf"))
    lse = torch.logsumexp(s, -1)
    if sink is not None:
        lse = torch.logaddexp(lse, sink[:, None].float())
    o = torch.einsum("hqk,khd->qhd", torch.exp(s - lse[..., None]).nan_to_num(0.0), vf)
    return o, (lse / math.log(2.0)).T


class _Wrapper:
    def __init__(self, workspace, kv_layout="NHD", backend="auto", use_tensor_cores=False, **kw):
        assert kv_layout == "NHD"
        self.backend, self.kw = backend, kw
        CALLS.append(type(self).__name__ + ":" + backend)

    def _plan(self, qo_indptr, causal=False, sm_scale=None, window_left=-1, logits_soft_cap=None,
              custom_mask=None, q_data_type=None, kv_data_type=None, head_dim_vo=None):
        self.qo = qo_indptr.tolist()
        self.opts = dict(causal=causal, window_left=window_left, scale=sm_scale, softcap=logits_soft_cap or 0.0)
        self.custom = custom_mask

    def _run(self, q, requests, out, lse, return_lse, sink=None):
        assert q.shape[0] == self.qo[-1], "q rows do not match qo_indptr[-1] / batch_size"
        offset = 0
        for i, (kb, vb) in enumerate(requests):
            a, b = self.qo[i], self.qo[i + 1]
            custom = None
            if self.custom is not None:
                n = (b - a) * kb.shape[0]
                custom, offset = self.custom[offset:offset + n], offset + n
            o, l2 = attend(q[a:b], kb, vb, custom=custom, sink=sink, **self.opts)
            out[a:b] = o
            if return_lse:
                lse[a:b] = l2
        return out


class Ragged(_Wrapper):
    def plan(self, qo_indptr, kv_indptr, hq, hkv, d, **kw):
        self.kv = kv_indptr.tolist()
        self._plan(qo_indptr, **kw)

    def run(self, q, k, v, out=None, lse=None, return_lse=False):
        requests = [(k[a:b], v[a:b]) for a, b in zip(self.kv, self.kv[1:])]
        return self._run(q, requests, out, lse, return_lse)


class Paged(_Wrapper):
    def plan(self, qo_indptr, kv_indptr, kv_indices, last_page_len, hq, hkv, d, page_size, **kw):
        self.pages = (kv_indptr.tolist(), kv_indices.long(), last_page_len.tolist(), page_size)
        self._plan(qo_indptr, **kw)

    def _requests(self, kv):
        indptr, indices, last, size = self.pages
        out = []
        for i in range(len(indptr) - 1):
            ids = indices[indptr[i]:indptr[i + 1]]
            n = (len(ids) - 1) * size + last[i] if len(ids) else 0
            out.append(tuple(t[ids].reshape(-1, *t.shape[2:])[:n] for t in kv))
        return out

    def run(self, q, kv, *args, out=None, lse=None, return_lse=False):
        if self.backend == "fa3":  # prefill_sm90.cuh: no paged SM90 kernel for head_dim_qk != head_dim_vo
            assert kv[0].shape[-1] == kv[1].shape[-1], "cudaErrorNotSupported"
        sink = None
        if args:  # the sink wrapper: run(q, kv, sink, sm_scale)
            sink, scale = args
            assert scale == self.opts["scale"] and not return_lse
        return self._run(q, self._requests(kv), out, lse, return_lse, sink=sink)


class Decode(Paged):
    def plan(self, indptr, indices, last, hq, hkv, d, page_size, window_left=-1, logits_soft_cap=None,
             q_data_type=None, kv_data_type=None, sm_scale=None):
        assert self.backend == "fa2"  # the fa2 adapter's decode pins its backend (auto may pick another)
        self.pages = (indptr.tolist(), indices.long(), last.tolist(), page_size)
        self.qo = list(range(len(indptr)))
        self.opts = dict(causal=False, window_left=window_left, scale=sm_scale, softcap=logits_soft_cap or 0.0)
        self.custom = None


@pytest.fixture
def fake_flashinfer(monkeypatch):
    module = types.ModuleType("flashinfer")
    module.BatchPrefillWithRaggedKVCacheWrapper = Ragged
    module.BatchPrefillWithPagedKVCacheWrapper = Paged
    module.BatchDecodeWithPagedKVCacheWrapper = Decode
    module.BatchAttentionWithAttentionSinkWrapper = type("Sink", (Paged,), {})
    monkeypatch.setitem(sys.modules, "flashinfer", module)
    CALLS.clear()
    return CALLS


EXTRA = [
    Scenario(q_lens=(9, 4), kv_lens=(30, 4), heads_q=4, heads_kv=2, regime="chunked_prefill", sinks=True,
             kv_layout="paged", page_size=8, window_left=5, input_profile="sinks_positive"),
    Scenario(q_lens=(24, 7), kv_lens=(24, 7), heads_q=4, heads_kv=2, mask=MaskSpec(0.4, "iid", 3)),
    Scenario(q_lens=(16, 5), kv_lens=(40, 5), heads_q=4, heads_kv=1, regime="chunked_prefill", kv_layout="paged",
             page_size=4, causal=True, window_left=6, mask=MaskSpec(0.6, "iid", 8)),
    # a decode batch with an empty sequence: the decode wrapper takes one query per request, so prefill
    Scenario(q_lens=(1, 0, 1), kv_lens=(20, 9, 33), heads_q=8, heads_kv=1, regime="decode", kv_layout="paged",
             page_size=16),
    Scenario(q_lens=(1, 1), kv_lens=(20, 33), heads_q=4, heads_kv=2, regime="decode", kv_layout="paged",
             page_size=16, window_left=9),
    # DeepSeek-style 192/128: fa3 claims it contiguous only
    Scenario(q_lens=(9, 4), kv_lens=(30, 4), heads_q=4, heads_kv=2, head_dim_qk=192, head_dim_v=128,
             regime="chunked_prefill", causal=True),
    Scenario(q_lens=(9, 4), kv_lens=(30, 4), heads_q=4, heads_kv=2, head_dim_qk=192, head_dim_v=128,
             regime="chunked_prefill", causal=True, kv_layout="paged", page_size=8),
]
CASES = [sc for name in ("smoke", "edge") for sc in load_suite(name).scenarios if sc.total_q * max(sc.kv_lens) < 2e6] + EXTRA


@pytest.mark.parametrize("cls", [fi.FA2Adapter, fi.FA3Adapter], ids=["fa2", "fa3"])
@pytest.mark.parametrize("sc", CASES, ids=[s.id for s in CASES])
def test_flashinfer_adapter_honours_the_wrapper_contract(cls, sc, fake_flashinfer):
    if not cls.supports(sc, "h200").ok:
        pytest.skip(cls.supports(sc, "h200").reason)
    adapter = cls(device="cpu")
    verdict = run_and_judge(adapter, sc)
    assert verdict.status is Status.PASSED, verdict.reason
    assert adapter.writes_lse == (not sc.sinks)
    wrapper = fake_flashinfer[-1]
    if sc.sinks:
        assert wrapper.startswith("Sink:")
    elif sc.mask is not None:
        assert wrapper == "Ragged:fa2"
    elif cls.backend == "fa2" and sc.kv_layout == "paged" and fi.is_decode(sc):
        assert wrapper.startswith("Decode:")
    else:
        assert wrapper == ("Ragged:" if sc.kv_layout == "contiguous" else "Paged:") + cls.backend


def test_fa3_declines_paged_kv_with_unequal_head_dims():
    paged = Scenario(q_lens=(9,), kv_lens=(30,), heads_q=4, heads_kv=2, head_dim_qk=192, head_dim_v=128, causal=True, kv_layout="paged",
                     page_size=8)
    contiguous = Scenario(q_lens=(9,), kv_lens=(30,), heads_q=4, heads_kv=2, head_dim_qk=192, head_dim_v=128, causal=True)
    assert not fi.FA3Adapter.supports(paged, "h200").ok
    assert "head_dim_qk == head_dim_v" in fi.FA3Adapter.supports(paged, "h200").reason
    assert fi.FA3Adapter.supports(contiguous, "h200").ok


def test_decode_wrapper_only_for_one_query_per_sequence():
    full = Scenario(q_lens=(1, 1), kv_lens=(20, 9), heads_q=8, heads_kv=1, regime="decode", kv_layout="paged", page_size=16)
    gap = Scenario(q_lens=(1, 0, 1), kv_lens=(20, 9, 33), heads_q=8, heads_kv=1, regime="decode", kv_layout="paged", page_size=16)
    assert fi.is_decode(full) and not fi.is_decode(gap)
