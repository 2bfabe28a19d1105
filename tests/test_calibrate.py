"""calibrate: arch detection and profile assembly on CPU; the real measurement on a GPU (`gpu` marker)."""

from __future__ import annotations

import statistics
import types
from pathlib import Path

import pytest

from solbench.gpu import calibrate as cal
from solbench.front import cli
from solbench.core import archspec
from solbench.core.archspec import MeasuredProfile, load_arch, load_profile
from solbench.core.archspec import load_arch
from solbench.core.errors import ConfigError, UnknownGPUError


GIB = 1 << 30


def test_detect_arch_by_exact_name_and_memory():
    assert cal.detect_arch("NVIDIA H200") == "h200"
    assert cal.detect_arch("NVIDIA H200", 150109880320) == "h200"  # our H200's total memory
    assert cal.detect_arch("NVIDIA H100 80GB HBM3") == "h100"
    assert cal.detect_arch("NVIDIA H100 PCIe", 80 * GIB) == "h100_pcie"
    assert cal.detect_arch("NVIDIA B200") == "b200"
    assert cal.detect_arch("NVIDIA GeForce RTX 3080", 10 * GIB) == "rtx3080"
    assert cal.detect_arch("NVIDIA GeForce RTX 3080", 12 * GIB) == "rtx3080_12gb"
    assert cal.detect_arch("NVIDIA GeForce RTX 3080") is None  # one name, two cards: memory tells them apart
    assert cal.detect_arch("NVIDIA GeForce RTX 3080 Ti", 12 * GIB) == "rtx3080ti"  # not the 3080 (760 GB/s)
    assert load_arch("rtx3080ti").memory_tbps == 0.912 and load_arch("rtx3080").memory_tbps == 0.76
    assert cal.detect_arch("NVIDIA H200 NVL") is None and cal.detect_arch("NVIDIA A100-SXM4-80GB") is None


def test_every_spec_file_has_a_match_table_with_sources():
    from solbench.core.archdetect import device_matches
    from solbench.core.archspec import known_arches

    assert {m.arch for m in device_matches()} == set(known_arches())
    for arch in known_arches():
        spec = load_arch(arch)
        assert all(spec.sources.get(f) for f in ("bf16_tflops", "memory_tbps", "sm_count"))


def test_resolve_arch():
    assert cal.resolve_arch("auto", "NVIDIA H200") == "h200"
    with pytest.raises(UnknownGPUError, match="calibrate --write"):
        cal.resolve_arch("auto", "NVIDIA GeForce RTX 3080 Super", 10 * GIB)
    assert cal.resolve_arch("H200", "NVIDIA H200") == "h200"
    assert cal.resolve_arch("h100", "Some Future GPU") == "h100"  # explicit arch for a name we don't know
    with pytest.raises(ConfigError, match="GPU present is 'NVIDIA H200'"):
        cal.resolve_arch("b200", "NVIDIA H200")
    with pytest.raises(UnknownGPUError, match="matches no spec file"):
        cal.resolve_arch("auto", "NVIDIA A100-SXM4-80GB")
    with pytest.raises(ConfigError, match="unknown arch"):
        cal.resolve_arch("a100", "NVIDIA A100-SXM4-80GB")


FLOP = 2 * 8192**3  # an 8192^3 matmul: 1.0995e12 flop, so 1.5 ms is ~733 TFLOP/s


def tflops(ms):
    return FLOP / (ms * 1e9)


def test_burst_ceiling_is_the_90th_percentile_not_the_lucky_max():
    # 10 bursts of 4 calls: 1.5 ms at the boost clock, one lucky (mis-timed) 1.0 ms call in burst 7.
    bursts = [[1.6, 1.5, 1.5, 1.5] for _ in range(10)]
    bursts[7][2] = 1.0
    rate, best = cal.burst_ceiling(bursts, FLOP)
    assert rate == pytest.approx(tflops(1.5))  # 40 calls: rank 36 of 40, a boost-clock call
    assert best in range(10) and bursts[best].count(1.5) == 3
    assert cal.burst_ceiling(bursts, FLOP, quantile=1.0) == (pytest.approx(tflops(1.0)), 7)  # the max


