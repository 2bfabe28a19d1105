"""Build, on a machine without a GPU, the FlashInfer JIT modules the flashinfer-fa2/fa3 adapters use for suites.

FlashInfer JIT-compiles every kernel variant with nvcc on first use (about 20-70 s each on the H200 host),
which spends scarce GPU time. This script compiles those variants here for sm_90a (nvcc 13, no GPU) and lays
them out as a FlashInfer "JIT-cache provider": OUT/<module>/<module>.so, plus a tiny `flashinfer_jit_cache`
package in OUT that tells FlashInfer where they are. With OUT on PYTHONPATH, FlashInfer 0.7.2
(flashinfer/jit/env.py get_aot_artifacts, jit/core.py JitSpecNvcc.try_load) loads each module with
tvm_ffi.load_module instead of running ninja/nvcc; a module not in OUT is still JIT-compiled as before.
Loading checks only FlashInfer's version (the shim reports the version it was built with) and the CUDA
target (sm90a: an exact match on the H200), not the nvcc, the Python or the paths of the build.

Which modules: for every scenario of the suites that an adapter claims on --arch, the module its bind plans
(flashinfer.py: ragged/paged prefill -> the batch-prefill module of its backend, fa2 decode -> the decode
module or, with tensor cores, the fa2 prefill module, sinks -> the attention-sink module, custom masks ->
the fa2 prefill module and the packbits module). Needs flashinfer-python (the version the GPU machine has),
apache-tvm-ffi, ninja, nvcc 13 and the CUDA headers incl. curand (`pip install nvidia-curand` provides them;
found automatically) in the Python that runs it; torch may be the CPU build.

    python benchmarks/prebuild_flashinfer.py fa3-h2h [SUITE..] [--out .fi-aot] [--adapters flashinfer-fa2,flashinfer-fa3]
    python benchmarks/prebuild_flashinfer.py fa3-h2h --list      # the modules, without building

After building it loads every module back through FlashInfer with FLASHINFER_DISABLE_JIT=1 (the load check).
Measured here (2 cores): fa3-h2h needs 4 modules (fa2 and fa3, d64 and d128), 7.3 MiB, ~14 min to build
(fa2 ~80 s, fa3 ~6 min each); `hopper` needs 34 (fa2 ~50 s, fa3 ~220 s each here: about 90 minutes). Modules
already in OUT are kept, so suites can be added one at a time. On a machine with more cores, `--parallel N
--jobs 1` builds N modules at once (the GPU machine has 16 cores and nvcc: stage flashinfer there, then run
this script before the recording).

On the GPU machine: carry the folder and put it on PYTHONPATH, e.g.
    source /tmp/site/env.sh; export PYTHONPATH=$PWD/.fi-aot:$PYTHONPATH; bash benchmarks/h200_acceptance.sh record fa3-h2h
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ADAPTERS = ("flashinfer-fa2", "flashinfer-fa3")
ARCH_LIST = {90: "9.0a"}  # solbench arch's SM -> FLASHINFER_CUDA_ARCH_LIST entry
PROVIDER_ARCH = {90: "sm90a"}

SHIM = '''"""FlashInfer JIT-cache provider for the modules beside this package (benchmarks/prebuild_flashinfer.py)."""
import json
import pathlib
from types import SimpleNamespace

_ROOT = pathlib.Path(__file__).resolve().parent.parent
_MANIFEST = json.loads((_ROOT / "manifest.json").read_text())
__version__ = _MANIFEST["flashinfer_version"]


def get_jit_cache_providers():
    modules = [p.name for p in _ROOT.iterdir() if (p / (p.name + ".so")).is_file()]
    return [SimpleNamespace(provider_id="solbench-prebuilt", distribution="solbench-prebuilt-flashinfer",
                            version=__version__, jit_cache_dir=str(_ROOT),
                            cuda_architectures=_MANIFEST["cuda_architectures"], modules=modules)]
'''


# --- which modules (pure Python: no flashinfer import) -------------------------------------------------

def variants(adapter_cls, sc) -> list[tuple]:
    """The JIT modules the adapter's bind builds for scenario sc, as (kind, *args) keys:
    ('prefill', backend, dtype, d_qk, d_vo, use_swa, use_softcap), ('decode', dtype, d, use_swa, use_softcap),
    ('sink', backend, dtype, d_qk, d_vo, use_swa), ('packbits',)."""
    from solbench.baselines.flashinfer import decode_uses_tensor_cores, fi_window_left, route

    dt = sc.dtype
    d, dv = sc.head_dim_qk, sc.head_dim_v
    swa, cap = fi_window_left(sc) >= 0, sc.softcap > 0
    path = route(sc, adapter_cls.backend)
    if path == "mask":  # flashinfer_mask: fa2 ragged, causal/window folded into the mask, packed in plan
        return [("prefill", "fa2", dt, d, dv, False, cap), ("packbits",)]
    if path == "sink":
        return [("sink", adapter_cls.backend, dt, d, dv, swa)]
    if path == "decode" and not decode_uses_tensor_cores(sc):
        return [("decode", dt, d, swa, cap)]  # the CUDA-core decode kernel (tensor cores: the prefill module)
    return [("prefill", adapter_cls.backend, dt, d, dv, swa, cap)]


def wanted(suites, adapters, arch) -> dict[tuple, list[str]]:
    """variant key -> the (adapter, scenario id) pairs that need it."""
    from solbench.baselines import get_adapter_class
    from solbench.core.suites import load_suite

    need: dict[tuple, list[str]] = {}
    for suite in suites:
        for sc in load_suite(suite).scenarios:
            for name in adapters:
                cls = get_adapter_class(name)
                if cls.supports(sc, arch).ok:
                    for key in variants(cls, sc):
                        need.setdefault(key, []).append(f"{name} {sc.id}")
    return need


# --- the build environment (set before flashinfer is imported) -----------------------------------------

def find_curand_include() -> str | None:
    """A folder holding curand_kernel.h (CUTLASS's tensor_fill.h, included by the SM90 kernels, needs it)."""
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    if Path(cuda, "include", "curand_kernel.h").exists():
        return None  # the toolkit has it
    for entry in sys.path:
        for hit in glob.glob(os.path.join(entry, "nvidia", "*", "include", "curand_kernel.h")):
            return os.path.dirname(hit)
    sys.exit("curand_kernel.h is not in the CUDA toolkit here: pip install nvidia-curand (headers only are used)")


def configure(sm: int, work: Path) -> None:
    """Environment for FlashInfer's JIT: target arch, private workspace, CUDA_HOME, curand headers, and a
    libcuda stub to link against where the toolkit has none (the real driver is found at load time)."""
    os.environ["FLASHINFER_CUDA_ARCH_LIST"] = ARCH_LIST[sm]
    os.environ["FLASHINFER_WORKSPACE_BASE"] = str(work)
    if "CUDA_HOME" not in os.environ and Path("/usr/local/cuda/bin/nvcc").exists():
        os.environ["CUDA_HOME"] = "/usr/local/cuda"
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    inc = find_curand_include()
    if inc:
        os.environ["FLASHINFER_EXTRA_CUDAFLAGS"] = (os.environ.get("FLASHINFER_EXTRA_CUDAFLAGS", "") +
                                                    f" -isystem {inc}").strip()
    have_libcuda = any(Path(cuda, sub, "libcuda.so").exists() for sub in ("lib64", "lib64/stubs", "lib/stubs"))
    if not have_libcuda and "libcuda.so " not in subprocess.run(["ldconfig", "-p"], capture_output=True, text=True,
                                                                 check=False).stdout:
        stub = work / "libcuda-stub"
        stub.mkdir(parents=True, exist_ok=True)
        (stub / "empty.c").write_text("")
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(stub / "libcuda.so"), "-Wl,-soname,libcuda.so.1",
                        str(stub / "empty.c")], check=True)
        os.environ["FLASHINFER_EXTRA_LDFLAGS"] = (os.environ.get("FLASHINFER_EXTRA_LDFLAGS", "") +
                                                  f" -L{stub}").strip()


