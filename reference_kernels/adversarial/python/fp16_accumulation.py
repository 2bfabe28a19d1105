"""Numerics cheat: on fp16 inputs, accumulate Q K^T and P V in fp16 (a running sum rounded to fp16 after every
16-term chunk, as an fp16-accumulator MMA would), with P in fp16. Each element stays inside its own tolerance;
the mean error is several times the seed's, which the error budget (3x the seed's, no atol floor) catches.
Other dtypes take the honest path, so only fp16 scenarios fail.

expect: mismatch or passed
"""

import torch

from solbench.core import masks

CHUNK = 16


def _fp16_sum(terms, dim):
    """Sum over `dim` in fp16: chunks of CHUNK terms summed exactly, the running total rounded to fp16."""
    total = None
    for part in torch.split(terms, CHUNK, dim=dim):
        s = part.sum(dim=dim)
        total = s.half().float() if total is None else (total + s).half().float()
    return total


def forward(inp):
    sc = inp.scenario
    fp16 = sc.dtype == "fp16"
    cu = inp.cu_seqlens_q.tolist()
    group = sc.heads_q // sc.heads_kv
    for b in range(sc.batch):
        s0, s1 = cu[b], cu[b + 1]
        if s1 == s0:
            continue
        q = inp.sequence_q(b)  # [n, Hq, d] fp32, descaled
        k, v = inp.sequence_kv(b)  # [kv, Hkv, d]
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        lo, hi = masks.row_intervals(sc, b)
        keys = torch.arange(k.shape[0], device=q.device)
        lo, hi = (torch.from_numpy(a).to(q.device) for a in (lo, hi))
        visible = (keys[None, :] >= lo[:, None]) & (keys[None, :] < hi[:, None])
        if fp16:  # [Hq, n, kv, d] products, summed over d in fp16
            s = _fp16_sum(q.permute(1, 0, 2)[:, :, None, :] * k.permute(1, 0, 2)[:, None, :, :], dim=-1)
        else:
            s = torch.einsum("nhd,khd->hnk", q, k)
        s = s * sc.scale
        if sc.softcap:
            s = sc.softcap * torch.tanh(s / sc.softcap)
        s = s.masked_fill(~visible[None], float("-inf"))
        m = s.amax(dim=-1, keepdim=True)
        m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
        p = torch.exp(s - m)
        if fp16:
            p = p.half().float()
        l = p.sum(dim=-1)
        if fp16:  # [Hq, n, kv, dv] -> sum over keys in fp16
            o = _fp16_sum(p[..., None] * v.permute(1, 0, 2)[:, None, :, :], dim=2)
        else:
            o = torch.einsum("hnk,khd->hnd", p, v)
        lse = torch.where(l > 0, m.squeeze(-1) + torch.log(l), torch.full_like(l, float("-inf")))
        o = o / torch.where(l > 0, l, torch.ones_like(l))[..., None]
        if sc.sinks:
            o = o * torch.sigmoid(lse - inp.sinks.float()[:, None])[..., None]
        inp.out[s0:s1] = o.permute(1, 0, 2).to(inp.out.dtype)
        inp.lse[s0:s1] = lse.permute(1, 0)
