"""Does taking kernel records with torch.profiler (solbench/sandbox/kernel_records.py, once a scenario after
the warm-up) change the times a Python worker measures afterwards? Times the same SDPA call through the
harness's Timer in rounds alternating "before" and "after", in two processes: one that profiles one call in
between, one that only sleeps as long (the control). Prints the median device and host time of each half
and the after/before ratios; the profiled process's ratios must match the control's within the A/A noise.

    python3 benchmarks/profiler_after_effect.py [--rounds 30]     (on a CUDA GPU)
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def measure(profile: bool, rounds: int) -> dict:
    import torch
    import torch.nn.functional as F

    from solbench.core.policy import TimingPolicy
    from solbench.sandbox.kernel_records import record_kernels
    from solbench.sandbox.timing import Timer

    q, k, v = (torch.randn(2, 32, 4096, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    out = torch.empty_like(q)

    def call():
        out.copy_(F.scaled_dot_product_attention(q, k, v, is_causal=True))

    timer = Timer(TimingPolicy(), "cuda")
    timer.warm_up([call])
    halves = {}
    for half in ("before", "after"):
        if half == "after":
            t = time.perf_counter()
            if profile:
                kernels, why = record_kernels(call)
                halves["kernels"] = [k["name"][:60] for k in kernels or []] or why
            else:
                time.sleep(0.2)
            halves["pause_s"] = time.perf_counter() - t
        samples = [s for _ in range(rounds) for s in timer.take([call], 3)]
        halves[half] = (statistics.median(s.device_ms for s in samples), statistics.median(s.host_ms for s in samples))
    return halves


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        control = pool.apply(measure, (False, args.rounds))
    with ctx.Pool(1) as pool:
        profiled = pool.apply(measure, (True, args.rounds))
    for name, r in (("control", control), ("profiled", profiled)):
        (db, hb), (da, ha) = r["before"], r["after"]
        print(f"{name:9s} device {db:.4f} -> {da:.4f} ms ({da / db:.4f}x)  host {hb:.4f} -> {ha:.4f} ms "
              f"({ha / hb:.4f}x)  pause {r['pause_s']:.3f} s")
    print("kernels:", profiled.get("kernels"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
