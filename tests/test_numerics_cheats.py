"""The error budget against numerical shortcuts, on a CPU: the planted cheats of reference_kernels/adversarial/python
fail where they apply, judged directly (inputs, the fp32 reference, the verdict), on the hopper grid's variants cut
to CPU size (tests/small_scenarios.py), while honest kernels pass: one that rounds P to the input dtype before P V
(what FA2/FA3 do), and reference_kernels/torch_attention.py on the cut scenarios of every shipped suite."""

import pytest

torch = pytest.importorskip("torch")

from solbench.core.model import Status  # noqa: E402
from solbench.core.scenario import Scenario  # noqa: E402
from solbench.core.suites import load_suite  # noqa: E402
from solbench.sandbox.impls import PythonImpl  # noqa: E402
from solbench.supervisor.inputs import clone_inputs, make_inputs  # noqa: E402
from solbench.supervisor.reference import reference  # noqa: E402
from solbench.supervisor.verdict import judge  # noqa: E402
from tests.small_scenarios import LONG_ROWS, cut, small_scenarios  # noqa: E402
from tests.test_trust_cpu import CORPUS  # noqa: E402

HONEST = CORPUS.parents[1] / "torch_attention.py"
HOPPER_CUTS = small_scenarios(("hopper",))

FP16 = [Scenario(q_lens=(256,), kv_lens=(256,), heads_q=4, heads_kv=2, dtype="fp16", causal=False, input_profile="plain"),
        Scenario(q_lens=(1, 1), kv_lens=(1024, 700), heads_q=4, heads_kv=1, dtype="fp16", regime="decode",
                 input_profile="plain")]
"""Drawn `plain` (scores of std 2): where fp16 accumulation stays inside every element's tolerance, so only the
budget catches it. A scenario that names no profile draws high logits for fp16, where the element rule catches
it too (tests/test_bite.py)."""


def _verdict(forward, sc):
    inp = make_inputs(sc)
    ref_out, ref_lse = reference(inp)
    mine = clone_inputs(inp)
    forward(mine)
    return judge(mine.out, mine.lse, ref_out, ref_lse, sc.dtype)


@pytest.mark.parametrize("sc", FP16, ids=lambda s: s.id)
def test_fp16_accumulation_fails_the_budget_on_fp16(sc):
    cheat = PythonImpl(str(CORPUS / "fp16_accumulation.py")).module.forward
    v = _verdict(cheat, sc)
    assert v.status is Status.MISMATCH and "seed" in v.reason, (v.reason, v.error)
    assert v.error.frac_outside_tol == 0  # the element rule alone would have passed it


@pytest.mark.parametrize("sc", FP16, ids=lambda s: s.id)
def test_the_same_kernel_in_fp32_passes(sc):
    """The cheat's honest path (fp32 sums) on the same scenarios and inputs: the budget is not tripped by the
    kernel's structure, only by its fp16 sums."""
    import dataclasses

    cheat = PythonImpl(str(CORPUS / "fp16_accumulation.py")).module.forward
    bf16 = dataclasses.replace(sc, dtype="bf16")
    assert _verdict(cheat, bf16).status is Status.PASSED


def _p_rounded(inp):
    """An honest FA2/FA3-style kernel: fp32 scores and sums, P rounded to the input dtype before P V."""
    sc = inp.scenario
    group = sc.heads_q // sc.heads_kv
    cu = inp.cu_seqlens_q.tolist()
    for b in range(sc.batch):
        s0, s1 = cu[b], cu[b + 1]
        q = inp.sequence_q(b)
        k, v = (t.repeat_interleave(group, dim=1) for t in inp.sequence_kv(b))
        s = torch.einsum("nhd,khd->hnk", q, k) * sc.scale
        m = s.amax(dim=-1, keepdim=True)
        p = torch.exp(s - m)
        l = p.sum(dim=-1)
        o = torch.einsum("hnk,khd->hnd", p.to(inp.q.dtype).float(), v) / l[..., None]
        inp.out[s0:s1] = o.permute(1, 0, 2).to(inp.out.dtype)
        inp.lse[s0:s1] = (m.squeeze(-1) + torch.log(l)).permute(1, 0)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("sc", FP16, ids=lambda s: s.id)
def test_an_honest_kernel_that_rounds_p_passes(sc, dtype):
    import dataclasses

    v = _verdict(_p_rounded, dataclasses.replace(sc, dtype=dtype))
    assert v.status is Status.PASSED, v.reason
    assert v.error.mean_abs < 3 * v.error.seed_mean_abs


SINKS = Scenario(q_lens=(1, 1, 1), kv_lens=(40, 300, 2000), heads_q=8, heads_kv=2, regime="decode", sinks=True)


