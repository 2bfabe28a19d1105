"""The Python candidates in reference_kernels/: the correct one matches the reference on every
feature; the planted window bug is caught on exactly the scenarios with a left window."""

import importlib.util
from pathlib import Path

import pytest
import torch

from solbench.supervisor.inputs import make_inputs

from solbench.core.tensors import poisoned
from solbench.supervisor.reference import reference
from solbench.core.scenario import MaskSpec, Scenario

KERNELS = Path(__file__).resolve().parents[1] / "reference_kernels"


def load(name):
    spec = importlib.util.spec_from_file_location(f"candidate_{name}", KERNELS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sc(**kw) -> Scenario:
    base = dict(q_lens=(17, 5), kv_lens=(40, 23), heads_q=4, heads_kv=2, head_dim_qk=32, head_dim_v=32)
    base.update(kw)
    return Scenario(**base)


NO_WINDOW = {
    "plain_full": sc(causal=False),
    "causal": sc(),
    "causal_q_gt_kv": sc(q_lens=(30, 4), kv_lens=(9, 4)),
    "window_right_only": sc(causal=False, window_right=3),
    "softcap_large_logits": sc(softcap=8.0, input_profile="large_logits"),
    "sinks_positive": sc(sinks=True, input_profile="sinks_positive"),
    "sinks_negative": sc(sinks=True, input_profile="sinks_negative"),
    "mask_empty_rows": sc(causal=False, mask=MaskSpec(0.5, "iid_empty_rows")),
    "mask_causal": sc(mask=MaskSpec(0.3, seed=2)),
    "paged_1": sc(kv_layout="paged", page_size=1),
    "paged_16_partial": sc(kv_layout="paged", page_size=16),
    "empty_sequences": sc(q_lens=(0, 6, 3, 0), kv_lens=(5, 0, 12, 0)),
    "mqa": sc(heads_q=8, heads_kv=1),
    "gqa_group3": sc(heads_q=6, heads_kv=2),
    "dqk_ne_dv": sc(head_dim_qk=64, head_dim_v=16),
    "fp8_per_tensor": sc(dtype="fp8_e4m3", descale="per_tensor"),
    "fp8_per_head": sc(dtype="fp8_e4m3", descale="per_head", heads_q=6, heads_kv=3),
    "fp16": sc(dtype="fp16"),
    "explicit_scale": sc(softmax_scale=0.07, causal=False),
    "decode_paged": sc(regime="decode", q_lens=(1, 1, 1), kv_lens=(50, 1, 0), kv_layout="paged", page_size=16),
}
WINDOW = {
    "window_left_causal": sc(window_left=5),
    "window_zero_causal": sc(window_left=0),
    "window_left_only_full": sc(causal=False, window_left=4),
    "window_left_right": sc(causal=False, window_left=3, window_right=2),
    "window_decode": sc(regime="decode", q_lens=(1, 1), kv_lens=(60, 30), window_left=8),
    "window_everything": sc(dtype="fp8_e4m3", descale="per_head", kv_layout="paged", page_size=4, window_left=6,
                            softcap=10.0, sinks=True, mask=MaskSpec(0.7, seed=1), heads_q=6, heads_kv=2),
}
ATOL = {torch.bfloat16: 2e-2, torch.float16: 2e-3}


def run(module, scenario):
    """(candidate's inputs after it ran, reference out, reference lse)."""
    inp = make_inputs(scenario, trial=5)
    want_out, want_lse = reference(inp)
    module.forward(inp)
    return inp, want_out, want_lse


def agrees(inp, want_out, want_lse) -> bool:
    """The verdict these tests use: every element written, out within output-dtype rounding, lse
    within fp32 rounding, and -inf exactly where the reference has it."""
    if poisoned(inp.out).any() or poisoned(inp.lse).any() or inp.out.isnan().any() or inp.lse.isnan().any():
        return False
    atol = ATOL[inp.out.dtype]
    if not torch.allclose(inp.out.float(), want_out, atol=atol, rtol=atol):
        return False
    empty = torch.isinf(want_lse)
    if not torch.equal(torch.isinf(inp.lse), empty):
        return False
    return torch.allclose(inp.lse[~empty], want_lse[~empty], atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("name", sorted(NO_WINDOW) + sorted(WINDOW))
def test_torch_attention_matches_reference(name):
    inp, want_out, want_lse = run(load("torch_attention"), {**NO_WINDOW, **WINDOW}[name])
    assert agrees(inp, want_out, want_lse)
    # Tighter than the verdict: the output is the reference rounded to its dtype, give or take one step.
    torch.testing.assert_close(inp.out.float(), want_out.to(inp.out.dtype).float(), atol=ATOL[inp.out.dtype] / 4, rtol=1e-2)


@pytest.mark.parametrize("name", sorted(NO_WINDOW))
def test_wrong_window_is_right_without_a_left_window(name):
    inp, want_out, want_lse = run(load("torch_attention_wrong_window"), NO_WINDOW[name])
    assert agrees(inp, want_out, want_lse)


@pytest.mark.parametrize("name", sorted(WINDOW))
def test_wrong_window_is_caught_on_window_scenarios(name):
    inp, want_out, want_lse = run(load("torch_attention_wrong_window"), WINDOW[name])
    assert not agrees(inp, want_out, want_lse)


def test_torch_attention_writes_lse_and_opts_in():
    module = load("torch_attention")
    assert getattr(module, "WRITES_LSE", True)
