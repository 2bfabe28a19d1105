"""Building: nvcc targets per arch, the content-addressed cache, compile errors as one clear message, ptxas
resources, and the `solbench build` command. CI has nvcc and no GPU, so every shipped .cu is built here."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from solbench.build import nvcc as build_mod
from solbench.build.binary_check import check_binary
from solbench.build.nvcc import BuildResult, build, compile_error_message, local_headers, parse_ptxas, resolve_arch
from solbench.front.cli import build_parser, main
from solbench.core.errors import BuildError, ConfigError

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "reference_kernels" / "seed_attention.cu"
SHIPPED = sorted((ROOT / "reference_kernels").rglob("*.cu")) + sorted((ROOT / "benchmarks").glob("*.cu"))
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                                reason="nvcc not installed")
BROKEN = '#include "solbench_attention.h"\nint solbench_attention_forward(const SolbenchAttentionParams* p) {\n  return undefined_thing;\n}\n'
TINY = '#include "solbench_attention.h"\n#include "helper.h"\nint solbench_attention_forward(const SolbenchAttentionParams* p) { return VALUE; }\n'


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory):
    """$SOLBENCH_CACHE for the module: builds land in <root>/build."""
    return tmp_path_factory.mktemp("solbench-cache")


@pytest.fixture
def cache(cache_root):
    return cache_root / "build"


@pytest.fixture
def tiny(tmp_path):
    (tmp_path / "helper.h").write_text('#include "deeper.h"\n')
    (tmp_path / "deeper.h").write_text("#define VALUE 0\n")
    (tmp_path / "tiny.cu").write_text(TINY)
    return tmp_path / "tiny.cu"


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("arch, sm", [("h100", "sm_90a"), ("b200", "sm_100a"), ("rtx3080", "sm_86")])
def test_seed_builds_for_every_target(cache, arch, sm):
    result = build(SEED, arch, cache_dir=cache)
    assert (result.arch, result.sm) == (arch, sm)
    assert f"-gencode=arch=compute_{sm[3:]},code={sm}" in result.flags
    assert result.so_path.read_bytes()[:4] == b"\x7fELF"
    names = sorted(k.name for k in result.kernels)
    assert len(names) == 4 and all("seed_attention_kernel<" in n for n in names), names
    assert all(k.registers > 0 for k in result.kernels)
    assert check_binary(result.so_path).ok


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("source", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_kernel_builds_and_uses_no_forbidden_library(cache, source):
    assert check_binary(build(source, "h100", cache_dir=cache).so_path).ok


@needs_nvcc
def test_second_build_is_a_cache_hit(cache, tiny):
    first = build(tiny, "rtx3080", cache_dir=cache)
    second = build(tiny, "rtx3080", cache_dir=cache)
    assert not first.cache_hit and second.cache_hit
    assert (second.so_path, second.binary_sha256, second.cache_key) == (first.so_path, first.binary_sha256, first.cache_key)
    assert second.so_path.is_relative_to(cache)


@needs_nvcc
def test_nested_header_change_invalidates_cache(cache, tiny):
    first = build(tiny, "rtx3080", cache_dir=cache)
    (tiny.parent / "deeper.h").write_text("#define VALUE 1\n")
    second = build(tiny, "rtx3080", cache_dir=cache)
    assert not second.cache_hit and second.cache_key != first.cache_key
    assert second.source_sha256 == first.source_sha256  # the .cu itself did not change


@needs_nvcc
def test_flags_and_arch_are_part_of_the_key(cache, tiny):
    base = build(tiny, "rtx3080", cache_dir=cache)
    assert build(tiny, "rtx3080", extra_flags=("-DUNUSED=1",), cache_dir=cache).cache_key != base.cache_key
    assert build(tiny, "h100", cache_dir=cache).cache_key != base.cache_key


@needs_nvcc
def test_include_dirs_are_searched_and_hashed(cache, tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "helper.h").write_text("#define VALUE 0\n")
    src = tmp_path / "k.cu"
    src.write_text(TINY)
    result = build(src, "rtx3080", include_dirs=(inc,), cache_dir=cache)
    assert f"-I{inc.resolve()}" in result.flags
    (inc / "helper.h").write_text("#define VALUE 2\n")
    assert build(src, "rtx3080", include_dirs=(inc,), cache_dir=cache).cache_key != result.cache_key


@needs_nvcc
def test_compile_error_is_the_compilers_first_line(cache, tmp_path):
    src = tmp_path / "broken.cu"
    src.write_text(BROKEN)
    with pytest.raises(BuildError) as exc:
        build(src, "rtx3080", cache_dir=cache)
    lines = str(exc.value).splitlines()
    assert lines[0] == f'{src}:3: error: identifier "undefined_thing" is undefined'
    assert lines[-1].strip().startswith("full log: ") and Path(lines[-1].split("full log: ")[1]).is_file()
    assert "Traceback" not in str(exc.value) and "detected in the compilation" not in str(exc.value)


def test_nvcc_missing_is_a_clear_error(monkeypatch, tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(BROKEN)
    monkeypatch.setattr(build_mod.shutil, "which", lambda name: None)
    monkeypatch.setattr(build_mod.os, "access", lambda path, mode: False)
    with pytest.raises(BuildError, match="nvcc not found"):
        build(src, "h100", cache_dir=tmp_path)


def test_unknown_arch_and_missing_source(tmp_path):
    with pytest.raises(ConfigError, match="unknown arch 'a100'"):
        resolve_arch("a100")
    with pytest.raises(ConfigError, match="no such file"):
        build(tmp_path / "nope.cu", "h100")


def test_arch_table():
    assert resolve_arch("h200") == ("h200", "sm_90a")
    assert resolve_arch("b200") == ("b200", "sm_100a")
    assert resolve_arch("sm_120a") == ("sm_120a", "sm_120a")


def test_build_takes_every_arch_run_and_roofline_take(capsys):
    """build --arch took h100, h200, b200 and rtx3080 while run and roofline took every spec file (h100_pcie,
    rtx3080_12gb, ...): one list now, each arch built for its spec file's nvcc target."""
    from solbench.core.archspec import known_arches, load_arch

    assert {"h100_pcie", "rtx3080_12gb", "rtx3080ti"} <= set(known_arches())
    for arch in known_arches():
        assert resolve_arch(arch) == (arch, load_arch(arch).sm_arch)
    assert build_parser().parse_args(["build", str(SEED), "--arch", "h100_pcie"]).arch == "h100_pcie"
    assert main(["build", str(SEED), "--arch", "a100"]) == ConfigError.exit_code
    err = capsys.readouterr().err
    assert "unknown arch 'a100'; known arches: " + ", ".join(known_arches()) in err


