"""FlashInfer custom masks for solbench's per-head bitmasks: one ragged batch entry per (sequence, head).

FlashInfer's `custom_mask` is one (q_len x kv_len) matrix per sequence, shared by all heads; solbench's
bitmask differs per head. So in bind each (sequence b, query head h) becomes its own single-head entry:
rows b-major then h, q rows [q_len_b, D] of head h, K/V rows of KV head h // G (gathered: GQA K/V are
repeated per query head, paged K/V gathered). Causal and window are folded into the boolean mask
(plan with causal=False, window_left=-1); FlashInfer packs the mask in plan.
Per call: the fa2 ragged kernel into its own [rows, 1, Dv] buffer, then one index_select each back into
inputs.out and inputs.lse (token-major), and the LSE scaled from log2 to natural log.
"""

from __future__ import annotations

from solbench.baselines.base import LN2
from solbench.baselines.layout import sequence_slices, visible


def per_head_rows(t, sc, heads=None):
    """Token-major [total, H, d] rows regrouped entry by entry: [sum over (b, h) of len_b, d], b-major
    then h (heads: which of t's heads each query head reads; default the identity)."""
    import torch

    parts = []
    for b, start, end in sequence_slices(sc):
        rows = t[start:end] if heads is None else t[start:end].index_select(1, heads)
        parts.append(rows.transpose(0, 1).reshape(-1, t.shape[-1]))
    return torch.cat(parts)


def gather_index(sc):
    """Long [total_q * Hq]: for each (token, head) of inputs.out (row-major), its row in the entry buffer:
    token t of sequence b, head h is row Hq * start_b + h * q_len_b + (t - start_b)."""
    import torch

    index = torch.empty(sc.total_q, sc.heads_q, dtype=torch.int64)
    for b, start, end in sequence_slices(sc):
        q_len = end - start
        for h in range(sc.heads_q):
            index[start:end, h] = torch.arange(q_len) + sc.heads_q * start + h * q_len
    return index.reshape(-1)


def bind_per_head_mask(workspace, backend: str, inputs):
    import flashinfer
    import torch

    sc = inputs.scenario
    dev = inputs.device
    kv_head = torch.arange(sc.heads_q, device=dev) // sc.group_size
    ks, vs, masks_, q_lens, kv_lens = [], [], [], [], []
    for b, start, end in sequence_slices(sc):
        k, v = inputs.sequence_kv(b, dequantize=False)  # [kv_len, Hkv, d]
        ks.append(k.index_select(1, kv_head).transpose(0, 1).reshape(-1, sc.head_dim_qk))
        vs.append(v.index_select(1, kv_head).transpose(0, 1).reshape(-1, sc.head_dim_v))
        vis = visible(inputs, b).expand(sc.heads_q, -1, -1)  # [Hq, q_len, kv_len]
        masks_.append(vis.reshape(-1))
        q_lens += [end - start] * sc.heads_q
        kv_lens += [sc.kv_lens[b]] * sc.heads_q
    q = per_head_rows(inputs.q, sc).unsqueeze(1).contiguous()
    k = torch.cat(ks).unsqueeze(1).contiguous()
    v = torch.cat(vs).unsqueeze(1).contiguous()

    def indptr(lengths):
        return torch.tensor([0] + list(torch.tensor(lengths).cumsum(0).tolist()), dtype=torch.int32, device=dev)

    w = flashinfer.BatchPrefillWithRaggedKVCacheWrapper(workspace, "NHD", backend=backend)
    w.plan(indptr(q_lens), indptr(kv_lens), 1, 1, sc.head_dim_qk, head_dim_vo=sc.head_dim_v,
           custom_mask=torch.cat(masks_), causal=False, window_left=-1, sm_scale=sc.scale,
           logits_soft_cap=float(sc.softcap) or None, q_data_type=q.dtype, kv_data_type=k.dtype)
    out_buf = torch.empty(q.shape[0], 1, sc.head_dim_v, dtype=inputs.out.dtype, device=dev)
    lse_buf = torch.empty(q.shape[0], 1, dtype=torch.float32, device=dev)
    index = gather_index(sc).to(dev)
    out_flat = inputs.out.view(-1, sc.head_dim_v)
    lse_flat = inputs.lse.view(-1)
    keep = (w, q, k, v)

    def call():
        w.run(keep[1], keep[2], keep[3], out=out_buf, lse=lse_buf, return_lse=True)
        torch.index_select(out_buf.view(-1, sc.head_dim_v), 0, index, out=out_flat)
        torch.index_select(lse_buf.view(-1), 0, index, out=lse_flat)
        lse_flat.mul_(LN2)

    return call
