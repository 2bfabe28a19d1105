"""Baseline registry, supports() matrices per suite, coverage and the `solbench baselines` command (CPU)."""

import json
import re

import pytest

from solbench.front import cli
from solbench.baselines import REGISTRY, claims, get_adapter, get_adapter_class, resolve_baselines
from solbench.baselines.base import AdapterBase, Support, sm_of
from solbench.baselines.coverage import coverage
from solbench.core.errors import ConfigError, MissingDependencyError
from solbench.core.scenario import MaskSpec, Scenario
from solbench.core.suites import load_suite

NAMES = ("vllm-fa3", "fa4", "cudnn", "torch-cudnn", "flashinfer-fa2", "flashinfer-fa3", "sdpa-flash", "sdpa-efficient", "flex", "fa3-fwd")


def sc(**kw):
    base = dict(q_lens=(256, 100), kv_lens=(256, 100), heads_q=8, heads_kv=2)
    base.update(kw)
    return Scenario(**base)


# Representative scenarios -> which baselines claim them on an H200 (fa3: the pinned fa3-fwd build,
# whose flags are assumed when no FA3 is installed here).
MATRIX = {
    # sc() is GQA (8/2): torch's efficient backend has no GQA kernel, hence its absence from most rows.
    "bf16 causal ragged": (sc(), set(NAMES) - {"sdpa-efficient"}),
    "bf16 causal ragged, MHA": (sc(heads_kv=8), set(NAMES)),
    "fp16 (fa3-fwd has none)": (sc(dtype="fp16"), set(NAMES) - {"fa3-fwd", "sdpa-efficient"}),
    "sliding window": (sc(window_left=127), set(NAMES) - {"fa3-fwd", "sdpa-flash", "sdpa-efficient"}),
    "softcap": (sc(softcap=30.0), {"fa3-fwd", "fa4", "flashinfer-fa2", "flashinfer-fa3", "flex"}),
    "sinks, contiguous": (sc(sinks=True), {"fa4", "cudnn", "flex"}),
    "sinks, paged": (sc(sinks=True, kv_layout="paged", page_size=16), {"fa4", "cudnn", "flashinfer-fa2", "flashinfer-fa3", "flex"}),
    # cuDNN 9.19 left output unwritten on every GQA decode of the real suite on the H200.
    "paged 16 decode": (sc(q_lens=(1, 1), kv_lens=(700, 33), regime="decode", kv_layout="paged", page_size=16),
                        set(NAMES) - {"fa3-fwd", "cudnn", "sdpa-efficient"}),
    "paged 16 decode, MHA": (sc(q_lens=(1, 1), kv_lens=(700, 33), heads_kv=8, regime="decode", kv_layout="paged",
                                page_size=16), set(NAMES) - {"fa3-fwd"}),
    # cuDNN 9.19 proposed no plan for decode with a sink on the H200 (hopper, MHA).
    "paged 16 decode, MHA, sinks": (sc(q_lens=(1, 1), kv_lens=(700, 33), heads_kv=8, regime="decode",
                                      kv_layout="paged", page_size=16, sinks=True),
                                   {"fa4", "flashinfer-fa2", "flashinfer-fa3", "flex"}),
    "chunked prefill (q < kv)": (sc(q_lens=(64, 32), kv_lens=(300, 32), regime="chunked_prefill"),
                                 set(NAMES) - {"sdpa-flash", "sdpa-efficient"}),
    # cuDNN 9.19 proposed no fp8 forward plan on the H200 ("only supported on Blackwell and newer").
    "fp8 per tensor": (sc(dtype="fp8_e4m3", descale="per_tensor"), {"fa3-fwd"}),
    "fp8 per tensor, sinks": (sc(dtype="fp8_e4m3", descale="per_tensor", sinks=True), set()),
    "fp8 per head": (sc(dtype="fp8_e4m3", descale="per_head"), {"fa3-fwd"}),
    "custom mask": (sc(causal=False, mask=MaskSpec(0.25)), {"torch-cudnn", "flashinfer-fa2", "flex"}),
    "custom mask, MHA": (sc(causal=False, heads_kv=8, mask=MaskSpec(0.25)), {"torch-cudnn", "sdpa-efficient",
                                                                            "flashinfer-fa2", "flex"}),
    "q > kv causal (empty rows)": (sc(q_lens=(64,), kv_lens=(40,)), {"fa3-fwd", "fa4", "flex"}),
    "head dim 192/128": (sc(head_dim_qk=192, head_dim_v=128), {"fa3-fwd", "fa4", "cudnn", "torch-cudnn", "flashinfer-fa3",
                                                               "flex"}),
}


@pytest.fixture(autouse=True)
def _assume_pinned_fa3(monkeypatch):
    """Support answers must not depend on what happens to be installed on the test machine."""
    from solbench.baselines import fa3

    monkeypatch.setattr(fa3, "build_flags", lambda: dict(fa3.ASSUMED_FLAGS))


