"""Forbidden libraries are caught in built .so files, named with their symbol, and can be allowed one by one.

Planted sources live in tests/data/. cuBLAS and cuDNN are linked for real when installed, else
against a stand-in library (tests/data/vendor_standin.c) that exports the same symbol, so the
NEEDED and symbol checks run either way.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

from solbench.build.binary_check import FORBIDDEN_LIBRARIES, check_binary, demangle, inspect_binary
from solbench.build.nvcc import build
from solbench.core.errors import BuildError, ConfigError

DATA = Path(__file__).parent / "data"
CUDA_LIB = Path("/usr/local/cuda/lib64")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                                reason="nvcc not installed")
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("build-cache")


def build_data(name: str, cache, flags=()):
    return build(DATA / name, "rtx3080", extra_flags=flags, cache_dir=cache).so_path


def vendor_link_flags(lib: str, tmp: Path) -> tuple[str, ...]:
    """-L/-l flags for lib ('cublas' or 'cudnn'): the installed library, else a stand-in built with gcc."""
    for folder in (CUDA_LIB, Path("/usr/lib/x86_64-linux-gnu")):
        if list(folder.glob(f"lib{lib}.so*")):
            return (f"-L{folder}", f"-l{lib}")
    if shutil.which("gcc") is None:
        pytest.skip(f"lib{lib} not installed and no gcc to build a stand-in")
    so = tmp / f"lib{lib}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", f"-DSTANDIN_{lib.upper()}", f"-Wl,-soname,lib{lib}.so.99",
                    str(DATA / "vendor_standin.c"), "-o", str(so)], check=True, capture_output=True)
    return (f"-L{tmp}", f"-l{lib}")


@needs_nvcc
def test_clean_kernel_with_lookalike_names_passes(cache):
    report = check_binary(build_data("clean.cu", cache))
    assert report.ok and report.findings == ()
    assert "no forbidden library" in report.verdict()
    assert any("nm" in i for i in report.inspections) and "embedded-name scan" in report.inspections


@needs_nvcc
@pytest.mark.parametrize("lib, symbol, display", [("cublas", "cublasCreate_v2", "cuBLAS"), ("cudnn", "cudnnCreate", "cuDNN")])
def test_linked_vendor_library_is_rejected_with_library_and_symbol(cache, tmp_path, lib, symbol, display):
    so = build_data(f"calls_{lib}.cu", cache, flags=vendor_link_flags(lib, tmp_path))
    with pytest.raises(BuildError) as exc:
        check_binary(so, source=f"calls_{lib}.cu")
    msg = str(exc.value)
    assert msg.startswith(f"calls_{lib}.cu: forbidden library: {display} ({lib})")
    assert f"`{symbol}`" in msg and f"links lib{lib}.so" in msg and f"--allow-lib {lib}" in msg
    report = inspect_binary(so)
    assert {f.where for f in report.findings} >= {"NEEDED", "dynamic symbol"}
    assert any(n.startswith(f"lib{lib}.so") for n in report.needed)


@needs_nvcc
def test_allow_lifts_exactly_one_library(cache, tmp_path):
    so = build_data("calls_cublas.cu", cache, flags=vendor_link_flags("cublas", tmp_path))
    report = check_binary(so, allow=("cublas",))
    assert report.ok and {f.library for f in report.allowed_findings} == {"cublas"}
    assert "allowed and used: cublas" in report.verdict()
    with pytest.raises(BuildError):
        check_binary(so, allow=("cudnn",))


@needs_nvcc
def test_kernel_in_namespace_cutlass_is_rejected(cache):
    so = build_data("cutlass_namespace.cu", cache)
    with pytest.raises(BuildError, match=r"CUTLASS \(cutlass\): symbol `cutlass::device_kernel\(float\*\)`"):
        check_binary(so)
    assert check_binary(so, allow=("cutlass",)).ok


@needs_nvcc
def test_cute_names_in_template_arguments_and_device_code_are_rejected(cache):
    so = build_data("cute_namespace.cu", cache)
    report = inspect_binary(so)
    symbols = {f.symbol for f in report.findings}
    assert {f.library for f in report.findings} == {"cute"}
    assert any("tile_kernel<cute::Int<128> >" in s for s in symbols), symbols
    assert any(s.startswith("cute::copy_tile") for s in symbols), symbols
    with pytest.raises(BuildError, match=r"CuTe \(cute\)"):
        check_binary(so)
    assert check_binary(so, allow=("cute",)).ok
    with pytest.raises(BuildError):
        check_binary(so, allow=("cutlass",))  # allowing CUTLASS does not allow CuTe


@needs_nvcc
def test_dlopen_bypass_is_rejected_through_embedded_strings(cache):
    so = build_data("dlopen_cublas.cu", cache)
    report = inspect_binary(so)
    assert not any(n.startswith("libcublas") for n in report.needed), "nothing is linked"
    assert {(f.symbol, f.where) for f in report.findings} >= {("libcublas.so.13", "embedded string"),
                                                               ("cublasCreate_v2", "embedded string")}
    with pytest.raises(BuildError, match="cuBLAS"):
        check_binary(so)


@needs_gcc
def test_plain_shared_library_exporting_a_cudnn_symbol_is_caught(tmp_path):
    """No nvcc needed: the symbol-table inspection alone catches a defined cudnn* function."""
    so = tmp_path / "libfake.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-DSTANDIN_CUDNN", str(DATA / "vendor_standin.c"), "-o", str(so)],
                   check=True, capture_output=True)
    report = inspect_binary(so)
    assert ("cudnn", "cudnnCreate", "dynamic symbol") in {(f.library, f.symbol, f.where) for f in report.findings}


def test_unknown_allowed_library_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="unknown library 'mkl'"):
        inspect_binary(tmp_path / "x.so", allow=("mkl",))


def test_missing_file_is_a_build_error(tmp_path):
    with pytest.raises(BuildError, match="no such shared library"):
        inspect_binary(tmp_path / "nope.so")


def test_missing_tools_are_reported_not_hidden(tmp_path, monkeypatch):
    so = tmp_path / "empty.so"
    so.write_bytes(b"\x7fELF not really")
    monkeypatch.setattr("solbench.build.binary_check.shutil.which", lambda name: None)
    report = inspect_binary(so)
    assert set(report.missing_tools) == {"readelf", "nm", "cuobjdump"}
    assert report.inspections == ("embedded-name scan",)
    assert "not checked with: readelf, nm, cuobjdump" in report.verdict()


def test_forbidden_library_names():
    assert FORBIDDEN_LIBRARIES == ("cublas", "cudnn", "cutlass", "cute")


@pytest.mark.skipif(shutil.which("c++filt") is None and shutil.which("cu++filt") is None, reason="no demangler")
def test_demangle_keeps_order_and_passes_c_names_through():
    assert demangle(["_ZN7cutlass2k1EPf", "cublasCreate_v2"]) == ["cutlass::k1(float*)", "cublasCreate_v2"]
    assert demangle([]) == []
