"""cuDNN through the cudnn-frontend Python graph API: one SDPA graph per configuration, built in bind.

The graph (as in cudnn-frontend's test/python/sdpa and FlashInfer's cudnn/prefill.py):
- Q/O declared (B, H, S, D) over token-major memory, strides (S*H*D, D, H*D, 1); ragged batches add
  INT64 element ragged offsets (cu_seqlens * H * D) and per-sequence seq_len_q/kv with the padding mask;
  a dense uniform batch needs neither.
- Paged KV: K/V containers (num_pages, Hkv, page_size, D) as a permuted view of solbench's NHD pages,
  page tables (B, 1, max_pages, 1) int32.
- Masks: diagonal_alignment=BOTTOM_RIGHT; causal -> diagonal_band_right_bound=0, a non-causal right
  window R -> R; window_left L -> diagonal_band_left_bound = L + 1 (cuDNN's left bound counts the
  diagonal: it keeps the n keys ending at it, so a model's sliding window w is bound w).
- Stats (natural-log LSE) written straight into inputs.lse (token-major stride (S*H, 1, H, 1)).
  With a sink token the stats include the sink, so writes_lse is False for sink scenarios.
- fp8: sdpa_fp8 with per-tensor descales (1,1,1,1), scale_s = descale_s = scale_o = 1 (as FlashInfer's
  cuDNN path), output bf16. Per-head descales have no place in the graph: declined.
Per call: set the handle's stream to the current stream, then graph.execute (no copies).
"""

from __future__ import annotations

import functools

from solbench.baselines.base import YES, AdapterBase, Support, has_empty_rows, no, sm_of
from solbench.baselines.layout import dense_batch
from solbench.core.scenario import Scenario

UID = {name: i + 1 for i, name in enumerate(
    ["q", "k", "v", "o", "stats", "seq_q", "seq_kv", "off_q", "off_k", "off_v", "off_o", "off_stats", "table_k", "table_v", "sink", "descale_q", "descale_k", "descale_v", "scale_s", "descale_s", "scale_o", "amax_s", "amax_o"])}


def cudnn_bounds(sc: Scenario) -> tuple[int | None, int | None]:
    """solbench mask -> (diagonal_band_left_bound, diagonal_band_right_bound), BOTTOM_RIGHT aligned.

    None = no bound on that side. left bound = window_left + 1; right bound = 0 when causal.
    """
    left = sc.window_left + 1 if sc.window_left >= 0 else None
    right = 0 if sc.causal else (sc.window_right if sc.window_right >= 0 else None)
    return left, right


def _binding_signature(cudnn, op: str) -> str:
    """The C++ binding's generated signature line of graph method `op` ("sdpa_fp8(self, q: ..., left_bound:
    ...)"), or "". FE 1.32's `cudnn.pygraph` is a Python class whose sdpa methods capture keywords and forward
    them verbatim to the binding (`cudnn._pybind_module.backend_graph`); before that, `pygraph` was the binding."""
    for cls in (getattr(getattr(cudnn, "_pybind_module", None), "backend_graph", None), getattr(cudnn, "pygraph", None)):
        doc = getattr(getattr(cls, op, None), "__doc__", None) or ""
        for line in doc.splitlines():
            line = line.lstrip("0123456789. ")
            if line.startswith(f"{op}(") and ":" in line:  # a typed signature, not a summary like "sdpa_fp8(...)"
                return line
    return ""


def _spelled_for(cudnn, op: str, kw: dict) -> dict:
    """Band-bound keywords as the binding spells them for `op`: `diagonal_band_*_bound` (sdpa) or
    `left_bound` / `right_bound` (sdpa_fp8 in FE 1.23 and 1.32: the H200 refused the long names with
    "incompatible function arguments"). Read from the binding's signature; without one, as given."""
    signature = _binding_signature(cudnn, op)
    out = dict(kw)
    for new, old in (("diagonal_band_left_bound", "left_bound"), ("diagonal_band_right_bound", "right_bound")):
        if new in out and f"{new}:" not in signature and f"{old}:" in signature:
            out[old] = out.pop(new)
    return out


@functools.cache
def backend_version() -> int | None:
    """cuDNN library version (e.g. 91900), or None if cudnn-frontend cannot be loaded here."""
    try:
        import cudnn

        return int(cudnn.backend_version())
    except Exception:
        return None


