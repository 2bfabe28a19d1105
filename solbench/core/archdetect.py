"""Which arch spec a GPU is: its exact device name and its memory size, from each spec file's [match].

    [match]
    names = ["NVIDIA GeForce RTX 3080"]   # torch.cuda.get_device_name(), exactly (case-insensitive)
    memory_gib_min = 9                     # total device memory in GiB, inclusive range
    memory_gib_max = 11
    source = "..."

A name is never matched by a fragment: 'NVIDIA GeForce RTX 3080 Ti' is not an RTX 3080, and the 10 GB
and 12 GB RTX 3080 (one name) are told apart by memory. A GPU no spec matches gets UnknownGPUError, whose
line says how to add one.
"""

from __future__ import annotations

from dataclasses import dataclass

from solbench.core.archspec import SPEC_DIR, _read_toml, known_arches
from solbench.core.errors import ConfigError, UnknownGPUError

GIB = 1 << 30


@dataclass(frozen=True)
class DeviceMatch:
    """One spec file's [match] table."""

    arch: str
    """The spec's name (file stem)."""
    names: tuple[str, ...]
    """Exact device names (compared case-insensitively, surrounding blanks ignored)."""
    memory_gib_min: float
    """Least total device memory, GiB."""
    memory_gib_max: float
    """Most total device memory, GiB."""

    def fits(self, device_name: str, memory_bytes: int | None) -> bool:
        if device_name.strip().lower() not in {n.lower() for n in self.names}:
            return False
        return memory_bytes is None or self.memory_gib_min <= memory_bytes / GIB <= self.memory_gib_max


def device_matches() -> list[DeviceMatch]:
    """Every spec file's [match]; ConfigError names a spec file without one."""
    out = []
    for arch in known_arches():
        path = SPEC_DIR / f"{arch}.toml"
        m = _read_toml(path).get("match")
        if not isinstance(m, dict) or not m.get("names") or not m.get("source"):
            raise ConfigError(f"{path}: needs a [match] table with names, memory_gib_min, memory_gib_max and source")
        out.append(DeviceMatch(arch, tuple(m["names"]), float(m["memory_gib_min"]), float(m["memory_gib_max"])))
    return out


def detect_arch(device_name: str, memory_bytes: int | None = None) -> str | None:
    """The one arch whose [match] fits, or None (none fits, or the name alone leaves several)."""
    fits = [m.arch for m in device_matches() if m.fits(device_name, memory_bytes)]
    return fits[0] if len(fits) == 1 else None


def require_arch(device_name: str, memory_bytes: int | None) -> str:
    """detect_arch, or UnknownGPUError saying how to add the GPU."""
    arch = detect_arch(device_name, memory_bytes)
    if arch is None:
        memory = "" if memory_bytes is None else f", {memory_bytes / GIB:.1f} GiB"
        raise UnknownGPUError(
            f"GPU {device_name!r}{memory} matches no spec file in {SPEC_DIR}; add one: "
            f"`solbench calibrate --write --arch NAME --datasheet bf16=..,fp16=..,memory_tbps=.. --source URL`")
    return arch
