"""Environment manifest stored in every RunResult: where a run happened, with what software, on what GPU in
what state. Works on a CPU-only machine (GPU fields None, with the reason).

Optional libraries are looked up by distribution metadata and module spec, never imported: importing
flashinfer or cudnn would initialise CUDA and cost seconds. Clocks in MHz, memory and caches in bytes.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import importlib.util
import os
import platform
import re
import shutil
import socket
import subprocess
import sys

SCHEMA = "solbench.gpu.environment/1"

DISTRIBUTIONS = (
    "torch", "triton", "numpy", "vllm", "fa3-fwd", "flash-attn", "flash-attn-4", "nvidia-cutlass-dsl",
    "nvidia-cudnn-frontend", "nvidia-cudnn-cu12", "nvidia-cudnn-cu13", "flashinfer-python", "flashinfer-cubin",
    "cupy", "cupy-cuda12x", "cupy-cuda13x", "cuda-python", "cuda-bindings", "nvidia-ml-py",
    "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime",
)
"""Distributions whose versions are recorded (None when not installed)."""

MODULES = ("vllm", "flash_attn_interface", "flash_attn", "cudnn", "flashinfer", "triton", "cupy")
"""Top-level modules whose location is recorded (a baseline may come from a source build with no metadata)."""

ENV_VARS = (
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING", "CUDA_DEVICE_MAX_CONNECTIONS",
    "CUDA_MODULE_LOADING", "PYTORCH_CUDA_ALLOC_CONF", "NVIDIA_TF32_OVERRIDE", "CUDA_HOME",
)
"""Variables that change how kernels launch or are timed; recorded when set."""


def collect(device: str, extra: dict | None = None) -> dict:
    """The manifest as a JSON-ready dict; `extra` (build flags, sha256s, policy, ...) is merged in last."""
    manifest = {
        "schema": SCHEMA,
        "collected_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "solbench": _solbench_version(),
        "hostname": socket.gethostname(),
        "os": platform.platform(),
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "device": device,
        "torch": None, "torch_cuda": None, "torch_cudnn": None,
        "cuda_runtime": None, "nvcc": _nvcc(),
        "driver": None, "driver_cuda": None,
        "gpu": None, "gpu_reason": "",
        "libraries": {name: _dist_version(name) for name in DISTRIBUTIONS},
        "modules": {name: _module_origin(name) for name in MODULES},
        "env": {k: os.environ[k] for k in ENV_VARS if k in os.environ},
    }
    if manifest["libraries"]["vllm"] is None:  # a staged vLLM FA3 extension has no distribution metadata
        from solbench.baselines.vllm_fa3 import staged_version

        manifest["libraries"]["vllm"] = staged_version()
    manifest.update(_torch_info())
    if device.startswith("cuda"):
        manifest.update(_gpu_info(device))
    else:
        manifest["gpu_reason"] = f"device is {device!r}: no GPU used"
    manifest.update(extra or {})
    return manifest


def parse_nvcc_version(text: str) -> str | None:
    """'Cuda compilation tools, release 12.8, V12.8.93' -> '12.8.93' (the release when no V number)."""
    m = re.search(r"release\s+([\d.]+),\s*V([\d.]+)", text)
    if m:
        return m.group(2)
    m = re.search(r"release\s+([\d.]+)", text)
    return m.group(1) if m else None


def cuda_version_string(code: int | None) -> str | None:
    """CUDA's integer versions: 12080 -> '12.8' (runtime and driver APIs both use 1000*major + 10*minor)."""
    if not code:
        return None
    return f"{code // 1000}.{(code % 1000) // 10}"


# ---------------------------------------------------------------- software


def _solbench_version() -> str:
    from solbench import __version__

    return __version__


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _module_origin(name: str) -> str | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    return None if spec is None else (spec.origin or "namespace package")


def _nvcc() -> dict | None:
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    path = shutil.which("nvcc") or (os.path.join(home, "bin", "nvcc") if home else None)
    if not path or not os.path.exists(path):
        return None
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return {"path": path, "version": None}
    return {"path": path, "version": parse_nvcc_version(out)}


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _torch_info() -> dict:
    try:
        import torch
    except ImportError:
        return {}
    info = {"torch": torch.__version__, "torch_cuda": torch.version.cuda}
    try:
        info["torch_cudnn"] = torch.backends.cudnn.version()
    except Exception:  # cudnn missing from this build
        info["torch_cudnn"] = None
    return info


