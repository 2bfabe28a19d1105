"""`flex`: torch FlexAttention, compiled, over the whole ragged batch in one call.

All sequences are packed as batch 1 (q [1, Hq, total_q, D], K/V [1, Hkv, kv_tokens, D] views; paged
KV is the page pool flattened to tokens) and one `mask_mod` says which (query, key) pairs meet: same
sequence (paged: the key's page belongs to it and the slot is below its kv_len), inside the query's
[lo, hi] key range (bottom-right causal and window folded into per-token tensors), custom bit. The
BlockMask is built in bind (`flex_arguments`: `create_block_mask(_compile=True)`), so fully masked tiles are skipped.
Softcap is a `score_mod`. Sinks: flex's LSE (natural log, excluding the sink) gives the exact rewrite
out * sigmoid(lse - sink). GQA: enable_gqa.

The compiled function also writes inputs.out and inputs.lse (flex has no out=): that epilogue (sink
factor, layout change) is fused by inductor and is part of the timed call. It is compiled with dynamic
shapes, and the mask_mod reads every per-scenario number from tensors, so a new shape reuses the
compiled kernels; only a new feature mix (custom bits, softcap, sinks, GQA, head dim, dtype) compiles
again. The dynamo recompile limit is raised so a long suite never falls back to eager. A feature mix
inductor finds no kernel config for is compiled again with FALLBACK_OPTIONS (logged in the worker log).
"""

from __future__ import annotations

from types import SimpleNamespace

from solbench.baselines.base import YES, AdapterBase, Support, no, sm_of
from solbench.core.scenario import Scenario

PAD = 256  # index tensors are padded so a mask_mod evaluated on a partial tail block stays in bounds
COMPILE_OPTIONS = {"fullgraph": True, "dynamic": True}
"""Dynamic shapes: a new scenario shape must not compile again (2 min per shape on the H200 when static)."""
_COMPILED = {}
FALLBACK_OPTIONS = {"FORCE_USE_FLEX_ATTENTION": True, "BLOCK_M": 64, "BLOCK_N": 64, "num_stages": 2}
"""kernel_options for a feature mix inductor finds no kernel config for with its defaults (H200: a custom-bit
mask's tile loads overflow shared memory at 128x128, 3 stages; flex_decoding has no BLOCK_M for 64 decode
queries x 8 grouped heads): the main kernel, smaller tiles, fewer stages."""
NO_CONFIG = ("No valid triton configs", "NoValidChoicesError", "out of resource")


def compiled_forward():
    """`_forward` under torch.compile, built once per process (tests on CPU replace this with eager)."""
    import torch

    if "fn" not in _COMPILED:
        _COMPILED["fn"] = torch.compile(_forward, **COMPILE_OPTIONS)
    return _COMPILED["fn"]


def mask_tensors(inputs) -> SimpleNamespace:
    """What the mask_mod reads, on the inputs' device (padded by PAD): per query token its sequence
    and the range [lo, hi] of logical keys it may see (bottom-right causal and window); per KV token
    its owner sequence (-1: unused page slot), logical key index and the owner's kv_len; the custom
    bits [Hq, total_q + PAD, row_words] if any."""
    import torch

    from solbench.baselines.layout import physical_kv_owner

    sc = inputs.scenario
    dev = inputs.device
    q_lens = torch.tensor(sc.q_lens, dtype=torch.int64, device=dev)
    kv_lens = torch.tensor(sc.kv_lens, dtype=torch.int64, device=dev)
    doc = torch.repeat_interleave(torch.arange(sc.batch, device=dev), q_lens)
    starts = inputs.cu_seqlens_q.long()[:-1]
    qpos = torch.arange(sc.total_q, device=dev) - starts[doc] + (kv_lens - q_lens)[doc]
    owner, logical = physical_kv_owner(inputs)
    limit = torch.where(owner >= 0, kv_lens[owner.clamp(min=0)], torch.zeros_like(owner))
    if sc.causal:
        hi = qpos
    elif sc.window_right >= 0:
        hi = qpos + sc.window_right
    else:
        hi = torch.full_like(qpos, max(sc.kv_lens, default=0))  # above every logical key index
    lo = qpos - sc.window_left if sc.window_left >= 0 else torch.zeros_like(qpos)

    def pad(t, value):
        return torch.cat([t, torch.full((PAD,), value, dtype=t.dtype, device=dev)])

    bits = None
    if inputs.mask_bits is not None:
        bits = torch.nn.functional.pad(inputs.mask_bits, (0, 0, 0, PAD))
    return SimpleNamespace(doc=pad(doc, -2), lo=pad(lo, 0), hi=pad(hi, 0), owner=pad(owner, -1),
                           logical=pad(logical, 0), limit=pad(limit, 0), bits=bits)


def make_mask_mod(t: SimpleNamespace):
    """mask_mod(b, h, q_idx, kv_idx) -> bool for the packed layout; pure torch, also evaluable on CPU.
    Nothing scenario-specific is a Python constant here (a compiled kernel would be specialised on it)."""

    def mask_mod(b, h, q_idx, kv_idx):
        j = t.logical[kv_idx]
        ok = (t.owner[kv_idx] == t.doc[q_idx]) & (j < t.limit[kv_idx]) & (j >= t.lo[q_idx]) & (j <= t.hi[q_idx])
        if t.bits is not None:
            word = t.bits[h, q_idx, (j >> 5).clamp(max=t.bits.shape[-1] - 1)]
            ok = ok & (((word >> (j & 31)) & 1) == 1)
        return ok

    return mask_mod


