"""`fa3-fwd`: FlashAttention-3 (Hopper) from upstream `flash_attn_interface` when installed, else `fa3_fwd`.

Runs recorded before `vllm-fa3` (solbench.baselines.vllm_fa3, the FA3 of reports today) name this adapter
`fa3` (solbench.baselines.RENAMED).

The call is the library's C++ op (`torch.ops.flash_attn_3.fwd` / `torch.ops.fa3_fwd.fwd`, the op behind
`flash_attn_varlen_func` / `flash_attn_with_kvcache`, as vLLM calls it) with `out=inputs.out`, so no
output copy and no autograd/custom_op wrapper on the host path. Per call: the op, then one small copy
of its LSE ([Hq, total_q] or [B, Hq, S]) into inputs.lse ([total_q, Hq]).

- Dense uniform contiguous batches use the batch path (q [B, S, H, D]), as `flash_attn_func` does;
  everything else is varlen (cu_seqlens_q, cu_seqlens_k or seqused_k + page_table).
- num_splits=0: FA3's split-KV heuristic (vLLM passes 0; `flash_attn_varlen_func` defaults to 1).
- Varlen calls take scheduler metadata from `get_scheduler_metadata`, computed in bind (vLLM does it once
  per step), so the in-call prepare kernel is skipped.
- Window: solbench window_left / window_right -> window_size=(left, right), causal passed as is (FA's
  window is bottom-right aligned and inclusive, like solbench's). fp8 descales [1] / [Hkv] -> (B, Hkv).
- fa3-fwd 0.0.3 is built without fp16, local attention and the non-TMA paged path: `supports` reads
  the installed build's `CONFIG` and replays FA3's tile choice to say which paged scenarios run.
"""

from __future__ import annotations

import functools
import importlib

from solbench.baselines.base import YES, AdapterBase, Support, no, sm_of
from solbench.baselines.layout import (
    batch_views,
    dense_batch,
    descale_per_batch_head,
    lse_batch_view,
)
from solbench.core.scenario import Scenario

USE_SCHEDULER_METADATA = True

# fa3-fwd 0.0.3's fa3_fwd_config.CONFIG["build_flags"] (field/baselines.md §2.3), used when no FA3 is
# installed here, so `solbench baselines` can still say what the pinned extra would run.
ASSUMED_FLAGS = {"FLASHATTENTION_DISABLE_FP16": True, "FLASHATTENTION_DISABLE_LOCAL": True,
                 "FLASHATTENTION_DISABLE_PAGEDKV": True, "FLASHATTENTION_DISABLE_BACKWARD": True}

VARIANTS = (  # (interface module, config module, ops namespace), preferred first
    ("flash_attn_interface", "flash_attn_config", "flash_attn_3"),
    ("fa3_fwd_interface", "fa3_fwd_config", "fa3_fwd"),
)


@functools.cache
def variant() -> tuple[str, str, str] | None:
    for v in VARIANTS:
        if importlib.util.find_spec(v[0]) is not None:
            return v
    return None


@functools.cache
def build_flags() -> dict:
    """The installed build's flags (a plain config module, no CUDA import), else ASSUMED_FLAGS."""
    v = variant()
    if v is not None:
        try:
            config = importlib.import_module(v[1]).CONFIG
            return dict(config.get("build_flags", config))
        except Exception:  # a build without its config file: fall back to the pinned package's flags
            pass
    return dict(ASSUMED_FLAGS)


def fa_window(sc: Scenario) -> tuple[int, int]:
    """solbench (window_left, window_right) -> FA's window_size=(left, right); -1 = unbounded.

    Both count keys from the bottom-right aligned diagonal, inclusive, so the values carry over; a
    causal scenario has right = 0. A model's sliding window w is window_left = w - 1 -> (w - 1, 0).
    """
    return sc.window_left, (0 if sc.causal else sc.window_right)


def round_up_headdim(d: int) -> int:
    for r in (64, 96, 128, 192, 256):
        if d <= r:
            return r
    return 512


