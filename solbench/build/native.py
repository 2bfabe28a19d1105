"""Build the native runner (solbench/sandbox/native/runner.cu): the process a .cu candidate is timed in,
with no Python in it (solbench.supervisor.native_worker starts it). Built with the same nvcc as candidates,
cached by content like them; with CUPTI's headers when the toolkit has them (the runner then records every
kernel of every stream, loading libcupti at run time: `cupti_library` says which).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from solbench import abi
from solbench.build.nvcc import cache_key, cache_root, find_nvcc, local_headers, nvcc_version_text, resolve_arch
from solbench.core.errors import BuildError

RUNNER_SOURCE = Path(__file__).resolve().parents[1] / "sandbox" / "native" / "runner.cu"
RUNNER_FLAGS = ("-O2", "--std=c++17", "-lineinfo", "-Xlinker=--strip-all")
"""Stripped: a candidate in the runner's process finds none of its functions or state by name."""


def toolkit_roots(nvcc: str | None) -> list[Path]:
    """Where the CUDA toolkit may be: nvcc's own (…/bin/nvcc), $CUDA_HOME, /usr/local/cuda[-X.Y]."""
    roots = [Path(os.path.realpath(nvcc)).parent.parent] if nvcc else []
    roots += [Path(os.environ[v]) for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    roots += [Path("/usr/local/cuda"), *sorted(Path("/usr/local").glob("cuda-*"), reverse=True)]
    return list(dict.fromkeys(r for r in roots if r.is_dir()))


def cupti_include_dirs(nvcc: str) -> list[str]:
    """Where CUPTI's headers are (the first toolkit that has them)."""
    for root in toolkit_roots(nvcc):
        for sub in ("extras/CUPTI/include", "include"):
            if (root / sub / "cupti_activity.h").is_file():
                return [str(root / sub)]
    return []


def cupti_library(nvcc: str | None = None) -> str | None:
    """libcupti of the toolkit (lib64, lib, extras/CUPTI/lib64) or of the nvidia-cuda-cupti wheel; None if
    there is none (the runner then times without kernel records and says so)."""
    try:
        nvcc = nvcc or find_nvcc()
    except BuildError:
        nvcc = None
    for root in toolkit_roots(nvcc):
        for sub in ("lib64", "lib", "targets/x86_64-linux/lib", "extras/CUPTI/lib64"):
            for name in ("libcupti.so.13", "libcupti.so.12", "libcupti.so"):
                if (root / sub / name).is_file():
                    return str(root / sub / name)
    try:
        import nvidia.cuda_cupti as wheel  # pip's CUPTI, beside torch's CUDA wheels

        for found in sorted(Path(next(iter(wheel.__path__))).glob("lib/libcupti.so*")):
            return str(found)
    except (ImportError, StopIteration):
        pass
    return None


def build_runner(arch: str = "h200", cache_dir=None) -> Path:
    """The runner executable for `arch`, from the cache or built now (BuildError with nvcc's first lines)."""
    _, sm = resolve_arch(arch)
    nvcc = find_nvcc()
    includes = [f"-I{abi.INCLUDE_DIR}", *(f"-I{d}" for d in cupti_include_dirs(nvcc))]
    flags = (*RUNNER_FLAGS, f"-gencode=arch=compute_{sm[3:]},code={sm}", *includes, "-ldl")
    key = cache_key(RUNNER_SOURCE, local_headers(RUNNER_SOURCE, (abi.INCLUDE_DIR,)), flags, nvcc_version_text(nvcc))
    final = cache_root(cache_dir) / "runner" / key / "solbench-runner"
    if final.is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=".runner-")
    os.close(fd)
    proc = subprocess.run([nvcc, *flags, str(RUNNER_SOURCE), "-o", tmp], capture_output=True, text=True)
    if proc.returncode != 0:
        os.unlink(tmp)
        lines = [l for l in (proc.stdout + proc.stderr).splitlines() if "error" in l][:3]
        raise BuildError(f"{RUNNER_SOURCE}: the native runner does not compile: {' | '.join(lines)}")
    os.chmod(tmp, 0o755)
    os.replace(tmp, final)
    return final
