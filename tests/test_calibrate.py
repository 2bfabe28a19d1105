"""calibrate: arch detection and profile assembly on CPU; the real measurement on a GPU (`gpu` marker)."""

from __future__ import annotations

import types

import pytest

from solbench import calibrate as cal
from solbench import cli
from solbench.archspec import load_arch, load_profile
from solbench.errors import ConfigError


def test_detect_arch():
    assert cal.detect_arch("NVIDIA H200") == "h200"
    assert cal.detect_arch("NVIDIA H100 80GB HBM3") == "h100"
    assert cal.detect_arch("NVIDIA B200") == "b200"
    assert cal.detect_arch("NVIDIA GeForce RTX 3080") == "rtx3080"
    assert cal.detect_arch("NVIDIA A100-SXM4-80GB") is None


def test_resolve_arch():
    assert cal.resolve_arch("auto", "NVIDIA H200") == "h200"
    assert cal.resolve_arch("H200", "NVIDIA H200") == "h200"
    assert cal.resolve_arch("h100", "Some Future GPU") == "h100"  # explicit arch for a name we don't know
    with pytest.raises(ConfigError, match="GPU present is 'NVIDIA H200'"):
        cal.resolve_arch("b200", "NVIDIA H200")
    with pytest.raises(ConfigError, match="cannot tell the arch"):
        cal.resolve_arch("auto", "NVIDIA A100-SXM4-80GB")
    with pytest.raises(ConfigError, match="unknown arch"):
        cal.resolve_arch("a100", "NVIDIA A100-SXM4-80GB")


def test_calibrate_assembles_and_writes_a_profile(monkeypatch, tmp_path):
    # The measuring functions are replaced; this checks what calibrate does with their numbers.
    props = types.SimpleNamespace(major=9, minor=0, multi_processor_count=132, L2_cache_size=62914560,
                                  total_memory=150 << 30)
    fake_torch = types.SimpleNamespace(
        __version__="2.13.0", version=types.SimpleNamespace(cuda="13.0"),
        cuda=types.SimpleNamespace(get_device_name=lambda i: "NVIDIA H200", get_device_properties=lambda i: props),
    )
    monkeypatch.setattr(cal, "_torch_cuda", lambda: fake_torch)

    def matmul(dtype, n, samples):
        if dtype == "fp8_e4m3":
            raise RuntimeError("_scaled_mm not supported here\nmore")
        return {"bf16": 790.123, "fp16": 780.0}[dtype]

    monkeypatch.setattr(cal, "matmul_tflops", matmul)
    monkeypatch.setattr(cal, "bandwidth_tbps", lambda nbytes, samples: (4.31234, 4.5, 4 << 30))
    monkeypatch.setattr(cal, "launch_latency_us", lambda: {"eager": 6.5, "graph": 3.25, "back_to_back": 1.1})
    profile = cal.calibrate(log=lambda *_: None)
    assert (profile.arch, profile.gpu, profile.bf16_tflops, profile.fp8_tflops) == ("h200", "NVIDIA H200", 790.12, None)
    assert (profile.copy_tbps, profile.read_tbps, profile.memory_tbps) == (4.3123, 4.5, 4.5)
    assert (profile.launch_us, profile.graph_launch_us) == (6.5, 3.25)
    assert profile.details["fp8_unavailable"] == "_scaled_mm not supported here"
    assert profile.details["driver_l2_bytes"] == 62914560
    path = cal.write_profile(profile, tmp_path / "sub" / "h200.toml")
    assert load_profile(path) == profile


def test_command_without_gpu_is_one_line(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert cli.main(["calibrate"]) == 2
    assert capsys.readouterr().err == "solbench calibrate: error: calibrate needs a CUDA GPU; none is visible to torch\n"


@pytest.mark.gpu
def test_calibrate_on_the_gpu(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    arch = cal.detect_arch(torch.cuda.get_device_name(0))
    if arch is None:
        pytest.skip(f"no arch spec for {torch.cuda.get_device_name(0)}")
    profile = cal.calibrate(arch, matmul_n=4096, copy_bytes=1 << 30, samples=10, log=lambda *_: None)
    spec = load_arch(arch)
    # Measured ceilings sit below the datasheet (boost clocks above the datasheet's allow ~10 %).
    assert 0.2 * spec.bf16_tflops < profile.bf16_tflops < 1.12 * spec.bf16_tflops
    assert 0.2 * spec.fp16_tflops < profile.fp16_tflops < 1.12 * spec.fp16_tflops
    if profile.fp8_tflops is not None:
        assert 0.2 * spec.fp8_tflops < profile.fp8_tflops < 1.12 * spec.fp8_tflops
    assert 0.3 * spec.memory_tbps < profile.copy_tbps < 1.02 * spec.memory_tbps
    assert 0.3 * spec.memory_tbps < profile.read_tbps < 1.02 * spec.memory_tbps
    assert 0.5 < profile.launch_us < 200 and 0.2 < profile.graph_launch_us < 200
    path = cal.write_profile(profile, tmp_path / f"{arch}.toml")
    assert load_profile(path) == profile
