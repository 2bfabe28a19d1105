"""FlashInfer with its backend named: `flashinfer-fa2` and `flashinfer-fa3` (SM90).

Which wrapper (all planned in bind; `plan` copies indptrs to the host, synchronises and JIT-compiles):
- contiguous KV: BatchPrefillWithRaggedKVCacheWrapper (qo_indptr = cu_seqlens_q, kv_indptr = cu_seqlens_kv);
- paged KV: BatchPrefillWithPagedKVCacheWrapper (kv_indptr / kv_indices / last_page_len from the page
  table); decode batches on fa2 use BatchDecodeWithPagedKVCacheWrapper (tensor cores when Hq/Hkv > 4),
  as vLLM does;
- sinks: BatchAttentionWithAttentionSinkWrapper (paged only; `run(sinks=)` is not read by fa2/fa3);
- custom bitmask (fa2 only): solbench.baselines.flashinfer_mask (FlashInfer's mask is per sequence,
  solbench's per head, so each (sequence, head) becomes one batch entry).
Conventions: causal is bottom-right; window_left is FA's left (a model's window w -> w - 1).
Per call: `run(..., out=inputs.out, lse=inputs.lse)` then `inputs.lse *= ln 2`: FlashInfer's LSE is
base 2 ([tokens, heads], solbench's layout). With sinks its LSE includes the sink: writes_lse False.
"""

from __future__ import annotations

from solbench.baselines.base import (
    LN2,
    YES,
    AdapterBase,
    Support,
    has_empty_rows,
    no,
    sm_of,
)
from solbench.baselines.layout import flashinfer_pages
from solbench.core.scenario import Scenario

WORKSPACE_BYTES = 256 << 20


def fi_window_left(sc: Scenario) -> int:
    """solbench window_left -> FlashInfer window_left (inclusive keys left of the diagonal; -1 = none)."""
    return sc.window_left


def is_decode(sc: Scenario) -> bool:
    """Every sequence has exactly one query: BatchDecodeWithPagedKVCacheWrapper reads q as [batch, Hq, D],
    one row per request, so a decode batch with an empty sequence (q_len 0) goes to the prefill wrapper."""
    return sc.regime in ("decode", "split_kv_decode") and all(q == 1 for q in sc.q_lens)


def route(sc: Scenario, backend: str) -> str:
    """Which FlashInfer path bind takes for sc: 'mask' (flashinfer_mask, fa2 ragged), 'ragged', 'sink'
    (paged attention-sink wrapper), 'decode' (fa2 decode wrapper) or 'paged' (paged prefill wrapper).
    benchmarks/prebuild_flashinfer.py builds the modules from the same answer."""
    if sc.mask is not None:
        return "mask"
    if sc.kv_layout == "contiguous":
        return "ragged"
    if sc.sinks:
        return "sink"
    return "decode" if backend == "fa2" and is_decode(sc) else "paged"


def decode_uses_tensor_cores(sc: Scenario) -> bool:
    """The fa2 decode wrapper runs the prefill kernel on tensor cores for large GQA groups."""
    return sc.group_size > 4


