"""vllm-fa3 against CPU stand-ins for `torch.ops._vllm_fa3_C.fwd` and `.get_scheduler_metadata`.

The stand-ins take exactly the ops' schema (vFA hopper/flash_api_torch_lib.cpp), record what they are
given, refuse what mha_fwd refuses (s_aux not bf16 [Hq], descales not (B, Hkv), cu_seqlens_k with a page
table, an fp8 output that is not bf16, scheduler metadata computed for another call) and compute
attention the way FA defines it (tests/test_baselines_fa_contract.py: fa_contract). Wrong shapes, layouts
or conventions then disagree with solbench's reference. The GPU tier runs the real extension
(benchmarks/vllm_fa3_acceptance.py).
"""

import pytest
from adapter_checks import run_and_judge
from test_baselines_fa_contract import fa_contract

torch = pytest.importorskip("torch")
from solbench.baselines import coverage, vllm_fa3  # noqa: E402
from solbench.core.model import Status  # noqa: E402
from solbench.core.scenario import MaskSpec, Scenario  # noqa: E402
from solbench.core.suites import load_suite  # noqa: E402

FWD_ARGS = ("q", "k", "v", "k_new", "v_new", "q_v", "out", "cu_seqlens_q", "cu_seqlens_k", "cu_seqlens_k_new",
            "seqused_q", "seqused_k", "max_seqlen_q", "max_seqlen_k", "page_table", "kv_batch_idx", "leftpad_k",
            "rotary_cos", "rotary_sin", "seqlens_rotary", "q_descale", "k_descale", "v_descale", "softmax_scale",
            "is_causal", "window_size_left", "window_size_right", "softcap", "is_rotary_interleaved",
            "scheduler_metadata", "num_splits", "pack_gqa", "sm_margin", "s_aux", "cp_world_size", "cp_rank",
            "cp_tot_seqused_k")
METADATA_ARGS = ("batch_size", "max_seqlen_q", "max_seqlen_k", "num_heads", "num_heads_k", "headdim", "headdim_v",
                 "qkv_dtype", "seqused_k", "cu_seqlens_q", "cu_seqlens_k", "cu_seqlens_k_new", "seqused_q",
                 "leftpad_k", "page_size", "max_seqlen_k_new", "is_causal", "window_size_left",
                 "window_size_right", "has_softcap", "num_splits", "pack_gqa", "sm_margin")


class FakeOps:
    """The two ops, keyword-only over their schema; each call is recorded in `calls`."""

    def __init__(self, fwd_args=FWD_ARGS):
        self.fwd_args = fwd_args
        self.calls: list[tuple[str, dict]] = []
        self.plans: dict[int, dict] = {}

    def get_scheduler_metadata(self, **kw):
        assert tuple(kw) == METADATA_ARGS, "every argument, in the schema's order"
        self.calls.append(("get_scheduler_metadata", kw))
        metadata = torch.zeros(8, dtype=torch.int32)
        self.plans[metadata.data_ptr()] = kw
        return metadata

    def fwd(self, **kw):
        assert tuple(kw) == self.fwd_args, "every argument, in the schema's order"
        self.calls.append(("fwd", kw))
        q, k, v, out = kw["q"], kw["k"], kw["v"], kw["out"]
        batch, hq, hkv = len(kw["cu_seqlens_q"]) - 1, q.shape[-2], k.shape[-2]
        assert out is not None and out.dtype == (torch.bfloat16 if q.dtype == torch.float8_e4m3fn else q.dtype)
        assert kw["seqused_k"] is not None and kw["max_seqlen_q"] is not None and kw["max_seqlen_k"] is not None
        if kw["page_table"] is not None:
            assert kw["cu_seqlens_k"] is None, "If cu_seqlens_k is passed in, then page table is not supported"
        for name in ("q_descale", "k_descale", "v_descale"):
            assert kw[name] is None or kw[name].shape == (batch, hkv), f"{name} must be (b, h_k), not (b, h)"
        s_aux = kw.get("s_aux")
        if s_aux is not None:
            assert s_aux.dtype == torch.bfloat16, "We only support bf16 dtype for S aux."
            assert s_aux.shape == (hq,) and hq <= 64
        plan = self.plans[kw["scheduler_metadata"].data_ptr()]
        assert plan == dict(
            plan, batch_size=batch, max_seqlen_q=kw["max_seqlen_q"], max_seqlen_k=kw["max_seqlen_k"], num_heads=hq,
            num_heads_k=hkv, headdim=q.shape[-1], headdim_v=v.shape[-1], qkv_dtype=q.dtype,
            page_size=k.shape[1] if kw["page_table"] is not None else None, is_causal=kw["is_causal"],
            window_size_left=kw["window_size_left"], window_size_right=kw["window_size_right"],
            has_softcap=kw["softcap"] > 0, num_splits=kw["num_splits"]), "metadata made for another call"
        assert torch.equal(plan["seqused_k"], kw["seqused_k"]) and torch.equal(plan["cu_seqlens_q"], kw["cu_seqlens_q"])
        assert kw["num_splits"] == 0 and kw["pack_gqa"] is None and kw.get("cp_world_size", 1) == 1
        if kw["cu_seqlens_k"] is not None:
            assert torch.equal(kw["seqused_k"], kw["cu_seqlens_k"][1:] - kw["cu_seqlens_k"][:-1])
        lse = fa_contract(q, k, v, out, cu_seqlens_q=kw["cu_seqlens_q"], cu_seqlens_k=kw["cu_seqlens_k"],
                          seqused_k=kw["seqused_k"], page_table=kw["page_table"], softmax_scale=kw["softmax_scale"],
                          causal=kw["is_causal"], left=kw["window_size_left"], right=kw["window_size_right"],
                          softcap=kw["softcap"], q_descale=kw["q_descale"], k_descale=kw["k_descale"],
                          v_descale=kw["v_descale"], sink=None if s_aux is None else s_aux.float())
        return [out, lse, torch.empty(0), torch.empty(0)]


