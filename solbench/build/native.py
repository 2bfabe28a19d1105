"""Build the native runner (solbench/sandbox/native/runner.cu): the process a .cu candidate will be timed
in, with no Python in it. Built with the same nvcc as candidates, cached by content like them.

The runner is not yet what `solbench run` starts (issue 18: the supervisor's side of its pipe protocol and
the A/A against the Python host on the H200 come next); `build_runner` and its CPU test keep it compiling.
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
RUNNER_FLAGS = ("-O2", "--std=c++17", "-lineinfo")


def build_runner(arch: str = "h200", cache_dir=None) -> Path:
    """The runner executable for `arch`, from the cache or built now (BuildError with nvcc's first lines)."""
    _, sm = resolve_arch(arch)
    nvcc = find_nvcc()
    flags = (*RUNNER_FLAGS, f"-gencode=arch=compute_{sm[3:]},code={sm}", f"-I{abi.INCLUDE_DIR}", "-ldl")
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
    os.replace(tmp, final)
    return final
