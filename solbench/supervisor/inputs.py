"""Seeded inputs for one scenario: tensors laid out exactly as the C ABI and Python candidates see them.

Layouts (token-major, heads inside):
    q        [total_q, heads_q, head_dim_qk]            rows of sequence b: cu_seqlens_q[b]:cu_seqlens_q[b+1]
    k, v     contiguous: [total_kv, heads_kv, d]         rows of sequence b: cu_seqlens_kv[b]:cu_seqlens_kv[b+1]
             paged:      [num_pages, page_size, heads_kv, d]   key j of b: page page_table[b, j // page_size]
    out      [total_q, heads_q, head_dim_v]  (bf16 for fp8 inputs), poisoned before every run
    lse      [total_q, heads_q] fp32 natural-log LSE, poisoned before every run
    mask_bits int32 [heads_q, total_q, row_words]: bit j % 32 of word j // 32 = key j visible
    sinks    fp32 [heads_q];  q/k/v_descale fp32 [1] (per tensor) or [heads_kv] (per KV head)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields, replace

import numpy as np

from solbench.core import masks
from solbench.core.scenario import Scenario

TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp8_e4m3": "float8_e4m3fn"}
FP8_TARGET_AMAX = 240.0  # quantise into [-240, 240] of e4m3's 448 so descales are never 1
# Poison: NaNs with a payload no arithmetic produces, so "unwritten" is told apart from "NaN".
POISON_BITS = {"bfloat16": 0x7FA5, "float16": 0x7E5A, "float32": 0x7FA5A5A5}
LOGIT_STD = {"default": 2.0, "large_logits": 40.0, "sinks_negative": 2.0, "sinks_positive": 2.0}
SINK_OFFSET = {"sinks_negative": -60.0, "sinks_positive": 20.0}


def torch_dtype(name: str):
    import torch

    return getattr(torch, TORCH_DTYPES.get(name, name))


@dataclass(frozen=True)
class Inputs:
    """Every tensor one attention-forward call needs, on one device. See the module docstring."""

    scenario: Scenario
    q: "torch.Tensor"
    k: "torch.Tensor"
    v: "torch.Tensor"
    cu_seqlens_q: "torch.Tensor"
    cu_seqlens_kv: "torch.Tensor"
    kv_lens: "torch.Tensor"
    page_table: "torch.Tensor | None"
    sinks: "torch.Tensor | None"
    mask_bits: "torch.Tensor | None"
    q_descale: "torch.Tensor | None"
    k_descale: "torch.Tensor | None"
    v_descale: "torch.Tensor | None"
    out: "torch.Tensor"
    lse: "torch.Tensor"

    @property
    def device(self):
        return self.q.device

    @property
    def nbytes(self) -> int:
        """Bytes of every tensor, outputs included: what one more copy of these inputs costs."""
        return sum(t.nbytes for f in fields(self) if hasattr(t := getattr(self, f.name), "nbytes"))

    def poison(self) -> None:
        """Fill out and lse with the poison pattern (call before every run of an implementation)."""
        fill_poison(self.out)
        fill_poison(self.lse)

    def with_outputs(self) -> "Inputs":
        """The same inputs with fresh, poisoned output buffers (one set per implementation)."""
        fresh = replace(self, out=self.out.clone(), lse=self.lse.clone())
        fresh.poison()
        return fresh

    def sequence_kv(self, b: int, dequantize: bool = True):
        """Sequence b's keys and values, [kv_len, heads_kv, d], gathered from pages if paged.

        With dequantize, fp32 values with descales applied (what the math sees).
        """
        import torch

        sc = self.scenario
        kv_len = sc.kv_lens[b]
        if sc.kv_layout == "paged":
            pages = self.page_table[b, : sc.pages_per_seq()[b]].long()
            k = self.k[pages].reshape(-1, *self.k.shape[2:])[:kv_len]
            v = self.v[pages].reshape(-1, *self.v.shape[2:])[:kv_len]
        else:
            start = int(self.cu_seqlens_kv[b])
            k, v = self.k[start:start + kv_len], self.v[start:start + kv_len]
        if not dequantize:
            return k, v
        k, v = k.to(torch.float32), v.to(torch.float32)
        if self.k_descale is not None:
            k = k * self.k_descale.view(1, -1, 1)
            v = v * self.v_descale.view(1, -1, 1)
        return k, v

    def sequence_q(self, b: int, dequantize: bool = True):
        """Sequence b's queries, [q_len, heads_q, d_qk]; fp32 with descale applied if dequantize."""
        import torch

        start, end = int(self.cu_seqlens_q[b]), int(self.cu_seqlens_q[b + 1])
        q = self.q[start:end]
        if not dequantize:
            return q
        q = q.to(torch.float32)
        if self.q_descale is not None:
            per_q_head = self.q_descale.repeat_interleave(self.scenario.group_size) if self.q_descale.numel() > 1 else self.q_descale
            q = q * per_q_head.view(1, -1, 1)
        return q


INPUT_FIELDS = ("q", "k", "v", "cu_seqlens_q", "cu_seqlens_kv", "kv_lens", "page_table", "sinks", "mask_bits",
                "q_descale", "k_descale", "v_descale")
"""The tensors a candidate reads and must leave as they are."""


