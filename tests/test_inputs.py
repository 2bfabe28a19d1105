"""solbench.supervisor.inputs: deterministic per (scenario, trial), fresh per trial, laid out as documented."""

import numpy as np
import pytest
import torch

from solbench.core import masks
from solbench.supervisor.inputs import PROFILES, make_inputs, with_outputs
from solbench.core.tensors import poisoned
from solbench.core.scenario import MaskSpec, Scenario

TENSORS = ("q", "k", "v", "cu_seqlens_q", "cu_seqlens_kv", "kv_lens", "page_table", "sinks", "mask_bits",
           "q_descale", "k_descale", "v_descale", "out", "lse")


def scenario(**kw):
    base = dict(q_lens=(5, 0, 7), kv_lens=(9, 3, 20), heads_q=4, heads_kv=2, head_dim_qk=16, head_dim_v=8)
    base.update(kw)
    return Scenario(**base)


EVERYTHING = scenario(dtype="fp8_e4m3", descale="per_head", kv_layout="paged", page_size=4, sinks=True,
                      mask=MaskSpec(0.5))


def bits_of(t):
    """Raw bytes of a tensor, so NaN poison and fp8 compare exactly."""
    return t.contiguous().view(torch.uint8)


@pytest.mark.parametrize("sc", [scenario(), EVERYTHING], ids=["plain", "everything"])
def test_same_scenario_and_trial_give_identical_inputs(sc):
    a, b = make_inputs(sc, trial=3), make_inputs(sc, trial=3)
    for name in TENSORS:
        ta, tb = getattr(a, name), getattr(b, name)
        assert (ta is None) == (tb is None), name
        if ta is not None:
            assert ta.dtype == tb.dtype and torch.equal(bits_of(ta), bits_of(tb)), name


def test_trials_and_scenarios_differ():
    a, b = make_inputs(EVERYTHING, trial=0), make_inputs(EVERYTHING, trial=1)
    for name in ("q", "k", "v", "sinks", "page_table"):
        assert not torch.equal(bits_of(getattr(a, name)), bits_of(getattr(b, name))), name
    other = make_inputs(scenario(dtype="fp8_e4m3", descale="per_head", kv_layout="paged", page_size=4, sinks=True,
                                 mask=MaskSpec(0.5), tag="twin"))
    assert not torch.equal(bits_of(a.q), bits_of(other.q))


def test_offsets_and_lengths():
    sc = scenario()
    inp = make_inputs(sc)
    assert inp.cu_seqlens_q.tolist() == [0, 5, 5, 12] and inp.cu_seqlens_kv.tolist() == [0, 9, 12, 32]
    assert inp.kv_lens.tolist() == [9, 3, 20] and inp.cu_seqlens_q.dtype == torch.int32
    assert inp.q.shape == (12, 4, 16) and inp.k.shape == (32, 2, 16) and inp.v.shape == (32, 2, 8)
    assert inp.out.shape == (12, 4, 8) and inp.out.dtype == torch.bfloat16 and inp.lse.shape == (12, 4)