@pytest.mark.parametrize("case", list(MATRIX), ids=list(MATRIX))
def test_supports_matrix_h200(case):
    scenario, expected = MATRIX[case]
    claimed = {name for name in NAMES if claims(name, scenario, "h200").ok}
    vllm = set() if scenario.mask is not None else {"vllm-fa3"}  # vLLM's FA3 claims all but custom bitmasks here
    assert claimed == expected | vllm


def test_every_refusal_has_a_reason():
    for name in ("smoke", "edge", "hopper", "fa3-h2h", "rtx3080-mask", "real", "blackwell"):
        suite = load_suite(name)
        for scenario in suite.scenarios:
            for baseline in NAMES:
                answer = get_adapter_class(baseline).supports(scenario, suite.arch or "h200")
                assert isinstance(answer, Support)
                assert answer.ok or answer.reason, (name, scenario.id, baseline)


def test_arch_limits():
    s = sc()
    assert not get_adapter_class("fa3-fwd").supports(s, "b200").ok
    assert get_adapter_class("fa4").supports(s, "b200").ok
    assert get_adapter_class("fa4").supports(sc(dtype="fp8_e4m3", descale="per_head"), "b200").ok
    assert not get_adapter_class("flashinfer-fa3").supports(s, "rtx3080").ok
    assert "cpu" in get_adapter_class("flex").supports(s, "cpu").reason
    assert sm_of("sm_90a") == 90 and sm_of("h200") == 90 and sm_of("sm_100") == 100 and sm_of("nope") == -1


def test_fa3_paged_claims_follow_the_tma_rule():
    fa3 = get_adapter_class("fa3-fwd")
    long_causal = sc(q_lens=(1024, 512), kv_lens=(1024, 512), kv_layout="paged", page_size=128)
    assert fa3.supports(long_causal, "h200").ok
    reason = fa3.supports(sc(kv_layout="paged", page_size=64), "h200").reason
    assert "TMA" in reason and "64" in reason


def test_fa3_full_build_claims_what_fa3_fwd_cannot(monkeypatch):
    from solbench.baselines import fa3

    monkeypatch.setattr(fa3, "build_flags", lambda: {})
    cls = get_adapter_class("fa3-fwd")
    for s in (sc(dtype="fp16"), sc(window_left=127), sc(kv_layout="paged", page_size=16)):
        assert cls.supports(s, "h200").ok


def test_bind_refuses_what_supports_declines():
    pytest.importorskip("torch")
    from solbench.baselines.base import UnsupportedScenario, device_arch
    from solbench.supervisor.inputs import make_inputs

    assert device_arch("cpu") is None
    scenario = sc(softcap=30.0)
    adapter = get_adapter_class("sdpa-flash")(device="cpu", arch="h200")
    with pytest.raises(UnsupportedScenario, match="sdpa-flash does not claim .*no softcap"):
        adapter.bind(make_inputs(scenario))


# --- registry -------------------------------------------------------------------------------------


def test_registry_names_and_classes():
    assert tuple(REGISTRY) == NAMES
    for name in NAMES:
        cls = get_adapter_class(name)
        assert cls.name == name and issubclass(cls, AdapterBase) and cls.package and cls.label


def test_unknown_baseline_lists_known_names():
    with pytest.raises(ConfigError, match="unknown baseline.*nope.*known: vllm-fa3, fa4"):
        resolve_baselines(("nope",))


def test_the_old_fa3_name_points_to_the_new_ones():
    with pytest.raises(ConfigError, match="'fa3' is now 'fa3-fwd'.*vllm-fa3"):
        resolve_baselines(("fa3",))


def test_missing_explicit_baseline_names_the_extra(monkeypatch):
    cls = get_adapter_class("fa3-fwd")
    monkeypatch.setattr(cls, "found_module", classmethod(lambda c: None))
    with pytest.raises(MissingDependencyError, match=r'pip install "solbench\[fa3\]"'):
        resolve_baselines(("fa3-fwd",))
    with pytest.raises(MissingDependencyError, match=r"solbench\[fa3\]"):
        get_adapter("fa3-fwd", device="cuda")


def test_default_is_every_available_of_the_default_set(monkeypatch):
    """Flex compiles every shape (minutes over a suite): it is timed only when named."""
    monkeypatch.setattr(AdapterBase, "found_module", classmethod(lambda c: "x" if c.name in ("flex", "fa3-fwd") else None))
    monkeypatch.setattr(get_adapter_class("fa4"), "is_available", classmethod(lambda c: False))
    assert resolve_baselines(None) == ("fa3-fwd",)
    assert resolve_baselines(("flex", "fa3-fwd", "flex")) == ("flex", "fa3-fwd")