def test_ignoring_sinks_fails_where_the_sinks_carry_mass():
    """Sinks ~N(0, 1) (the default profile) against row LSEs of ~6-10: the 40-key row moves by a few tenths of a
    percent up to several percent, far above the seed's bf16 rounding (its worst row is >10x the seed's)."""
    cheat = PythonImpl(str(CORPUS / "ignores_sinks.py")).module.forward
    v = _verdict(cheat, SINKS)
    assert v.status is Status.MISMATCH, (v.reason, v.error)
    assert v.error.row_max_mean_abs > 10 * v.error.seed_row_max_mean_abs
    honest = PythonImpl(str(CORPUS.parents[1] / "torch_attention.py")).module.forward
    assert _verdict(honest, SINKS).status is Status.PASSED


def _cheat(name: str):
    return PythonImpl(str(CORPUS / name)).module.forward


@pytest.mark.slow
def test_honest_candidates_pass_the_small_scenarios_of_every_suite():
    honest = PythonImpl(str(HONEST)).module.forward
    wrong = [(sc.id, v.reason) for sc in small_scenarios() if (v := _verdict(honest, sc)).status is not Status.PASSED]
    assert not wrong, wrong


@pytest.mark.parametrize("name, applies", [
    ("ignores_sinks.py", lambda sc: sc.sinks),
    ("no_max_subtraction.py", lambda sc: sc.input_profile == "high_logits"),
    ("fp16_accumulation.py", lambda sc: sc.dtype == "fp16"),
])
def test_each_numerics_cheat_fails_on_every_grid_variant_it_applies_to(name, applies):
    """Sinks on the rows' LSE scale (sinks_lse), scores up to ~40 (high_logits) and fp16 rounding each make their
    cheat fail in every regime of the hopper grid where the variant appears, cut to CPU size."""
    chosen = [sc for sc in HOPPER_CUTS if applies(sc)]
    assert len(chosen) >= 20
    passed = [sc.id for sc in chosen if not _verdict(_cheat(name), sc).status.is_failure]
    assert not passed, passed


PEAKED = {}
for _sc in load_suite("hopper").scenarios:  # one per (head dims, dtype) of the window-free peaked variants
    if _sc.input_profile in ("peaked", "sinks_lse") and _sc.window_left < 0 and _sc.causal:
        PEAKED.setdefault((_sc.head_dim_qk, _sc.head_dim_v, _sc.dtype), cut(_sc, LONG_ROWS))


@pytest.mark.parametrize("sc", PEAKED.values(), ids=lambda s: s.id)
def test_skipping_blocks_far_below_the_peak_fails_on_long_peaked_rows(sc):
    """Outlier keys lift some rows far above the rest, which keeps a share of the mass over 16k keys: dropping the
    blocks under the peak by more than e^8 fails; the same scaffold with the honest softmax passes."""
    v = _verdict(_cheat("skips_blocks.py"), sc)
    assert v.status is Status.MISMATCH, (v.reason, v.error)
    assert _verdict(_cheat("_dense.py"), sc).status is Status.PASSED


def test_no_max_subtraction_overflows_on_peaked_rows_and_passes_flat_ones():
    sc = next(iter(PEAKED.values()))
    assert _verdict(_cheat("no_max_subtraction.py"), sc).status is Status.NONFINITE
    flat = Scenario(q_lens=(64,), kv_lens=(64,), heads_q=4, heads_kv=2, dtype="fp16",
                    input_profile="plain")  # scores ~N(0, 2): under 11
    assert _verdict(_cheat("no_max_subtraction.py"), flat).status is Status.PASSED


def test_a_cubic_softcap_fails_where_the_scores_reach_the_cap():
    """A cubic in place of the softcap's tanh passed every softcap scenario whose scores stay far below the
    cap (`solbench lint` flags those, and the shipped suites say why they keep them); on the high_logits ones, whose
    top scores reach the cap's curve, it fails in every suite."""
    chosen = [sc for sc in small_scenarios() if sc.softcap and sc.input_profile == "high_logits"]
    assert len(chosen) >= 12
    passed = [sc.id for sc in chosen if not _verdict(_cheat("cubic_softcap.py"), sc).status.is_failure]
    assert not passed, passed


HIGH_LOGITS = {}
for _sc in load_suite("hopper").scenarios:  # one per (head dims, dtype) of the window- and cap-free high_logits ones
    if _sc.input_profile == "high_logits" and _sc.window_left < 0 and _sc.causal and not _sc.softcap:
        HIGH_LOGITS.setdefault((_sc.head_dim_qk, _sc.dtype), cut(_sc, LONG_ROWS))


@pytest.mark.parametrize("sc", HIGH_LOGITS.values(), ids=lambda s: s.id)
def test_no_block_of_a_long_high_logits_row_is_negligible(sc):
    """Scores of std 11 made half of a long row's key blocks lie 12 below its max, so dropping them passed
    (skips_far_blocks.py); offset rows over a bulk of std 4 leave hardly any to drop (under 0.1 %; with a softcap
    the profile keeps std 11, the README's limit)."""
    cheat = PythonImpl(str(CORPUS / "skips_far_blocks.py")).module
    v = _verdict(cheat.forward, sc)
    assert cheat.skipped[1] > 0 and cheat.skipped[0] < 0.001 * cheat.skipped[1], cheat.skipped
    assert v.status is Status.PASSED, v.reason
