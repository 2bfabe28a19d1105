"""Scenario lint: does each scenario measure what it claims to?

Per scenario (names: solbench.core.suites.LINT_CHECKS):
- window / sinks / softcap: the feature does not bite. The fp32 reference without the feature, rounded to the
  output dtype, passes the verdict against the reference with it: a kernel that ignored it would pass. For
  softcap, also with tanh(x) replaced by x - x^3/3 (two FMAs for a MUFU op: it passes every
  softcap scenario whose scores stay far below the cap).
- fp16: fp16 inputs, where an fp16-accumulating MMA (twice the tensor rate of fp32 accumulation on some GPUs)
  would pass: Q K^T and P V with P in fp16 and each running sum rounded to fp16 every 16 terms (fp16_sums),
  on the probe at the scenario's own head dims (the sums over them are what rounds).
- constant: the outputs are near-constant (their std is under CONSTANT_STD_ATOLS x the dtype's atol), so a
  kernel writing one value would sit within a few tolerances of every element.
- working_set: the minimal bytes moved are under 2x the arch's L2: a cold-L2 time depends on the flush.
- sol_time: the roofline time is under SOL_FLOOR_US: the call is launch latency, not work.
window, sinks, softcap and fp16 (`feature_flags`) are what `solbench run` warns with (solbench.supervisor.bite).

The size checks are exact (solbench.core.roofline). The numeric ones run on a CPU, so they run on a probe: the
same scenario (regime, layout, dtype, mask, features, input profile) cut to PROBE_SEQUENCES of its sequences
(spread over their key counts, the longest and the shortest included; whole, so every row sees what it sees
in the full scenario), up to PROBE_HEADS_KV KV heads with up to PROBE_GROUP query heads each, head dims
PROBE_HEAD_DIM, and the reference of PROBE_ROWS rows of each sequence (evenly spaced, the last included).
About 5 s for a 182-scenario grid on two idle cores (more with fp16 scenarios). The input profiles set scores
in logits and draw V element-wise, so the probe's scores and outputs follow the full scenario's distribution at
every head dim.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from solbench.core.archspec import ArchSpec
from solbench.core.roofline import bound
from solbench.core.scenario import Scenario
from solbench.core.suites import Suite

SOL_FLOOR_US = 20.0
L2_MULTIPLE = 2
CONSTANT_STD_ATOLS = 2.0
PROBE_SEQUENCES = 4
PROBE_HEADS_KV = 1
PROBE_GROUP = 2
PROBE_HEAD_DIM = 16
PROBE_ROWS = 8
PROBE = (f"numeric checks on a probe: {PROBE_SEQUENCES} sequences spread over key counts, up to {PROBE_HEADS_KV} "
         f"KV heads x {PROBE_GROUP} query heads, head dim {PROBE_HEAD_DIM}, {PROBE_ROWS} rows a sequence; "
         "size checks exact")

# What a kernel that ignores each feature computes: the scenario without it (sinks_lse needs sinks to validate).
WITHOUT = {
    "window": lambda sc: replace(sc, window_left=-1, window_right=-1),
    "sinks": lambda sc: replace(sc, sinks=False, input_profile="default"),
    "softcap": lambda sc: replace(sc, softcap=0.0),
}
FEATURES = ("window", "sinks", "softcap", "fp16")
"""The checks of features that may not bite, in the order they are reported."""
FP16_CHUNK = 16
"""Terms an fp16-accumulating MMA sums before its running total is rounded (an m16n8k16 step's k)."""


@dataclass(frozen=True)
class Flag:
    """One lint finding."""

    scenario: str
    """Scenario id."""
    check: str
    """Which check (solbench.core.suites.LINT_CHECKS)."""
    detail: str
    """The numbers behind it."""
    excepted: str = ""
    """The suite's written reason when a [[lint_exception]] covers it, else ''."""


def lint_suite(suite: Suite, spec: ArchSpec, progress=None) -> list[Flag]:
    """Every flag of every scenario, with the suite's exceptions applied; progress(i, n, id) before each."""
    flags = []
    for i, sc in enumerate(suite.scenarios):
        if progress:
            progress(i, len(suite.scenarios), sc.id)
        for check, detail in size_flags(sc, spec) + numeric_flags(sc):
            reason = next((e.reason for e in suite.lint_exceptions if e.covers(sc.id, check)), "")
            flags.append(Flag(sc.id, check, detail, reason))
    return flags


def size_flags(sc: Scenario, spec: ArchSpec) -> list[tuple[str, str]]:
    """(check, detail) for working_set and sol_time on this arch."""
    b = bound(sc, spec)
    out = []
    if b.bytes < L2_MULTIPLE * spec.l2_bytes:
        out.append(("working_set", f"{b.bytes / 2**20:.0f} MiB moved < {L2_MULTIPLE}x L2 "
                                   f"({spec.l2_bytes / 2**20:.0f} MiB)"))
    if b.bound_ms * 1e3 < SOL_FLOOR_US:
        out.append(("sol_time", f"SOL {b.bound_ms * 1e3:.1f} us < {SOL_FLOOR_US:g} us on {spec.name}"))
    return out


def numeric_flags(sc: Scenario) -> list[tuple[str, str]]:
    """(check, detail) for constant and for each feature of the scenario that does not bite, on its probe."""
    from solbench.supervisor.verdict import TOLERANCES

    drawn = _draw(probe(sc))
    std, atol = float(drawn[2].std()), TOLERANCES[sc.dtype].atol
    constant = [("constant", f"output std {std:.3g} < {CONSTANT_STD_ATOLS:g} x atol {atol:g}")] \
        if std < CONSTANT_STD_ATOLS * atol else []
    return constant + feature_flags(sc, drawn)


def feature_flags(sc: Scenario, drawn=None) -> list[tuple[str, str]]:
    """(check, detail) for each feature of FEATURES the scenario turns on that does not bite on its probe
    (`drawn`: _draw(probe(sc)) when the caller has it)."""
    from solbench.core.tensors import torch_dtype
    from solbench.supervisor.reference import reference_rows

    if not any(has_feature(sc, check) for check in FEATURES):
        return []
    inp, tokens, ref_out, ref_lse = drawn or _draw(probe(sc))
    small, out = inp.scenario, []

    def passes(alt_out, alt_lse, ref=(ref_out, ref_lse)):
        from solbench.supervisor.verdict import judge

        return judge(alt_out.to(torch_dtype(sc.out_dtype)), alt_lse, *ref, sc.dtype)

    for check, without in WITHOUT.items():
        if not has_feature(sc, check):
            continue
        v = passes(*reference_rows(replace(inp, scenario=without(small)), tokens))
        if not v.status.is_failure:
            out.append((check, f"ignoring it passes the verdict (max |err| {v.error.max_abs:.3g}, "
                               f"worst row {v.error.row_max_mean_abs:.3g})"))
        elif check == "softcap":
            v = passes(*reference_rows(inp, tokens, cap_shape=cubic_tanh))
            if not v.status.is_failure:
                out.append((check, f"a cubic in place of its tanh passes the verdict (max |err| "
                                   f"{v.error.max_abs:.3g}): the scores stay far below the cap"))
    if has_feature(sc, "fp16"):  # at the scenario's head dims: the sums over them are what rounds
        inp, tokens, ref_out, ref_lse = _draw((replace(small, head_dim_qk=sc.head_dim_qk,
                                                       head_dim_v=sc.head_dim_v), tokens))
        v = passes(*reference_rows(inp, tokens, products=fp16_sums), (ref_out, ref_lse))
        if not v.status.is_failure:
            out.append(("fp16", f"fp16 accumulation passes the verdict (mean |err| {v.error.mean_abs:.3g}, "
                                f"{v.error.mean_abs / max(v.error.seed_mean_abs, 1e-30):.1f}x the seed's)"))
    return out


def _draw(probed):
    """(inputs, tokens, reference out, reference lse) of a probe: (scenario, tokens)."""
    from solbench.supervisor.inputs import make_inputs
    from solbench.supervisor.reference import reference_rows

    small, tokens = probed
    inp = make_inputs(small)
    return (inp, tokens, *reference_rows(inp, tokens))


def fp16_sums(a, b):
    """torch.bmm of a [B, M, K] and b [B, K, N] as an fp16-accumulating MMA computes it: operands in fp16,
    exact sums of FP16_CHUNK terms, the running total rounded to fp16 after each. To first order: each
    rounding is taken of the exact running sum (one cumulative sum, no loop over the chunks)."""
    import torch

    a, b = a.half().float(), b.half().float()
    pad = -a.shape[-1] % FP16_CHUNK
    a, b = torch.nn.functional.pad(a, (0, pad)), torch.nn.functional.pad(b, (0, 0, 0, pad))
    (batch, m, k), n = a.shape, b.shape[-1]
    parts = torch.einsum("bmcj,bcjn->bmcn", a.view(batch, m, k // FP16_CHUNK, FP16_CHUNK),
                         b.view(batch, k // FP16_CHUNK, FP16_CHUNK, n))
    sums = parts.cumsum(dim=2)
    return sums[:, :, -1] + (sums.half().float() - sums).sum(dim=2)


def cubic_tanh(x):
    """tanh's Taylor cubic: what a kernel saving the softcap's MUFU tanh would compute."""
    return x - x * x * x / 3


def has_feature(sc: Scenario, check: str) -> bool:
    return {"window": sc.window_left >= 0 or (sc.window_right >= 0 and not sc.causal),
            "sinks": sc.sinks, "softcap": sc.softcap > 0, "fp16": sc.dtype == "fp16"}[check]


def probe(sc: Scenario) -> tuple[Scenario, list[int]]:
    """The cut-down scenario the numeric checks run on, and the query rows (indices into its total_q) they read."""
    live = [b for b in range(sc.batch) if sc.q_lens[b] and sc.kv_lens[b]] or [0]
    by_keys = sorted(live, key=lambda b: (sc.kv_lens[b], b))
    picks = sorted({by_keys[i] for i in np.linspace(0, len(by_keys) - 1, PROBE_SEQUENCES).round().astype(int)})
    heads_kv = min(sc.heads_kv, PROBE_HEADS_KV)
    small = replace(sc, q_lens=tuple(sc.q_lens[b] for b in picks), kv_lens=tuple(sc.kv_lens[b] for b in picks),
                    heads_q=heads_kv * min(sc.group_size, PROBE_GROUP), heads_kv=heads_kv,
                    head_dim_qk=PROBE_HEAD_DIM, head_dim_v=PROBE_HEAD_DIM)
    starts = np.concatenate([[0], np.cumsum(small.q_lens)])
    tokens = [int(starts[i]) + int(r) for i, q in enumerate(small.q_lens) if q
              for r in np.unique(np.linspace(0, q - 1, PROBE_ROWS).round().astype(int))]
    return small, tokens
