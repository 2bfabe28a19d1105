"""A correct, general, unoptimised torch candidate: every scenario feature, CPU or CUDA, fp32 math.

Candidate contract (Python): `forward(inp)` writes `inp.out` (in its dtype) and `inp.lse` (fp32,
natural log, sink excluded, -inf where a row sees nothing) in place. It reads only the tensors a C
kernel gets (q/k/v, offsets, page table, mask words, sinks, descales) plus the scenario's scalar
flags; it does not import solbench.supervisor.reference, so it is an independent check of it.

Work is one sequence, one KV head (its whole group of query heads) and a chunk of query rows at a
time, with at most CHUNK_SCORES fp32 scores (4 bytes each) alive per step.
"""

from __future__ import annotations

import torch

CHUNK_SCORES = 2**24  # rows x group x keys per step: 64 MiB of fp32 scores


def forward(inp) -> None:
    attention(inp)


def attention(inp, *, window_left_slack: int = 0) -> None:
    """Write inp.out and inp.lse. `window_left_slack` > 0 widens the left window (a planted bug)."""
    sc = inp.scenario
    cu_q = inp.cu_seqlens_q.tolist()
    for b in range(sc.batch):
        s0, s1 = cu_q[b], cu_q[b + 1]
        if s1 == s0:
            continue
        kv_len = sc.kv_lens[b]
        if kv_len == 0:
            inp.out[s0:s1] = 0
            inp.lse[s0:s1] = float("-inf")
            continue
        q = _descaled(inp.q[s0:s1], inp.q_descale, sc.heads_q // sc.heads_kv)
        k, v = _gather_kv(inp, b)
        allowed = _structural(sc, s1 - s0, kv_len, window_left_slack, q.device)  # [q_len, kv_len]
        bits = None if inp.mask_bits is None else _unpack(inp.mask_bits[:, s0:s1], kv_len)  # [Hq, q_len, kv_len]
        _sequence(inp, sc, q, k, v, allowed, bits, s0)


def _descaled(x, descale, group: int):
    """fp32 [tokens, heads, d] with a per-tensor or per-KV-head descale applied."""
    x = x.float()
    if descale is None:
        return x
    if descale.numel() > 1:  # per KV head; queries expand it to their query heads (group > 1)
        descale = descale.repeat_interleave(group)
    return x * descale.view(1, -1, 1)


def _gather_kv(inp, b: int):
    """fp32 keys and values of sequence b, [kv_len, heads_kv, d], descaled."""
    sc = inp.scenario
    kv_len = sc.kv_lens[b]
    if sc.kv_layout == "paged":
        j = torch.arange(kv_len, device=inp.k.device)
        pages = inp.page_table[b].long()[j // sc.page_size]
        slots = j % sc.page_size
        k, v = inp.k[pages, slots], inp.v[pages, slots]
    else:
        start = int(inp.cu_seqlens_kv[b])
        k, v = inp.k[start:start + kv_len], inp.v[start:start + kv_len]
    return _descaled(k, inp.k_descale, 1), _descaled(v, inp.v_descale, 1)


def _structural(sc, q_len: int, kv_len: int, slack: int, device):
    """Bool [q_len, kv_len]: causal and window rules, rows aligned to the bottom-right diagonal."""
    diag = torch.arange(q_len, device=device)[:, None] + (kv_len - q_len)
    key = torch.arange(kv_len, device=device)[None, :]
    allowed = torch.ones(q_len, kv_len, dtype=torch.bool, device=device)
    if sc.causal:
        allowed &= key <= diag
    elif sc.window_right >= 0:
        allowed &= key <= diag + sc.window_right
    if sc.window_left >= 0:
        allowed &= key >= diag - sc.window_left - slack
    return allowed


def _unpack(words, kv_len: int):
    """Bool [..., kv_len]: bit j % 32 of int32 word j // 32."""
    shifts = torch.arange(32, dtype=torch.int32, device=words.device)
    return ((words.unsqueeze(-1) >> shifts) & 1).flatten(-2)[..., :kv_len].bool()


def _sequence(inp, sc, q, k, v, allowed, bits, s0: int) -> None:
    group = sc.heads_q // sc.heads_kv
    q_len, kv_len = allowed.shape
    rows_per_step = max(1, CHUNK_SCORES // (group * kv_len))
    for kh in range(sc.heads_kv):
        heads = slice(kh * group, (kh + 1) * group)
        k_h, v_h = k[:, kh], v[:, kh]  # [kv_len, d]
        sink = None if inp.sinks is None else inp.sinks[heads].float()  # [group]
        for r0 in range(0, q_len, rows_per_step):
            r1 = min(q_len, r0 + rows_per_step)
            n = r1 - r0
            s = (q[r0:r1, heads].reshape(n * group, -1) @ k_h.T).view(n, group, kv_len) * sc.scale
            if sc.softcap > 0:
                s = sc.softcap * torch.tanh(s / sc.softcap)
            keep = allowed[r0:r1, None, :].expand(n, group, kv_len)
            if bits is not None:
                keep = keep & bits[heads, r0:r1].transpose(0, 1)
            s = s.masked_fill(~keep, float("-inf"))
            m = s.amax(dim=-1)  # [n, group]; -inf where nothing is kept
            m_safe = torch.where(m.isinf(), torch.zeros_like(m), m)
            p = torch.exp(s - m_safe[..., None])
            l = p.sum(dim=-1)
            acc = (p.view(n * group, kv_len) @ v_h).view(n, group, -1)
            lse = m_safe + torch.log(l)  # log(0) = -inf for empty rows
            if sink is None:
                o = acc / torch.where(l > 0, l, torch.ones_like(l))[..., None]
            else:
                # Scale by the larger of the row max and the sink so no exponent is positive.
                top = torch.maximum(m, sink)
                keys_w = torch.exp(m - top)  # 0 for empty rows
                o = acc * (keys_w / (l * keys_w + torch.exp(sink - top)))[..., None]
            inp.out[s0 + r0:s0 + r1, heads] = o.to(inp.out.dtype)
            inp.lse[s0 + r0:s0 + r1, heads] = lse
