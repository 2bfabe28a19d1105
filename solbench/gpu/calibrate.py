"""Measure this GPU's ceilings (matmul TFLOP/s, copy TB/s, launch latency) into a MeasuredProfile.

Every number comes from CUDA-event timings taken after a time-based warm-up: the GPU idles at a low
clock and needs a few hundred ms of load to reach its boost clock (FIELD.md).

Matmul ceilings (`bf16_tflops`, ...) are the rate the tensor cores reach at the boost clock: the
matmul is timed call by call in many short bursts separated by idle gaps, and the ceiling is a high
quantile of those per-call rates (see burst_ceiling). Back to back, a large GEMM draws enough power
to hit the board's power cap (NVML sw_power_cap; an H200 drops from ~1980 to ~1440 MHz), and a
power-capped GEMM is not an upper bound for kernels that draw less power: attention interleaved with
other work runs at the boost clock and beats it. That sustained rate (median of the back-to-back
loop) is kept beside the ceiling as `<dtype>_sustained_tflops`, and the SM clocks seen in the burst
that set the ceiling and under sustained load go into the details.
Copy / read bandwidth and launch latency are medians of back-to-back (or idle-queue) timings.
Importable without torch or a GPU; torch is imported inside the functions that need it.
"""

from __future__ import annotations

import datetime
import math
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from solbench.core.archspec import MeasuredProfile, known_arches, profile_path
from solbench.core.errors import ConfigError, MissingDependencyError

# Device-name fragment -> arch; first match wins (checked in this order).
MATMUL_N = 8192
COPY_BYTES = 4 << 30
WARMUP_MS = 500.0
SAMPLES = 50
LAUNCH_SAMPLES = 300
# Matmul bursts: BURSTS bursts of BURST_CALLS back-to-back calls, each call timed by its own CUDA events,
# with the GPU left idle between bursts. An 8192^3 bf16 matmul takes ~1.5 ms at the boost clock, so a
# burst is ~6 ms of load and a 30 ms gap keeps the duty cycle near 1/6: too little average power for the
# power cap to engage, too short an idle for the clock to fall back to idle. A burst that runs longer
# (the 2n shape, a slower GPU) gets a longer gap so the duty cycle stays at most BURST_MAX_DUTY.
BURSTS = 40
BURST_CALLS = 4
BURST_GAP_MS = 30.0
BURST_MAX_DUTY = 0.25
# The ceiling is the 90th percentile (nearest rank: a rate some call really reached) of all per-call
# rates. Not the max, so one lucky or mis-timed sample cannot set it: at least 10 % of the calls (16 of
# 160) must reach it. Not the median, because the first bursts after the warm-up can still be power-capped
# and the first call of a burst can be slower while the clock settles; those sit in the lower 90 %.
BURST_QUANTILE = 0.9


def detect_arch(device_name: str, memory_bytes: int | None = None) -> str | None:
    """The arch of a torch.cuda.get_device_name() string (and total memory), by exact name: see
    solbench.core.archdetect; None if no spec file matches."""
    from solbench.core.archdetect import detect_arch as by_name

    return by_name(device_name, memory_bytes)


def resolve_arch(requested: str, device_name: str, memory_bytes: int | None = None) -> str:
    """The arch to file the profile under: 'auto' detects it (UnknownGPUError without a spec file); an
    explicit arch must not contradict the GPU."""
    from solbench.core.archdetect import require_arch

    detected = detect_arch(device_name, memory_bytes)
    if requested in (None, "", "auto"):
        return require_arch(device_name, memory_bytes)
    arch = requested.lower()
    if arch not in known_arches():
        raise ConfigError(f"unknown arch {requested!r}; known arches: {', '.join(known_arches())}")
    if detected is not None and detected != arch:
        raise ConfigError(f"--arch {arch} but the GPU present is {device_name!r} ({detected})")
    return arch


def _torch_cuda():
    try:
        import torch
    except ModuleNotFoundError:
        raise MissingDependencyError("calibrate needs torch with CUDA: pip install 'solbench[gpu]'") from None
    if not torch.cuda.is_available():
        raise ConfigError("calibrate needs a CUDA GPU; none is visible to torch")
    return torch


def _warm_up(fn, warmup_ms: float) -> None:
    """Call fn back to back (synchronizing after each) for warmup_ms of wall time, at least once."""
    import torch

    deadline = time.perf_counter() + warmup_ms / 1e3
    while True:
        fn()
        torch.cuda.synchronize()
        if time.perf_counter() >= deadline:
            break