def tile_size_sm90(d: int, dv: int, is_causal: bool, is_local: bool, fp8: bool, softcap: bool,
                   paged_non_tma: bool = False) -> tuple[int, int]:
    """(kBlockM, kBlockN) of FA3's forward kernel on SM90 (hopper/tile_size.h, tile_size_fwd_sm90)."""
    if not fp8:
        if d <= 64:
            if dv == 512:
                return 64, 64
            if dv == 256:
                return 128, 96
            return 192, 128 if (is_causal or is_local or paged_non_tma) else 192
        if d <= 96:
            return 192, 128 if (is_local or paged_non_tma) else 144
        if d <= 128:
            return 128, 128 if (is_causal or is_local or paged_non_tma) else 176
        if d <= 192:
            return 128, 96 if (paged_non_tma or is_local) else (128 if dv <= 128 else 112)
        return 128, 64 if is_local else 80
    if d <= 64:
        return 192, 160
    if d <= 96:
        return 192, 128
    if d <= 128:
        return 128, 160 if paged_non_tma else (192 if softcap and is_local else 224)
    if d <= 192:
        return 128, 128 if ((paged_non_tma or softcap) and is_local) else 160
    return 128, 64 if is_local else 128


def call_seqlens(sc: Scenario) -> tuple[int, int]:
    """(seqlen_q, seqlen_k) as FA3's mha_fwd sees them for the call solbench makes."""
    if dense_batch(sc):
        return sc.q_lens[0], sc.kv_lens[0]
    if sc.kv_layout == "paged":
        return max(sc.q_lens), max(1, max(sc.pages_per_seq())) * sc.page_size
    return max(sc.q_lens), max(sc.kv_lens)


def effective_mask(sc: Scenario) -> tuple[bool, bool, int, int]:
    """(is_causal, is_local, left, right) after mha_fwd's normalisation (hopper/flash_api.cpp):
    windows reaching past the sequence are dropped, causal decode rows are non-causal."""
    left, right = fa_window(sc)
    seqlen_q, seqlen_k = call_seqlens(sc)
    causal = sc.causal
    if left >= seqlen_k - 1:
        left = -1
    if right >= seqlen_q - 1:
        right = -1
    if seqlen_q == 1 and left == -1 and right == -1:
        if sc.head_dim_qk <= 64 or sc.head_dim_qk > 128 or sc.kv_layout != "paged":
            causal = False
    if causal:
        right = 0
    is_causal = left < 0 and right == 0
    is_local = (left >= 0 or right >= 0) and not is_causal
    return is_causal, is_local, left, right


def paged_tma(sc: Scenario) -> tuple[bool, int, int]:
    """(uses the TMA paged path, kBlockM, kBlockN): page_size % kBlockN == 0 and seqlen_q * G > kBlockM."""
    is_causal, is_local, _, _ = effective_mask(sc)
    d = round_up_headdim(sc.head_dim_qk)
    dv = d if sc.head_dim_v == sc.head_dim_qk else round_up_headdim(sc.head_dim_v)
    m, n = tile_size_sm90(d, dv, is_causal, is_local, sc.dtype == "fp8_e4m3", sc.softcap > 0)
    seqlen_q, _ = call_seqlens(sc)
    return sc.page_size % n == 0 and seqlen_q * sc.group_size > m, m, n


def load_library():
    """(interface module, the fwd op, its argument names); importing the interface registers the op."""
    import torch

    interface, _, namespace = variant()
    module = importlib.import_module(interface)
    op = getattr(torch.ops, namespace).fwd
    return module, op, {a.name for a in op.default._schema.arguments}


def scheduler_metadata(module, sc: Scenario, inputs, window):
    """FA3's precomputed varlen scheduling for exactly the call bind makes (same seqlen_k as mha_fwd sees,
    same causal/window/softcap/num_splits), or None where the installed interface lacks it."""
    import inspect

    fn = getattr(module, "get_scheduler_metadata", None)
    if fn is None:
        return None
    kw = dict(qkv_dtype=inputs.q.dtype, headdim_v=sc.head_dim_v, cu_seqlens_q=inputs.cu_seqlens_q,
              page_size=sc.page_size if sc.kv_layout == "paged" else None, causal=sc.causal,
              window_size=window, has_softcap=sc.softcap > 0, num_splits=0)
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
    if not set(kw) <= set(params):
        return None
    return fn(sc.batch, max(sc.q_lens), call_seqlens(sc)[1], sc.heads_q, sc.heads_kv, sc.head_dim_qk,
              inputs.kv_lens, **kw)