def test_burst_ceiling_sees_past_power_capped_and_slow_first_calls():
    # The first bursts after the warm-up are still power-capped (2.0 ms); each burst's first call is slow;
    # the median of all calls would be a capped rate, the ceiling is the boost-clock one, and the burst
    # reported as setting it is one of the fast ones.
    capped = [[2.1, 2.0, 2.0, 2.0] for _ in range(25)]
    boost = [[1.9, 1.45, 1.5, 1.5] for _ in range(15)]
    rate, best = cal.burst_ceiling(capped + boost, FLOP)
    assert rate == pytest.approx(tflops(1.5))
    assert best >= 25
    assert tflops(statistics.median(ms for b in capped + boost for ms in b)) < 0.8 * rate


def test_burst_ceiling_nearest_rank_is_a_real_sample():
    bursts = [[float(ms)] for ms in range(1, 11)]  # rates flop/1 .. flop/10 ms
    for q, ms in ((0.9, 2.0), (0.5, 6.0), (0.1, 10.0), (0.01, 10.0), (1.0, 1.0)):
        rate, best = cal.burst_ceiling(bursts, FLOP, q)
        assert (rate, best) == (pytest.approx(tflops(ms)), int(ms) - 1)


@pytest.mark.parametrize("bursts, q, match", [([], 0.9, "no timed calls"), ([[]], 0.9, "no timed calls"),
                                              ([[1.0, 0.0]], 0.9, "positive"), ([[1.0]], 0.0, "quantile"),
                                              ([[1.0]], 1.5, "quantile")])
def test_burst_ceiling_rejects(bursts, q, match):
    with pytest.raises(ValueError, match=match):
        cal.burst_ceiling(bursts, FLOP, q)


def test_run_bursts_groups_calls_and_idles_between():
    samples = iter([[1.5, 1.5, 1.5, 1.5], [1.4, 1.5, 1.6, 1.5], [20.0, 20.0, 20.0, 20.0], [1.5, 1.5, 1.5, 1.5]])
    slept = []
    grouped = cal.run_bursts(lambda: next(samples), bursts=4, gap_ms=30.0, max_duty=0.25, sleep=slept.append)
    assert grouped == [[1.5] * 4, [1.4, 1.5, 1.6, 1.5], [20.0] * 4, [1.5] * 4]
    # An idle gap after every burst but the last; 30 ms after a 6 ms burst, 3 x 80 ms after an 80 ms one.
    assert slept == pytest.approx([0.030, 0.030, 0.240])


def test_bursts_at_the_boost_clock_beat_a_power_capped_loop():
    # A fake GPU: a call takes 1.5 ms at the boost clock, 2.06 ms (1440 vs 1980 MHz) once the power it
    # draws over the last 100 ms of (fake) time passes the cap. Back to back it is capped; in bursts it is not.
    clock = {"now": 0.0, "busy": []}  # busy: (start, end) ms of each call

    def call():
        recent = sum(min(e, clock["now"]) - max(s, clock["now"] - 100) for s, e in clock["busy"]
                     if e > clock["now"] - 100)
        ms = 2.06 if recent > 50 else 1.5
        clock["busy"].append((clock["now"], clock["now"] + ms))
        clock["now"] += ms
        return ms

    def sleep(s):
        clock["now"] += s * 1e3

    sustained = statistics.median(call() for _ in range(200))
    sleep(1.0)
    grouped = cal.run_bursts(lambda: [call() for _ in range(cal.BURST_CALLS)], sleep=sleep)
    assert len(grouped) == cal.BURSTS and all(len(b) == cal.BURST_CALLS for b in grouped)
    rate, _ = cal.burst_ceiling(grouped, FLOP)
    assert rate == pytest.approx(tflops(1.5)) and tflops(sustained) == pytest.approx(tflops(2.06))