def time_ms(fn, samples: int = SAMPLES, warmup_ms: float = WARMUP_MS, sync_each: bool = False) -> list[float]:
    """CUDA-event time of each of `samples` calls of fn, after calling it for warmup_ms of wall time.

    sync_each: wait for the GPU before each call, so the queue is empty and the events also see
    the launch latency (for the launch floor); otherwise calls queue back to back (for throughput).
    """
    import torch

    _warm_up(fn, warmup_ms)
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(samples)]
    for start, end in events:
        if sync_each:
            torch.cuda.synchronize()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return [start.elapsed_time(end) for start, end in events]


def burst_ceiling(bursts_ms, flop: float, quantile: float = BURST_QUANTILE) -> tuple[float, int]:
    """(TFLOP/s, burst index): the `quantile` (nearest rank) of the per-call rates flop / ms over all
    calls of all bursts, and the index of the burst whose call gave that rate (its telemetry is kept).

    bursts_ms: per-call CUDA-event milliseconds, grouped by burst. Pure: no torch, no GPU.
    """
    if not 0 < quantile <= 1:
        raise ValueError(f"quantile must be in (0, 1], got {quantile}")
    calls = [(float(ms), i) for i, burst in enumerate(bursts_ms) for ms in burst]
    if not calls:
        raise ValueError("no timed calls")
    if any(not ms > 0 for ms, _ in calls):
        raise ValueError("every call must take a positive time")
    rates = sorted((flop / (ms * 1e9), i) for ms, i in calls)
    return rates[max(1, math.ceil(quantile * len(rates))) - 1]


def run_bursts(time_burst, bursts: int = BURSTS, gap_ms: float | None = None,
               max_duty: float | None = None, sleep=None) -> list[list[float]]:
    """Call time_burst() `bursts` times with the GPU idle in between; its per-call ms, grouped by burst.

    time_burst runs one burst and returns once the GPU is done (synchronized). The idle gap after a
    burst is gap_ms (default BURST_GAP_MS), or longer if the burst ran long enough that gap_ms would
    put the duty cycle above max_duty (default BURST_MAX_DUTY). sleep(seconds) defaults to time.sleep.
    """
    gap_ms = BURST_GAP_MS if gap_ms is None else gap_ms
    max_duty = BURST_MAX_DUTY if max_duty is None else max_duty
    sleep = time.sleep if sleep is None else sleep
    grouped = []
    for i in range(bursts):
        ms = [float(x) for x in time_burst()]
        grouped.append(ms)
        if i + 1 < bursts:
            sleep(max(gap_ms, sum(ms) * (1 - max_duty) / max_duty) / 1e3)
    return grouped


@dataclass(frozen=True)
class MatmulRates:
    """One matmul shape measured two ways: the burst ceiling and the back-to-back (sustained) median."""

    ceiling_tflops: float
    sustained_tflops: float
    burst_telemetry: dict
    """TelemetrySampler summary over the burst that set the ceiling."""
    sustained_telemetry: dict
    """TelemetrySampler summary over the back-to-back loop (warm-up included)."""


def _matmul_fn(torch, dtype: str, n: int):
    """A no-argument call running one n x n x n matmul of dtype on random inputs (random data draws
    honest power; zeros would flatter the clock)."""
    dev = "cuda"
    if dtype == "fp8_e4m3":
        if not (hasattr(torch, "_scaled_mm") and hasattr(torch, "float8_e4m3fn")):
            raise RuntimeError("this torch has no torch._scaled_mm / float8_e4m3fn")
        a = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm needs
        one = torch.ones((), device=dev, dtype=torch.float32)

        def fn():
            torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=True)
    else:
        tdtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
        a, b = (torch.randn(n, n, device=dev, dtype=tdtype) for _ in range(2))
        out = torch.empty(n, n, device=dev, dtype=tdtype)

        def fn():
            torch.matmul(a, b, out=out)
    return fn


def matmul_rates(dtype: str, n: int = MATMUL_N, samples: int = SAMPLES, bursts: int = BURSTS) -> MatmulRates:
    """An n x n x n matmul: 'bf16' / 'fp16' via torch.matmul (fp32 accumulate), 'fp8_e4m3' via
    torch._scaled_mm (e4m3 x e4m3 -> bf16, unit scales, fast accumulate: the best rate the tensor
    cores show). Raises if unavailable.

    After the warm-up: `bursts` bursts of BURST_CALLS calls (the ceiling, burst_ceiling), then the
    median of `samples` back-to-back calls after another warm-up (the sustained rate). Bursts come
    first so the back-to-back loop's power draw does not hold their clock down.
    """
    torch = _torch_cuda()
    from solbench.gpu.telemetry import TelemetrySampler

    fn = _matmul_fn(torch, dtype, n)
    flop = 2 * n**3
    _warm_up(fn, WARMUP_MS)
    telemetry = []

    def time_burst():
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(BURST_CALLS)]
        for start, end in events:
            start.record()
            fn()
            end.record()
        # The calls are queued and running: sample clocks from now until the GPU is done.
        with TelemetrySampler(0) as sampler:
            torch.cuda.synchronize()
        telemetry.append(sampler.summary())
        return [start.elapsed_time(end) for start, end in events]

    ceiling, best = burst_ceiling(run_bursts(time_burst, bursts), flop)
    with TelemetrySampler(0) as sampler:
        sustained_ms = statistics.median(time_ms(fn, samples))
    return MatmulRates(ceiling, flop / (sustained_ms * 1e9), telemetry[best], sampler.summary())


