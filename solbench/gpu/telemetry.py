"""TelemetrySampler: SM / memory clocks, temperature, power and clock-event (throttle) reasons, polled through
nvidia-ml-py in a background thread while a measurement runs, so a throttled round can be flagged and retaken.

nvidia-ml-py (`pynvml`) is imported lazily; without it, or without a GPU, the sampler is a no-op whose
summary says `available: False` and why. Clocks in MHz, temperature in C, power in W.
"""

from __future__ import annotations

import atexit
import statistics
import sys
import threading
import time

REASON_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
    0x200: "board_limit",
    0x400: "reliability",
}
"""nvmlClocksEventReason* / nvmlClocksThrottleReason* bits, by name."""

BENIGN = frozenset({"gpu_idle", "applications_clocks_setting", "display_clock_setting", "sync_boost"})
"""Reasons that do not slow a running kernel below its configured clocks (idle between launches, clocks
set on purpose, display, multi-GPU sync boost)."""

POWER_CAPPED = frozenset({"sw_power_cap"})
"""The board's power limit: where tensor-heavy kernels live on an H200 (SM clock ~1440 MHz at 700 W). It is
reported and flagged, not retaken: a retake would be capped again, and interleaved rounds expose every
implementation to it alike."""

THROTTLING = frozenset(set(REASON_BITS.values()) - BENIGN - POWER_CAPPED)
"""Thermal, hardware, power-brake and board limits: clocks were pulled down by something a retake can avoid."""


def decode_reasons(mask: int) -> tuple[str, ...]:
    """Names of the set bits, lowest first; bits nvml has not documented come out as 'unknown_0x...'."""
    names, bit = [], 1
    while bit <= mask:
        if mask & bit:
            names.append(REASON_BITS.get(bit, f"unknown_{bit:#x}"))
        bit <<= 1
    return tuple(names)


def throttle_reasons(names) -> tuple[str, ...]:
    """The names among `names` that mean the GPU was throttled (unknown bits are reported, not counted)."""
    return tuple(n for n in names if n in THROTTLING)


def nvml_handle(nvml, cuda_index: int):
    """nvml handle of CUDA device `cuda_index`: by UUID when torch is loaded (nvml numbers GPUs by PCI
    order and ignores CUDA_VISIBLE_DEVICES), else by index. Returns (handle, how it was found)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            uuid = str(torch.cuda.get_device_properties(cuda_index).uuid)
            uuid = uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
            return nvml.nvmlDeviceGetHandleByUUID(uuid), f"uuid {uuid}"
        except Exception:  # older torch without .uuid, a MIG slice, nvml refusing the form
            pass
    return nvml.nvmlDeviceGetHandleByIndex(cuda_index), f"nvml index {cuda_index}"


class TelemetrySampler:
    """Context manager: `with TelemetrySampler(0) as t: ...; t.summary()`. device_index < 0 means no GPU."""

    def __init__(self, device_index: int, interval_ms: float = 10.0, *, nvml=None):
        """`nvml` replaces the pynvml module (tests pass a fake); by default it is imported here."""
        self.device_index = device_index
        self.interval_ms = interval_ms
        self._nvml = nvml
        self._handle = None
        self._where = ""
        self._why_not = ""
        self._rows: list[tuple] = []
        self._dead: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = self._t1 = 0.0

    def __enter__(self) -> TelemetrySampler:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        self._t0 = time.perf_counter()
        if not self._open():
            return
        self._read()  # one sample even for a round shorter than the interval
        self._thread = threading.Thread(target=self._loop, name="solbench-telemetry", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._t1 = time.perf_counter()
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        self._read()

    @property
    def available(self) -> bool:
        return not self._why_not

    def summary(self) -> dict:
        """min/median/max clocks, max temperature, mean power, reasons seen, and `throttled`."""
        if not self.available:
            return {"available": False, "reason": self._why_not, "throttled": False}
        cols = dict(zip(("sm_mhz", "mem_mhz", "temp_c", "power_w", "reasons"), zip(*self._rows)))
        seen = sorted({n for mask in cols.get("reasons", ()) if mask is not None for n in decode_reasons(mask)})
        throttling = throttle_reasons(seen)
        return {
            "available": True,
            "device": self._where,
            "samples": len(self._rows),
            "duration_s": self._t1 - self._t0,
            "sm_clock_mhz": _spread(cols.get("sm_mhz", ())),
            "mem_clock_mhz": _spread(cols.get("mem_mhz", ())),
            "temp_c_max": _pick(max, cols.get("temp_c", ())),
            "power_w_mean": _pick(statistics.fmean, cols.get("power_w", ())),
            "reasons": seen,
            "throttle_reasons": list(throttling),
            "throttled": bool(throttling),
            "power_capped": bool(POWER_CAPPED.intersection(seen)),
            "unavailable_metrics": dict(self._dead),
        }

    # ---------------------------------------------------------------- internals

    def _open(self) -> bool:
        if self.device_index < 0:
            self._why_not = "no GPU (CPU run)"
            return False
        if self._nvml is None:
            try:
                import pynvml
            except ImportError:
                self._why_not = "nvidia-ml-py is not installed (pip install nvidia-ml-py)"
                return False
            self._nvml = pynvml
        key = (id(self._nvml), self.device_index)
        if key not in _SESSIONS:  # nvmlInit costs milliseconds: once per process, not once per round
            _SESSIONS[key] = _open_session(self._nvml, self.device_index)
        _, self._handle, self._where, self._why_not = _SESSIONS[key]
        return not self._why_not

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_ms / 1e3):
            self._read()

    def _read(self) -> None:
        nv, h = self._nvml, self._handle
        getters = {
            "sm_mhz": lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
            "mem_mhz": lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
            "temp_c": lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
            "power_w": lambda: nv.nvmlDeviceGetPowerUsage(h) / 1000.0,
            "reasons": lambda: _reasons(nv, h),
        }
        row = []
        for name, get in getters.items():
            value = None
            if name not in self._dead:
                try:
                    value = get()
                except Exception as exc:  # NotSupported on this board: stop asking
                    self._dead[name] = f"{type(exc).__name__}: {exc}"
            row.append(value)
        self._rows.append(tuple(row))


_SESSIONS: dict[tuple[int, int], tuple] = {}
"""(id(nvml module), device index) -> (module, handle, how found, why not); holding the module keeps its
id from being reused. nvml stays initialised until exit."""


def _open_session(nv, index: int) -> tuple:
    try:
        nv.nvmlInit()
    except Exception as exc:
        return nv, None, "", f"nvml unavailable: {type(exc).__name__}: {exc}"
    atexit.register(_shutdown, nv)
    try:
        handle, where = nvml_handle(nv, index)
    except Exception as exc:
        return nv, None, "", f"nvml has no device {index}: {type(exc).__name__}: {exc}"
    return nv, handle, where, ""


def _shutdown(nv) -> None:
    try:
        nv.nvmlShutdown()
    except Exception:
        pass


def _reasons(nv, handle) -> int:
    """Clock-event reasons (the newer name), else clock-throttle reasons (older drivers / bindings)."""
    getter = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
    if getter is not None:
        try:
            return int(getter(handle))
        except Exception:
            pass
    return int(nv.nvmlDeviceGetCurrentClocksThrottleReasons(handle))


def _present(values):
    return [v for v in values if v is not None]


def _pick(fn, values):
    values = _present(values)
    return fn(values) if values else None


def _spread(values) -> dict | None:
    values = _present(values)
    if not values:
        return None
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}