@pytest.fixture
def ops(monkeypatch):
    fake = FakeOps()
    monkeypatch.setattr(vllm_fa3, "load_ops", lambda: (fake.fwd, fake.get_scheduler_metadata, FWD_ARGS, METADATA_ARGS))
    return fake


def claimed(suites=("smoke", "edge")):
    out = []
    for name in suites:
        out += [sc for sc in load_suite(name).scenarios
                if vllm_fa3.Adapter.supports(sc, "h200").ok and sc.total_q * max(sc.kv_lens) < 2e6]
    return out


@pytest.mark.parametrize("sc", claimed(), ids=lambda s: s.id)
def test_vllm_fa3_adapter_honours_the_op_contract(sc, ops):
    adapter = vllm_fa3.Adapter(device="cpu")
    verdict = run_and_judge(adapter, sc)
    assert verdict.status is Status.PASSED, f"{sc.id}: {verdict.reason}"
    assert [name for name, _ in ops.calls] == ["get_scheduler_metadata", "fwd"]  # metadata once, in bind
    assert adapter.writes_lse == (not sc.sinks)


def test_the_call_is_vllms_varlen_call(ops):
    paged = Scenario(q_lens=(1, 3), kv_lens=(40, 17), heads_q=8, heads_kv=2, kv_layout="paged", page_size=1,
                     regime="chunked_prefill", window_left=7, softcap=30.0, sinks=True, dtype="fp16")
    run_and_judge(vllm_fa3.Adapter(device="cpu"), paged)
    kw = ops.calls[-1][1]
    assert kw["page_table"] is not None and kw["cu_seqlens_k"] is None and kw["max_seqlen_k"] == 40
    assert (kw["window_size_left"], kw["window_size_right"], kw["is_causal"]) == (7, 0, True)
    assert kw["s_aux"].dtype == torch.bfloat16 and kw["softcap"] == 30.0