class Adapter(AdapterBase):
    name = "cudnn"
    package = "cudnn"
    distributions = ("nvidia-cudnn-frontend",)
    modules = ("cudnn",)
    label = "cudnn-frontend SDPA graph (ragged Q, paged KV, bottom-right masks)"

    @classmethod
    def _supports(cls, sc: Scenario, arch: str) -> Support:
        sm = sm_of(arch)
        if sm < 80:
            return no(f"cuDNN SDPA needs SM80+ (sm_{sm})")
        if sc.mask is not None:
            return no("custom bitmask only as a dense bias tensor (not wired)")
        if sc.softcap:
            return no("softcap needs a score_mod sub-graph, which excludes the built-in masks")
        if sc.dtype == "fp8_e4m3":
            if sm < 100:
                # H200, cuDNN 9.19, hopper suite: every fp8 graph (dense and paged, MHA and GQA, d128 and
                # 192/128) got "sdpa fp8 forward operation is only supported on Blackwell architecture and newer".
                return no("fp8 SDPA forward: cuDNN 9.19 proposes no plan below SM100 (H200: 'only supported on "
                          "Blackwell architecture and newer')")
            if sc.descale != "per_tensor":
                return no("fp8 graph takes per-tensor descales only")
            if backend_version() is not None and backend_version() < 91701:
                return no("fp8 prefill needs cuDNN >= 9.17.1")
            if sc.sinks:
                return no("the fp8 graph (sdpa_fp8) takes no attention sink")
        d, dv = sc.head_dim_qk, sc.head_dim_v
        if not ((d <= 128 and dv <= 128) or (d, dv) == (192, 128)):
            v = backend_version()
            if not ((d, dv) == (256, 256) and v is not None and v > 92200 and sm in (90, 100)):
                return no(f"head dims {d}/{dv}: <=128 or 192/128 (256 needs cuDNN > 9.22 on SM90/100)")
        if has_empty_rows(sc):
            return no("rows with no visible key (output of fully masked rows unverified)")
        if any(q == 1 and kv == 1 for q, kv in zip(sc.q_lens, sc.kv_lens)):
            return no("s_q == s_kv == 1 is a known cuDNN issue")
        if sc.sinks and 1 in sc.q_lens:
            # H200, cuDNN 9.19, hopper suite: cudnnGraphNotSupportedError for MHA decode with a sink too.
            return no("attention sink with q_len 1 (decode): no cuDNN 9.19 engine proposes a plan (H200)")
        if sc.heads_q != sc.heads_kv and 1 in sc.q_lens:
            # Seen on the H200 (cuDNN 9.19, real suite): Hq - Hkv output elements per sequence unwritten,
            # and no plan at all with sinks; LSE and every written element were right. Whether the ragged
            # O offsets we pass or the library's packed-GQA decode path is at fault is not isolated yet.
            return no("GQA with q_len 1 (decode): Hq-Hkv outputs per sequence left unwritten on the H200 "
                      "(cuDNN 9.19; library or adapter not yet isolated)")
        return YES

    def _per_input(self, inputs) -> dict:
        """The pack entries that differ between input sets of one scenario (the rest are shapes and
        lengths, the same for every set)."""
        sc = inputs.scenario
        t = {"q": inputs.q, "o": inputs.out}
        if sc.kv_layout == "paged":
            t["k"], t["v"] = inputs.k.permute(0, 2, 1, 3), inputs.v.permute(0, 2, 1, 3)
            t["table_k"] = t["table_v"] = inputs.page_table.view(sc.batch, 1, -1, 1)
        else:
            t["k"], t["v"] = inputs.k, inputs.v
        if self.writes_lse:
            t["stats"] = inputs.lse
        if sc.sinks:
            t["sink"] = inputs.sinks.view(1, sc.heads_q, 1, 1)
        if sc.dtype == "fp8_e4m3":
            for key in ("q", "k", "v"):
                t[f"descale_{key}"] = getattr(inputs, f"{key}_descale").view(1, 1, 1, 1)
        return t

    _graph = None
    """(scenario, graph, handle, workspace, scenario-wide pack entries) of the last scenario bound."""

    def _bind(self, inputs):
        import cudnn
        import torch

        sc = inputs.scenario
        self.writes_lse = not sc.sinks
        per_input = self._per_input(inputs)
        if self._graph is None or self._graph[0] != sc:
            # One graph per scenario: building it takes ~1 s, and the runner binds every rotated input
            # set of a scenario; a graph reads its buffers from the pack given at execute time.
            self._graph = (sc, *self._build(inputs, per_input))
        _, g, handle, workspace, static = self._graph
        pack = {**static, **{UID[k]: t for k, t in per_input.items()}}

        def call():
            cudnn.set_stream(handle=handle, stream=torch.cuda.current_stream(inputs.device).cuda_stream)
            g.execute(pack, workspace, handle)

        return call

    def _build(self, inputs, per_input):
        """(graph, handle, workspace, pack entries common to every input set of the scenario)."""
        import cudnn
        import torch

        sc = inputs.scenario
        dev = inputs.device
        dt = {torch.bfloat16: cudnn.data_type.BFLOAT16, torch.float16: cudnn.data_type.HALF,
              torch.float8_e4m3fn: cudnn.data_type.FP8_E4M3}
        fp8 = sc.dtype == "fp8_e4m3"
        handle = cudnn.create_handle()
        g = cudnn.pygraph(io_data_type=dt[inputs.q.dtype], intermediate_data_type=cudnn.data_type.FLOAT,
                          compute_data_type=cudnn.data_type.FLOAT, handle=handle)
        pack = {}

        def tensor(key, t, dims=None, strides=None, data_type=None):
            pack[UID[key]] = t
            return g.tensor(uid=UID[key], dim=tuple(dims or t.shape), stride=tuple(strides or t.stride()),
                            data_type=data_type or dt.get(t.dtype, cudnn.data_type.FLOAT))

        def i32(values):
            return torch.tensor(values, dtype=torch.int32, device=dev).view(-1, 1, 1, 1)

        def offsets(lengths, per_token):
            cum = [0]
            for n in lengths:
                cum.append(cum[-1] + n * per_token)
            return torch.tensor(cum, dtype=torch.int64, device=dev).view(-1, 1, 1, 1)

        B, hq, hkv, d, dv = sc.batch, sc.heads_q, sc.heads_kv, sc.head_dim_qk, sc.head_dim_v
        dense = dense_batch(sc)
        sq = max(sc.q_lens)
        skv = max(sc.kv_lens)
        q = tensor("q", per_input["q"], (B, hq, sq, d), (sq * hq * d, d, hq * d, 1))
        ragged_q = not (sc.is_uniform and min(sc.q_lens) > 0)
        if ragged_q:
            q.set_ragged_offset(tensor("off_q", offsets(sc.q_lens, hq * d), data_type=cudnn.data_type.INT64))
        kw = dict(q=q, attn_scale=sc.scale, generate_stats=self.writes_lse)
        left, right = cudnn_bounds(sc)
        if left is not None or right is not None:
            kw["diagonal_alignment"] = cudnn.diagonal_alignment.BOTTOM_RIGHT
        if left is not None:
            kw["diagonal_band_left_bound"] = left
        if right is not None:
            kw["diagonal_band_right_bound"] = right
        if sc.kv_layout == "paged":
            kw["k"] = tensor("k", per_input["k"])
            kw["v"] = tensor("v", per_input["v"])
            kw["paged_attention_k_table"] = tensor("table_k", per_input["table_k"], data_type=cudnn.data_type.INT32)
            kw["paged_attention_v_table"] = tensor("table_v", per_input["table_v"], data_type=cudnn.data_type.INT32)
            kw["paged_attention_max_seq_len_kv"] = skv
        else:
            kw["k"] = tensor("k", per_input["k"], (B, hkv, skv, d), (skv * hkv * d, d, hkv * d, 1))
            kw["v"] = tensor("v", per_input["v"], (B, hkv, skv, dv), (skv * hkv * dv, dv, hkv * dv, 1))
            if not dense:
                kw["k"].set_ragged_offset(tensor("off_k", offsets(sc.kv_lens, hkv * d), data_type=cudnn.data_type.INT64))
                kw["v"].set_ragged_offset(tensor("off_v", offsets(sc.kv_lens, hkv * dv), data_type=cudnn.data_type.INT64))
        if not dense:
            kw["use_padding_mask"] = True
            kw["seq_len_q"] = tensor("seq_q", i32(sc.q_lens), data_type=cudnn.data_type.INT32)
            kw["seq_len_kv"] = tensor("seq_kv", i32(sc.kv_lens), data_type=cudnn.data_type.INT32)
        if sc.sinks:
            kw["sink_token"] = tensor("sink", per_input["sink"])
        if fp8:
            one = torch.ones(1, 1, 1, 1, dtype=torch.float32, device=dev)
            for key, t in (("descale_q", per_input["descale_q"]), ("descale_k", per_input["descale_k"]),
                           ("descale_v", per_input["descale_v"]), ("scale_s", one), ("descale_s", one), ("scale_o", one)):
                kw[key] = tensor(key, t.view(1, 1, 1, 1))
            o, stats, amax_s, amax_o = g.sdpa_fp8(**_spelled_for(cudnn, "sdpa_fp8", kw))
            for key, amax in (("amax_s", amax_s), ("amax_o", amax_o)):
                amax.set_uid(UID[key]).set_output(False).set_dim((1, 1, 1, 1)).set_stride((1, 1, 1, 1)) \
                    .set_data_type(cudnn.data_type.FLOAT)
        else:
            o, stats = g.sdpa(name="sdpa", compute_data_type=cudnn.data_type.FLOAT, **_spelled_for(cudnn, "sdpa", kw))
        o.set_uid(UID["o"]).set_output(True).set_dim((B, hq, sq, dv)).set_stride((sq * hq * dv, dv, hq * dv, 1))
        o.set_data_type(dt[inputs.out.dtype])
        pack[UID["o"]] = per_input["o"]
        if ragged_q:
            o.set_ragged_offset(tensor("off_o", offsets(sc.q_lens, hq * dv), data_type=cudnn.data_type.INT64))
        if self.writes_lse:
            stats.set_uid(UID["stats"]).set_output(True).set_data_type(cudnn.data_type.FLOAT)
            stats.set_dim((B, hq, sq, 1)).set_stride((sq * hq, 1, hq, 1))
            pack[UID["stats"]] = per_input["stats"]
            if ragged_q:
                stats.set_ragged_offset(tensor("off_stats", offsets(sc.q_lens, hq), data_type=cudnn.data_type.INT64))
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        g.check_support()
        g.build_plans()
        workspace = torch.empty(max(1, g.get_workspace_size()), dtype=torch.uint8, device=dev)
        static = {uid: t for uid, t in pack.items() if uid not in {UID[k] for k in per_input}}
        return g, handle, workspace, static
