"""Layout conversions between solbench's Inputs and what the libraries take.

solbench's layouts (solbench.supervisor.inputs): token-major q [total_q, Hq, D], k/v contiguous [total_kv, Hkv, D] or
paged [num_pages, page_size, Hkv, D] with page_table [B, max_pages] int32, out [total_q, Hq, Dv], lse
[total_q, Hq] fp32 natural log. Everything here runs in bind (outside timing) and returns views where
it can; what copies says so in its docstring. `visible` is the dense visibility matrix of one sequence,
for libraries that take explicit masks.
"""

from __future__ import annotations

from solbench.core.scenario import Scenario


def dense_batch(sc: Scenario) -> bool:
    """A uniform, contiguous batch with no empty side: q/k/v/out are exact [B, S, H, D] views."""
    return sc.kv_layout == "contiguous" and sc.is_uniform and sc.q_lens[0] > 0 and sc.kv_lens[0] > 0


def batch_views(inputs):
    """(q, k, v, out) as [B, S, H, D] views of a dense batch (no copy)."""
    sc = inputs.scenario
    b, sq, skv = sc.batch, sc.q_lens[0], sc.kv_lens[0]
    return (inputs.q.view(b, sq, sc.heads_q, sc.head_dim_qk), inputs.k.view(b, skv, sc.heads_kv, sc.head_dim_qk),
            inputs.v.view(b, skv, sc.heads_kv, sc.head_dim_v), inputs.out.view(b, sq, sc.heads_q, sc.head_dim_v))


def lse_batch_view(inputs):
    """inputs.lse as [B, S, Hq] (a view) for a dense batch."""
    sc = inputs.scenario
    return inputs.lse.view(sc.batch, sc.q_lens[0], sc.heads_q)


def descale_per_batch_head(descale, batch: int, heads_kv: int, contiguous: bool = False):
    """A per-tensor [1] or per-KV-head [Hkv] descale as [B, Hkv] (FA3/FA4 layout).

    A stride-0 expanded view unless `contiguous` (then one small copy, made in bind).
    """
    view = descale.view(1, -1).expand(batch, heads_kv)
    return view.contiguous() if contiguous else view


def sequence_slices(sc: Scenario) -> list[tuple[int, int, int]]:
    """(b, q_start, q_end) for every sequence with at least one query."""
    out, start = [], 0
    for b, q_len in enumerate(sc.q_lens):
        if q_len:
            out.append((b, start, start + q_len))
        start += q_len
    return out


def flashinfer_pages(inputs):
    """FlashInfer's paged metadata from the page table: (kv_indptr [B+1], kv_indices, last_page_len [B]),
    int32 on the inputs' device. A sequence with no keys has no pages and last_page_len 0."""
    import torch

    sc = inputs.scenario
    pages = sc.pages_per_seq()
    indptr = [0]
    for n in pages:
        indptr.append(indptr[-1] + n)
    table = inputs.page_table
    rows = [table[b, :n] for b, n in enumerate(pages) if n]
    indices = torch.cat(rows) if rows else torch.zeros(0, dtype=torch.int32, device=table.device)
    last = [((kv - 1) % sc.page_size) + 1 if kv else 0 for kv in sc.kv_lens]
    dev = inputs.device
    return (torch.tensor(indptr, dtype=torch.int32, device=dev), indices.to(torch.int32).contiguous(),
            torch.tensor(last, dtype=torch.int32, device=dev))


def physical_kv_owner(inputs):
    """For paged KV flattened to [num_pages * page_size] tokens: (owner sequence or -1, logical key
    index) per physical token, int64 on the device. Contiguous KV: the same for its token rows."""
    import torch

    sc = inputs.scenario
    dev = inputs.device
    if sc.kv_layout == "paged":
        num_pages = inputs.k.shape[0]
        owner_page = torch.full((num_pages,), -1, dtype=torch.int64, device=dev)
        logical_page = torch.zeros(num_pages, dtype=torch.int64, device=dev)
        for b, n in enumerate(sc.pages_per_seq()):
            if n:
                ids = inputs.page_table[b, :n].long()
                owner_page[ids] = b
                logical_page[ids] = torch.arange(n, device=dev)
        slot = torch.arange(sc.page_size, device=dev)
        owner = owner_page.repeat_interleave(sc.page_size)
        logical = (logical_page[:, None] * sc.page_size + slot[None, :]).reshape(-1)
        return owner, logical
    lens = torch.tensor(sc.kv_lens, dtype=torch.int64, device=dev)
    owner = torch.repeat_interleave(torch.arange(sc.batch, device=dev), lens)
    starts = inputs.cu_seqlens_kv.long()[:-1]
    logical = torch.arange(sc.total_kv, device=dev) - starts[owner]
    return owner, logical


def visible(inputs, b: int):
    """Bool [Hq or 1, q_len, kv_len] on the device: which keys each query of sequence b sees (causal and
    window from solbench.core.masks.row_intervals, ANDed with the custom bitmask if any). Leading dim is 1
    without a bitmask."""
    import torch

    from solbench.core import masks

    sc = inputs.scenario
    q_len, kv_len = sc.q_lens[b], sc.kv_lens[b]
    lo, hi = masks.row_intervals(sc, b)
    dev = inputs.device
    keys = torch.arange(kv_len, device=dev)
    lo_t = torch.as_tensor(lo, device=dev)[:, None]
    hi_t = torch.as_tensor(hi, device=dev)[:, None]
    structural = ((keys[None, :] >= lo_t) & (keys[None, :] < hi_t))[None]
    if inputs.mask_bits is None:
        return structural
    start = sum(sc.q_lens[:b])
    words = inputs.mask_bits[:, start:start + q_len, :].to(torch.int64)
    shifts = torch.arange(32, device=dev)
    bits = ((words[..., None] >> shifts) & 1).bool().reshape(sc.heads_q, q_len, -1)[..., :kv_len]
    return bits & structural
