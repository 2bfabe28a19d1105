"""Dense attention for the numerics cheats, with the softmax step handed in so that each cheat states only what it
gets wrong. One sequence at a time, every query head at once, fp32. Its own `forward` is the honest softmax: the
control that tells a cheat's failure from the scaffolding's (tests/test_numerics_cheats.py)."""

import torch

from solbench.core import masks


def attention(inp, softmax, tanh=torch.tanh) -> None:
    """Write inp.out and inp.lse. softmax(s) -> (p, m): s the scaled, soft-capped scores [Hq, n, kv] (-inf where
    not visible), p the weights exp(s - m) as the cheat computes them, m [Hq, n, 1] the offset it subtracted;
    `tanh` the softcap's curve."""
    sc = inp.scenario
    cu = inp.cu_seqlens_q.tolist()
    for b in range(sc.batch):
        s0, s1 = cu[b], cu[b + 1]
        if s1 == s0:
            continue
        q = inp.sequence_q(b)  # [n, Hq, d] fp32, descaled
        k, v = (t.repeat_interleave(sc.group_size, dim=1) for t in inp.sequence_kv(b))  # [kv, Hq, d]
        lo, hi = (torch.from_numpy(a)[:, None].to(q.device) for a in masks.row_intervals(sc, b))
        keys = torch.arange(k.shape[0], device=q.device)[None, :]
        s = torch.einsum("nhd,khd->hnk", q, k) * sc.scale
        if sc.softcap:
            s = sc.softcap * tanh(s / sc.softcap)
        p, m = softmax(s.masked_fill(~((keys >= lo) & (keys < hi))[None], float("-inf")))
        l = p.sum(dim=-1)
        lse = torch.where(l > 0, m.squeeze(-1) + torch.log(l), torch.full_like(l, float("-inf")))
        o = torch.einsum("hnk,khd->hnd", p, v) / torch.where(l > 0, l, torch.ones_like(l))[..., None]
        if sc.sinks:
            o = o * torch.sigmoid(lse - inp.sinks.float()[:, None])[..., None]
        inp.out[s0:s1] = o.permute(1, 0, 2).to(inp.out.dtype)
        inp.lse[s0:s1] = lse.permute(1, 0)


def row_max(s):
    """[Hq, n, 1] row maxima of s, 0 where a row sees nothing (so exp(s - m) stays 0 there, never NaN)."""
    m = s.amax(dim=-1, keepdim=True)
    return torch.where(torch.isfinite(m), m, torch.zeros_like(m))


def _honest_softmax(s):
    m = row_max(s)
    return torch.exp(s - m), m


def forward(inp):
    attention(inp, _honest_softmax)
