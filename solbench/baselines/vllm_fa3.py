"""`vllm-fa3`: FlashAttention-3 as vLLM runs it on Hopper (the `_vllm_fa3_C` extension of the vllm wheel).

The extension is loaded with `torch.ops.load_library` from the installed (or staged) `vllm` package's
folder, so vllm itself is never imported. It registers `torch.ops._vllm_fa3_C.fwd` (upstream FA3's
`mha_fwd` plus `s_aux` and context-parallel arguments) and `get_scheduler_metadata`. The call is the one
`vllm_flash_attn.flash_attn_varlen_func(..., fa_version=3)` makes (vFA `flash_attn_interface.py`):

- always varlen: `cu_seqlens_q` + `max_seqlen_q`; paged KV as `page_table` = vLLM's `block_table` (any
  page size) with `seqused_k` = vLLM's `seq_lens`; contiguous KV as `cu_seqlens_k`, with `seqused_k` too
  so that the precomputed schedule reads the same lengths as the kernel (both given is allowed by
  `mha_fwd`; only the Python wrapper forbids it);
- `max_seqlen_k` = the longest KV (vLLM's `max_seq_len`), window `(left, right)` and `is_causal` as given
  (solbench's window is FA's: bottom-right aligned, inclusive), `softcap`, `num_splits=0` (the split-KV
  heuristic, vLLM's default outside full CUDA graphs), `pack_gqa=None`, `sm_margin=0`;
- `scheduler_metadata` from `get_scheduler_metadata` with the same lengths, heads, dtype, page size,
  causal, window, softcap and num_splits, computed once in bind (vLLM computes it once per step in its
  metadata builder, `aot_schedule`), so no prepare kernel runs inside the call;
- fp8: `q/k/v_descale` as (B, Hkv) stride-0 expanded views of solbench's [1] / [Hkv] descales (vLLM's
  `layer._q_scale.expand((num_seqs, num_kv_heads))`); fp8's output is bf16;
- sinks: `s_aux` [Hq] must be bf16 ("We only support bf16 dtype for S aux"): each call first copies
  inputs.sinks (fp32, refilled every round) into a bf16 buffer made in bind. The LSE then includes the
  sink, so writes_lse is False for sink scenarios;
- `out=inputs.out` (written in place); per call one small copy of the LSE ([Hq, total_q] -> [total_q, Hq]).
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
from pathlib import Path

from solbench.baselines.base import YES, AdapterBase, Support, no, sm_of
from solbench.baselines.fa3 import fa_window
from solbench.baselines.layout import descale_per_batch_head
from solbench.core.scenario import Scenario

EXTENSION_GLOB = "_vllm_fa3_C*.so"
"""The extension's file name in vllm/vllm_flash_attn/ (`_vllm_fa3_C.abi3.so` in vllm 0.26.0)."""

PINNED = {"2.11": "0.26.0"}
"""torch minor -> the vllm release whose wheel is built against it (README: which vllm for which torch)."""

WINDOW_TILE_ROWS = 128
"""Probed on the H200 (benchmarks/vllm_window_probe.py, 2026-12-03;
reports/h200/runner-aa-and-window-probe/window-probe.txt): with a window on both sides,
non-causal, vllm 0.26.0's FA3 attends one key past the right edge on query rows at the start of a 128-row
tile (rows 640, 768, ..., 1152 on every failing row; every other row matches the exact window)."""

MAX_SINK_HEADS = 64
"""mha_fwd: "We only support query heads <= 64 with S aux"."""


@functools.cache
def extension_path() -> Path | None:
    """The `_vllm_fa3_C` shared library of the importable `vllm` package, found without importing vllm."""
    try:
        spec = importlib.util.find_spec("vllm")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found = sorted((Path(folder) / "vllm_flash_attn").glob(EXTENSION_GLOB))
        if found:
            return found[0]
    return None