def _buffer_bytes(requested: int) -> int:
    """requested, or less so that two buffers fit in 80 % of the free memory (16-byte multiple)."""
    import torch

    free, _ = torch.cuda.mem_get_info()
    return min(requested, int(free * 0.4)) // 16 * 16


def bandwidth_tbps(nbytes: int = COPY_BYTES, samples: int = SAMPLES) -> tuple[float, float, int]:
    """(copy TB/s counting read + write, read-only TB/s, buffer bytes) over buffers far larger than L2.

    Copy: dst.copy_(src). Read: a sum over src, whose one-element result is negligible traffic.
    Buffers hold random bits so no hardware compression of zeros can flatter the result.
    """
    torch = _torch_cuda()
    nbytes = _buffer_bytes(nbytes)
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    words = src.view(torch.float32)  # an fp32 sum streams at full bandwidth; an int32 sum widens to int64
    copy_ms = statistics.median(time_ms(lambda: dst.copy_(src), samples))
    read_ms = statistics.median(time_ms(lambda: words.sum(), samples))
    del src, dst, words
    torch.cuda.empty_cache()
    return 2 * nbytes / (copy_ms * 1e9), nbytes / (read_ms * 1e9), nbytes


def launch_latency_us(samples: int = LAUNCH_SAMPLES) -> dict[str, float]:
    """Launch floors, µs (median). torch has no empty kernel, so the kernel is x.add_(1) on one fp32.

    'eager': events around one eager launch with an idle GPU queue (host launch path included).
    'graph': events around one replay of a CUDA graph holding that one kernel, idle queue.
    'back_to_back': device time per kernel when 100 run back to back (None if unmeasurable).
    """
    torch = _torch_cuda()
    x = torch.zeros(1, device="cuda")
    eager = statistics.median(time_ms(lambda: x.add_(1), samples, warmup_ms=100, sync_each=True))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up on a side stream before capture, as torch's docs ask
        for _ in range(3):
            x.add_(1)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        x.add_(1)
    replay = statistics.median(time_ms(graph.replay, samples, warmup_ms=100, sync_each=True))

    return {"eager": eager * 1e3, "graph": replay * 1e3, "back_to_back": _back_to_back_us(x)}


def _back_to_back_us(x, kernels: int = 100, reps: int = 11) -> float | None:
    """Device time per tiny kernel when they run back to back, µs; None without torch.cuda._sleep.

    A spin kernel holds the stream while the host queues the events and kernels behind it, so
    the host's launch rate does not pace the GPU.
    """
    import torch

    if not hasattr(torch.cuda, "_sleep"):
        return None
    per_kernel = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        torch.cuda._sleep(20_000_000)  # ~10 ms of spinning: ample time to queue everything
        start.record()
        for _ in range(kernels):
            x.add_(1)
        end.record()
        torch.cuda.synchronize()
        per_kernel.append(start.elapsed_time(end) * 1e3 / kernels)
    return statistics.median(per_kernel)


