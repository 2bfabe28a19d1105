"""The exported-symbol check of a built candidate (nm -D, never dlopen), and `solbench build` failing on a
library without the ABI's entry point. Plain gcc libraries stand in for nvcc builds where nvcc is absent."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from solbench import abi
from solbench.build.exports import check_exports, exported_symbols
from solbench.core.errors import LoadError
from solbench.front.cli import main

DATA = Path(__file__).parent / "data"
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("nm") is None, reason="gcc/nm not installed")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                                reason="nvcc not installed")


def gcc_so(tmp_path: Path, source: str, name: str = "k") -> Path:
    src, so = tmp_path / f"{name}.c", tmp_path / f"{name}.so"
    src.write_text(source)
    subprocess.run(["gcc", "-shared", "-fPIC", "-I", str(abi.INCLUDE_DIR), str(src), "-o", str(so)], check=True,
                   capture_output=True)
    return so


@needs_gcc
def test_a_complete_library_passes(tmp_path):
    so = gcc_so(tmp_path, '#include "solbench_attention.h"\nint solbench_attention_forward(const SolbenchAttentionParams* p) '
                          "{ return p == 0; }\n")
    check_exports(so)
    assert {abi.ENTRY_POINT, abi.VERSION_SYMBOL} <= exported_symbols(so)


@needs_gcc
def test_missing_entry_point_names_the_symbol_and_the_source(tmp_path):
    so = gcc_so(tmp_path, (DATA / "no_entry_point.c").read_text())
    with pytest.raises(LoadError, match=rf"kernel.cu: the built library does not export the entry point `{abi.ENTRY_POINT}`; "
                                        r"define extern \"C\""):
        check_exports(so, source="kernel.cu")


@needs_gcc
def test_missing_version_symbol_says_to_include_the_header(tmp_path):
    so = gcc_so(tmp_path, (DATA / "no_version_symbol.c").read_text())
    with pytest.raises(LoadError, match=r"no `solbench_abi_version` symbol; #include \"solbench_attention.h\""):
        check_exports(so)


def test_a_file_nm_cannot_read(tmp_path):
    if shutil.which("nm") is None:
        pytest.skip("nm not installed")
    junk = tmp_path / "junk.so"
    junk.write_text("not an ELF file")
    with pytest.raises(LoadError, match="junk.so: cannot read its dynamic symbol table"):
        check_exports(junk)


def test_without_nm_the_check_is_left_to_the_loader(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert exported_symbols(tmp_path / "anything.so") is None
    check_exports(tmp_path / "anything.so")


@needs_nvcc
@pytest.mark.parametrize("body, message", [
    ("int solbench_attention_fwd(const SolbenchAttentionParams* p) { return 0; }",
     "does not export the entry point `solbench_attention_forward`; define"),
    ("int solbench_attention_forward(const SolbenchAttentionParams* p);\nint solbench_attention_forward(int x) { return x; }",
     "C++ linkage as `solbench_attention_forward(int)`: declare it extern \"C\""),
])
@pytest.mark.slow
def test_build_of_a_cu_without_the_entry_point_exits_5(tmp_path, monkeypatch, capsys, body, message):
    monkeypatch.setenv("SOLBENCH_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "kernel.cu"
    src.write_text(f'#include "solbench_attention.h"\n{body}\n')
    assert main(["build", str(src), "--arch", "rtx3080"]) == LoadError.exit_code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"solbench build: error: {src}: ") and message in err
    assert main(["build", str(src), "--arch", "rtx3080", "--json"]) == LoadError.exit_code
    doc = json.loads(capsys.readouterr().out)  # one object: the error
    assert doc["ok"] is False and doc["exit_code"] == LoadError.exit_code and message in doc["error"]
    assert main(["run", str(src), "--arch", "b200", "--suite", "smoke"]) == LoadError.exit_code
    assert message in capsys.readouterr().err