def test_auto_without_gpu_is_a_config_error(monkeypatch):
    monkeypatch.setattr(build_mod, "detect_gpu", lambda: None)
    with pytest.raises(ConfigError, match="no NVIDIA GPU found"):
        resolve_arch("auto")


def test_auto_detects_through_nvidia_smi(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(build_mod.shutil, "which", lambda name: "/fake/" + name)
    answer = subprocess.CompletedProcess([], 0, stdout="NVIDIA H200, 9.0\n", stderr="")
    monkeypatch.setattr(build_mod.subprocess, "run", lambda *a, **k: answer)
    assert resolve_arch("auto") == ("h200", "sm_90a")
    answer.stdout = "NVIDIA GeForce RTX 3080, 8.6\n"
    assert resolve_arch("auto") == ("rtx3080", "sm_86")
    answer.stdout = "NVIDIA A100-SXM4-80GB, 8.0\n"
    assert resolve_arch("auto") == ("sm_80", "sm_80")


PTXAS_LOG = """\
ptxas info    : 0 bytes gmem
ptxas info    : Function properties for _Z6helperv
    24 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Compiling entry function '_ZN7cutlass2k1EPf' for 'sm_90a'
ptxas info    : Function properties for _ZN7cutlass2k1EPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 256 bytes smem
ptxas info    : Compiling entry function '_Z2k2ILi300EEvPf' for 'sm_90a'
ptxas info    : Function properties for _Z2k2ILi300EEvPf
    1200 bytes stack frame, 8 bytes spill stores, 16 bytes spill loads
ptxas info    : Used 40 registers, used 0 barriers, 1200 bytes cumulative stack size, 576 bytes cmem[0]
"""


def test_parse_ptxas_reads_entry_functions_only():
    k1, k2 = parse_ptxas(PTXAS_LOG)
    assert (k1.mangled, k1.registers, k1.shared_bytes, k1.spill_store_bytes, k1.stack_frame_bytes) == \
        ("_ZN7cutlass2k1EPf", 10, 256, 0, 0)
    assert (k2.registers, k2.shared_bytes, k2.stack_frame_bytes, k2.spill_store_bytes, k2.spill_load_bytes) == (40, 0, 1200, 8, 16)
    if shutil.which("c++filt"):
        assert (k1.name, k2.name) == ("cutlass::k1(float*)", "void k2<300>(float*)")


def test_compile_error_message_rewrites_nvcc_locations():
    log = 'k.cu(7): error: expected a ";"\n\n1 error detected in the compilation of "k.cu".\n'
    assert compile_error_message(Path("k.cu"), "sm_90a", log) == 'k.cu:7: error: expected a ";"'
    many = "".join(f"k.cu({i}): error: e{i}\n" for i in range(6))
    assert compile_error_message(Path("k.cu"), "sm_90a", many).splitlines()[-1] == "  ... and 3 more error line(s)"
    assert "no error line" in compile_error_message(Path("k.cu"), "sm_90a", "Segmentation fault\n")


def test_local_headers_follow_quoted_includes_recursively(tiny):
    (tiny.parent / "deeper.h").write_text('#include <cuda_runtime.h>\n#include "missing.h"\n#include "helper.h"\n')
    found = local_headers(tiny.resolve(), (str(ROOT / "solbench" / "abi"),))
    assert [p.name for p in found] == ["solbench_attention.h", "helper.h", "deeper.h"]


@needs_nvcc
def test_build_result_serialises(cache, tiny):
    d = json.loads(json.dumps(build(tiny, "rtx3080", cache_dir=cache).to_dict()))
    assert set(d) == {f for f in BuildResult.__dataclass_fields__}
    assert d["so_path"].endswith("kernel.so") and isinstance(d["kernels"], list)


@needs_nvcc
def test_cli_build_prints_path_resources_and_verdict(cache_root, monkeypatch, capsys):
    monkeypatch.setenv("SOLBENCH_CACHE", str(cache_root))
    assert main(["build", str(SEED), "--arch", "rtx3080"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(str(cache_root / "build")) and out[0].endswith("kernel.so")
    assert out[1].startswith("sm_86 (rtx3080), nvcc ")
    assert any("seed_attention_kernel<128, 64, 32>" in line for line in out)
    assert "regs" in out[2] and out[-1].startswith("libraries: no forbidden library")


@needs_nvcc
def test_cli_build_json(cache_root, monkeypatch, capsys):
    monkeypatch.setenv("SOLBENCH_CACHE", str(cache_root))
    assert main(["build", str(SEED), "--arch", "rtx3080", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["sm"] == "sm_86" and d["cache_hit"] and d["libraries"]["ok"] and len(d["kernels"]) == 4


@needs_nvcc
def test_cli_build_errors_are_one_line_with_exit_codes(cache_root, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("SOLBENCH_CACHE", str(cache_root))
    src = tmp_path / "broken.cu"
    src.write_text(BROKEN)
    assert main(["build", str(src), "--arch", "rtx3080"]) == BuildError.exit_code
    err = capsys.readouterr().err
    assert err.startswith(f"solbench build: error: {src}:3: error: identifier") and "Traceback" not in err
    planted = ROOT / "tests" / "data" / "cutlass_namespace.cu"
    assert main(["build", str(planted), "--arch", "rtx3080"]) == BuildError.exit_code
    assert "CUTLASS (cutlass)" in capsys.readouterr().err
    assert main(["build", str(planted), "--arch", "rtx3080", "--allow-lib", "cutlass"]) == 0
    assert "allowed and used: cutlass" in capsys.readouterr().out