def make_score_mod(sc: Scenario, device):
    """Softcap as a score_mod reading the cap from a per-head tensor: a Python float here would become a
    symbolic float under dynamic shapes, which inductor cannot lower inside flex ("unbacked_bindings"
    on the H200 for every softcap scenario), and a baked-in constant would compile again per cap."""
    if not sc.softcap:
        return None
    import torch

    caps = torch.full((sc.heads_q,), float(sc.softcap), dtype=torch.float32, device=device)

    def softcap(score, b, h, q_idx, kv_idx):
        return caps[h] * torch.tanh(score / caps[h])

    return softcap


def flex_arguments(inputs) -> tuple:
    """(q, k, v, block_mask, score_mod, scale, enable_gqa) for flex_attention over the packed batch:
    batch 1, heads first, paged KV as its flat token pool. The block mask is compiled on CUDA."""
    from torch.nn.attention.flex_attention import create_block_mask

    sc = inputs.scenario
    q = inputs.q.transpose(0, 1).unsqueeze(0)
    k = inputs.k.reshape(-1, sc.heads_kv, sc.head_dim_qk).transpose(0, 1).unsqueeze(0)
    v = inputs.v.reshape(-1, sc.heads_kv, sc.head_dim_v).transpose(0, 1).unsqueeze(0)
    # The mask_mod's closure keeps its tensors alive as long as the block mask.
    block_mask = create_block_mask(make_mask_mod(mask_tensors(inputs)), 1, sc.heads_q if sc.mask is not None else None,
                                   sc.total_q, k.shape[2], device=inputs.device, _compile=inputs.device.type == "cuda")
    return q, k, v, block_mask, make_score_mod(sc, inputs.device), sc.scale, sc.heads_q != sc.heads_kv


def _forward(q, k, v, block_mask, score_mod, scale, enable_gqa, sinks, out, lse_out, kernel_options=None):
    import torch
    from torch.nn.attention import flex_attention as fa

    if hasattr(fa, "AuxRequest"):
        o, aux = fa.flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=scale,
                                   enable_gqa=enable_gqa, kernel_options=kernel_options, return_aux=fa.AuxRequest(lse=True))
        lse = aux.lse
    else:
        o, lse = fa.flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=scale,
                                   enable_gqa=enable_gqa, kernel_options=kernel_options, return_lse=True)
    o, lse = o[0], lse[0]  # [Hq, T, Dv], [Hq, T]
    if sinks is not None:
        o = o.float() * torch.sigmoid(lse - sinks[:, None])[..., None]
    out.copy_(o.transpose(0, 1))
    lse_out.copy_(lse.transpose(0, 1))


class Adapter(AdapterBase):
    name = "flex"
    setup_s = 600  # the first compile in a process: 250 s on the H200 with a cold inductor cache
    package = "torch"
    distributions = ("torch",)
    modules = ("torch",)
    label = "torch FlexAttention, torch.compile'd, packed batch + BlockMask"
    # Opt-in: the first compile in a process took 250 s on the H200 (cold cache), each new feature mix
    # 4-23 s after it; a user's every-run loop should not pay that unasked.
    in_default_set = False

    def __init__(self, device: str = "cuda", arch: str | None = None):
        super().__init__(device, arch)
        import torch._dynamo

        self._fallback_mixes = set()

        config = torch._dynamo.config
        for key in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit", "accumulated_cache_size_limit"):
            if hasattr(config, key):
                setattr(config, key, max(getattr(config, key), 4096))

    @classmethod
    def _supports(cls, sc: Scenario, arch: str) -> Support:
        if sm_of(arch) < 80:
            return no(f"needs SM80+ (sm_{sm_of(arch)})")
        if sc.dtype == "fp8_e4m3":
            return no("no fp8 in FlexAttention")
        if sc.head_dim_qk > 256 or sc.head_dim_v > 256:
            return no("head dim > 256")
        if sc.total_kv == 0:
            return no("no keys at all")
        return YES

    def _bind(self, inputs):
        import time

        started = time.perf_counter()
        sc = inputs.scenario
        self.writes_lse = True
        fn = compiled_forward()
        args = flex_arguments(inputs) + (inputs.sinks, inputs.out, inputs.lse)
        # What inductor compiles one kernel for: a mix whose default compile failed goes straight to the fallback.
        mix = (sc.dtype, sc.head_dim_qk, sc.head_dim_v, sc.heads_q, sc.heads_kv, sc.mask is not None,
               bool(sc.softcap), inputs.sinks is not None, sc.total_q < 128)
        masked = time.perf_counter()
        options = FALLBACK_OPTIONS if mix in self._fallback_mixes else None
        try:
            fn(*args, options)  # compile for this shape now, not in the check or a timed call
        except Exception as e:
            if options is not None or not any(w in str(e) for w in NO_CONFIG):
                raise
            self._fallback_mixes.add(mix)
            options = FALLBACK_OPTIONS
            fn(*args, options)
        # To the worker log: which half of a slow first bind compiles (create_block_mask vs the kernel).
        print(f"[flex] bind {sc.id}: block mask {masked - started:.1f} s, first call {time.perf_counter() - masked:.1f} s"
              + (f", kernel_options {options}" if options else ""), flush=True)

        def call():
            fn(*args, options)

        return call
