"""The seed kernel against the fp32 reference on small scenarios that cover every feature, and the
adversarial kernels' failure modes.

Two tiers over the same scenarios:
- `gpu` marker: the seed is built for the GPU present and run for real; the adversarial kernels are
  observed in-process (poison left, wrong numbers, side-stream work) or in a child process (illegal
  address, hang). Skipped cleanly where torch sees no GPU.
- CPU (CI): the same .cu sources are compiled for the host with tests/data/cuda_host_emulation.h (one
  std::thread per CUDA thread, std::barrier for __syncthreads) and called through the real loader on CPU
  tensors. That checks the algorithm, the masks and the ABI plumbing without a GPU; it cannot check
  code generation, which is what the gpu tier is for.
"""

import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from solbench.supervisor.inputs import make_inputs  # noqa: E402
from solbench.core.tensors import poisoned
from solbench.sandbox.loader import load  # noqa: E402
from solbench.core.model import Status  # noqa: E402
from solbench.supervisor.reference import reference  # noqa: E402
from solbench.core.scenario import MaskSpec, Scenario  # noqa: E402
from solbench.supervisor.verdict import judge  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "reference_kernels"
DATA = Path(__file__).parent / "data"
CUDA_INCLUDE = Path("/usr/local/cuda/include")
gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                                reason="nvcc not installed")


def S(q_lens, kv_lens, hq=4, hkv=2, d=64, **kw):
    kw.setdefault("head_dim_v", d)
    if kw.get("regime") is None:
        kw["regime"] = "prefill" if len(set(q_lens)) == 1 and q_lens == kv_lens else "mixed"
    return Scenario(q_lens=q_lens, kv_lens=kv_lens, heads_q=hq, heads_kv=hkv, head_dim_qk=d, **kw)


CASES = [
    S((70,), (70,), hq=4, hkv=4),                                                   # MHA causal, 2 query tiles
    S((33,), (100,), d=128, dtype="fp16", causal=False),                            # full, GQA
    S((70, 0, 3, 5), (50, 4, 0, 90), d=128),                                        # ragged: q>kv, q=0, kv=0
    S((20, 7), (45, 60), hkv=1, d=96, head_dim_v=64, kv_layout="paged", page_size=16,
      softcap=5.0, sinks=True),                                                     # MQA, paged, d_qk != d_v
    S((20, 7), (45, 60), dtype="fp8_e4m3", descale="per_head",
      mask=MaskSpec(density=0.4, pattern="iid_empty_rows")),                        # fp8 per head, bitmask
    S((9,), (40,), hq=2, dtype="fp8_e4m3", descale="per_tensor", window_left=3),    # fp8 per tensor, window
    S((1, 1, 1), (37, 1, 100), hq=8, d=256, dtype="fp16", sinks=True,
      input_profile="sinks_positive", regime="decode"),                             # decode, d256, big sinks
    S((4,), (20,), hq=1, hkv=1, d=512, causal=False),                               # d512
    S((33,), (100,), causal=False, window_left=10, window_right=5),                 # two-sided window
    S((16, 40), (100, 40), hq=6, hkv=2, kv_layout="paged", page_size=8,
      regime="chunked_prefill"),                                                    # group of 3, small pages
    S((24,), (300,), hq=2, softcap=30.0, input_profile="large_logits"),             # softcap on large logits
    S((30,), (64,), sinks=True, input_profile="sinks_negative", window_left=20,
      mask=MaskSpec(density=0.3, seed=3)),                                          # causal+window+mask+sinks
    S((12,), (5,), hq=2, hkv=1, d=32, head_dim_v=16, softmax_scale=0.05),           # empty rows, explicit scale
    S((1, 1), (300, 513), hq=8, hkv=1, regime="split_kv_decode"),                   # long decode, MQA
]
GPU_ONLY_CASES = [
    S((1000, 300), (1000, 700), hq=8, hkv=2, d=128),
    S((257,), (4099,), hq=32, hkv=8, d=128, kv_layout="paged", page_size=64, causal=False, window_left=512,
      window_right=64),
]


def check_against_reference(inp):
    """The seed's verdict must be PASSED, and its fp32 LSE close to the reference's."""
    ref_out, ref_lse = reference(inp)
    verdict = judge(inp.out, inp.lse, ref_out, ref_lse, inp.scenario.dtype)
    assert verdict.status is Status.PASSED, f"{inp.scenario.id}: {verdict.reason}"
    finite = torch.isfinite(ref_lse)
    assert torch.equal(finite, torch.isfinite(inp.lse)) and bool((inp.lse[~finite] == float("-inf")).all())
    if finite.any():
        assert float((inp.lse[finite] - ref_lse[finite]).abs().max()) < 1e-3
    assert bool((inp.out[~finite] == 0).all()), "rows with nothing visible must be 0"


# --- CPU tier: the sources compiled for the host ------------------------------------------------------------