# ---------------------------------------------------------------- GPU


def _gpu_info(device: str) -> dict:
    try:
        import torch
    except ImportError:
        return {"gpu_reason": "torch is not installed"}
    if not torch.cuda.is_available():
        return {"gpu_reason": "torch sees no CUDA device"}
    dev = torch.device(device)
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    gpu = {
        "index": index, "name": props.name, "uuid": _torch_uuid(props),
        "sm_count": props.multi_processor_count, "l2_bytes": int(getattr(props, "L2_cache_size", 0) or 0) or None,
        "memory_bytes": int(props.total_memory), "compute_capability": f"{props.major}.{props.minor}",
        "notes": [],
    }
    out = {"gpu": gpu, "gpu_reason": ""}
    try:
        from solbench.gpu import cudart

        out["cuda_runtime"] = cuda_version_string(cudart.load().runtime_version())
    except Exception as exc:
        gpu["notes"].append(f"CUDA runtime version unavailable: {exc}")
    out.update(_nvml_info(index, gpu))
    return out


def _torch_uuid(props) -> str | None:
    uuid = getattr(props, "uuid", None)
    if uuid is None:
        return None
    uuid = str(uuid)
    return uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"


def _nvml_info(index: int, gpu: dict) -> dict:
    """Driver, clocks, ECC / MIG / persistence state through nvml; each field None when refused."""
    try:
        import pynvml as nv
    except ImportError:
        gpu["notes"].append("nvidia-ml-py not installed: no driver, clock, ECC, MIG or persistence state")
        return {}
    try:
        nv.nvmlInit()
    except Exception as exc:
        gpu["notes"].append(f"nvml unavailable: {exc}")
        return {}
    try:
        from solbench.gpu.telemetry import nvml_handle

        h, how = nvml_handle(nv, index)
        gpu["nvml_device"] = how

        def get(name, fn):
            try:
                value = fn()
                return value.decode(errors="replace") if isinstance(value, bytes) else value
            except Exception as exc:  # NotSupported on this board, or an older driver
                gpu["notes"].append(f"{name}: {type(exc).__name__}")
                return None

        on_off = {0: "disabled", 1: "enabled"}
        gpu.update({
            "nvml_uuid": get("uuid", lambda: nv.nvmlDeviceGetUUID(h)),
            "vbios": get("vbios", lambda: nv.nvmlDeviceGetVbiosVersion(h)),
            "pci_bus_id": get("pci", lambda: nv.nvmlDeviceGetPciInfo(h).busId),
            "sm_clock_mhz": get("sm clock", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
            "mem_clock_mhz": get("mem clock", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
            "sm_clock_max_mhz": get("sm max clock", lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM)),
            "mem_clock_max_mhz": get("mem max clock", lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM)),
            "sm_clock_app_mhz": get("sm app clock", lambda: nv.nvmlDeviceGetApplicationsClock(h, nv.NVML_CLOCK_SM)),
            "mem_clock_app_mhz": get("mem app clock",
                                     lambda: nv.nvmlDeviceGetApplicationsClock(h, nv.NVML_CLOCK_MEM)),
            "power_limit_w": get("power limit", lambda: nv.nvmlDeviceGetPowerManagementLimit(h) / 1000.0),
            "temperature_c": get("temperature", lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
            "ecc": get("ecc", lambda: on_off.get(nv.nvmlDeviceGetEccMode(h)[0])),
            "mig": get("mig", lambda: on_off.get(nv.nvmlDeviceGetMigMode(h)[0])),
            "persistence": get("persistence", lambda: on_off.get(nv.nvmlDeviceGetPersistenceMode(h))),
        })
        return {"driver": get("driver", nv.nvmlSystemGetDriverVersion),
                "driver_cuda": cuda_version_string(get("driver cuda", nv.nvmlSystemGetCudaDriverVersion))}
    except Exception as exc:
        gpu["notes"].append(f"nvml query failed: {type(exc).__name__}: {exc}")
        return {}
    finally:
        try:
            nv.nvmlShutdown()
        except Exception:
            pass
