"""The native runner (solbench/sandbox/native/runner.cu) compiles with the CUDA toolkit CI has, and a
runner that finds no usable GPU says so in one reply line and exits, instead of hanging its supervisor."""

import shutil
import subprocess

import pytest

from solbench.build.native import build_runner

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


def _has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


def test_the_runner_builds_and_is_cached(tmp_path):
    first = build_runner("h200", cache_dir=tmp_path)
    assert first.is_file() and first.stat().st_mode & 0o111
    assert build_runner("h200", cache_dir=tmp_path) == first  # the second call is a cache hit
    assert len(list((tmp_path / "runner").iterdir())) == 1


@pytest.mark.skipif(_has_gpu(), reason="a GPU is present: the runner would start")
def test_without_a_gpu_the_runner_answers_one_error_line_and_exits(tmp_path):
    runner = build_runner("h200", cache_dir=tmp_path)
    proc = subprocess.run([str(runner), f"so={tmp_path / 'missing.so'}"], input="quit\n", capture_output=True,
                          text=True, timeout=60)
    lines = proc.stdout.splitlines()
    assert proc.returncode != 0
    assert len(lines) == 1 and lines[0].startswith("error cudaSetDevice: CUDA error"), lines
