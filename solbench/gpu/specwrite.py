"""A spec file (roofline/<arch>.toml) for a GPU that has none: what the driver reports, plus the datasheet
peaks a person read off the vendor's sheet (`solbench calibrate --write --datasheet ... --source URL`).

The datasheet numbers are never taken from a measurement: SOL is the physical limit, the measured ceilings
are `attainable` (roofline/measured/<arch>.toml) and stay a separate file.
"""

from __future__ import annotations

import json
from pathlib import Path

from solbench.core.archspec import SPEC_DIR, ArchSpec
from solbench.core.errors import ConfigError

DATASHEET_KEYS = {"bf16": "bf16_tflops", "fp16": "fp16_tflops", "fp8": "fp8_tflops",
                  "memory_tbps": "memory_tbps", "boost_clock_mhz": "boost_clock_mhz"}
"""--datasheet keys and the spec field each fills; all but fp8 are required."""


def parse_datasheet(spec: str | None) -> dict[str, float]:
    """'bf16=989.4,fp16=989.4,memory_tbps=4.8,boost_clock_mhz=1980' -> {field: value}; ConfigError if short."""
    values = {}
    for item in filter(None, (p.strip() for p in (spec or "").split(","))):
        key, _, raw = item.partition("=")
        try:
            values[DATASHEET_KEYS[key.strip()]] = float(raw)
        except (KeyError, ValueError):
            raise ConfigError(f"--datasheet {item!r}: expected KEY=NUMBER, KEY one of {', '.join(DATASHEET_KEYS)}") from None
    missing = [k for k, f in DATASHEET_KEYS.items() if f not in values and k != "fp8"]
    if missing:
        raise ConfigError(f"--datasheet lacks {', '.join(missing)}: a spec file needs the datasheet's dense peaks, "
                          "bandwidth and boost clock (fp8 only where the GPU has fp8 tensor cores)")
    return values


def spec_text(arch: str, device_name: str, props, datasheet: dict[str, float], source: str) -> str:
    """The TOML of a spec file: datasheet fields with `source`, driver fields with the driver as source."""
    if not source:
        raise ConfigError("--source is required with --write: where the datasheet numbers come from (a URL)")
    driver = f"cudaDeviceProp of the {device_name} this was written on"
    fields = {**{f: (v, f"{source} (dense, no sparsity)") for f, v in datasheet.items()},
              "sm_arch": (f"sm_{props.major}{props.minor}", f"compute capability {props.major}.{props.minor} ({driver})"),
              "sm_count": (props.multi_processor_count, driver),
              "l2_bytes": (int(getattr(props, "L2_cache_size", 0)), driver),
              "smem_per_sm_bytes": (int(getattr(props, "shared_memory_per_multiprocessor", 0)), driver)}
    gib = props.total_memory / (1 << 30)
    lines = [f"# {device_name}: written by `solbench calibrate --write`; datasheet numbers from {source}",
             f'name = "{arch}"', f"gpu = {json.dumps(device_name)}"]
    for name, (value, src) in fields.items():
        lines += ["", f"[{name}]", f"value = {json.dumps(value)}", f"source = {json.dumps(src)}"]
    lines += ["", "[match]", f"names = [{json.dumps(device_name)}]", f"memory_gib_min = {gib * 0.98:.1f}",
              f"memory_gib_max = {gib * 1.02:.1f}", f"source = {json.dumps(driver)}"]
    return "\n".join(lines) + "\n"


def write_spec(arch: str, text: str, folder: Path = SPEC_DIR) -> Path:
    """Write and re-read the spec (a malformed one never stays); refuses to overwrite an existing arch."""
    path = Path(folder) / f"{arch}.toml"
    if path.exists():
        raise ConfigError(f"{path} exists: a shipped spec is edited by hand, with its sources")
    path.write_text(text)
    try:
        ArchSpec.from_toml(path)
    except ConfigError:
        path.unlink()
        raise
    return path