def test_a_library_name_stands_for_all_its_backends(monkeypatch):
    monkeypatch.setattr(AdapterBase, "found_module", classmethod(lambda c: "x"))
    assert resolve_baselines(("fa3-fwd", "flashinfer", "sdpa")) == ("fa3-fwd", "flashinfer-fa2", "flashinfer-fa3",
                                                                "sdpa-flash", "sdpa-efficient")
    monkeypatch.setattr(AdapterBase, "found_module", classmethod(lambda c: None if c.package == "flashinfer" else "x"))
    with pytest.raises(MissingDependencyError, match=r"flashinfer-fa2: .*solbench\[flashinfer\]"):
        resolve_baselines(("flashinfer",))


# --- coverage and the command ---------------------------------------------------------------------


def test_coverage_table():
    table = coverage("smoke", "h200")
    assert table.names == NAMES and len(table.rows) == len(load_suite("smoke").scenarios)
    per = {b.name: b for b in table.per_baseline()}
    assert per["flex"].supported == sum("flex" in r.supported_by for r in table.rows)
    fp8 = [r for r in table.rows if "fp8" in r.scenario_id]
    assert fp8 and all(dict(r.reasons).get("flex") == "no fp8 in FlexAttention" for r in fp8)
    assert json.loads(json.dumps(table.to_dict()))["suite"] == "smoke"
    only = coverage("smoke", "h200", ["flex"])
    assert only.names == ("flex",) and all(set(r.supported_by) <= {"flex"} for r in only.rows)


def test_cli_with_nothing_installed(monkeypatch, capsys):
    monkeypatch.setattr(AdapterBase, "found_module", classmethod(lambda c: None))
    monkeypatch.setattr(AdapterBase, "version", classmethod(lambda c: None))
    assert cli.main(["baselines", "--suite", "smoke", "--arch", "h200"]) == 0
    out = capsys.readouterr().out
    for name in NAMES:
        assert name in out
    assert "not installed:" in out and 'pip install "solbench[' in out
    assert "suite 'smoke' for h200 (--arch): 10/10 scenarios claimed by at least one baseline's rules" in out


@pytest.mark.parametrize("gpu, says, recorded", [
    (None, "suite 'hopper' for h200 (the suite's arch; no GPU here)", True),
    ("h200", "suite 'hopper' on this machine's GPU (h200)", False),
])
def test_cli_says_whose_arch_it_answers_for(monkeypatch, capsys, gpu, says, recorded):
    from solbench.supervisor import runner

    monkeypatch.setattr(runner, "gpu_arch", lambda: gpu)
    assert cli.main(["baselines", "--suite", "hopper"]) == 0
    out = capsys.readouterr().out
    assert says in out and "' on h200" not in out  # the old wording, false without a GPU
    assert ("measured on h200: the recorded runs in " in out) is recorded


def test_cli_json(capsys):
    assert cli.main(["baselines", "--suite", "edge", "--arch", "h200", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["arch"] == "h200" and [lib["name"] for lib in doc["libraries"]] == list(NAMES)
    assert len(doc["scenarios"]) == len(load_suite("edge").scenarios)
    for lib in doc["libraries"]:
        assert lib["available"] == (lib["unavailable_reason"] == "")


def test_cli_unknown_suite_is_one_line_error(capsys):
    assert cli.main(["baselines", "--suite", "no-such-suite"]) != 0
    assert "no-such-suite" in capsys.readouterr().err


def test_baselines_markdown_lists_each_suite_and_every_uncovered_group(capsys):
    assert cli.main(["baselines", "--arch", "h200", "--markdown", "smoke,hopper"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| smoke |") or line.startswith("| hopper |")]
    assert len(rows) == 2
    uncovered = len(coverage("hopper", "h200").uncovered())
    assert rows[1].endswith(f"| {uncovered} |")
    assert sum(int(m) for m in re.findall(r"\*\*hopper\*\*, (\d+) scenario", out)) == uncovered
    # every uncovered group is listed: with fa3-fwd alone most of hopper has no baseline
    from solbench.baselines.coverage import markdown_summary

    alone = coverage("hopper", "h200", ["fa3-fwd"])
    text = markdown_summary([alone])
    assert len(alone.uncovered()) > 0
    assert sum(int(m) for m in re.findall(r"\*\*hopper\*\*, (\d+) scenario", text)) == len(alone.uncovered())


def test_cudnn_claims_fp8_from_sm100_only():
    """cuDNN 9.19 declined every fp8 SDPA forward graph on the H200; on Blackwell it is claimed."""
    scenario = sc(dtype="fp8_e4m3", descale="per_tensor")
    refused = claims("cudnn", scenario, "h200")
    assert not refused.ok and "SM100" in refused.reason
    assert claims("cudnn", scenario, "b200").ok