class _FakeEvent:
    def __init__(self, clock):
        self.clock, self.t = clock, None

    def record(self):
        self.t = self.clock["now"]

    def elapsed_time(self, end):
        return end.t - self.t


def test_matmul_rates_wiring_keeps_the_telemetry_of_the_burst_that_set_the_ceiling(monkeypatch):
    clock = {"now": 0.0}
    schedule = iter([2.0, 2.0, 2.0, 2.0, 1.5, 1.5, 1.5, 1.5, 2.0, 2.0, 2.0, 2.0])  # 3 bursts; burst 1 is fast
    fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(
        Event=lambda enable_timing: _FakeEvent(clock), synchronize=lambda: None))
    monkeypatch.setattr(cal, "_torch_cuda", lambda: fake_torch)
    monkeypatch.setattr(cal, "BURST_CALLS", 4)
    monkeypatch.setattr(cal, "BURST_GAP_MS", 0.0)  # no real sleeping in a unit test
    monkeypatch.setattr(cal, "BURST_MAX_DUTY", 1.0)

    def fn():
        clock["now"] += next(schedule)

    monkeypatch.setattr(cal, "_matmul_fn", lambda torch, dtype, n: fn)
    warmups = []
    monkeypatch.setattr(cal, "_warm_up", lambda f, ms: warmups.append(ms))
    monkeypatch.setattr(cal, "time_ms", lambda f, samples: [2.2] * samples)
    opened = []

    class FakeSampler:
        def __init__(self, index):
            self.n = len(opened)
            opened.append(self)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

        def summary(self):
            return {"available": True, "sampler": self.n}

    import solbench.gpu.telemetry
    monkeypatch.setattr(solbench.gpu.telemetry, "TelemetrySampler", FakeSampler)
    rates = cal.matmul_rates("bf16", 8192, samples=7, bursts=3)
    assert rates.ceiling_tflops == pytest.approx(tflops(1.5))  # rank 11 of 12 is a 1.5 ms call
    assert rates.sustained_tflops == pytest.approx(tflops(2.2))
    assert rates.burst_telemetry == {"available": True, "sampler": 1}  # the second burst's sampler
    assert rates.sustained_telemetry == {"available": True, "sampler": 3}  # opened after the 3 bursts
    assert warmups == [cal.WARMUP_MS]


