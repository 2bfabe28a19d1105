"""benchmarks/prebuild_flashinfer.py on CPU, without flashinfer: which modules a suite needs, and the provider shim."""

import importlib.util
import json
from pathlib import Path

from solbench.baselines import flashinfer as fi
from solbench.core.scenario import MaskSpec, Scenario

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("prebuild_flashinfer", ROOT / "benchmarks" / "prebuild_flashinfer.py")
pb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pb)


def test_fa3_h2h_needs_one_prefill_module_per_backend_and_head_dim():
    need = pb.wanted(["fa3-h2h"], pb.ADAPTERS, "h200")
    assert set(need) == {("prefill", b, "bf16", d, d, False, False) for b in ("fa2", "fa3") for d in (64, 128)}
    assert sum(len(users) for users in need.values()) == 2 * 24  # 24 bf16 scenarios each; fp8 is declined


def test_variants_follow_the_adapter_routes():
    paged = {"kv_layout": "paged", "page_size": 16}
    decode = Scenario(q_lens=(1, 1), kv_lens=(40, 9), heads_q=8, heads_kv=8, regime="decode", window_left=7, **paged)
    gqa8 = Scenario(q_lens=(1, 1), kv_lens=(40, 9), heads_q=8, heads_kv=1, regime="decode", **paged)
    sink = Scenario(q_lens=(5,), kv_lens=(40,), heads_q=4, heads_kv=2, sinks=True, causal=True, **paged)
    mask = Scenario(q_lens=(5,), kv_lens=(40,), heads_q=4, heads_kv=2, causal=True, window_left=3,
                    softcap=30.0, mask=MaskSpec(0.5, "iid", 1))
    assert pb.variants(fi.FA2Adapter, decode) == [("decode", "bf16", 128, True, False)]
    assert pb.variants(fi.FA3Adapter, decode) == [("prefill", "fa3", "bf16", 128, 128, True, False)]
    assert pb.variants(fi.FA2Adapter, gqa8) == [("prefill", "fa2", "bf16", 128, 128, False, False)]  # tensor cores
    assert pb.variants(fi.FA3Adapter, sink) == [("sink", "fa3", "bf16", 128, 128, False)]
    # the mask path folds causal and window into the mask: no sliding-window module, plus packbits
    assert pb.variants(fi.FA2Adapter, mask) == [("prefill", "fa2", "bf16", 128, 128, False, True), ("packbits",)]


def test_shim_lists_the_modules_beside_it(tmp_path):
    (tmp_path / "flashinfer_jit_cache").mkdir()
    (tmp_path / "flashinfer_jit_cache" / "__init__.py").write_text(pb.SHIM)
    (tmp_path / "manifest.json").write_text(json.dumps({"flashinfer_version": "0.7.2.post1",
                                                       "cuda_architectures": ["sm90a"]}))
    (tmp_path / "mod_a").mkdir()
    (tmp_path / "mod_a" / "mod_a.so").write_bytes(b"")
    (tmp_path / "not_a_module").mkdir()
    where = importlib.util.spec_from_file_location("shim_under_test", tmp_path / "flashinfer_jit_cache" / "__init__.py")
    shim = importlib.util.module_from_spec(where)
    where.loader.exec_module(shim)

    assert shim.__version__ == "0.7.2.post1"
    (provider,) = shim.get_jit_cache_providers()
    # the fields flashinfer/jit/env.py _get_aot_providers reads
    assert provider.version == shim.__version__ and Path(provider.jit_cache_dir) == tmp_path
    assert list(provider.cuda_architectures) == ["sm90a"] and list(provider.modules) == ["mod_a"]
    assert provider.provider_id and provider.distribution
