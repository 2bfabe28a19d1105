"""TelemetrySampler: reason decoding, the no-op sampler, the polling thread against a fake nvml."""

import time
import types

import pytest

from solbench.gpu.telemetry import BENIGN, TelemetrySampler, decode_reasons, throttle_reasons

try:
    import torch

    HAS_CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover
    HAS_CUDA = False


def test_decode_reasons_names_each_bit():
    assert decode_reasons(0) == ()
    assert decode_reasons(0x1) == ("gpu_idle",)
    assert decode_reasons(0x1 | 0x4 | 0x40) == ("gpu_idle", "sw_power_cap", "hw_thermal_slowdown")
    assert decode_reasons(0x800) == ("unknown_0x800",)


@pytest.mark.parametrize("mask, throttled", [
    (0x0, False), (0x1, False), (0x2, False), (0x1 | 0x2 | 0x100, False), (0x10, False),
    (0x4, False),  # the power cap: flagged as power_capped, not retaken (see telemetry.POWER_CAPPED)
    (0x8, True), (0x20, True), (0x40, True), (0x80, True), (0x200, True), (0x1 | 0x20, True),
    (0x800, False),  # undocumented bit: reported, not counted
])
def test_throttle_classification(mask, throttled):
    assert bool(throttle_reasons(decode_reasons(mask))) is throttled


def test_benign_reasons_are_idle_and_settings():
    assert {"gpu_idle", "applications_clocks_setting"} <= BENIGN


def test_no_gpu_gives_a_noop_sampler():
    with TelemetrySampler(-1) as t:
        pass
    s = t.summary()
    assert s == {"available": False, "reason": "no GPU (CPU run)", "throttled": False}


def test_missing_or_failing_nvml_is_a_noop_with_reason():
    def boom():
        raise RuntimeError("NVML Shared Library Not Found")

    with TelemetrySampler(0, nvml=types.SimpleNamespace(nvmlInit=boom)) as t:
        pass
    s = t.summary()
    assert s["available"] is False and "Not Found" in s["reason"] and s["throttled"] is False


@pytest.mark.skipif(HAS_CUDA, reason="checks the no-GPU path")
def test_default_sampler_on_a_machine_without_gpu_is_a_noop():
    with TelemetrySampler(0) as t:
        pass
    s = t.summary()
    assert s["available"] is False and s["reason"] and s["throttled"] is False


def _fake_nvml(reasons, power_supported=True):
    state = {"i": 0, "init": 0}

    def reasons_now(handle):
        state["i"] += 1
        return reasons[min(state["i"] - 1, len(reasons) - 1)]

    def power(handle):
        if not power_supported:
            raise RuntimeError("Not Supported")
        return 350_000  # mW

    return types.SimpleNamespace(
        NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2, NVML_TEMPERATURE_GPU=0,
        nvmlInit=lambda: state.__setitem__("init", state["init"] + 1),
        nvmlShutdown=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: f"h{i}",
        nvmlDeviceGetHandleByUUID=lambda u: "h-uuid",
        nvmlDeviceGetClockInfo=lambda h, kind: 1980 if kind == 1 else 3201,
        nvmlDeviceGetTemperature=lambda h, kind: 61,
        nvmlDeviceGetPowerUsage=power,
        nvmlDeviceGetCurrentClocksEventReasons=reasons_now,
    ), state


def test_polls_in_background_and_summarises():
    nvml, state = _fake_nvml([0x1, 0x0, 0x0])
    with TelemetrySampler(0, interval_ms=2.0, nvml=nvml) as t:
        time.sleep(0.05)
    s = t.summary()
    assert s["available"] and s["samples"] >= 3
    assert s["sm_clock_mhz"] == {"min": 1980, "median": 1980, "max": 1980}
    assert s["mem_clock_mhz"]["max"] == 3201
    assert s["temp_c_max"] == 61 and s["power_w_mean"] == pytest.approx(350.0)
    assert s["reasons"] == ["gpu_idle"] and s["throttled"] is False
    with TelemetrySampler(0, nvml=nvml):
        pass
    assert state["init"] == 1  # nvml is initialised once per process, not once per round


def test_throttled_round_is_reported():
    nvml, _ = _fake_nvml([0x0, 0x20 | 0x4, 0x0])
    with TelemetrySampler(0, interval_ms=1.0, nvml=nvml) as t:
        time.sleep(0.02)
    s = t.summary()
    assert s["throttled"] is True and s["power_capped"] is True
    assert s["throttle_reasons"] == ["sw_thermal_slowdown"]
    assert s["reasons"] == ["sw_power_cap", "sw_thermal_slowdown"]


def test_unsupported_metric_is_dropped_not_fatal():
    nvml, _ = _fake_nvml([0x0], power_supported=False)
    with TelemetrySampler(0, interval_ms=1.0, nvml=nvml) as t:
        time.sleep(0.01)
    s = t.summary()
    assert s["power_w_mean"] is None and "power_w" in s["unavailable_metrics"]
    assert s["sm_clock_mhz"] is not None


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
def test_gpu_real_nvml_reads_clocks():
    pytest.importorskip("pynvml")
    with TelemetrySampler(torch.cuda.current_device()) as t:
        x = torch.randn(4096, 4096, device="cuda")
        for _ in range(20):
            x @ x
        torch.cuda.synchronize()
    s = t.summary()
    assert s["available"], s
    assert s["sm_clock_mhz"]["max"] > 0 and s["samples"] >= 2