def test_sinks_are_read_each_call_not_at_bind(ops):
    """The supervisor refills inputs in place every round: a bf16 copy made once in bind would go stale."""
    from solbench.supervisor.inputs import make_inputs

    sc = Scenario(q_lens=(5,), kv_lens=(9,), heads_q=4, heads_kv=4, sinks=True)
    inputs = make_inputs(sc, device="cpu")
    call = vllm_fa3.Adapter(device="cpu").bind(inputs)
    inputs.sinks.copy_(torch.arange(4.0))
    call()
    assert ops.calls[-1][1]["s_aux"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_fp8_descales_are_vllms_expanded_views(ops):
    from solbench.supervisor.inputs import make_inputs

    sc = Scenario(q_lens=(5, 2), kv_lens=(9, 6), heads_q=4, heads_kv=2, dtype="fp8_e4m3", descale="per_head")
    inputs = make_inputs(sc, device="cpu")
    vllm_fa3.Adapter(device="cpu").bind(inputs)()
    k_descale = ops.calls[-1][1]["k_descale"]
    assert k_descale.shape == (2, 2) and k_descale.stride() == (0, 1)
    assert k_descale.data_ptr() == inputs.k_descale.data_ptr()  # a view: refilled values are read


def test_an_older_build_without_the_sink_argument_is_refused_for_sinks(monkeypatch):
    old = FWD_ARGS[:FWD_ARGS.index("s_aux")]
    fake = FakeOps(fwd_args=old)
    monkeypatch.setattr(vllm_fa3, "load_ops", lambda: (fake.fwd, fake.get_scheduler_metadata, old, METADATA_ARGS))
    plain = Scenario(q_lens=(5,), kv_lens=(9,), heads_q=4, heads_kv=4)
    assert run_and_judge(vllm_fa3.Adapter(device="cpu"), plain).status is Status.PASSED
    with pytest.raises(RuntimeError, match="lacks argument.*s_aux"):
        run_and_judge(vllm_fa3.Adapter(device="cpu"), Scenario(q_lens=(5,), kv_lens=(9,), heads_q=4, heads_kv=4,
                                                                sinks=True))


def test_an_unknown_required_argument_is_an_error(monkeypatch):
    fake = FakeOps(fwd_args=FWD_ARGS + ("new_knob",))
    monkeypatch.setattr(vllm_fa3, "load_ops",
                        lambda: (fake.fwd, fake.get_scheduler_metadata, FWD_ARGS + ("new_knob",), METADATA_ARGS))
    with pytest.raises(RuntimeError, match="new_knob"):
        run_and_judge(vllm_fa3.Adapter(device="cpu"), Scenario(q_lens=(5,), kv_lens=(9,), heads_q=4, heads_kv=4))


@pytest.mark.parametrize("kw, reason", [
    (dict(mask=MaskSpec(density=0.5)), "custom bitmask"),
    (dict(heads_q=128, heads_kv=8, sinks=True), "<= 64 query heads"),
    (dict(head_dim_qk=192, head_dim_v=128, sinks=True), "head_dim_qk == head_dim_v"),
    (dict(head_dim_qk=64, head_dim_v=256, dtype="fp8_e4m3", descale="per_tensor"), "fp8 build has 192/128 only"),
    (dict(head_dim_qk=72, dtype="fp8_e4m3", head_dim_v=72, descale="per_tensor"), "multiples of 16"),
    (dict(head_dim_qk=320, head_dim_v=320), "> 256"),
    (dict(causal=False, window_left=3, window_right=3), "one key past it"),
])
def test_what_the_library_rejects_is_declined_with_its_reason(kw, reason):
    base = dict(q_lens=(5,), kv_lens=(9,), heads_q=kw.pop("heads_q", 4), heads_kv=kw.pop("heads_kv", 4))
    support = vllm_fa3.Adapter.supports(Scenario(**base, **kw), "h200")
    assert not support.ok and reason in support.reason
    assert "sm_90a only" in vllm_fa3.Adapter.supports(Scenario(**base), "b200").reason


def test_hopper_suite_is_claimed_but_for_its_two_sided_windows_on_the_h200():
    """The hopper grid has no custom bitmask; its three non-causal scenarios with a window on both sides are where
    the library takes a key too many (probed on the H200), and nothing else is declined."""
    table = coverage.coverage("hopper", "h200", ["vllm-fa3"])
    (row,) = table.per_baseline()
    assert (row.supported, row.total) == (179, 182)
    declined = [sc.id for sc in load_suite("hopper").scenarios if not vllm_fa3.Adapter.supports(sc, "h200").ok]
    assert len(declined) == 3 and all("full-wl511-wr511" in i for i in declined), declined


def test_unavailable_without_the_extension_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(vllm_fa3, "extension_path", lambda: None)
    assert not vllm_fa3.Adapter.is_available()
    assert 'solbench[vllm]' in vllm_fa3.Adapter.unavailable_reason() and "vllm==0.26.0" in vllm_fa3.Adapter.unavailable_reason()


def test_a_staged_stub_reports_its_version_without_importing_vllm(monkeypatch, tmp_path):
    so = tmp_path / "vllm" / "vllm_flash_attn" / "_vllm_fa3_C.abi3.so"
    so.parent.mkdir(parents=True)
    so.write_bytes(b"")
    (tmp_path / "vllm" / "__init__.py").write_text('"""stub"""\n__version__ = "0.26.0"\nraise ImportError("imported")\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    vllm_fa3.extension_path.cache_clear()
    try:
        assert vllm_fa3.extension_path() == so
        assert vllm_fa3.Adapter.version() == "0.26.0"
    finally:
        vllm_fa3.extension_path.cache_clear()
