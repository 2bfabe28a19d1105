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


def test_the_runners_confinement_allows_writes_only_beneath_its_folders(tmp_path):
    """confine.h (what the runner applies before the candidate loads), compiled alone and tried on a CPU: a
    write beneath the scratch folder works, one beside it does not, and (Landlock ABI >= 6) no signal
    reaches a process outside."""
    from pathlib import Path

    from solbench.sandbox.confine import abi_version

    header = Path(__file__).resolve().parents[1] / "solbench" / "sandbox" / "native" / "confine.h"
    scratch, outside = tmp_path / "scratch", tmp_path / "outside"
    scratch.mkdir()
    outside.mkdir()
    source = tmp_path / "try.cpp"
    source.write_text(f'''#include "{header}"
#include <csignal>
int main() {{
    std::string said = confine({{"{scratch}"}});
    printf("%s\\n", said.c_str());
    printf("scratch %d\\n", fopen("{scratch}/a", "w") != nullptr);
    printf("outside %d\\n", fopen("{outside}/a", "w") != nullptr);
    printf("signal %d\\n", kill(getppid(), 0) == 0);
}}
''')
    exe = tmp_path / "try"
    subprocess.run(["nvcc", "-std=c++17", str(source), "-o", str(exe)], check=True, capture_output=True)
    lines = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60).stdout.splitlines()
    abi = abi_version()
    if abi < 1:
        assert lines[0].startswith("not confined") and lines[2] == "outside 1"
        return
    assert lines[0].startswith(f"confined (Landlock ABI {abi})"), lines
    assert lines[1:3] == ["scratch 1", "outside 0"], lines
    assert lines[3] == ("signal 0" if abi >= 6 else "signal 1"), lines