@pytest.mark.parametrize("page_size", [1, 4, 16])
def test_page_table_is_shuffled_unique_with_spare_pages(page_size):
    sc = scenario(kv_layout="paged", page_size=page_size, q_lens=(5, 0, 7, 2), kv_lens=(9, 3, 40, 0))
    inp = make_inputs(sc)
    pages = sc.pages_per_seq()
    used = torch.cat([inp.page_table[b, :n] for b, n in enumerate(pages)]).tolist()
    num_pages = inp.k.shape[0]
    assert len(used) == sum(pages) and len(set(used)) == len(used)  # every page at most once
    assert all(0 <= p < num_pages for p in used)
    assert num_pages > sum(pages)  # spare pages: the table is not a permutation of the pool
    assert used != sorted(used)  # shuffled, so a kernel that ignores the table reads the wrong keys
    assert inp.k.shape[1:] == (page_size, 2, 16) and inp.v.shape[1:] == (page_size, 2, 8)
    # sequence_kv gathers key j of b from page_table[b, j // page_size], slot j % page_size
    k, v = inp.sequence_kv(2, dequantize=False)
    for j in (0, page_size, 39):
        page = int(inp.page_table[2, j // page_size])
        assert torch.equal(k[j], inp.k[page, j % page_size]) and torch.equal(v[j], inp.v[page, j % page_size])
    assert k.shape == (40, 2, 16) and inp.sequence_kv(3)[0].shape == (0, 2, 16)


@pytest.mark.parametrize("descale,count", [("per_tensor", 1), ("per_head", 2)])
def test_fp8_descales_are_not_one_and_applied(descale, count):
    sc = scenario(dtype="fp8_e4m3", descale=descale)
    inp = make_inputs(sc)
    assert inp.q.dtype == inp.k.dtype == inp.v.dtype == torch.float8_e4m3fn
    assert inp.out.dtype == torch.bfloat16
    for t in (inp.q_descale, inp.k_descale, inp.v_descale):
        assert t.dtype == torch.float32 and t.shape == (count,)
        assert ((t - 1).abs() > 1e-3).all()
    k_raw, _ = inp.sequence_kv(0, dequantize=False)
    k, _ = inp.sequence_kv(0)
    torch.testing.assert_close(k, k_raw.float() * inp.k_descale.view(1, -1, 1))
    q = inp.sequence_q(2)
    per_q_head = inp.q_descale.repeat_interleave(2) if count > 1 else inp.q_descale.expand(4)
    torch.testing.assert_close(q, inp.sequence_q(2, dequantize=False).float() * per_q_head.view(1, -1, 1))


def test_outputs_start_poisoned_and_poison_is_not_an_ordinary_nan():
    inp = make_inputs(scenario(dtype="fp16"))
    assert poisoned(inp.out).all() and poisoned(inp.lse).all()
    inp.out[0].zero_()
    inp.lse[1, 2] = float("nan")  # a NaN the kernel computed is not "unwritten"
    assert not poisoned(inp.out)[0].any() and poisoned(inp.out)[1:].all()
    assert not poisoned(inp.lse)[1, 2] and poisoned(inp.lse).sum() == inp.lse.numel() - 1
    fresh = with_outputs(inp)
    assert poisoned(fresh.out).all() and fresh.out.data_ptr() != inp.out.data_ptr()
    inp.poison()
    assert poisoned(inp.out).all()


def test_mask_bits_are_the_generator_output():
    sc = scenario(mask=MaskSpec(0.3, "iid_empty_rows", seed=8))
    inp = make_inputs(sc)
    assert inp.mask_bits.dtype == torch.int32
    assert np.array_equal(inp.mask_bits.numpy().view(np.uint32), masks.mask_bits(sc))
    assert make_inputs(scenario()).mask_bits is None


@pytest.mark.parametrize("profile", ["default", "large_logits"])
@pytest.mark.parametrize("dtype", ["bf16", "fp8_e4m3"])
def test_logit_std_is_in_a_sane_range(profile, dtype):
    sc = scenario(q_lens=(64,), kv_lens=(64,), heads_q=4, heads_kv=4, head_dim_qk=64, head_dim_v=64,
                  dtype=dtype, descale="per_tensor" if dtype == "fp8_e4m3" else "none", input_profile=profile)
    inp = make_inputs(sc)
    q, (k, _) = inp.sequence_q(0), inp.sequence_kv(0)
    logits = torch.einsum("ihd,jhd->hij", q, k) * sc.scale
    want = PROFILES[profile].logit_std
    assert 0.7 * want < logits.std().item() < 1.4 * want


@pytest.mark.parametrize("profile", ["sinks_negative", "sinks_positive"])
def test_sink_profiles_shift_the_sinks(profile):
    inp = make_inputs(scenario(sinks=True, input_profile=profile, heads_q=16, heads_kv=4))
    assert inp.sinks.dtype == torch.float32 and inp.sinks.shape == (16,)
    assert abs(inp.sinks.mean().item() - PROFILES[profile].sink_offset) < 2.0


@pytest.mark.parametrize("sc", [scenario(), EVERYTHING], ids=["plain", "everything"])
def test_nbytes_counts_every_tensor(sc):
    inp = make_inputs(sc)
    present = [getattr(inp, name) for name in TENSORS if getattr(inp, name) is not None]
    assert inp.nbytes == sum(t.numel() * t.element_size() for t in present) > 0


def test_every_scenario_profile_has_its_drawing_rule():
    from solbench.core.scenario import INPUT_PROFILES

    assert set(PROFILES) == set(INPUT_PROFILES)


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp8_e4m3"])
def test_high_logits_reach_about_40_over_a_spread_bulk(dtype):
    """Each (query, head) has its own offset U(0, 40) over scores of std 4: large logits, and hardly a key block
    of a long row far enough below the row's max to be dropped (std 11 made half of them negligible)."""
    sc = Scenario(q_lens=(64,), kv_lens=(4096,), heads_q=2, heads_kv=2, causal=False, input_profile="high_logits",
                  dtype=dtype, descale="per_tensor" if dtype == "fp8_e4m3" else "none")
    inp = make_inputs(sc)
    logits = torch.einsum("ihd,jhd->hij", inp.sequence_q(0), inp.sequence_kv(0)[0]) * sc.scale
    row_max = logits.amax(dim=-1)
    assert 2.0 < (logits - logits.mean(dim=-1, keepdim=True)).std().item() < 4.5
    assert 30 < row_max.max().item() < 60 and row_max.min().item() < 20
    blocks = logits.unflatten(-1, (-1, 128)).amax(dim=-1)
    assert (blocks < row_max[..., None] - 12).float().mean() < 0.005  # hardly a 128-key block 12 below its max


@pytest.mark.parametrize("dtype", ["bf16", "fp8_e4m3"])
def test_peaked_rows_range_from_flat_to_far_above_the_rest(dtype):
    """Outlier keys carry a massive channel; each (query, head) lifts them by its own U(0, 16)."""
    sc = Scenario(q_lens=(256,), kv_lens=(65536,), heads_q=2, heads_kv=1, causal=False, dtype=dtype,
                  descale="per_head" if dtype == "fp8_e4m3" else "none", input_profile="peaked")
    inp = make_inputs(sc)
    q, (k, _) = inp.sequence_q(0), inp.sequence_kv(0)
    hot = k[:, 0, -1].abs() > 8  # the massive channel
    assert 4 <= int(hot.sum()) <= 40  # ~65536 / 4096
    assert k[hot].norm(dim=-1).mean() > 2.5 * k[~hot].norm(dim=-1).mean()
    logits = torch.einsum("ihd,jhd->hij", q, k) * sc.scale
    lift = logits[..., hot].amax(dim=-1) - logits[..., ~hot].amax(dim=-1)  # peak over the rest's max, per row
    assert lift.min() < 0 < 8 < lift.max()
    assert inp.q.dtype == inp.k.dtype and make_inputs(sc).k.view(torch.uint8).equal(inp.k.view(torch.uint8))


def test_sinks_lse_sit_on_the_rows_lse_scale():
    from solbench.supervisor.reference import reference

    sc = Scenario(q_lens=(1,) * 16, kv_lens=tuple(range(500, 8500, 500)), heads_q=16, heads_kv=2, regime="decode",
                  sinks=True, input_profile="sinks_lse")
    inp = make_inputs(sc)
    _, lse = reference(inp)
    gap = inp.sinks[None, :] - lse  # the sink's logit against each row's LSE
    assert gap.abs().median() < 3 and gap.min() < 0 < gap.max()
    assert inp.sinks.equal(inp.sinks.to(torch.bfloat16).float())


def test_sending_a_cpu_tensor_to_a_worker_never_moves_it():
    """Sending a CPU tensor to a worker moves one that is not in shared memory to a new buffer and frees the
    old one; the supervisor computes the reference from trial 0 while threads send those very tensors to the
    comparators, and in CI that reference once read a freed buffer and rejected an honest kernel. Every
    tensor a worker is given is made in shared memory, so the send leaves its buffer where it is."""
    import random
    from dataclasses import fields

    from solbench.gpu import ipc
    from solbench.supervisor.audit import TimedCopies
    from solbench.supervisor.inputs import clone_inputs

    sc = EVERYTHING
    trial0 = make_inputs(sc, 0)
    sets = [trial0, with_outputs(trial0), clone_inputs(trial0),
            *TimedCopies.make(sc, 2, "cpu", b"", audited=True, rng=random.Random(0)).copies]
    tensors = [t for s in sets for f in fields(s) if isinstance(t := getattr(s, f.name), torch.Tensor)]
    assert len(tensors) > 30
    before = [t.data_ptr() for t in tensors]
    for t in tensors:
        ipc.dumps(t, 0)[1].close()  # as the workers' pipes send it (the fd of its shared memory)
    assert [t.data_ptr() for t in tensors] == before
