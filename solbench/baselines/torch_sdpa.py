"""torch SDPA pinned to one backend: `sdpa-flash`, `sdpa-efficient` (and `torch-cudnn`, torch_cudnn.py).

`F.scaled_dot_product_attention` has no varlen, paged KV, softcap, sinks or LSE output, so:
- a dense uniform batch is one call on [B, H, S, D] views; anything ragged or paged is one call per
  sequence (a Python loop: B launches and B output copies per call, host overhead a user of SDPA pays);
- paged KV is gathered into contiguous per-sequence K/V in bind (SDPA cannot read pages);
- masks: none when every row sees all its keys; `is_causal=True` only for square causal sequences
  (torch's is_causal is top-left aligned, so it is right exactly when q_len == kv_len); otherwise an
  additive 0/-inf mask in the input dtype, built in bind from solbench.core.masks (bottom-right causal,
  windows, custom bits), its last dim padded to 16 so SDPA does not re-pad it on every call;
- out: SDPA allocates its own output, copied into inputs.out (a per-call copy); writes_lse = False.
Rows with no visible key are declined (SDPA backends are not known to write 0 there).
"""

from __future__ import annotations

from solbench.baselines.base import YES, AdapterBase, Support, has_empty_rows, no, sm_of
from solbench.baselines.layout import batch_views, dense_batch, sequence_slices, visible
from solbench.core.scenario import Scenario


def sequence_mode(sc: Scenario, b: int) -> str:
    """How sequence b is expressed in SDPA: 'none' (every row sees all keys), 'causal' (square causal,
    torch's top-left is_causal coincides with bottom-right) or 'mask' (an explicit mask)."""
    from solbench.core import masks

    if sc.mask is not None:
        return "mask"
    lo, hi = masks.row_intervals(sc, b)
    if (lo == 0).all() and (hi == sc.kv_lens[b]).all():
        return "none"
    if sc.causal and sc.window_left < 0 and sc.q_lens[b] == sc.kv_lens[b]:
        return "causal"
    return "mask"


def modes(sc: Scenario) -> set[str]:
    return {sequence_mode(sc, b) for b in range(sc.batch) if sc.q_lens[b]}


class SdpaAdapter(AdapterBase):
    """One SDPBackend, no fallback to another."""

    package = "torch"
    distributions = ("torch",)
    modules = ("torch",)
    backend = ""
    """torch.nn.attention.SDPBackend member name."""
    takes_masks = True

    @classmethod
    def _supports(cls, sc: Scenario, arch: str) -> Support:
        if sm_of(arch) < 80:
            return no(f"needs SM80+ (sm_{sm_of(arch)})")
        if sc.dtype == "fp8_e4m3":
            return no("no fp8 in SDPA")
        if sc.softcap:
            return no("no softcap in SDPA")
        if sc.sinks:
            return no("no attention sinks in SDPA")
        if has_empty_rows(sc):
            return no("rows with no visible key (SDPA may write NaN)")
        if not cls.takes_masks and "mask" in modes(sc):
            return no("needs an explicit mask (window, bottom-right causal with q_len != kv_len, or bitmask)")
        return cls._backend_limits(sc, arch)

    @classmethod
    def _backend_limits(cls, sc: Scenario, arch: str) -> Support:
        return YES

    def _bind(self, inputs):
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel

        sc = inputs.scenario
        self.writes_lse = False
        backend = getattr(SDPBackend, self.backend)
        gqa = {"enable_gqa": True} if sc.heads_q != sc.heads_kv else {}
        segments = []  # (q, k, v, mask, is_causal, dst) in [n, H, S, D] views
        if dense_batch(sc) and len(modes(sc)) == 1:
            q, k, v, out = batch_views(inputs)
            mode = sequence_mode(sc, 0)
            mask = self._mask(inputs, range(sc.batch)) if mode == "mask" else None
            segments.append((q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), mask, mode == "causal", out))
        else:
            for b, start, end in sequence_slices(sc):
                k, v = inputs.sequence_kv(b, dequantize=False)
                if sc.kv_layout == "paged":
                    k, v = k.contiguous(), v.contiguous()  # the gather, done once here
                mode = sequence_mode(sc, b)
                mask = self._mask(inputs, [b]) if mode == "mask" else None
                segments.append((inputs.q[start:end].unsqueeze(0).transpose(1, 2), k.unsqueeze(0).transpose(1, 2),
                                 v.unsqueeze(0).transpose(1, 2), mask, mode == "causal", inputs.out[start:end].unsqueeze(0)))
        scale = sc.scale

        def call():
            with sdpa_kernel([backend]):
                for q, k, v, mask, causal, dst in segments:
                    o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, scale=scale, **gqa)
                    dst.copy_(o.transpose(1, 2))

        with torch.no_grad():
            call()  # fail here, not in the check, if the backend rejects the inputs
        return call

    @staticmethod
    def _mask(inputs, sequences):
        """Additive mask [n, Hq or 1, q_len, kv_len] (0 visible, -inf not), last dim padded to 16."""
        import torch

        parts = [visible(inputs, b) for b in sequences]
        heads, q_len, kv_len = parts[0].shape
        padded = torch.empty(len(parts), heads, q_len, -(-kv_len // 16) * 16, dtype=inputs.q.dtype, device=inputs.device)
        mask = padded[..., :kv_len]
        zero = torch.zeros((), dtype=mask.dtype, device=mask.device)
        for i, vis in enumerate(parts):
            mask[i] = torch.where(vis, zero, zero - float("inf"))
        padded[..., kv_len:] = float("-inf")
        return mask


class FlashAdapter(SdpaAdapter):
    name = "sdpa-flash"
    backend = "FLASH_ATTENTION"
    takes_masks = False
    label = "torch SDPA, FLASH_ATTENTION backend only (per-sequence loop when ragged)"

    @classmethod
    def _backend_limits(cls, sc, arch):
        if sc.head_dim_qk != sc.head_dim_v or sc.head_dim_qk > 256:
            return no(f"flash backend needs equal head dims <= 256 ({sc.head_dim_qk}/{sc.head_dim_v})")
        return YES


class EfficientAdapter(SdpaAdapter):
    name = "sdpa-efficient"
    backend = "EFFICIENT_ATTENTION"
    label = "torch SDPA, EFFICIENT_ATTENTION backend only (per-sequence loop when ragged)"

    @classmethod
    def _backend_limits(cls, sc, arch):
        if sc.heads_q != sc.heads_kv:
            # torch 2.11 on the H200: "No available kernel" for every enable_gqa call on this backend.
            return no("efficient backend has no GQA (enable_gqa runs on flash / math only)")
        return YES