def calibrate(arch: str = "auto", matmul_n: int = MATMUL_N, copy_bytes: int = COPY_BYTES,
              samples: int = SAMPLES, bursts: int = BURSTS, log=print) -> MeasuredProfile:
    """Measure the present GPU (device 0) and return its MeasuredProfile; writes nothing."""
    torch = _torch_cuda()
    name = torch.cuda.get_device_name(0)
    props = torch.cuda.get_device_properties(0)
    arch = resolve_arch(arch, name, props.total_memory)
    details: dict[str, object] = {
        "matmul": f"{matmul_n}x{matmul_n}x{matmul_n}, torch.matmul (bf16/fp16), torch._scaled_mm e4m3 -> bf16 fast-accum (fp8)",
        "timer": f"CUDA events, median of {samples} after {WARMUP_MS:g} ms warm-up",
        "matmul_ceiling": f"{BURST_QUANTILE:g} quantile (nearest rank) of per-call rates over {bursts} bursts of "
                          f"{BURST_CALLS} calls, >= {BURST_GAP_MS:g} ms idle between (duty <= {BURST_MAX_DUTY:g}), "
                          f"after {WARMUP_MS:g} ms warm-up; <dtype>_sustained_tflops: median of {samples} back to back",
        "launch_kernel": "x.add_(1) on a 1-element fp32 tensor (torch has no empty kernel)",
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "",
        "capability": f"sm_{props.major}{props.minor}",
        "driver_sm_count": props.multi_processor_count,
        "driver_l2_bytes": getattr(props, "L2_cache_size", 0),
        "total_memory_bytes": props.total_memory,
    }
    log(f"calibrating {name} as {arch}")

    rates: dict[str, MatmulRates | None] = {}
    for dtype in ("bf16", "fp16", "fp8_e4m3"):
        try:
            # Best of two sizes: cuBLAS picks different tiles per shape. The clocks and power seen are
            # kept, because they tell the boost-clock ceiling from the power-capped sustained rate.
            by_size = [matmul_rates(dtype, n, samples, bursts) for n in (matmul_n, 2 * matmul_n)]
        except (RuntimeError, TypeError) as exc:
            if dtype != "fp8_e4m3":
                raise
            rates[dtype] = None
            details["fp8_unavailable"] = str(exc).splitlines()[0][:200]
            log(f"  fp8 matmul unavailable: {details['fp8_unavailable']}")
            continue
        ceiling = max(by_size, key=lambda r: r.ceiling_tflops)
        sustained = max(by_size, key=lambda r: r.sustained_tflops)
        rates[dtype] = MatmulRates(ceiling.ceiling_tflops, sustained.sustained_tflops,
                                   ceiling.burst_telemetry, sustained.sustained_telemetry)
        details[f"{dtype}_burst_telemetry"] = _telemetry_note(ceiling.burst_telemetry)
        details[f"{dtype}_sustained_telemetry"] = _telemetry_note(sustained.sustained_telemetry)
        log(f"  {dtype} matmul: {ceiling.ceiling_tflops:.1f} TFLOP/s in bursts "
            f"({details[f'{dtype}_burst_telemetry']}); {sustained.sustained_tflops:.1f} TFLOP/s sustained "
            f"({details[f'{dtype}_sustained_telemetry']})")
    copy, read, nbytes = bandwidth_tbps(copy_bytes, samples)
    details["copy_buffer_bytes"] = nbytes
    log(f"  copy {copy:.3f} TB/s (read + write), read {read:.3f} TB/s, {nbytes / 2**30:.2f} GiB buffers")
    launch = launch_latency_us()
    if launch["back_to_back"] is not None:
        details["back_to_back_launch_us"] = round(launch["back_to_back"], 3)
    log(f"  launch: eager {launch['eager']:.2f} us, graph replay {launch['graph']:.2f} us, "
        f"back to back {launch['back_to_back'] or float('nan'):.2f} us")
    fp8 = rates["fp8_e4m3"]
    return MeasuredProfile(
        arch=arch, gpu=name,
        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        bf16_tflops=round(rates["bf16"].ceiling_tflops, 2), fp16_tflops=round(rates["fp16"].ceiling_tflops, 2),
        fp8_tflops=None if fp8 is None else round(fp8.ceiling_tflops, 2),
        copy_tbps=round(copy, 4), read_tbps=round(read, 4),
        launch_us=round(launch["eager"], 3), graph_launch_us=round(launch["graph"], 3),
        bf16_sustained_tflops=round(rates["bf16"].sustained_tflops, 2),
        fp16_sustained_tflops=round(rates["fp16"].sustained_tflops, 2),
        fp8_sustained_tflops=None if fp8 is None else round(fp8.sustained_tflops, 2),
        details=details,
    )


def _telemetry_note(tele: dict) -> str:
    if not tele.get("available"):
        return f"no telemetry: {tele.get('reason', '')}"
    clock = tele.get("sm_clock_mhz") or {}
    return (f"SM clock median {clock.get('median')} MHz (min {clock.get('min')}), power mean "
            f"{tele.get('power_w_mean')} W, reasons {','.join(tele.get('reasons', [])) or 'none'}")


def write_profile(profile: MeasuredProfile, path: str | Path | None = None) -> Path:
    """Write the profile as TOML to path (default roofline/measured/<arch>.toml); returns the path."""
    path = Path(path) if path else profile_path(profile.arch)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(profile.to_toml())
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}; pass --out or set SOLBENCH_ROOFLINE_DIR") from None
    return path
