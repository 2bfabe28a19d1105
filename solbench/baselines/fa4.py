"""FA4 (FlashAttention-4, CuTe DSL): `flash_attn.cute`'s forward, on SM90 and SM100.

Called through `flash_attn.cute.interface._flash_attn_fwd` (what `flash_attn_varlen_func` calls) so
that `out=inputs.out` and a preallocated LSE buffer can be passed; if the installed build lacks those
arguments, the public `flash_attn_varlen_func` is used and its output copied (said in `label`). Per
call: the kernel launch (Python + TVM-FFI host path), then one small copy of the LSE ([Hq, total_q] ->
[total_q, Hq]). The first call compiles the kernel: bind makes it.

- Windows: window_size=(left, right) with None (not -1) for an unbounded side; causal keeps right None
  (FA4 sets it to 0). Same bottom-right, inclusive convention as solbench.
- Sinks: `learnable_sink` [Hq] fp32, natural-log units, not scaled. FA4's LSE then includes the sink,
  which cannot be removed exactly in fp32, so writes_lse is False for sink scenarios.
- fp8: SM100 only, descales (B, Hkv) fp32 through the private call. SM90: num_splits must stay 1.
- Custom bitmasks would need a CuTe-DSL mask_mod reading aux tensors; its signature differs between
  FA4 releases and it cannot be checked without a GPU, so custom masks are declined.
"""

from __future__ import annotations

import inspect

from solbench.baselines.base import YES, AdapterBase, Support, no, sm_of
from solbench.baselines.layout import (
    batch_views,
    dense_batch,
    descale_per_batch_head,
    lse_batch_view,
)
from solbench.core.scenario import Scenario


def fa4_window(sc: Scenario) -> tuple[bool, int | None, int | None]:
    """solbench mask -> FA4 (causal, window_size_left, window_size_right); None = unbounded."""
    left = None if sc.window_left < 0 else sc.window_left
    if sc.causal:
        return True, left, None
    return False, left, (None if sc.window_right < 0 else sc.window_right)


def tile_n_sm90(sc: Scenario) -> int:
    """FA4's SM90 kBlockN (flash_attn/cute/interface.py, _tile_size_fwd_sm90)."""
    causal, left, right = fa4_window(sc)
    local = left is not None or (right is not None and not causal)
    d, dv = sc.head_dim_qk, sc.head_dim_v
    if d <= 64:
        return 128
    if d <= 96:
        return 128 if (causal or local) else 144
    if d <= 128:
        return 128
    if d <= 192:
        return 96 if local else (128 if dv <= 128 else 112)
    return 64 if local else 80


class Adapter(AdapterBase):
    name = "fa4"
    setup_s = 300  # CuTe DSL compiles each variant on first use: 2.5-16 s seen on the H200
    package = "fa4"
    distributions = ("flash-attn-4",)
    modules = ("flash_attn",)
    label = "FlashAttention-4 CuTe DSL forward (out= via _flash_attn_fwd)"

    @classmethod
    def is_available(cls) -> bool:
        return cls.version() is not None and cls.found_module() is not None

    @classmethod
    def _supports(cls, sc: Scenario, arch: str) -> Support:
        sm = sm_of(arch)
        if sm // 10 not in (9, 10):
            return no(f"FA4 here runs on SM90 and SM100 (arch is sm_{sm})")
        if sc.mask is not None:
            return no("custom bitmask needs a CuTe-DSL mask_mod (not wired)")
        d, dv = sc.head_dim_qk, sc.head_dim_v
        if sm // 10 == 9:
            if sc.dtype == "fp8_e4m3":
                return no("fp8 is SM100-only in FA4")
            if not (8 <= d <= 256 and 8 <= dv <= 256):
                return no(f"head dims {d}/{dv} outside 8..256 on SM90")
            if sc.kv_layout == "paged" and sc.page_size != tile_n_sm90(sc) and (d % 16 or dv % 16):
                return no("non-TMA paged KV needs head dims % 16")
        else:
            if not ((d <= 128 and dv <= 128) or (d, dv) in ((192, 128), (256, 256))):
                return no(f"head dims {d}/{dv}: SM100 has <=128, 192/128 and 256/256")
            if sc.dtype == "fp8_e4m3" and sc.head_dim_qk % 16:
                return no("fp8 needs head dim % 16")
        return YES

    def _bind(self, inputs):
        import torch
        from flash_attn.cute import interface

        sc = inputs.scenario
        major = torch.cuda.get_device_capability(inputs.device)[0] if inputs.device.type == "cuda" else 9
        causal, left, right = fa4_window(sc)
        self.writes_lse = not sc.sinks
        dense = dense_batch(sc)
        kw = dict(q=inputs.q, k=inputs.k, v=inputs.v, softmax_scale=sc.scale, causal=causal,
                  window_size_left=left, window_size_right=right, softcap=float(sc.softcap),
                  learnable_sink=inputs.sinks, num_splits=1 if major == 9 else 0, pack_gqa=None)
        if dense:
            kw["q"], kw["k"], kw["v"], out = batch_views(inputs)
            lse = torch.empty(sc.batch, sc.heads_q, sc.q_lens[0], dtype=torch.float32, device=inputs.device)
            lse_dst = lse_batch_view(inputs)
        else:
            out = inputs.out
            lse = torch.empty(sc.heads_q, sc.total_q, dtype=torch.float32, device=inputs.device)
            lse_dst = inputs.lse
            kw.update(cu_seqlens_q=inputs.cu_seqlens_q, max_seqlen_q=max(sc.q_lens), max_seqlen_k=max(sc.kv_lens))
            if sc.kv_layout == "paged":
                kw.update(seqused_k=inputs.kv_lens, page_table=inputs.page_table)
            else:
                kw["cu_seqlens_k"] = inputs.cu_seqlens_kv
        if inputs.q_descale is not None:
            for name in ("q_descale", "k_descale", "v_descale"):
                kw[name] = descale_per_batch_head(getattr(inputs, name), sc.batch, sc.heads_kv, contiguous=True)
        fwd = interface._flash_attn_fwd
        params = inspect.signature(fwd).parameters
        writes_lse = self.writes_lse
        if {"out", "lse", "return_lse"} <= set(params) and set(kw) <= set(params):
            kw.update(out=out, lse=lse if writes_lse else None, return_lse=writes_lse)

            def call():
                fwd(**kw)
                if writes_lse:
                    lse_dst.copy_(lse.transpose(-1, -2))
        else:
            call = self._public_call(interface, kw, out, lse_dst)
        call()  # the first call JIT-compiles the kernel: keep it out of every timed region
        return call

    def _public_call(self, interface, kw, out, lse_dst):
        """Fallback: the public function, its output copied into inputs.out (a per-call copy)."""
        kw = dict(kw)
        kw["window_size"] = (kw.pop("window_size_left"), kw.pop("window_size_right"))
        for name in ("q_descale", "k_descale", "v_descale"):
            if kw.pop(name, None) is not None:
                raise RuntimeError("installed FA4 takes fp8 descales only through _flash_attn_fwd(out=...)")
        fn = interface.flash_attn_varlen_func if "cu_seqlens_q" in kw else interface.flash_attn_func
        q, k, v = kw.pop("q"), kw.pop("k"), kw.pop("v")
        writes_lse = kw["return_lse"] = self.writes_lse

        def call():
            o, lse = fn(q, k, v, **kw)[:2]
            out.copy_(o)
            if writes_lse:
                lse_dst.copy_(lse.transpose(-1, -2))

        return call