# --- flashinfer's own spec generators ------------------------------------------------------------------

class _Captured(Exception):
    pass


def sink_spec(backend, dtype, d, dv, swa):
    """The attention-sink wrapper's module spec, with exactly the jit_args its constructor makes: the
    constructor is run until it asks for the module (nothing before that touches a device)."""
    import flashinfer
    import torch
    from flashinfer import prefill
    from flashinfer.jit.attention.modules import gen_customize_batch_prefill_module

    seen = {}
    original = prefill.get_customize_batch_prefill_module

    def capture(backend_, *args, **kwargs):
        seen.update(backend=backend_, args=args, kwargs=kwargs)
        raise _Captured

    prefill.get_customize_batch_prefill_module = capture
    try:
        flashinfer.BatchAttentionWithAttentionSinkWrapper(
            torch.empty(0, dtype=torch.uint8), "NHD", backend=backend, q_data_type=dtype, kv_data_type=dtype,
            head_dim_qk=d, head_dim_vo=dv, window_left=0 if swa else -1)
    except _Captured:
        pass
    finally:
        prefill.get_customize_batch_prefill_module = original
    return gen_customize_batch_prefill_module(seen["backend"], *seen["args"], **seen["kwargs"])


def spec_for(key):
    import torch
    from flashinfer.jit.attention.modules import (
        _gen_batch_prefill_primary_module,
        gen_batch_decode_module,
        gen_batch_prefill_module,
    )
    from flashinfer.jit.quantization import gen_quantization_module

    from solbench.core.tensors import torch_dtype

    kind = key[0]
    if kind == "packbits":
        return gen_quantization_module()
    idx = torch.int32  # solbench's indptrs (cu_seqlens, flashinfer_pages) are int32
    if kind == "prefill":
        _, backend, dt, d, dv, swa, cap = key
        t = torch_dtype(dt)
        # prefill.get_batch_prefill_module: fa2 loads the equal-KV-stride primary (solbench's K and V pools share
        # their strides, so the lazily built independent-stride module is never needed); fa3 the full module
        gen = _gen_batch_prefill_primary_module if backend == "fa2" else gen_batch_prefill_module
        return gen(backend, t, t, t, idx, d, dv, 0, swa, cap, False)
    if kind == "decode":
        _, dt, d, swa, cap = key
        t = torch_dtype(dt)
        return gen_batch_decode_module(t, t, t, idx, d, d, 0, swa, cap)
    if kind == "sink":
        _, backend, dt, d, dv, swa = key
        return sink_spec(backend, torch_dtype(dt), d, dv, swa)
    raise ValueError(key)


