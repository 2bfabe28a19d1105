"""Loading a candidate library: ABI-version and entry-point checks with clear LoadErrors, and bind() filling
the struct from Inputs once. Runs on CPU: the libraries are plain C built with gcc (a host-side stand-in
kernel that works on CPU tensors), plus nvcc-built adversarial kernels that never touch the GPU."""

import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest

from solbench import abi
from solbench.core.errors import LoadError
from solbench.sandbox.loader import CuKernel, KernelCallError, load

torch = pytest.importorskip("torch")
from solbench.supervisor.inputs import make_inputs  # noqa: E402  (needs torch)
from solbench.core.tensors import poisoned
from solbench.core.scenario import MaskSpec, Scenario  # noqa: E402

DATA = Path(__file__).parent / "data"
ROOT = DATA.parents[1]
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                                reason="nvcc not installed")


def gcc_so(name: str, tmp: Path) -> Path:
    so = tmp / (Path(name).stem + ".so")
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wall", "-Werror", "-I", str(abi.INCLUDE_DIR), str(DATA / name), "-o", str(so)],
                   check=True, capture_output=True, text=True)
    return so


@pytest.fixture(scope="module")
def fake(tmp_path_factory) -> CuKernel:
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed")
    return load(gcc_so("fake_cpu_kernel.c", tmp_path_factory.mktemp("fake")))


SCENARIO = Scenario(q_lens=(3, 0, 5), kv_lens=(40, 7, 5), heads_q=4, heads_kv=2, head_dim_qk=16, head_dim_v=8,
                    kv_layout="paged", page_size=16, sinks=True, mask=MaskSpec(density=0.5), regime="mixed")


@needs_gcc
def test_abi_version_mismatch_names_both_versions_and_the_fix(tmp_path):
    so = gcc_so("abi_mismatch.c", tmp_path)
    with pytest.raises(LoadError) as exc:
        load(so)
    msg = str(exc.value)
    assert str(so) in msg and "ABI version 999" in msg and f"version {abi.ABI_VERSION}" in msg and "rebuild" in msg


@needs_gcc
def test_missing_entry_point_names_the_symbol_and_library(tmp_path):
    so = gcc_so("no_entry_point.c", tmp_path)
    with pytest.raises(LoadError, match=rf"{so}: missing entry point `solbench_attention_forward`"):
        load(so)


@needs_gcc
def test_missing_version_symbol_says_to_include_the_header(tmp_path):
    so = gcc_so("no_version_symbol.c", tmp_path)
    with pytest.raises(LoadError, match=r"no `solbench_abi_version` symbol; #include \"solbench_attention.h\""):
        load(so)


def test_not_a_library(tmp_path):
    with pytest.raises(LoadError, match="no such shared library"):
        load(tmp_path / "missing.so")
    junk = tmp_path / "junk.so"
    junk.write_text("not an ELF file")
    with pytest.raises(LoadError, match="cannot be loaded"):
        load(junk)


def test_load_reports_what_it_found(fake):
    assert fake.abi_version == abi.ABI_VERSION and fake.has_workspace_query and fake.writes_lse
    assert Path(fake.so_path).is_absolute()


def test_bind_fills_the_struct_from_the_inputs_own_tensors(fake):
    inp = make_inputs(SCENARIO)
    call = fake.bind(inp)
    call()
    seen = abi.SolbenchAttentionParams.in_dll(fake._lib, "last_params")
    for name in ("q", "k", "v", "out", "lse", "cu_seqlens_q", "kv_lens", "page_table", "sinks", "mask_bits"):
        assert getattr(seen, name) == getattr(inp, name).data_ptr(), name
    assert seen.q_descale is None and seen.stream is None  # CPU tensors: legacy default stream (0)
    assert (seen.total_q, seen.heads_q, seen.head_dim_v, seen.page_size) == (8, 4, 8, 16)
    assert seen.workspace_bytes == 64 + 8 and seen.workspace == call.workspace.data_ptr()
    assert bytes(call.workspace.tolist()) == b"\xab" * 72
    assert torch.equal(inp.out.float(), torch.ones(8, 4, 8))
    assert torch.equal(inp.lse, torch.arange(8).float()[:, None].expand(8, 4))
    assert not poisoned(inp.out).any() and not poisoned(inp.lse).any()


def test_bind_does_the_set_up_once(fake):
    inp = make_inputs(SCENARIO)
    call = fake.bind(inp)
    params = call.params
    before = ctypes.c_int.in_dll(fake._lib, "calls").value
    for _ in range(3):
        inp.poison()
        call()
    assert call.params is params
    assert ctypes.c_int.in_dll(fake._lib, "calls").value == before + 3
    assert not poisoned(inp.out).any()


def test_explicit_stream_is_passed_through(fake):
    inp = make_inputs(SCENARIO)
    fake.bind(inp, stream=0xDEAD)()
    assert abi.SolbenchAttentionParams.in_dll(fake._lib, "last_params").stream == 0xDEAD


def test_nonzero_return_raises_with_the_code(fake):
    sc = Scenario(q_lens=(2,), kv_lens=(4,), heads_q=2, heads_kv=1, head_dim_qk=8, head_dim_v=8, softcap=20.0)
    inp = make_inputs(sc)
    call = fake.bind(inp)
    with pytest.raises(RuntimeError, match=r"returned 2 \(SOLBENCH_ERR_UNSUPPORTED\)") as exc:
        call()
    assert isinstance(exc.value, KernelCallError) and exc.value.unsupported and exc.value.code == 2
    assert poisoned(inp.out).all(), "a declined call wrote nothing"


@needs_nvcc
def test_nvcc_built_writes_nothing_loads_and_leaves_the_poison(tmp_path):
    """The adversarial kernel makes no CUDA call, so it can run on CPU tensors: its outputs stay poisoned."""
    from solbench.build.nvcc import build

    so = build(ROOT / "reference_kernels" / "adversarial" / "writes_nothing.cu", "rtx3080", cache_dir=tmp_path).so_path
    kernel = load(so)
    assert not kernel.has_workspace_query
    inp = make_inputs(SCENARIO)
    kernel.bind(inp)()
    assert poisoned(inp.out).all() and poisoned(inp.lse).all()
