"""Where a unit ran: the host, the GPU (UUID, name, ordinal) and its clocks, recorded in every Outcome
(`Outcome.placement`), so a run spread over GPUs says which scenario ran on which, and a report can flag
GPUs that differ in model or clocks (solbench.report.spread)."""

from __future__ import annotations

import socket
import time
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Placement:
    """One unit's GPU and host, as the process that evaluated it saw them."""

    executor: str
    """'inline' (the supervisor's own workers), 'local' (an agent per GPU of this machine) or 'ray'."""
    host: str
    """Hostname of the machine the unit ran on."""
    device: str
    """'cuda' or 'cpu'."""
    gpu_uuid: str | None = None
    """The GPU's UUID (GPU-...), None on a CPU."""
    gpu_name: str | None = None
    """torch.cuda.get_device_name(), or the CPU model on a CPU."""
    gpu_ordinal: str | None = None
    """CUDA_VISIBLE_DEVICES the unit's processes ran under (the physical GPU), None when unset."""
    sm_clock_mhz: int | None = None
    """SM clock when the unit started (NVML), MHz."""
    mem_clock_mhz: int | None = None
    """Memory clock when the unit started (NVML), MHz."""
    sm_clock_max_mhz: int | None = None
    """Highest SM clock the board allows (NVML), MHz: boards of one model with different maxima differ."""
    mem_clock_max_mhz: int | None = None
    """Highest memory clock (NVML), MHz."""
    profile: dict | None = None
    """The measured roofline profile the unit's bound used ({'gpu', 'date', 'path'}), None without one."""
    started_at: float = 0.0
    """Unix time the unit started, s."""
    wall_s: float = 0.0
    """Wall seconds the unit took on its GPU (all implementations, check and timing)."""
    attempt: int = 1
    """1, or more when an earlier attempt was lost with its GPU or agent and the unit was dealt again."""
    retried: str = ""
    """Why this attempt evaluated the scenario a second time (the first try's reason), '' when it did not."""

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def gpu_key(self) -> str:
        """One GPU, across hosts: host and UUID (the name where there is no UUID, as on a CPU)."""
        return f"{self.host}/{self.gpu_uuid or self.gpu_name or self.device}"


def here(executor: str, device: str, profile: dict | None = None) -> Placement:
    """This process's GPU (the current CUDA device) or CPU, with its clocks now."""
    import os

    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if device != "cuda":
        from solbench.gpu.environment import _cpu_model

        return Placement(executor, socket.gethostname(), device, gpu_name=_cpu_model(), gpu_ordinal=visible,
                         profile=profile, started_at=time.time())
    import torch

    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    uuid = getattr(props, "uuid", None)
    uuid = None if uuid is None else (str(uuid) if str(uuid).startswith(("GPU-", "MIG-")) else f"GPU-{uuid}")
    return Placement(executor, socket.gethostname(), device, gpu_uuid=uuid, gpu_name=props.name,
                     gpu_ordinal=visible, profile=profile, started_at=time.time(), **_clocks(index))


def _clocks(index: int) -> dict:
    """Current and maximum SM / memory clocks through NVML; {} without nvidia-ml-py or when refused."""
    try:
        import pynvml as nv

        from solbench.gpu.telemetry import nvml_handle

        nv.nvmlInit()
    except Exception:
        return {}
    try:
        h, _ = nvml_handle(nv, index)
        return {"sm_clock_mhz": nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                "mem_clock_mhz": nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
                "sm_clock_max_mhz": nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM),
                "mem_clock_max_mhz": nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM)}
    except Exception:
        return {}
    finally:
        try:
            nv.nvmlShutdown()
        except Exception:
            pass
