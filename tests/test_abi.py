"""The C header and its ctypes twin agree byte for byte; the reference_kernels/ copy is the same file."""

import ctypes
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from solbench import abi

ROOT = Path(__file__).resolve().parents[1]
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")


def header_text() -> str:
    return abi.HEADER_PATH.read_text()


def header_fields() -> list[str]:
    """Field names of the C struct, in declaration order, parsed from the header."""
    body = re.search(r"typedef struct SolbenchAttentionParams \{(.*?)\} SolbenchAttentionParams;", header_text(), re.S)
    body = re.sub(r"/\*.*?\*/", "", body.group(1), flags=re.S)
    return [m.group(1) for m in re.finditer(r"(\w+)\s*;", body)]


def test_reference_kernels_symlink_resolves_to_canonical_header():
    link = ROOT / "reference_kernels" / "solbench_attention.h"
    assert link.is_symlink()
    assert not os.path.isabs(os.readlink(link)), "the link must be relative so it survives a clone"
    assert link.resolve() == abi.HEADER_PATH.resolve()


def test_python_constants_match_header():
    text = header_text()

    def define(name):
        return int(re.search(rf"#define {name} (\d+)", text).group(1))

    assert define("SOLBENCH_ABI_VERSION") == abi.ABI_VERSION
    assert define("SOLBENCH_PARAMS_BYTES") == abi.PARAMS_BYTES == ctypes.sizeof(abi.SolbenchAttentionParams)
    for name, code in abi.DTYPE_CODES.items():
        assert define(f"SOLBENCH_DTYPE_{name.upper()}") == code
    for name, code in abi.DESCALE_CODES.items():
        assert define(f"SOLBENCH_DESCALE_{name.upper()}") == code
    for code, name in abi.ERROR_NAMES.items():
        assert define(name) == code


def test_ctypes_fields_are_the_header_fields_in_order():
    assert [name for name, _ in abi.SolbenchAttentionParams._fields_] == header_fields()


@needs_gcc
def test_struct_layout_matches_gcc(tmp_path):
    """gcc prints sizeof/offsetof of every field; ctypes must agree on each."""
    names = [name for name, _ in abi.SolbenchAttentionParams._fields_]
    lines = [f'printf("{n} %zu %zu\\n", offsetof(SolbenchAttentionParams, {n}), sizeof(((SolbenchAttentionParams*)0)->{n}));'
             for n in names]
    src = tmp_path / "layout.c"
    src.write_text(
        '#include <stdio.h>\n#include <stddef.h>\n#include "solbench_attention.h"\n'
        "int main(void) {\n"
        '  printf("sizeof %zu %zu\\n", sizeof(SolbenchAttentionParams), (size_t)0);\n'
        '  printf("version %d 0\\n", (int)solbench_abi_version);\n  '
        + "\n  ".join(lines) + "\n  return 0;\n}\n"
    )
    exe = tmp_path / "layout"
    subprocess.run(["gcc", "-std=c11", "-Wall", "-Werror", "-pedantic", "-I", str(abi.INCLUDE_DIR), str(src), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    rows = dict((name, (int(a), int(b))) for name, a, b in
                (line.split() for line in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()))
    assert rows.pop("sizeof")[0] == ctypes.sizeof(abi.SolbenchAttentionParams)
    assert rows.pop("version")[0] == abi.ABI_VERSION
    for name, ctype in abi.SolbenchAttentionParams._fields_:
        field = getattr(abi.SolbenchAttentionParams, name)
        assert rows[name] == (field.offset, ctypes.sizeof(ctype)), name


@needs_gcc
@pytest.mark.parametrize("compiler", ["gcc", "g++"])
def test_header_compiles_as_c_and_cpp(tmp_path, compiler):
    src = tmp_path / ("t.c" if compiler == "gcc" else "t.cpp")
    src.write_text('#include "solbench_attention.h"\nint solbench_attention_forward(const SolbenchAttentionParams* p) { return p == 0; }\n')
    if compiler == "g++" and shutil.which("g++") is None:
        pytest.skip("g++ not installed")
    subprocess.run([compiler, "-Wall", "-Werror", "-fPIC", "-shared", "-I", str(abi.INCLUDE_DIR), str(src), "-o", str(tmp_path / "t.so")],
                   check=True, capture_output=True, text=True)
    lib = ctypes.CDLL(str(tmp_path / "t.so"))
    assert ctypes.c_int32.in_dll(lib, abi.VERSION_SYMBOL).value == abi.ABI_VERSION


def test_params_from_inputs_points_at_the_inputs_own_tensors():
    torch = pytest.importorskip("torch")
    from solbench.supervisor.inputs import make_inputs
    from solbench.core.scenario import MaskSpec, Scenario

    sc = Scenario(q_lens=(3, 0, 5), kv_lens=(40, 7, 5), heads_q=4, heads_kv=2, head_dim_qk=16, head_dim_v=8,
                  dtype="fp8_e4m3", descale="per_head", kv_layout="paged", page_size=16, causal=False,
                  window_left=4, window_right=2, softcap=30.0, sinks=True, mask=MaskSpec(density=0.5), regime="mixed")
    inp = make_inputs(sc)
    p = abi.params_from_inputs(inp, stream=1234, workspace=5678, workspace_bytes=99)
    for name in ("q", "k", "v", "out", "lse", "cu_seqlens_q", "cu_seqlens_kv", "kv_lens", "page_table", "sinks",
                 "mask_bits", "q_descale", "k_descale", "v_descale"):
        assert getattr(p, name) == getattr(inp, name).data_ptr(), name
    assert (p.stream, p.workspace, p.workspace_bytes) == (1234, 5678, 99)
    assert (p.batch, p.total_q, p.total_kv, p.max_q_len, p.max_kv_len) == (3, 8, 0, 5, 40)
    assert (p.heads_q, p.heads_kv, p.head_dim_qk, p.head_dim_v) == (4, 2, 16, 8)
    assert (p.page_size, p.num_pages, p.page_table_stride) == (16, inp.k.shape[0], inp.page_table.shape[1])
    assert p.mask_row_words == inp.mask_bits.shape[2] == 2
    assert (p.dtype, p.descale_mode, p.causal, p.window_left, p.window_right) == (2, 2, 0, 4, 2)
    assert p.softmax_scale == pytest.approx(sc.scale) and p.softcap == 30.0
    assert inp.out.dtype == torch.bfloat16


def test_params_from_inputs_contiguous_leaves_optional_pointers_null():
    pytest.importorskip("torch")
    from solbench.supervisor.inputs import make_inputs
    from solbench.core.scenario import Scenario

    inp = make_inputs(Scenario(q_lens=(2,), kv_lens=(9,), heads_q=2, heads_kv=2, head_dim_qk=8, head_dim_v=8))
    p = abi.params_from_inputs(inp)
    assert not any(getattr(p, n) for n in ("page_table", "sinks", "mask_bits", "q_descale", "k_descale", "v_descale", "stream", "workspace"))
    assert (p.total_kv, p.page_size, p.num_pages, p.page_table_stride, p.mask_row_words) == (9, 0, 0, 0, 0)
