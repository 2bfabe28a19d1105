"""The tensors of one attention-forward call (`Inputs`) and the output poison: the vocabulary shared by the
supervisor, which allocates and fills them, and the sandbox, which calls implementations on them.

Layouts (token-major, heads inside):
    q        [total_q, heads_q, head_dim_qk]            rows of sequence b: cu_seqlens_q[b]:cu_seqlens_q[b+1]
    k, v     contiguous: [total_kv, heads_kv, d]         rows of sequence b: cu_seqlens_kv[b]:cu_seqlens_kv[b+1]
             paged:      [num_pages, page_size, heads_kv, d]   key j of b: page page_table[b, j // page_size]
    out      [total_q, heads_q, head_dim_v]  (bf16 for fp8 inputs), poisoned before every run
    lse      [total_q, heads_q] fp32 natural-log LSE, poisoned before every run
    mask_bits int32 [heads_q, total_q, row_words]: bit j % 32 of word j // 32 = key j visible
    sinks    fp32 [heads_q] holding bf16-representable values;  q/k/v_descale fp32 [1] (per tensor) or [heads_kv] (per KV head)
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from solbench.core.scenario import Scenario

TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp8_e4m3": "float8_e4m3fn"}
# Poison: NaNs with a payload no arithmetic produces, so "unwritten" is told apart from "NaN".
POISON_BITS = {"bfloat16": 0x7FA5, "float16": 0x7E5A, "float32": 0x7FA5A5A5}


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
        """Bytes of every tensor, outputs included (on a GPU a copy takes its allocations' rounded sizes:
        solbench.supervisor.inputs.footprint_bytes)."""
        return sum(t.nbytes for f in fields(self) if hasattr(t := getattr(self, f.name), "nbytes"))

    def poison(self) -> None:
        """Fill out and lse with the poison pattern (call before every run of an implementation)."""
        fill_poison(self.out)
        fill_poison(self.lse)

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

    def sequence_q(self, b: int, dequantize: bool = True, rows: tuple[int, int] | None = None):
        """Sequence b's queries, [q_len, heads_q, d_qk] (only its rows [r_lo, r_hi) if `rows`); fp32 with
        descale applied if dequantize."""
        import torch

        start, end = int(self.cu_seqlens_q[b]), int(self.cu_seqlens_q[b + 1])
        if rows is not None:
            start, end = start + rows[0], start + rows[1]
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


GUARD_BYTES = 4096
"""Bytes of canary on each side of every output buffer (a multiple of 256: the output keeps its allocation's
alignment). The supervisor allocates the buffers (solbench.supervisor.inputs.guarded_empty)."""
CANARY = 0xC3
"""The byte every guard holds; a write past either end of out or lse changes it."""


def guarded_view(buf, shape, dtype):
    """The tensor of `shape` and `dtype` in the middle of `buf` (uint8, GUARD_BYTES longer than it at each
    end), whose guards are set to CANARY here, so writes past its ends are seen (guard_damage) instead of
    landing silently in a neighbouring allocation."""
    buf.fill_(CANARY)
    return buf[GUARD_BYTES:buf.numel() - GUARD_BYTES].view(dtype).view(tuple(shape))


def guard_damage(t) -> int:
    """Bytes of t's guards that no longer hold CANARY (0 for an unguarded tensor, which has no guards)."""
    import torch

    whole = torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())
    start = t.storage_offset() * t.element_size()
    end = start + t.numel() * t.element_size()
    if start != GUARD_BYTES or whole.numel() != end + GUARD_BYTES:
        return 0
    return int((whole[:start] != CANARY).sum()) + int((whole[end:] != CANARY).sum())
