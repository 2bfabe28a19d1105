"""A/A noise of solbench's Timer against simpler timers, on fixed torch ops (needs a GPU; not a unit test).

Each timer measures the same op `--repeats` times, the timers taking turns within a repeat so drift hits
all of them alike. |m[i+1] / m[i] - 1| over consecutive repeats is how far apart two honest measurements
of the same kernel land; per op and timer the table gives its p50, p95 and max, the median time and the
wall time one measurement cost.

    python benchmarks/timer_noise.py [--repeats 30] [--samples 25] [--ops matmul_4k,copy_4mib] [--json out.json]

Timers: `solbench` (cold L2, rotated inputs, median of --samples events), `solbench_readflush` (the
same, evicting L2 by reading the buffer, so no dirty flush lines are written back inside the timed
kernel: compare medians on the copy ops), `solbench_warm` (no flush), `naive` (one event pair around
--samples back-to-back calls, mean, no flush), and `do_bench` (triton.testing.do_bench, median) when
triton is installed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from solbench.gpu.environment import collect  # noqa: E402
from solbench.core.policy import TimingPolicy  # noqa: E402
from solbench.sandbox.timing import Timer  # noqa: E402


def make_ops(copies: int) -> dict:
    """name -> list of `copies` zero-argument calls, each bound to its own tensors (~10 us to ~5 ms)."""
    bf16 = torch.bfloat16

    def copy(nbytes):
        def one():
            src = torch.randn(nbytes // 2, device="cuda", dtype=bf16)
            dst = torch.empty_like(src)
            return lambda: dst.copy_(src)
        return [one() for _ in range(copies)]

    def matmul(m, n, k):
        def one():
            a = torch.randn(m, k, device="cuda", dtype=bf16)
            b = torch.randn(k, n, device="cuda", dtype=bf16)
            out = torch.empty(m, n, device="cuda", dtype=bf16)
            return lambda: torch.matmul(a, b, out=out)
        return [one() for _ in range(copies)]

    return {
        "copy_4mib": lambda: copy(4 << 20),
        "copy_256mib": lambda: copy(256 << 20),
        "matmul_4k": lambda: matmul(4096, 4096, 4096),
        "matmul_8k": lambda: matmul(8192, 8192, 8192),
        "matmul_8k_k24k": lambda: matmul(8192, 8192, 24576),
    }


def solbench_timer(cold: bool, samples: int, flush: str = "write"):
    from solbench.gpu.cuda_ops import CudaOps

    policy = TimingPolicy(cold_l2=cold)
    notes: list[str] = []
    timer = Timer(policy, "cuda", ops=CudaOps("cuda", cold_l2=cold, notes=notes, flush=flush))
    timer.notes.extend(notes)

    def measure(calls):
        timer.warm_up(calls)
        return statistics.median(s.device_ms for s in timer.take(calls, samples))

    return measure, timer


def naive_timer(samples: int):
    def measure(calls):
        fn = calls[0]
        for _ in range(3):
            fn()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(samples):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / samples

    return measure


def do_bench_timer():
    try:
        from triton.testing import do_bench
    except ImportError:
        return None
    return lambda calls: do_bench(calls[0], warmup=25, rep=100, return_mode="median")


def spread(values: list[float]) -> dict:
    dev = np.abs(np.asarray(values[1:]) / np.asarray(values[:-1]) - 1.0)
    return {"p50": float(np.percentile(dev, 50)), "p95": float(np.percentile(dev, 95)), "max": float(dev.max())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=30, help="measurements per op and timer (default 30)")
    ap.add_argument("--samples", type=int, default=25, help="timed calls per measurement (default 25)")
    ap.add_argument("--ops", default="", help="comma-separated subset of ops (default: all)")
    ap.add_argument("--json", type=Path, help="also write the raw measurements here")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("timer_noise: needs a CUDA GPU (torch sees none)", file=sys.stderr)
        return 2

    policy = TimingPolicy()
    timers = {}
    timers["solbench"], cold_timer = solbench_timer(True, args.samples)
    timers["solbench_readflush"], _ = solbench_timer(True, args.samples, flush="read")
    timers["solbench_warm"], _ = solbench_timer(False, args.samples)
    timers["naive"] = naive_timer(args.samples)
    if (db := do_bench_timer()) is not None:
        timers["do_bench"] = db
    env = collect("cuda")
    print(f"# {env['gpu']['name']}  driver {env['driver']}  torch {env['torch']}  "
          f"repeats {args.repeats}  samples {args.samples}")
    print("# solbench timer:", json.dumps(cold_timer.describe()))

    ops = make_ops(policy.rotate_inputs)
    chosen = [o for o in args.ops.split(",") if o] or list(ops)
    raw, rows = {}, []
    for name in chosen:
        calls = ops[name]()
        values = {t: [] for t in timers}
        walls = {t: [] for t in timers}
        for _ in range(args.repeats):
            for t, measure in timers.items():  # timers take turns: drift hits all of them alike
                w0 = time.perf_counter()
                values[t].append(measure(calls))
                walls[t].append(time.perf_counter() - w0)
        raw[name] = values
        for t in timers:
            s = spread(values[t])
            rows.append((name, t, statistics.median(values[t]), s["p50"], s["p95"], s["max"],
                         statistics.median(walls[t])))
        del calls
        torch.cuda.empty_cache()

    header = ("op", "timer", "median_ms", "|r-1| p50 %", "p95 %", "max %", "wall_s/meas")
    print(" | ".join(f"{h:>14}" for h in header))
    for op, t, med, p50, p95, mx, wall in rows:
        print(" | ".join([f"{op:>14}", f"{t:>14}", f"{med:14.4f}", f"{100 * p50:14.3f}", f"{100 * p95:14.3f}",
                          f"{100 * mx:14.3f}", f"{wall:14.3f}"]))
    if args.json:
        args.json.write_text(json.dumps({"environment": env, "timer": cold_timer.describe(), "raw_ms": raw,
                                         "rows": [dict(zip(header, r)) for r in rows]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