class Adapter(AdapterBase):
    name = "fa3-fwd"
    package = "fa3"
    distributions = ("flash_attn_3", "flash-attn-3", "fa3-fwd")
    modules = ("flash_attn_interface", "fa3_fwd_interface")
    label = "FlashAttention-3 fwd op (varlen / paged / batch), num_splits=0"

    @classmethod
    def _supports(cls, sc: Scenario, arch: str) -> Support:
        flags = build_flags()
        off = lambda flag: bool(flags.get(f"FLASHATTENTION_DISABLE_{flag}", False))
        sm = sm_of(arch)
        if sm != 90:
            return no(f"FA3 kernels target sm_90a (arch is sm_{sm})")
        if sc.mask is not None:
            return no("no custom masks")
        if sc.sinks:
            return no("no attention sinks (s_aux exists only in vLLM's FA3 fork)")
        if sc.dtype == "fp16" and off("FP16"):
            return no("build has no fp16 (FLASHATTENTION_DISABLE_FP16)")
        if sc.dtype == "fp8_e4m3" and (off("FP8") or sc.head_dim_qk % 16 or sc.head_dim_v % 16):
            return no("fp8 needs head dims % 16 and a build with fp8")
        d, dv = sc.head_dim_qk, sc.head_dim_v
        if d > 256 or (dv != d and not ((128 < d <= 192 and 96 < dv <= 128) or (d <= 64 and dv <= 512))):
            return no(f"head dims {d}/{dv} not in FA3's set (<= 256; 192/128 or 64/<=512 if different)")
        if off(f"HDIM{round_up_headdim(d)}") or (dv != d and off("HDIMDIFF192" if d > 64 else "HDIMDIFF64")):
            return no(f"build has no head dim {d}/{dv} kernels")
        if sc.softcap and off("SOFTCAP"):
            return no("build has no softcap (FLASHATTENTION_DISABLE_SOFTCAP)")
        if effective_mask(sc)[1] and off("LOCAL"):
            return no("build has no local attention: sliding windows (FLASHATTENTION_DISABLE_LOCAL)")
        if not sc.is_uniform and off("VARLEN"):
            return no("build has no varlen (FLASHATTENTION_DISABLE_VARLEN)")
        if sc.kv_layout == "paged" and off("PAGEDKV"):
            tma, m, n = paged_tma(sc)
            if not tma:
                return no(f"build has only the TMA paged path: page {sc.page_size} % kBlockN {n} != 0 "
                          f"or max_q*G <= kBlockM {m} (FLASHATTENTION_DISABLE_PAGEDKV)")
        if sc.total_kv == 0:
            return no("no keys at all: FA3 fills LSE with +inf")
        return YES

    def _bind(self, inputs):
        sc = inputs.scenario
        module, op, known = load_library()
        left, right = fa_window(sc)
        kw = dict(q=inputs.q, k=inputs.k, v=inputs.v, out=inputs.out, softmax_scale=sc.scale,
                  is_causal=sc.causal, window_size_left=left, window_size_right=right,
                  softcap=float(sc.softcap), num_splits=0, pack_gqa=None)
        dense = dense_batch(sc)
        if dense:
            kw["q"], kw["k"], kw["v"], kw["out"] = batch_views(inputs)
        else:
            kw.update(cu_seqlens_q=inputs.cu_seqlens_q, max_seqlen_q=max(sc.q_lens), seqused_k=inputs.kv_lens)
            if sc.kv_layout == "paged":
                kw["page_table"] = inputs.page_table
            else:
                kw.update(cu_seqlens_k=inputs.cu_seqlens_kv, max_seqlen_k=max(sc.kv_lens))
        if inputs.q_descale is not None:
            for name in ("q_descale", "k_descale", "v_descale"):
                kw[name] = descale_per_batch_head(getattr(inputs, name), sc.batch, sc.heads_kv)
        if not dense and USE_SCHEDULER_METADATA:
            metadata = scheduler_metadata(module, sc, inputs, (left, right))
            if metadata is not None:
                kw["scheduler_metadata"] = metadata
        missing = sorted(set(kw) - known)
        if missing:
            raise RuntimeError(f"installed FA3 fwd op has no argument(s) {missing}")
        lse_out = lse_batch_view(inputs) if dense else inputs.lse

        def call():
            lse = op(**kw)[1]
            lse_out.copy_(lse.transpose(-1, -2))

        return call
