"""Scenario invariants name the offending field; ids are stable (pinned by a snapshot of every suite)."""

from pathlib import Path

import pytest

from solbench.core.errors import ScenarioError
from solbench.core.scenario import MaskSpec, Scenario
from solbench.core.suites import available_suites, load_suite

SNAPSHOT = Path(__file__).parent / "snapshots" / "scenario_ids.txt"


def make(**kw):
    base = dict(q_lens=(16,), kv_lens=(16,), heads_q=4, heads_kv=2)
    base.update(kw)
    return Scenario(**base)


@pytest.mark.parametrize("kw, field", [
    (dict(heads_kv=3), "heads_kv"),
    (dict(kv_lens=(16, 3)), "kv_lens"),
    (dict(q_lens=(-1,), kv_lens=(4,)), "q_lens/kv_lens"),
    (dict(q_lens=(0,), kv_lens=(4,)), "q_lens"),
    (dict(dtype="fp32"), "dtype"),
    (dict(dtype="fp8_e4m3"), "descale"),
    (dict(descale="per_head"), "descale"),
    (dict(kv_layout="paged"), "page_size"),
    (dict(page_size=16), "page_size"),
    (dict(regime="decode"), "q_lens"),
    (dict(regime="chunked_prefill", q_lens=(8,), kv_lens=(4,)), "kv_lens"),
    (dict(window_left=-2), "window_left/window_right"),
    (dict(window_right=3), "window_right"),
    (dict(softcap=-1.0), "softcap"),
    (dict(softmax_scale=0.0), "softmax_scale"),
    (dict(head_dim_qk=100), "head_dim_qk/head_dim_v"),
    (dict(input_profile="sinks_negative"), "input_profile"),
    (dict(tag="a-b"), "tag"),
])
def test_invariants_name_the_field(kw, field):
    with pytest.raises(ScenarioError) as err:
        make(**kw)
    assert str(err.value).startswith(field + ":")


def test_mask_spec_validated():
    with pytest.raises(ScenarioError, match="mask.density"):
        MaskSpec(density=0.0)
    with pytest.raises(ScenarioError, match="mask.pattern"):
        MaskSpec(density=0.5, pattern="blocky")


def test_id_is_readable():
    sc = Scenario(q_lens=(4096,) * 4, kv_lens=(4096,) * 4, heads_q=32, heads_kv=8)
    assert sc.id == "prefill-b4-sq4096-skv4096-hq32-hkv8-d128-bf16-causal"
    ragged = make(q_lens=(3, 5), kv_lens=(3, 9), kv_layout="paged", page_size=16, sinks=True, window_left=7)
    assert ragged.id.startswith("prefill-n2-tq8-tkv12-L")
    assert ragged.id.endswith("-hq4-hkv2-d128-bf16-page16-causal-wl7-sink")


def test_round_trip_through_dict():
    sc = make(mask=MaskSpec(0.3, "iid_empty_rows", 5), dtype="fp8_e4m3", descale="per_head", softmax_scale=0.1)
    again = Scenario.from_dict(sc.to_dict())
    assert again == sc and again.id == sc.id
    with pytest.raises(ScenarioError, match="unknown scenario field"):
        Scenario.from_dict({**sc.to_dict(), "head_size": 64})


def test_ids_pinned_by_snapshot():
    """Changing an id re-keys stored results and leaderboards: update the snapshot only on purpose."""
    current = []
    for name in available_suites():
        current += [f"{name} {sc.id}" for sc in load_suite(name).scenarios]
    assert current == SNAPSHOT.read_text().splitlines()
