"""GPU acceptance of vllm-fa3 (issue 20): every claimed scenario of a suite against the fp32 reference, then
b1 s16384 h16 d128 bf16 causal timed by solbench's Timer and by a plain back-to-back CUDA-events loop in
the same process (the two must agree within 3 %).

    ../shared/device/stage-vllm-fa3        # here, then on the H200 one call:
    bash .devwheels/vllm-fa3/install.sh && source /tmp/site/env.sh && \
        python benchmarks/vllm_fa3_acceptance.py --suite hopper

Prints one line per failing scenario, a summary `correct: N/M claimed` and `timing: solbench X ms,
events loop Y ms, ratio R`; exits 1 if any claimed scenario fails or the ratio is outside 1 +- 3 %.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch

from solbench.baselines import get_adapter_class
from solbench.core.masks import visible_pairs
from solbench.core.scenario import Scenario
from solbench.core.suites import load_suite
from solbench.supervisor.inputs import make_inputs
from solbench.supervisor.reference import reference
from solbench.supervisor.verdict import judge

NAME = "vllm-fa3"
HEADLINE = Scenario(q_lens=(16384,), kv_lens=(16384,), heads_q=16, heads_kv=16, causal=True)
TOLERANCE = 0.03


def check(cls, sc: Scenario) -> str:
    """'' when the adapter's output passes against the fp32 reference, else the status and reason."""
    adapter = cls(device="cuda")
    inputs = make_inputs(sc, trial=0, device="cuda")
    call = adapter.bind(inputs)
    inputs.poison()
    call()
    torch.cuda.synchronize()
    ref_out, ref_lse = reference(make_inputs(sc, trial=0, device="cuda"))
    verdict = judge(inputs.out, inputs.lse, ref_out, ref_lse, sc.dtype, writes_lse=adapter.writes_lse)
    return "" if verdict.status.value == "passed" else f"{verdict.status.value}: {verdict.reason}"


def events_loop_ms(call, iters: int = 50) -> float:
    """Mean ms per call of `iters` calls back to back between two CUDA events (warm L2, no flush)."""
    for _ in range(10):
        call()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        call()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / iters


def burst_loop_ms(call, iters: int = 5, bursts: int = 20, rest_s: float = 0.05) -> float:
    """Median over `bursts` of the mean ms per call of `iters` calls back to back between two CUDA events, each
    burst after `rest_s` idle: the plain loop without the sustained load that a long loop puts on the power cap."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    means = []
    for _ in range(bursts):
        torch.cuda.synchronize()
        time.sleep(rest_s)
        start.record()
        for _ in range(iters):
            call()
        end.record()
        end.synchronize()
        means.append(start.elapsed_time(end) / iters)
    return statistics.median(means)


def clocks(fn):
    """(fn's result, median SM MHz, mean power W) while fn runs, from NVML (solbench's sampler)."""
    from solbench.gpu.telemetry import TelemetrySampler

    with TelemetrySampler(torch.cuda.current_device(), interval_ms=2.0) as sampler:
        value = fn()
    s = sampler.summary()
    return value, (s.get("sm_clock_mhz") or {}).get("median"), s.get("power_w_mean")


def solbench_ms(calls, samples: int = 50) -> float:
    """Median device ms under solbench's Timer with its default policy (the one runs use)."""
    from solbench.core.policy import TimingPolicy
    from solbench.sandbox.timing import Timer

    timer = Timer(TimingPolicy(), "cuda")
    timer.warm_up(calls)
    return statistics.median(s.device_ms for s in timer.take(calls, samples))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="hopper")
    parser.add_argument("--arch", default="h200")
    args = parser.parse_args()
    cls = get_adapter_class(NAME)
    if not cls.is_available():
        print(f"{NAME}: {cls.unavailable_reason()}", file=sys.stderr)
        return 2
    print(f"{NAME} {cls.version()} on {torch.cuda.get_device_name()}, torch {torch.__version__}")
    scenarios = load_suite(args.suite).scenarios
    claimed = [sc for sc in scenarios if cls.supports(sc, args.arch).ok]
    failed = 0
    t0 = time.perf_counter()
    for sc in claimed:
        try:
            why = check(cls, sc)
        except Exception as exc:  # one scenario's error must not hide the others
            why = f"error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        if why:
            failed += 1
            print(f"FAILED {sc.id}: {why}")
    print(f"correct: {len(claimed) - failed}/{len(claimed)} claimed of {len(scenarios)} in {args.suite} "
          f"({time.perf_counter() - t0:.0f} s)")

    adapter = cls(device="cuda")
    rotation = [make_inputs(HEADLINE, trial=t, device="cuda") for t in range(3)]
    calls = [adapter.bind(inputs) for inputs in rotation]
    ours, ours_mhz, ours_w = clocks(lambda: solbench_ms(calls))
    plain, plain_mhz, plain_w = clocks(lambda: events_loop_ms(calls[0]))
    burst, burst_mhz, burst_w = clocks(lambda: burst_loop_ms(calls[0]))
    ratio = ours / plain
    tflops = 4 * HEADLINE.head_dim_qk * visible_pairs(HEADLINE) / 1e9
    print(f"timing b1 s16384 h16 d128 bf16 causal: solbench {ours:.4f} ms ({tflops / ours:.0f} TFLOP/s), "
          f"events loop {plain:.4f} ms ({tflops / plain:.0f} TFLOP/s), ratio {ratio:.4f}")
    # A sustained loop of this compute-bound call runs into the power cap; short bursts after a rest do not.
    print(f"  SM clock / power: solbench {ours_mhz} MHz {ours_w} W; events loop {plain_mhz} MHz {plain_w} W; "
          f"bursts of 5 after 50 ms idle {burst:.4f} ms ({tflops / burst:.0f} TFLOP/s) {burst_mhz} MHz {burst_w} W, "
          f"ratio to solbench {ours / burst:.4f}")
    return 0 if failed == 0 and abs(ratio - 1) <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