def folder_mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def load_check(args) -> int:
    """Child process: with OUT first on PYTHONPATH and FLASHINFER_DISABLE_JIT=1, load every module of the
    manifest through FlashInfer's own JitSpec.build_and_load (what the wrappers call), so none compiles."""
    import flashinfer.jit.env as jit_env

    providers = [p for p in jit_env.FLASHINFER_AOT_PROVIDERS if p.provider_id == "solbench-prebuilt"]
    if not providers:
        print("load check: FlashInfer did not pick up the provider in", args.out)
        return 1
    manifest = json.loads((args.out / "manifest.json").read_text())
    for name, key in manifest["modules"].items():
        key = tuple(int(k) if k.isdigit() else {"True": True, "False": False}.get(k, k) for k in key)
        spec = spec_for(key)
        assert spec.name == name and spec.is_aot, (name, spec.name)
        spec.build_and_load()
    print(f"load check: {len(manifest['modules'])} module(s) load from {args.out} with JIT disabled")
    return 0


def run_load_check(args, sm: int) -> None:
    env = dict(os.environ, FLASHINFER_DISABLE_JIT="1", FLASHINFER_CUDA_ARCH_LIST=ARCH_LIST[sm],
               FLASHINFER_WORKSPACE_BASE=tempfile.mkdtemp(prefix="fi-check-"),
               PYTHONPATH=os.pathsep.join([str(args.out.resolve()), *filter(None, [os.environ.get("PYTHONPATH")])]))
    cuda_lib = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "lib64")
    if (cuda_lib / "libcudart.so.13").exists():  # a machine without a driver: libcudart from the toolkit
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(cuda_lib), env.get("LD_LIBRARY_PATH")]))
    cmd = [sys.executable, __file__, *args.suites, "--out", str(args.out), "--arch", args.arch, "--load-check"]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    print(result.stdout.strip().splitlines()[-1] if result.returncode == 0 else
          f"load check FAILED (exit {result.returncode}):\n{result.stdout[-2000:]}{result.stderr[-3000:]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("suites", nargs="+", help="suite names (scenarios/<name>.toml)")
    ap.add_argument("--out", type=Path, default=ROOT / ".fi-aot", help="output folder (default .fi-aot)")
    ap.add_argument("--adapters", default=",".join(ADAPTERS), help="comma-separated (default: both)")
    ap.add_argument("--arch", default="h200", help="solbench arch whose claims decide the modules (default h200)")
    ap.add_argument("--work", type=Path, help="FlashInfer build workspace (default: a temporary folder)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel nvcc jobs per module")
    ap.add_argument("--parallel", type=int, default=1, help="modules built at once (e.g. 16 with --jobs 1 on a "
                    "16-core machine: a module's own nvcc jobs keep few cores busy)")
    ap.add_argument("--list", action="store_true", help="print the modules and exit")
    ap.add_argument("--no-check", action="store_true", help="skip loading the modules back with JIT disabled")
    ap.add_argument("--load-check", action="store_true", help=argparse.SUPPRESS)  # the check's child process
    args = ap.parse_args(argv)
    if args.load_check:
        return load_check(args)

    from solbench.baselines.base import sm_of

    sm = sm_of(args.arch)
    if sm not in ARCH_LIST:
        sys.exit(f"no prebuild target for {args.arch} (sm_{sm}); known: {sorted(ARCH_LIST)}")
    need = wanted(args.suites, [a.strip() for a in args.adapters.split(",") if a.strip()], args.arch)
    if not need:
        print("no scenario of these suites is claimed by these adapters: nothing to build")
        return 0

    work = args.work or Path(tempfile.mkdtemp(prefix="fi-prebuild-"))
    configure(sm, work)
    os.environ["MAX_JOBS"] = str(args.jobs)
    import flashinfer

    out = args.out
    manifest_path = out / "manifest.json"
    prev = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    if prev.get("flashinfer_version") not in (None, flashinfer.__version__):
        sys.exit(f"{out} holds modules of flashinfer {prev['flashinfer_version']}, this is {flashinfer.__version__}")
    built_keys = {n: tuple(k) for n, k in prev.get("modules", {}).items()}

    specs, clashes = {}, {}
    for key, users in need.items():
        spec = spec_for(key)
        norm = tuple(map(str, key))
        other = specs[spec.name][0] if spec.name in specs else None
        if (other is not None and other != key) or built_keys.get(spec.name, norm) != norm:
            # FlashInfer names some modules by a subset of their parameters (the attention-sink module's name
            # has no head dims): variants under one name overwrite each other in any cache, a prebuilt one would
            # be loaded for the wrong variant. Leave such names to the GPU machine's JIT.
            clashes.setdefault(spec.name, set()).update({key, other or built_keys[spec.name]})
            continue
        specs[spec.name] = (key, spec, users)
    for name, keys in clashes.items():
        specs.pop(name, None)
        if (out / name).exists():
            shutil.rmtree(out / name)
        print(f"NOT prebuilt (one FlashInfer module name, several variants: {sorted(map(str, keys))}): {name}")
    for name, (key, _, users) in specs.items():
        print(f"{name}\n    {key}  ({len(users)} claims, e.g. {users[0]})")
    if args.list:
        return 0

    out.mkdir(parents=True, exist_ok=True)

    def build(name, spec):
        dest = out / name / f"{name}.so"
        if dest.exists():
            print(f"have   {name}", flush=True)
            return
        t0 = time.time()
        spec.build()  # ninja in a subprocess: modules build side by side in threads
        dest.parent.mkdir(exist_ok=True)
        shutil.copy2(spec.jit_library_path, dest)
        print(f"built  {name}  {dest.stat().st_size / 2**20:.1f} MiB in {time.time() - t0:.0f} s", flush=True)

    with ThreadPoolExecutor(max(1, args.parallel)) as pool:
        for done in [pool.submit(build, name, spec) for name, (_, spec, _) in specs.items()]:
            done.result()
    (out / "flashinfer_jit_cache").mkdir(exist_ok=True)
    (out / "flashinfer_jit_cache" / "__init__.py").write_text(SHIM)
    modules = {n: k for n, k in prev.get("modules", {}).items() if n not in clashes}  # earlier suites' modules
    modules.update({n: list(map(str, k)) for n, (k, _, _) in specs.items()})
    manifest = {"flashinfer_version": flashinfer.__version__, "cuda_architectures": [PROVIDER_ARCH[sm]],
                "suites": sorted(set(prev.get("suites", [])) | set(args.suites)), "modules": modules}
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    try:
        rel = out.resolve().relative_to(ROOT)
        exclude = ROOT / ".git" / "info" / "exclude"
        if exclude.parent.is_dir() and f"/{rel}/" not in exclude.read_text().split():
            with exclude.open("a") as f:
                f.write(f"/{rel}/\n")
    except (ValueError, OSError):
        rel = out
    if not args.no_check:
        run_load_check(args, sm)
    print(f"\n{out}: {len(manifest['modules'])} module(s), {folder_mib(out):.1f} MiB (flashinfer {flashinfer.__version__}, "
          f"{PROVIDER_ARCH[sm]})")
    where = rel if Path(rel).is_absolute() else f"$PWD/{rel}"  # outside the checkout: a folder of that machine
    print("On the GPU machine: carry it and put it on PYTHONPATH before anything imports flashinfer:\n"
          f"    carry [\"{rel}\"]; command: source /tmp/site/env.sh; export PYTHONPATH={where}:$PYTHONPATH; ...")
    return 0


if __name__ == "__main__":
    sys.exit(main())
