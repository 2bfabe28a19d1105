"""The torch-based adapters' bind/call logic run for real on CPU against the fp32 reference.

What runs on a CPU: SDPA's flash backend (torch's CPU flash kernel), the same adapter with the MATH
backend standing in for the explicit-mask backends (efficient, cuDNN: identical Python, different
kernel), and FlexAttention traced by dynamo as on the GPU but run eagerly (inductor on CPU has no flex
LSE). This checks the layout work: ragged loops, paged gathers, mask construction, sink correction, LSE
transposes, output copies.
"""

import pytest

torch = pytest.importorskip("torch")
from solbench.baselines import flex  # noqa: E402
from solbench.baselines.torch_sdpa import EfficientAdapter, FlashAdapter  # noqa: E402
from solbench.supervisor.inputs import make_inputs  # noqa: E402
from solbench.core.model import Status  # noqa: E402
from solbench.supervisor.reference import reference  # noqa: E402
from solbench.core.scenario import MaskSpec, Scenario  # noqa: E402
from solbench.core.suites import load_suite  # noqa: E402
from solbench.supervisor.verdict import judge  # noqa: E402


class MathAdapter(EfficientAdapter):
    name = "sdpa-math-test"
    backend = "MATH"


EXTRA = [
    Scenario(q_lens=(40, 9), kv_lens=(90, 9), heads_q=4, heads_kv=2, regime="chunked_prefill", window_left=20,
             kv_layout="paged", page_size=8),
    Scenario(q_lens=(33, 20), kv_lens=(33, 20), heads_q=4, heads_kv=4, causal=False, window_left=4, window_right=2),
    Scenario(q_lens=(48,), kv_lens=(48,), heads_q=4, heads_kv=2, head_dim_qk=64, head_dim_v=64, dtype="fp16",
             causal=False, mask=MaskSpec(0.3, "iid", 2)),
]
SCENARIOS = list(load_suite("smoke").scenarios) + EXTRA


def run(adapter_cls, sc):
    inputs = make_inputs(sc, device="cpu")
    adapter = adapter_cls(device="cpu")
    call = adapter.bind(inputs)
    inputs.poison()
    call()
    ref_out, ref_lse = reference(inputs)
    return judge(inputs.out, inputs.lse, ref_out, ref_lse, sc.dtype, writes_lse=adapter.writes_lse)


