"""`torch-cudnn`: torch SDPA pinned to SDPBackend.CUDNN_ATTENTION (torch's own cuDNN SDPA, separate
from the cudnn-frontend graph of `cudnn`). Same call shape as sdpa-flash / sdpa-efficient
(solbench.baselines.torch_sdpa): per-sequence loop when ragged, explicit additive masks where needed,
output copied into inputs.out, no LSE."""

from __future__ import annotations

import functools

from solbench.baselines.base import YES, Support, no, sm_of
from solbench.baselines.torch_sdpa import SdpaAdapter


@functools.cache
def torch_cudnn_version() -> int | None:
    """The cuDNN torch loads (e.g. 91900), or None where torch or cuDNN is missing."""
    try:
        import torch

        return torch.backends.cudnn.version()
    except Exception:
        return None


class Adapter(SdpaAdapter):
    name = "torch-cudnn"
    backend = "CUDNN_ATTENTION"
    label = "torch SDPA, CUDNN_ATTENTION backend only (per-sequence loop when ragged)"

    @classmethod
    def _backend_limits(cls, sc, arch) -> Support:
        sm = sm_of(arch)
        if any(q and kv == 1 for q, kv in zip(sc.q_lens, sc.kv_lens)):
            return no("cuDNN SDPA rejects kv_len 1")
        d, dv = sc.head_dim_qk, sc.head_dim_v
        if (d <= 128 and dv <= 128) or ((d, dv) == (192, 128) and sm in (90, 100)):
            return YES
        version = torch_cudnn_version()
        if max(d, dv) <= 256 and sm in (90, 100) and version is not None and version > 92200:
            return YES
        return no(f"head dims {d}/{dv}: <= 128 (192/128 on SM90/100; 256 needs cuDNN > 9.22)")