def emulated_so(tmp: Path, rel: str) -> Path:
    """Compile reference_kernels/<rel> for the CPU: every launch `k<<<g, b, s, st>>>(args)` becomes
    `emu_launch(k, g, b, s, st, args)`, in that file and in the .cu files it includes."""
    if shutil.which("g++") is None or not (CUDA_INCLUDE / "cuda_bf16.h").exists():
        pytest.skip("needs g++ and the CUDA headers")
    for src in KERNELS.rglob("*.cu"):
        dst = tmp / src.relative_to(KERNELS)
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(re.sub(r"(\w+)<<<(.*?)>>>\((.*?)\);", r"emu_launch(\1, \2, \3);", src.read_text()))
    so = tmp / (Path(rel).stem + "_emulated.so")
    cmd = ["g++", "-x", "c++", "-std=c++20", "-O1", "-fPIC", "-shared", "-w", "-include", str(DATA / "cuda_host_emulation.h"),
           f"-I{CUDA_INCLUDE}", f"-I{ROOT / 'solbench' / 'abi'}", str(tmp / rel), "-o", str(so), "-lpthread"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return so


@pytest.fixture(scope="module")
def emulated_seed(tmp_path_factory):
    return load(emulated_so(tmp_path_factory.mktemp("emu"), "seed_attention.cu"))


@pytest.mark.parametrize("sc", CASES, ids=lambda sc: sc.id)
def test_seed_emulated_on_cpu_matches_reference(emulated_seed, sc):
    inp = make_inputs(sc)
    emulated_seed.bind(inp)()
    check_against_reference(inp)


def test_wrong_scale_emulated_on_cpu_is_a_mismatch(tmp_path):
    kernel = load(emulated_so(tmp_path, "adversarial/wrong_scale.cu"))
    inp = make_inputs(CASES[0])
    kernel.bind(inp)()
    ref_out, ref_lse = reference(inp)
    verdict = judge(inp.out, inp.lse, ref_out, ref_lse, inp.scenario.dtype)
    assert verdict.status is Status.MISMATCH, verdict


@needs_nvcc
def test_segfault_kills_only_the_process_that_calls_it(tmp_path):
    """segfault.cu dies in host code (no GPU needed): a worker running it must die with SIGSEGV."""
    from solbench.build.nvcc import build

    so = build(KERNELS / "adversarial" / "segfault.cu", "rtx3080", cache_dir=tmp_path).so_path
    code = _child_script(so, "cpu")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == -signal.SIGSEGV, proc.stderr[-2000:]


def _child_script(so: Path, device: str, sync: bool = False) -> str:
    return (
        "from solbench.supervisor.inputs import make_inputs; from solbench.sandbox.loader import load; "
        "from solbench.core.scenario import Scenario; import torch; "
        f"inp = make_inputs(Scenario(q_lens=(8,), kv_lens=(8,), heads_q=2, heads_kv=1, head_dim_qk=64, head_dim_v=64), device={device!r}); "
        f"load({str(so)!r}).bind(inp)(); "
        + ("torch.cuda.synchronize(); " if sync else "")
        + "print('returned')"
    )


# --- GPU tier -------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpu_build(tmp_path_factory):
    from solbench.build.nvcc import build

    cache = tmp_path_factory.mktemp("gpu-build")
    return lambda rel: build(KERNELS / rel, "auto", cache_dir=cache).so_path


def run_on_gpu(so, sc: Scenario):
    inp = make_inputs(sc, device="cuda")
    load(so).bind(inp)()
    torch.cuda.synchronize()
    return inp


@gpu
@needs_gpu
@pytest.mark.parametrize("sc", CASES + GPU_ONLY_CASES, ids=lambda sc: sc.id)
def test_seed_matches_reference_on_gpu(gpu_build, sc):
    check_against_reference(run_on_gpu(gpu_build("seed_attention.cu"), sc))


@gpu
@needs_gpu
def test_seed_follows_the_current_torch_stream(gpu_build):
    inp = make_inputs(CASES[2], device="cuda")
    call = load(gpu_build("seed_attention.cu")).bind(inp)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        call()
    side.synchronize()
    check_against_reference(inp)


@gpu
@needs_gpu
@pytest.mark.parametrize("rel", ["adversarial/writes_nothing.cu", "examples/empty_kernel.cu"])
def test_kernels_that_write_nothing_leave_the_poison(gpu_build, rel):
    inp = run_on_gpu(gpu_build(rel), CASES[0])
    assert poisoned(inp.out).all() and poisoned(inp.lse).all()
    ref_out, ref_lse = reference(inp)
    assert judge(inp.out, inp.lse, ref_out, ref_lse, "bf16").status is Status.UNWRITTEN


@gpu
@needs_gpu
def test_wrong_scale_is_a_mismatch_on_gpu(gpu_build):
    for sc in CASES[:4]:
        inp = run_on_gpu(gpu_build("adversarial/wrong_scale.cu"), sc)
        ref_out, ref_lse = reference(inp)
        assert judge(inp.out, inp.lse, ref_out, ref_lse, sc.dtype).status is Status.MISMATCH, sc.id


@gpu
@needs_gpu
def test_side_stream_is_correct_only_after_a_device_sync(gpu_build):
    """The cheat's outputs are right (so correctness alone cannot catch it): timing must."""
    check_against_reference(run_on_gpu(gpu_build("adversarial/side_stream.cu"), CASES[2]))


@gpu
@needs_gpu
def test_illegal_address_fails_the_process_with_a_cuda_error(gpu_build):
    code = _child_script(gpu_build("adversarial/illegal_address.cu"), "cuda", sync=True)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode != 0 and "illegal memory access" in proc.stderr, proc.stderr[-2000:]


@gpu
@needs_gpu
def test_infinite_loop_never_returns_from_a_sync(gpu_build):
    code = _child_script(gpu_build("adversarial/infinite_loop.cu"), "cuda", sync=True)
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, cwd=ROOT)