@pytest.mark.parametrize("adapter_cls", [FlashAdapter, MathAdapter], ids=["flash", "math-for-masks"])
@pytest.mark.parametrize("sc", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_sdpa_adapters_on_cpu(adapter_cls, sc):
    if not adapter_cls.supports(sc, "h200").ok:
        pytest.skip(adapter_cls.supports(sc, "h200").reason)
    verdict = run(adapter_cls, sc)
    assert verdict.status is Status.PASSED, verdict.reason


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
@pytest.mark.parametrize("sc", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_flex_adapter_on_cpu(sc, monkeypatch):
    """Traced by dynamo exactly as on the GPU (whole graph, dynamic shapes), run by the eager backend."""
    if not flex.Adapter.supports(sc, "h200").ok:
        pytest.skip(flex.Adapter.supports(sc, "h200").reason)
    torch._dynamo.reset()
    traced = torch.compile(flex._forward, backend="eager", **flex.COMPILE_OPTIONS)
    monkeypatch.setattr(flex, "compiled_forward", lambda: traced)
    verdict = run(flex.Adapter, sc)
    assert verdict.status is Status.PASSED, verdict.reason


def test_flex_compiles_once_for_every_shape_and_window(monkeypatch):
    """A new shape, window or KV layout reuses the compiled forward (the H200 spent 2 min compiling each
    shape when it was specialised). Dynamo's guards are the same under any backend: counted with an
    eager one, since CPU inductor has no flex LSE."""
    graphs = []

    def counting_backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    fn = torch.compile(flex._forward, backend=counting_backend, **flex.COMPILE_OPTIONS)
    monkeypatch.setattr(flex, "compiled_forward", lambda: fn)
    shapes = [
        Scenario(q_lens=(300, 170), kv_lens=(300, 170), heads_q=4, heads_kv=2, head_dim_qk=64, head_dim_v=64),
        Scenario(q_lens=(260,), kv_lens=(700,), heads_q=4, heads_kv=2, head_dim_qk=64, head_dim_v=64,
                 regime="chunked_prefill", window_left=100),
        Scenario(q_lens=(150, 200, 140), kv_lens=(150, 500, 300), heads_q=4, heads_kv=2, head_dim_qk=64,
                 head_dim_v=64, regime="chunked_prefill", causal=False, window_left=30, window_right=7),
        Scenario(q_lens=(200, 150), kv_lens=(400, 150), heads_q=4, heads_kv=2, head_dim_qk=64, head_dim_v=64,
                 regime="chunked_prefill", kv_layout="paged", page_size=16),
    ]
    counts = []
    for sc in shapes:
        verdict = run(flex.Adapter, sc)
        assert verdict.status is Status.PASSED, (sc.id, verdict.reason)
        counts.append(len(graphs))
    # The BlockMask's index tensors start static; their first change makes them dynamic (one recompile).
    assert counts == [1, 2, 2, 2], f"compiles after each scenario: {counts}"


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
def test_flex_compiles_again_with_fallback_options_where_inductor_finds_no_kernel_config(monkeypatch):
    """On the H200 inductor found no kernel config for custom-bit masks (shared memory) and for a GQA decode
    (flex_decoding): the adapter compiles that feature mix again with FALLBACK_OPTIONS, once, and any
    other error stays the scenario's error."""
    tried = []

    def compiled(*args):
        tried.append(args[-1])
        if args[-1] is None:
            raise RuntimeError("InductorError: RuntimeError: No valid triton configs. OutOfMemoryError: out of resource")
        flex._forward(*args)

    monkeypatch.setattr(flex, "compiled_forward", lambda: compiled)
    adapter = flex.Adapter(device="cpu")
    mix = dict(heads_q=4, heads_kv=4, head_dim_qk=64, head_dim_v=64, dtype="fp16", causal=False, mask=MaskSpec(0.3, "iid", 2))
    for lens in [(48, 17), (64,)]:
        sc = Scenario(q_lens=lens, kv_lens=lens, **mix)
        inputs = make_inputs(sc, device="cpu")
        call = adapter.bind(inputs)
        inputs.poison()
        call()
        ref_out, ref_lse = reference(inputs)
        verdict = judge(inputs.out, inputs.lse, ref_out, ref_lse, sc.dtype, writes_lse=adapter.writes_lse)
        assert verdict.status is Status.PASSED, verdict.reason
    fallback = flex.FALLBACK_OPTIONS
    assert tried[:3] == [None, fallback, fallback] and set(map(id, tried[1:])) == {id(fallback)}  # default tried once

    def broken(*args):
        raise RuntimeError("InductorError: LoweringException: something else")

    monkeypatch.setattr(flex, "compiled_forward", lambda: broken)
    with pytest.raises(RuntimeError, match="something else"):
        flex.Adapter(device="cpu").bind(make_inputs(Scenario(q_lens=(8,), kv_lens=(8,), heads_q=2, heads_kv=2), device="cpu"))


INDUCTOR_CASES = [
    Scenario(q_lens=(70, 33), kv_lens=(90, 33), heads_q=4, heads_kv=2, head_dim_qk=64, head_dim_v=64,
             regime="chunked_prefill", softcap=30.0),
    Scenario(q_lens=(40, 9), kv_lens=(90, 9), heads_q=4, heads_kv=2, head_dim_qk=64, head_dim_v=64,
             regime="chunked_prefill", window_left=20, kv_layout="paged", page_size=8, softcap=50.0),
    Scenario(q_lens=(48, 17), kv_lens=(48, 17), heads_q=4, heads_kv=4, head_dim_qk=64, head_dim_v=64, dtype="fp16",
             causal=False, mask=MaskSpec(0.3, "iid", 2)),
    Scenario(q_lens=(1, 1, 1), kv_lens=(70, 33, 129), heads_q=4, heads_kv=1, head_dim_qk=64, head_dim_v=64,
             regime="decode", kv_layout="paged", page_size=16, window_left=40),
]


@pytest.mark.slow
@pytest.mark.parametrize("sc,options", [(sc, None) for sc in INDUCTOR_CASES]
                         + [(sc, flex.FALLBACK_OPTIONS) for sc in INDUCTOR_CASES[2:]],
                         ids=[s.id for s in INDUCTOR_CASES] + [f"fallback-{s.id}" for s in INDUCTOR_CASES[2:]])
def test_flex_mods_lower_through_inductor(sc, options):
    """The adapter's score_mod and mask_mod compiled by inductor as on the GPU (dynamic shapes, whole
    graph). CPU inductor cannot return flex's LSE, so this compiles flex_attention alone; the mods are
    what inductor lowers differently from the eager backend (a Python-float softcap failed here exactly
    as on the H200: "unbacked_bindings")."""
    from torch.nn.attention.flex_attention import flex_attention

    inputs = make_inputs(sc, device="cpu")
    q, k, v, block_mask, score_mod, scale, enable_gqa = flex.flex_arguments(inputs)
    torch._dynamo.reset()
    attend = torch.compile(flex_attention, **flex.COMPILE_OPTIONS)
    o = attend(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=scale, enable_gqa=enable_gqa,
               kernel_options=options)
    inputs.out.copy_(o[0].transpose(0, 1))
    ref_out, ref_lse = reference(inputs)
    verdict = judge(inputs.out, inputs.lse, ref_out, ref_lse, sc.dtype, writes_lse=False)
    assert verdict.status is Status.PASSED, verdict.reason