def test_calibrate_assembles_and_writes_a_profile(monkeypatch, tmp_path):
    # The measuring functions are replaced; this checks what calibrate does with their numbers.
    props = types.SimpleNamespace(major=9, minor=0, multi_processor_count=132, L2_cache_size=62914560,
                                  total_memory=150 << 30)
    fake_torch = types.SimpleNamespace(
        __version__="2.13.0", version=types.SimpleNamespace(cuda="13.0"),
        cuda=types.SimpleNamespace(get_device_name=lambda i: "NVIDIA H200", get_device_properties=lambda i: props),
    )
    monkeypatch.setattr(cal, "_torch_cuda", lambda: fake_torch)

    def tele(mhz, reasons):
        return {"available": True, "sm_clock_mhz": {"min": mhz - 15, "median": mhz, "max": mhz},
                "power_w_mean": 500.0, "reasons": reasons}

    def matmul(dtype, n, samples, bursts):
        if dtype == "fp8_e4m3":
            raise RuntimeError("_scaled_mm not supported here\nmore")
        # The larger shape has the better ceiling, the smaller the better sustained rate: each is kept.
        ceiling = {"bf16": 790.123, "fp16": 780.0}[dtype] - (0 if n == 16384 else 10)
        sustained = {"bf16": 687.071, "fp16": 669.0}[dtype] - (0 if n == 8192 else 5)
        return cal.MatmulRates(ceiling, sustained, tele(1980 if n == 16384 else 1965, []),
                               tele(1440 if n == 8192 else 1425, ["sw_power_cap"]))

    monkeypatch.setattr(cal, "matmul_rates", matmul)
    monkeypatch.setattr(cal, "bandwidth_tbps", lambda nbytes, samples: (4.31234, 4.5, 4 << 30))
    monkeypatch.setattr(cal, "launch_latency_us", lambda: {"eager": 6.5, "graph": 3.25, "back_to_back": 1.1})
    profile = cal.calibrate(log=lambda *_: None)
    assert (profile.arch, profile.gpu, profile.bf16_tflops, profile.fp8_tflops) == ("h200", "NVIDIA H200", 790.12, None)
    assert (profile.bf16_sustained_tflops, profile.fp16_sustained_tflops, profile.fp8_sustained_tflops) == \
        (687.07, 669.0, None)
    assert profile.fp16_tflops == 780.0
    assert (profile.copy_tbps, profile.read_tbps, profile.memory_tbps) == (4.3123, 4.5, 4.5)
    assert (profile.launch_us, profile.graph_launch_us) == (6.5, 3.25)
    assert profile.details["fp8_unavailable"] == "_scaled_mm not supported here"
    assert profile.details["driver_l2_bytes"] == 62914560
    assert profile.details["bf16_burst_telemetry"].startswith("SM clock median 1980 MHz")
    assert profile.details["bf16_sustained_telemetry"].startswith("SM clock median 1440 MHz")
    assert profile.details["bf16_sustained_telemetry"].endswith("reasons sw_power_cap")
    assert "0.9 quantile" in profile.details["matmul_ceiling"]
    path = cal.write_profile(profile, tmp_path / "sub" / "h200.toml")
    assert load_profile(path) == profile
    assert "bf16_sustained_tflops = 687.07" in path.read_text()
    assert dict(load_profile(path).details) == dict(profile.details)


def test_sustained_keys_round_trip(tmp_path):
    profile = MeasuredProfile(arch="h200", gpu="NVIDIA H200", date="2026-01-01T00:00:00Z", bf16_tflops=760.5,
                              fp16_tflops=750.25, copy_tbps=4.3, launch_us=20.0, fp8_tflops=1500.0,
                              bf16_sustained_tflops=687.07, fp16_sustained_tflops=669.35,
                              fp8_sustained_tflops=1342.41,
                              details={"bf16_burst_telemetry": "SM clock median 1980 MHz (min 1965)"})
    path = tmp_path / "h200.toml"
    path.write_text(profile.to_toml())
    back = load_profile(path)
    assert back == profile
    assert (back.bf16_sustained_tflops, back.fp16_sustained_tflops, back.fp8_sustained_tflops) == \
        (687.07, 669.35, 1342.41)
    assert back.details["bf16_burst_telemetry"] == "SM clock median 1980 MHz (min 1965)"
    assert back.peak_tflops("bf16") == 760.5  # the roofline reads the burst ceiling


def test_committed_h200_profile_has_burst_ceilings_above_sustained_rates():
    profile = load_profile(archspec.SPEC_DIR / "measured" / "h200.toml")
    for dtype in ("bf16", "fp16", "fp8"):
        ceiling, sustained = getattr(profile, f"{dtype}_tflops"), getattr(profile, f"{dtype}_sustained_tflops")
        assert sustained is not None and sustained < ceiling, dtype
    assert 0 < profile.copy_tbps <= profile.read_tbps


def test_profile_written_before_sustained_keys_loads_unchanged(tmp_path):
    path = Path(__file__).parent / "data" / "h200-profile-before-bursts.toml"  # the H200 profile measured before bursts
    text = path.read_text()
    assert "sustained" not in text  # written before the sustained keys existed
    profile = load_profile(path)
    assert (profile.bf16_tflops, profile.fp16_tflops, profile.fp8_tflops) == (687.07, 669.35, 1342.41)
    assert (profile.bf16_sustained_tflops, profile.fp16_sustained_tflops, profile.fp8_sustained_tflops) == \
        (None, None, None)
    assert profile.details["bf16_matmul_telemetry"].startswith("SM clock median 1455.0 MHz")
    assert path.read_text() == text
    # Written back, it still has no sustained keys and reads back equal.
    again = tmp_path / "h200.toml"
    again.write_text(profile.to_toml())
    assert "sustained" not in again.read_text()
    assert load_profile(again) == profile