def staged_version() -> str | None:
    """vllm's version: its distribution metadata, else the `__version__` literal of the staging stub's
    vllm/__init__.py (the GPU machine carries only the extension; read with ast, nothing imported)."""
    try:
        return importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        pass
    path = extension_path()
    if path is None:
        return None
    try:
        tree = ast.parse((path.parent.parent / "__init__.py").read_text())
    except (OSError, SyntaxError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__version__" for t in node.targets):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                return node.value.value
    return None


def load_ops():
    """(fwd, get_scheduler_metadata, and each one's argument names): loads the extension once per process."""
    import torch

    if not hasattr(torch.ops._vllm_fa3_C, "fwd"):
        torch.ops.load_library(str(extension_path()))
    ops = torch.ops._vllm_fa3_C
    names = [tuple(a.name for a in op.default._schema.arguments) for op in (ops.fwd, ops.get_scheduler_metadata)]
    return ops.fwd, ops.get_scheduler_metadata, names[0], names[1]


MAY_BE_ABSENT = {"cp_world_size": 1, "cp_rank": 0, "cp_tot_seqused_k": None, "s_aux": None}
"""Arguments newer than some vllm builds, with the value that means "not used"."""


def by_schema(op: str, names: tuple[str, ...], kw: dict) -> dict:
    """`kw` in the op's own argument order, checked against its schema: an argument the op takes that is
    not in `kw`, or one `kw` needs (not its unused value) that the op lacks, is an error naming it."""
    unknown = [n for n in names if n not in kw]
    if unknown:
        raise RuntimeError(f"installed _vllm_fa3_C.{op} takes argument(s) {unknown} this adapter does not know")
    unused = lambda n: kw[n] is None or (n in MAY_BE_ABSENT and type(kw[n]) is int and kw[n] == MAY_BE_ABSENT[n])
    lacking = [n for n in kw if n not in names and not unused(n)]
    if lacking:
        raise RuntimeError(f"installed _vllm_fa3_C.{op} lacks argument(s) {lacking} this call needs")
    return {n: kw[n] for n in names}


def supported_head_dims(sc: Scenario) -> Support:
    """Head dims the vllm build has kernels for (vFA CMakeLists.txt: 64/96/128/192/256, plus 64/256,
    64/512 and 192/128 for bf16/fp16 and 192/128 only for fp8) and mha_fwd's alignment checks."""
    d, dv = sc.head_dim_qk, sc.head_dim_v
    fp8 = sc.dtype == "fp8_e4m3"
    align = 16 if fp8 else 8
    if d % align or dv % align:
        return no(f"head dims {d}/{dv} must be multiples of {align} for {sc.dtype}")
    if d > 256:
        return no(f"head dim {d} > 256")
    if d != dv:
        hdim192 = 128 < d <= 192 and 96 < dv <= 128
        hdim64 = d <= 64 and dv <= 512
        if not (hdim192 or (hdim64 and not fp8)):
            return no(f"head dims {d}/{dv}: different V dims only as (128,192]/(96,128], or <=64/<=512 "
                      "without fp8 (the fp8 build has 192/128 only)")
    return YES


class Adapter(AdapterBase):
    name = "vllm-fa3"
    package = "vllm"
    distributions = ("vllm",)
    modules = ("vllm",)
    label = "vLLM's FA3 (_vllm_fa3_C.fwd as flash_attn_varlen_func(fa_version=3) calls it), scheduler metadata, num_splits=0"

    @classmethod
    def version(cls) -> str | None:
        return staged_version()

    @classmethod
    def is_available(cls) -> bool:
        return extension_path() is not None

    @classmethod
    def unavailable_reason(cls) -> str:
        if cls.is_available():
            return ""
        pins = ", ".join(f"vllm=={v} for torch {t}" for t, v in PINNED.items())
        return (f"no vllm/vllm_flash_attn/{EXTENSION_GLOB}: pip install \"solbench[vllm]\" ({pins}), or stage "
                "the extension alone on the PYTHONPATH")

    @classmethod
    def _supports(cls, sc: Scenario, arch: str) -> Support:
        sm = sm_of(arch)
        if sm != 90:
            return no(f"vLLM's FA3 kernels are built for sm_90a only (arch is sm_{sm}; vLLM runs FA4 on SM100)")
        if sc.mask is not None:
            return no("no custom bitmask (FA3 has causal / window masks only)")
        dims = supported_head_dims(sc)
        if not dims.ok:
            return dims
        if not sc.causal and fa_window(sc)[1] >= 0:
            return no(f"non-causal windows with a right edge: vllm 0.26.0's FA3 takes one key past it on rows "
                      f"at {WINDOW_TILE_ROWS}-row tile starts (max |err| 0.16 on the H200; vllm_window_probe.py)")
        if sc.sinks and sc.heads_q > MAX_SINK_HEADS:
            return no(f"sinks (s_aux) need <= {MAX_SINK_HEADS} query heads ({sc.heads_q})")
        if sc.sinks and sc.head_dim_qk != sc.head_dim_v:
            return no("sinks (s_aux) need head_dim_qk == head_dim_v")
        if sc.total_kv == 0:
            return no("no keys at all: FA3 fills LSE with +inf")
        return YES

    def _bind(self, inputs):
        import torch

        sc = inputs.scenario
        fwd, get_metadata, names, metadata_names = load_ops()
        self.writes_lse = not sc.sinks
        left, right = fa_window(sc)
        paged = sc.kv_layout == "paged"
        max_q, max_k = max(sc.q_lens), max(sc.kv_lens)
        metadata = get_metadata(**by_schema("get_scheduler_metadata", metadata_names, dict(
            batch_size=sc.batch, max_seqlen_q=max_q, max_seqlen_k=max_k, num_heads=sc.heads_q,
            num_heads_k=sc.heads_kv, headdim=sc.head_dim_qk, headdim_v=sc.head_dim_v, qkv_dtype=inputs.q.dtype,
            seqused_k=inputs.kv_lens, cu_seqlens_q=inputs.cu_seqlens_q, cu_seqlens_k=None, cu_seqlens_k_new=None,
            seqused_q=None, leftpad_k=None, page_size=sc.page_size if paged else None, max_seqlen_k_new=0,
            is_causal=sc.causal, window_size_left=left, window_size_right=right, has_softcap=sc.softcap > 0,
            num_splits=0, pack_gqa=None, sm_margin=0)))
        descales = {name: None for name in ("q_descale", "k_descale", "v_descale")}
        if inputs.q_descale is not None:
            descales = {name: descale_per_batch_head(getattr(inputs, name), sc.batch, sc.heads_kv)
                        for name in descales}
        s_aux = torch.empty(sc.heads_q, dtype=torch.bfloat16, device=inputs.device) if sc.sinks else None
        kw = dict(q=inputs.q, k=inputs.k, v=inputs.v, k_new=None, v_new=None, q_v=None, out=inputs.out,
                  cu_seqlens_q=inputs.cu_seqlens_q, cu_seqlens_k=None if paged else inputs.cu_seqlens_kv,
                  cu_seqlens_k_new=None, seqused_q=None, seqused_k=inputs.kv_lens, max_seqlen_q=max_q,
                  max_seqlen_k=max_k, page_table=inputs.page_table if paged else None, kv_batch_idx=None,
                  leftpad_k=None, rotary_cos=None, rotary_sin=None, seqlens_rotary=None, **descales,
                  softmax_scale=sc.scale, is_causal=sc.causal, window_size_left=left, window_size_right=right,
                  softcap=float(sc.softcap), is_rotary_interleaved=True, scheduler_metadata=metadata,
                  num_splits=0, pack_gqa=None, sm_margin=0, s_aux=s_aux, cp_world_size=1, cp_rank=0,
                  cp_tot_seqused_k=None)
        kw = by_schema("fwd", names, kw)
        sinks, lse_out, writes_lse = inputs.sinks, inputs.lse, self.writes_lse

        def call():
            if s_aux is not None:
                s_aux.copy_(sinks)
            lse = fwd(**kw)[1]
            if writes_lse:
                lse_out.copy_(lse.transpose(0, 1))

        return call