class FlashInferAdapter(AdapterBase):
    setup_s = 600  # JIT-compiles each kernel variant with nvcc: ~20 s (fa2) to ~70 s (fa3 backend) on an H200 host
    package = "flashinfer"
    distributions = ("flashinfer-python",)
    modules = ("flashinfer",)
    backend = ""

    def __init__(self, device: str = "cuda", arch: str | None = None):
        super().__init__(device, arch)
        self._workspace = None

    @classmethod
    def _supports(cls, sc: Scenario, arch: str) -> Support:
        sm = sm_of(arch)
        if cls.backend == "fa3" and sm != 90:
            return no(f"FlashInfer's fa3 backend is SM90-only (sm_{sm})")
        if sm < 80:
            return no(f"needs SM80+ (sm_{sm})")
        if sc.dtype == "fp8_e4m3":
            return no("fp8 with solbench's descales not wired (FlashInfer folds per-tensor scales into sm_scale)")
        if sc.causal and any(q > kv for q, kv in zip(sc.q_lens, sc.kv_lens)):
            return no("causal needs kv_len >= q_len per sequence")
        if has_empty_rows(sc):
            return no("rows with no visible key")
        if not sc.causal and sc.window_right >= 0:
            return no("no right window (window_left only)")
        d, dv = sc.head_dim_qk, sc.head_dim_v
        if cls.backend == "fa3" and not ((d == dv and d in (64, 128, 256)) or (d, dv) == (192, 128)):
            return no(f"fa3 backend head dims are 64/128/256 or 192/128 ({d}/{dv})")
        if cls.backend == "fa3" and sc.kv_layout == "paged" and d != dv:
            # prefill_sm90.cuh: the paged SM90 dispatch returns cudaErrorNotSupported for QK != VO, and
            # batch_prefill_sm90.cu requires K and V to share their token stride
            return no(f"fa3 backend's paged kernel needs head_dim_qk == head_dim_v ({d}/{dv})")
        if cls.backend == "fa2" and not (d == dv and d in (64, 96, 128, 256)):
            return no(f"fa2 backend head dims used here are 64/96/128/256 ({d}/{dv})")
        if sc.sinks:
            if sc.kv_layout != "paged":
                return no("sink wrapper takes paged KV only")
            if sc.softcap or sc.mask is not None:
                return no("sink variant has no softcap or custom mask")
        if sc.mask is not None and cls.backend != "fa2":
            return no("custom masks are fa2-only")
        return YES

    def _ws(self):
        import torch

        if self._workspace is None:
            self._workspace = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device=self.device)
        return self._workspace

    def _bind(self, inputs):
        import flashinfer

        sc = inputs.scenario
        path = route(sc, self.backend)
        if path == "mask":
            from solbench.baselines.flashinfer_mask import bind_per_head_mask

            self.writes_lse = True
            return bind_per_head_mask(self._ws(), self.backend, inputs)
        self.writes_lse = not sc.sinks
        common = dict(causal=sc.causal, sm_scale=sc.scale, window_left=fi_window_left(sc),
                      logits_soft_cap=float(sc.softcap) or None, q_data_type=inputs.q.dtype,
                      kv_data_type=inputs.k.dtype)
        run_kw = dict(out=inputs.out)
        if self.writes_lse:
            run_kw.update(lse=inputs.lse, return_lse=True)
        if path == "ragged":
            w = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(self._ws(), "NHD", backend=self.backend)
            w.plan(inputs.cu_seqlens_q, inputs.cu_seqlens_kv, sc.heads_q, sc.heads_kv, sc.head_dim_qk,
                   head_dim_vo=sc.head_dim_v, **common)
            args = (inputs.q, inputs.k, inputs.v)
        else:
            indptr, indices, last = flashinfer_pages(inputs)
            kv = (inputs.k, inputs.v)
            if path == "sink":
                w = flashinfer.BatchAttentionWithAttentionSinkWrapper(
                    self._ws(), "NHD", backend=self.backend, q_data_type=inputs.q.dtype,
                    kv_data_type=inputs.k.dtype, head_dim_qk=sc.head_dim_qk, head_dim_vo=sc.head_dim_v,
                    window_left=fi_window_left(sc))
                w.plan(inputs.cu_seqlens_q, indptr, indices, last, sc.heads_q, sc.heads_kv, sc.head_dim_qk,
                       sc.page_size, head_dim_vo=sc.head_dim_v, **common)
                args = (inputs.q, kv, inputs.sinks, sc.scale)
            elif path == "decode":
                w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(self._ws(), "NHD", backend="fa2",
                                                                  use_tensor_cores=decode_uses_tensor_cores(sc))
                w.plan(indptr, indices, last, sc.heads_q, sc.heads_kv, sc.head_dim_qk, sc.page_size,
                       window_left=fi_window_left(sc), logits_soft_cap=float(sc.softcap) or None,
                       q_data_type=inputs.q.dtype, kv_data_type=inputs.k.dtype, sm_scale=sc.scale)
                args = (inputs.q, kv)
            else:
                w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(self._ws(), "NHD", backend=self.backend)
                w.plan(inputs.cu_seqlens_q, indptr, indices, last, sc.heads_q, sc.heads_kv, sc.head_dim_qk,
                       sc.page_size, head_dim_vo=sc.head_dim_v, **common)
                args = (inputs.q, kv)
        lse = inputs.lse
        writes_lse = self.writes_lse

        def call():
            w.run(*args, **run_kw)
            if writes_lse:
                lse.mul_(LN2)  # FlashInfer's LSE is log2

        self._keep = w
        return call


class FA2Adapter(FlashInferAdapter):
    name = "flashinfer-fa2"
    backend = "fa2"
    label = "FlashInfer ragged/paged prefill and decode wrappers, backend fa2"


class FA3Adapter(FlashInferAdapter):
    name = "flashinfer-fa3"
    backend = "fa3"
    label = "FlashInfer ragged/paged prefill wrappers, backend fa3 (SM90)"
