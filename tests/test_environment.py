"""Environment manifest: keys present and JSON-ready on a CPU-only machine; version parsing."""

import json

import pytest

from solbench import __version__
from solbench.gpu.environment import DISTRIBUTIONS, collect, cuda_version_string, parse_nvcc_version

try:
    import torch

    HAS_CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover
    HAS_CUDA = False

KEYS = {"schema", "collected_at", "solbench", "hostname", "os", "python", "torch", "torch_cuda", "cuda_runtime",
        "nvcc", "driver", "gpu", "gpu_reason", "libraries", "modules", "env"}


def test_cpu_manifest_has_every_key_and_no_gpu():
    env = collect("cpu")
    assert KEYS <= set(env)
    assert env["solbench"] == __version__
    assert env["gpu"] is None and "cpu" in env["gpu_reason"]
    assert set(env["libraries"]) == set(DISTRIBUTIONS)
    json.dumps(env)  # stored as is in results.json


def test_extra_is_merged():
    env = collect("cpu", {"solbench_version": "x", "build": {"flags": ["-O3"]}})
    assert env["solbench_version"] == "x" and env["build"] == {"flags": ["-O3"]}


def test_installed_library_is_found_without_import():
    env = collect("cpu")
    assert env["libraries"]["numpy"]
    assert env["libraries"]["fa3-fwd"] is None or isinstance(env["libraries"]["fa3-fwd"], str)


@pytest.mark.skipif(HAS_CUDA, reason="checks the no-GPU reason")
def test_cuda_requested_without_gpu_says_why():
    env = collect("cuda")
    assert env["gpu"] is None and env["gpu_reason"]
    json.dumps(env)


def test_parse_nvcc_version():
    text = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.8, V12.8.93\nBuild cuda_12.8"
    assert parse_nvcc_version(text) == "12.8.93"
    assert parse_nvcc_version("Cuda compilation tools, release 13.0") == "13.0"
    assert parse_nvcc_version("garbage") is None


def test_cuda_version_string():
    assert cuda_version_string(12080) == "12.8"
    assert cuda_version_string(13000) == "13.0"
    assert cuda_version_string(None) is None and cuda_version_string(0) is None


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
def test_gpu_manifest_describes_the_device():
    env = collect("cuda")
    gpu = env["gpu"]
    assert gpu["name"] and gpu["sm_count"] > 0 and gpu["l2_bytes"] > 0 and gpu["memory_bytes"] > 0
    assert gpu["compute_capability"] and env["cuda_runtime"]
    json.dumps(env)