def test_command_without_gpu_is_one_line(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert cli.main(["calibrate"]) == 2
    assert capsys.readouterr().err == "solbench calibrate: error: calibrate needs a CUDA GPU; none is visible to torch\n"


@pytest.mark.gpu
def test_calibrate_on_the_gpu(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    arch = cal.detect_arch(torch.cuda.get_device_name(0))
    if arch is None:
        pytest.skip(f"no arch spec for {torch.cuda.get_device_name(0)}")
    profile = cal.calibrate(arch, matmul_n=4096, copy_bytes=1 << 30, samples=10, bursts=10, log=lambda *_: None)
    spec = load_arch(arch)
    # Measured ceilings sit below the datasheet (boost clocks above the datasheet's allow ~10 %).
    assert 0.2 * spec.bf16_tflops < profile.bf16_tflops < 1.12 * spec.bf16_tflops
    assert 0.2 * spec.fp16_tflops < profile.fp16_tflops < 1.12 * spec.fp16_tflops
    if profile.fp8_tflops is not None:
        assert 0.2 * spec.fp8_tflops < profile.fp8_tflops < 1.12 * spec.fp8_tflops
    # The burst ceiling is an upper bound: back to back (possibly power-capped) is no faster.
    assert 0.2 * profile.bf16_tflops < profile.bf16_sustained_tflops < 1.05 * profile.bf16_tflops
    assert 0.2 * profile.fp16_tflops < profile.fp16_sustained_tflops < 1.05 * profile.fp16_tflops
    assert "bf16_burst_telemetry" in profile.details and "bf16_sustained_telemetry" in profile.details
    assert 0.3 * spec.memory_tbps < profile.copy_tbps < 1.02 * spec.memory_tbps
    assert 0.3 * spec.memory_tbps < profile.read_tbps < 1.02 * spec.memory_tbps
    assert 0.5 < profile.launch_us < 200 and 0.2 < profile.graph_launch_us < 200
    path = cal.write_profile(profile, tmp_path / f"{arch}.toml")
    assert load_profile(path) == profile


def test_write_spec_for_a_gpu_without_one(tmp_path):
    from types import SimpleNamespace

    from solbench.core.archspec import ArchSpec
    from solbench.gpu.specwrite import parse_datasheet, spec_text, write_spec

    props = SimpleNamespace(major=8, minor=0, multi_processor_count=108, L2_cache_size=40 << 20,
                            shared_memory_per_multiprocessor=167936, total_memory=80 * GIB)
    with pytest.raises(ConfigError, match="lacks memory_tbps, boost_clock_mhz"):
        parse_datasheet("bf16=312,fp16=312")
    sheet = parse_datasheet("bf16=312,fp16=312,memory_tbps=2.039,boost_clock_mhz=1410")
    with pytest.raises(ConfigError, match="--source"):
        spec_text("a100_sxm", "NVIDIA A100-SXM4-80GB", props, sheet, "")
    path = write_spec("a100_sxm", spec_text("a100_sxm", "NVIDIA A100-SXM4-80GB", props, sheet, "https://x"), tmp_path)
    spec = ArchSpec.from_toml(path)
    assert spec.sm_count == 108 and spec.memory_tbps == 2.039 and spec.fp8_tflops is None
    assert "https://x" in spec.sources["bf16_tflops"] and "cudaDeviceProp" in spec.sources["sm_count"]
    with pytest.raises(ConfigError, match="exists"):
        write_spec("a100_sxm", "", tmp_path)