def input_checksums(inputs: Inputs) -> dict[str, int]:
    """An integer sum of each input tensor's 32-bit words: cheap on a GPU, and it changes when a candidate
    rewrites its inputs in place (pre-scaling, re-layout) to speed up later calls."""
    import torch

    sums = {}
    for name in INPUT_FIELDS:
        t = getattr(inputs, name)
        if t is None:
            continue
        flat = t.contiguous().view(torch.uint8).view(-1)
        words = flat[: flat.numel() // 4 * 4].view(torch.int32)
        tail = flat[flat.numel() // 4 * 4:]
        sums[name] = int(words.sum(dtype=torch.int64)) + int(tail.sum(dtype=torch.int64))
    return sums


def fill_poison(t) -> None:
    import torch

    int_dtype = {torch.bfloat16: torch.int16, torch.float16: torch.int16, torch.float32: torch.int32}[t.dtype]
    bits = POISON_BITS[str(t.dtype).removeprefix("torch.")]
    if int_dtype is torch.int16 and bits > 0x7FFF:
        bits -= 0x10000
    t.view(int_dtype).fill_(bits)


def poisoned(t) -> "torch.Tensor":
    """Bool tensor: elements still holding the poison pattern."""
    import torch

    int_dtype = {torch.bfloat16: torch.int16, torch.float16: torch.int16, torch.float32: torch.int32}[t.dtype]
    return t.view(int_dtype) == POISON_BITS[str(t.dtype).removeprefix("torch.")]


def input_seed(sc: Scenario, trial: int) -> int:
    """Seed for (scenario, trial): stable across runs and machines, different per trial."""
    return int.from_bytes(hashlib.sha256(f"{sc.id}/{trial}".encode()).digest()[:8], "little") & (2**62 - 1)


def make_inputs(sc: Scenario, trial: int = 0, device: str = "cpu") -> Inputs:
    """Fresh inputs for one trial: deterministic per (scenario, trial, device type)."""
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(input_seed(sc, trial))

    def randn(*shape):
        return torch.randn(*shape, generator=gen, device=device, dtype=torch.float32)

    # q.k * scale has std ~ LOGIT_STD: softmax neither uniform nor one-hot.
    q_std = LOGIT_STD[sc.input_profile] / (sc.scale * sc.head_dim_qk ** 0.5)
    q = randn(sc.total_q, sc.heads_q, sc.head_dim_qk) * q_std
    pages = sc.pages_per_seq()
    if sc.kv_layout == "paged":
        spare = 3 + sum(pages) // 8  # unused pages so the table is not a permutation of everything
        num_pages = sum(pages) + spare
        kv_shape = (num_pages, sc.page_size, sc.heads_kv)
    else:
        kv_shape = (sc.total_kv, sc.heads_kv)
    k = randn(*kv_shape, sc.head_dim_qk)
    v = randn(*kv_shape, sc.head_dim_v)

    q_descale = k_descale = v_descale = None
    if sc.dtype == "fp8_e4m3":
        q, q_descale = _quantize_fp8(q.view(sc.total_q, sc.heads_kv, sc.group_size, -1), sc.descale, kv_head_axis=1)
        q = q.view(sc.total_q, sc.heads_q, sc.head_dim_qk)
        k, k_descale = _quantize_fp8(k, sc.descale, kv_head_axis=k.dim() - 2)
        v, v_descale = _quantize_fp8(v, sc.descale, kv_head_axis=v.dim() - 2)
    else:
        q, k, v = (t.to(torch_dtype(sc.dtype)) for t in (q, k, v))

    page_table = None
    if sc.kv_layout == "paged":
        perm = torch.randperm(num_pages, generator=gen, device=device).to(torch.int32)
        page_table = torch.zeros(sc.batch, max(1, max(pages)), dtype=torch.int32, device=device)
        offset = 0
        for b, n in enumerate(pages):
            page_table[b, :n] = perm[offset:offset + n]
            offset += n

    sinks = None
    if sc.sinks:
        sinks = randn(sc.heads_q) + SINK_OFFSET.get(sc.input_profile, 0.0)

    mask_bits = None
    bits = masks.mask_bits(sc)
    if bits is not None:
        mask_bits = torch.from_numpy(bits.view(np.int32)).to(device)

    def offsets(lengths):
        return torch.tensor(np.concatenate([[0], np.cumsum(lengths)]), dtype=torch.int32, device=device)

    out = torch.empty(sc.total_q, sc.heads_q, sc.head_dim_v, dtype=torch_dtype(sc.out_dtype), device=device)
    lse = torch.empty(sc.total_q, sc.heads_q, dtype=torch.float32, device=device)
    inputs = Inputs(
        scenario=sc, q=q, k=k, v=v,
        cu_seqlens_q=offsets(sc.q_lens), cu_seqlens_kv=offsets(sc.kv_lens),
        kv_lens=torch.tensor(sc.kv_lens, dtype=torch.int32, device=device),
        page_table=page_table, sinks=sinks, mask_bits=mask_bits,
        q_descale=q_descale, k_descale=k_descale, v_descale=v_descale, out=out, lse=lse,
    )
    inputs.poison()
    return inputs


def _quantize_fp8(x, mode: str, kv_head_axis: int):
    """e4m3 values and their fp32 descale: [1] per tensor, or [heads_kv] per KV head."""
    import torch

    if mode == "per_tensor":
        amax = x.abs().amax().reshape(1)
        descale = amax / FP8_TARGET_AMAX
        scaled = x / descale
    else:
        dims = [d for d in range(x.dim()) if d != kv_head_axis]
        amax = x.abs().amax(dim=dims)
        descale = amax / FP8_TARGET_AMAX
        shape = [1] * x.dim()
        shape[kv_head_axis] = -1
        scaled = x / descale.view(shape)
    return scaled.to(torch.float8_e4m3fn), descale.to(torch.float32).contiguous()
