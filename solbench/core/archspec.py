"""What a GPU can do: datasheet peaks (ArchSpec) and ceilings measured on one (MeasuredProfile).

Spec files ship as package data in `solbench/data/roofline/<arch>.toml` (solbench.core.paths; the repo's
`roofline/` is a link to that folder). Every number there is a table `{value = ..., source = "..."}`: a
peak without its source is not accepted.

Measured profiles live in `roofline/measured/<arch>.toml` (the H200's ships), written by `solbench
calibrate`. Set SOLBENCH_ROOFLINE_DIR to read and write them somewhere else (e.g. a non-editable install).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from solbench.core.errors import ConfigError
from solbench.core.paths import PROFILES_DIR, ROOFLINE_DIR

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

SPEC_DIR = ROOFLINE_DIR
ROOFLINE_DIR_ENV = "SOLBENCH_ROOFLINE_DIR"
DTYPE_PEAK_FIELD = {"bf16": "bf16_tflops", "fp16": "fp16_tflops", "fp8_e4m3": "fp8_tflops"}


@dataclass(frozen=True)
class ArchSpec:
    """Datasheet peaks of one GPU type, dense (no 2:4 sparsity), each with its source."""

    name: str
    """Short arch name used on the command line: 'h100', 'h200', 'b200', 'rtx3080'."""
    gpu: str
    """Marketing name of the part the numbers describe, e.g. 'NVIDIA H200 SXM 141GB'."""
    sm_arch: str
    """nvcc target, e.g. 'sm_90a'."""
    bf16_tflops: float
    """Dense bf16 tensor-core peak with fp32 accumulate, TFLOP/s."""
    fp16_tflops: float
    """Dense fp16 tensor-core peak with fp32 accumulate, TFLOP/s."""
    fp8_tflops: float | None
    """Dense fp8 (e4m3) tensor-core peak, TFLOP/s; None where the GPU has no fp8 tensor cores."""
    memory_tbps: float
    """DRAM bandwidth, TB/s (1e12 bytes/s)."""
    sm_count: int
    """Streaming multiprocessors."""
    l2_bytes: int
    """L2 cache size in bytes."""
    smem_per_sm_bytes: int
    """Shared memory per SM in bytes."""
    boost_clock_mhz: int
    """Boost SM clock, MHz."""
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False, repr=False)
    """Field name -> where the number comes from."""

    def __post_init__(self):
        object.__setattr__(self, "sources", MappingProxyType(dict(self.sources)))

    def peak_tflops(self, dtype: str) -> float:
        """Dense tensor-core peak for a scenario dtype ('bf16', 'fp16', 'fp8_e4m3'), TFLOP/s."""
        if dtype not in DTYPE_PEAK_FIELD:
            raise ConfigError(f"no peak for dtype {dtype!r}; known: {sorted(DTYPE_PEAK_FIELD)}")
        value = getattr(self, DTYPE_PEAK_FIELD[dtype])
        if value is None:
            raise ConfigError(f"{self.name} has no {dtype} tensor cores: its scenarios cannot be bounded")
        return value

    def supports(self, dtype: str) -> bool:
        return getattr(self, DTYPE_PEAK_FIELD.get(dtype, "name"), None) is not None

    @classmethod
    def from_toml(cls, path: Path) -> "ArchSpec":
        data = _read_toml(path)
        values, sources = {"name": data.get("name"), "gpu": data.get("gpu")}, {}
        for f in fields(cls):
            if f.name in ("name", "gpu", "sources"):
                continue
            entry = data.get(f.name)
            if entry is None and f.name == "fp8_tflops":
                values[f.name] = None
                continue
            if not isinstance(entry, dict) or "value" not in entry or not entry.get("source"):
                raise ConfigError(f"{path}: '{f.name}' must be a table with 'value' and a non-empty 'source'")
            values[f.name], sources[f.name] = entry["value"], entry["source"]
        if not values["name"] or not values["gpu"]:
            raise ConfigError(f"{path}: needs 'name' and 'gpu'")
        return cls(**values, sources=sources)


def known_arches() -> tuple[str, ...]:
    """Arch names with a spec file, sorted."""
    return tuple(sorted(p.stem for p in SPEC_DIR.glob("*.toml")))


def load_arch(name: str) -> ArchSpec:
    """The ArchSpec for 'h100', 'h200', 'b200', 'rtx3080' (case-insensitive); ConfigError otherwise."""
    key = str(name).strip().lower()
    path = SPEC_DIR / f"{key}.toml"
    if not key or not path.is_file():
        raise ConfigError(f"unknown arch {name!r}; known arches: {', '.join(known_arches())}")
    spec = ArchSpec.from_toml(path)
    if spec.name != key:
        raise ConfigError(f"{path}: name = {spec.name!r} does not match the file name")
    return spec


@dataclass(frozen=True)
class MeasuredProfile:
    """Ceilings measured on one GPU by `solbench calibrate` (CUDA-event timings; matmul ceilings are the rate
    in short bursts at the boost clock, with the power-capped sustained rate beside them)."""

    arch: str
    """Arch name the GPU belongs to ('h200', ...)."""
    gpu: str
    """torch.cuda.get_device_name() of the GPU measured."""
    date: str
    """When it was measured, ISO 8601 (UTC)."""
    bf16_tflops: float
    """Large bf16 matmul in short bursts (the boost-clock ceiling), TFLOP/s."""
    fp16_tflops: float
    """Large fp16 matmul in short bursts (the boost-clock ceiling), TFLOP/s."""
    copy_tbps: float
    """Large device-to-device copy, TB/s counting bytes read + bytes written."""
    launch_us: float
    """CUDA-event time of one eager launch of a tiny kernel: what no timed call can beat, µs."""
    fp8_tflops: float | None = None
    """Large e4m3 torch._scaled_mm, TFLOP/s; None where unavailable."""
    read_tbps: float | None = None
    """Large read-only reduction, TB/s of bytes read; None if not measured."""
    graph_launch_us: float | None = None
    """CUDA-event time of one replay of a CUDA graph holding one tiny kernel, µs."""
    bf16_sustained_tflops: float | None = None
    """Large bf16 matmul back to back (median; power-capped on some boards), TFLOP/s; None in older profiles."""
    fp16_sustained_tflops: float | None = None
    """Large fp16 matmul back to back (median), TFLOP/s; None in older profiles."""
    fp8_sustained_tflops: float | None = None
    """Large e4m3 torch._scaled_mm back to back (median), TFLOP/s; None where unavailable or in older profiles."""
    details: Mapping[str, object] = field(default_factory=dict, compare=False, hash=False, repr=False)
    """How it was measured: shapes, sample counts, torch and CUDA versions, methods."""

    def __post_init__(self):
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    @property
    def memory_tbps(self) -> float:
        """The best bandwidth demonstrated on this GPU (copy or read-only), TB/s."""
        return max(x for x in (self.copy_tbps, self.read_tbps) if x is not None)

    def peak_tflops(self, dtype: str) -> float | None:
        """Measured matmul rate for a scenario dtype, or None if not measured."""
        return getattr(self, DTYPE_PEAK_FIELD[dtype], None) if dtype in DTYPE_PEAK_FIELD else None

    @classmethod
    def from_toml(cls, path: Path) -> "MeasuredProfile":
        data = _read_toml(path)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"{path}: unknown measured-profile key(s) {unknown}")
        try:
            return cls(**data)
        except TypeError as exc:
            raise ConfigError(f"{path}: {exc}") from None

    def to_toml(self) -> str:
        lines = ["# Written by `solbench calibrate`. Ceilings measured on this GPU; see solbench/core/archspec.py."]
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name != "details" and value is not None:
                lines.append(f"{f.name} = {_toml_value(value)}")
        lines.append("\n[details]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in self.details.items() if v is not None]
        return "\n".join(lines) + "\n"


def measured_dir() -> Path:
    """Where measured profiles are read and written: $SOLBENCH_ROOFLINE_DIR/measured, else the shipped roofline/measured."""
    env = os.environ.get(ROOFLINE_DIR_ENV)
    return Path(env) / "measured" if env else PROFILES_DIR


def profile_path(arch: str) -> Path:
    return measured_dir() / f"{arch.lower()}.toml"


def find_profile(arch: str) -> MeasuredProfile | None:
    """The measured profile for an arch, or None if `solbench calibrate` has not written one."""
    path = profile_path(arch)
    return load_profile(path) if path.is_file() else None


def load_profile(path: str | Path) -> MeasuredProfile:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no measured profile at {path}; run `solbench calibrate` on that GPU first")
    return MeasuredProfile.from_toml(path)


def _read_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: malformed TOML: {exc}") from None


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")
    return f'"{text}"'
