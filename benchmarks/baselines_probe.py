"""Probe every available baseline on this GPU: suite coverage, then b1 s16384 h16 d128 bf16 speed.

For each available baseline: how many scenarios of hopper / fa3-h2h / rtx3080-mask / real it claims on
this arch, then, for b1 sq=skv=16384 Hq=Hkv=16 d128 bf16 causal and non-causal, a correctness check
against the fp32 reference (a wrong baseline prints MISMATCH and no time) and its median time and
TFLOP/s under solbench's Timer (cold L2, rotated inputs), falling back to a CUDA-events loop.
FIELD.md's H200 numbers (triton do_bench): FA3 668-676 / 681-687, FA4 643 / 678, cuDNN (torch) 566 / 618,
FlashInfer fa3 609 / 651, fa2 356 / 391, Flex 397 / 474, SDPA flash 325 / 352 TFLOP/s (causal / full).

    python benchmarks/baselines_probe.py [--baselines fa3,flex] [--samples 30] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from solbench.baselines import REGISTRY, get_adapter_class  # noqa: E402
from solbench.baselines.coverage import coverage  # noqa: E402
from solbench.supervisor.inputs import make_inputs  # noqa: E402
from solbench.core.masks import visible_pairs  # noqa: E402
from solbench.supervisor.reference import reference  # noqa: E402
from solbench.supervisor.runner import gpu_arch  # noqa: E402
from solbench.core.scenario import Scenario  # noqa: E402
from solbench.supervisor.verdict import judge  # noqa: E402

SUITES = ("hopper", "fa3-h2h", "rtx3080-mask", "real")


def headline(causal: bool) -> Scenario:
    return Scenario(q_lens=(16384,), kv_lens=(16384,), heads_q=16, heads_kv=16, causal=causal)


def time_calls(calls, samples: int) -> tuple[float, str]:
    """Median ms over `samples` timed iterations rotating through `calls`, and the method used."""
    try:
        from solbench.core.policy import TimingPolicy
        from solbench.sandbox.timing import Timer

        timer = Timer(TimingPolicy(), "cuda")
        timer.warm_up(calls)
        return statistics.median(s.device_ms for s in timer.take(calls, samples)), "solbench Timer"
    except Exception as exc:  # a probe: say why and fall back, never stop
        print(f"  (Timer unavailable: {type(exc).__name__}: {exc}; using CUDA events)")
    for call in calls:
        call()
    torch.cuda.synchronize()
    times = []
    for i in range(samples):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        calls[i % len(calls)]()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), "cuda events (warm L2)"


def probe_speed(name: str, sc: Scenario, samples: int) -> dict:
    cls = get_adapter_class(name)
    support = cls.supports(sc, gpu_arch() or "h200")
    if not support.ok:
        return {"status": "unsupported", "reason": support.reason}
    adapter = cls(device="cuda")
    t0 = time.perf_counter()
    check = make_inputs(sc, trial=0, device="cuda")
    call = adapter.bind(check)
    bind_s = time.perf_counter() - t0
    check.poison()
    call()
    torch.cuda.synchronize()
    ref_out, ref_lse = reference(make_inputs(sc, trial=0, device="cuda"))
    verdict = judge(check.out, check.lse, ref_out, ref_lse, sc.dtype, writes_lse=adapter.writes_lse)
    del ref_out, ref_lse
    if verdict.status.value != "passed":
        return {"status": verdict.status.value, "reason": verdict.reason, "bind_s": bind_s}
    rotation = [make_inputs(sc, trial=t, device="cuda") for t in (1, 2)]
    calls = [call] + [adapter.bind(inp) for inp in rotation]
    ms, method = time_calls(calls, samples)
    flops = 2 * (sc.head_dim_qk + sc.head_dim_v) * visible_pairs(sc)
    return {"status": "passed", "median_ms": ms, "tflops": flops / ms / 1e9, "method": method, "bind_s": bind_s,
            "max_abs_err": verdict.error.max_abs}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baselines", help="comma-separated names (default: every available)")
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("baselines_probe: needs a CUDA GPU", file=sys.stderr)
        return 2
    arch = gpu_arch() or "h200"
    names = args.baselines.split(",") if args.baselines else list(REGISTRY)
    print(f"GPU {torch.cuda.get_device_name()} (arch {arch}), torch {torch.__version__}, "
          f"cuDNN {torch.backends.cudnn.version()}")
    results = {"arch": arch, "gpu": torch.cuda.get_device_name(), "baselines": {}}
    tables = {suite: coverage(suite, arch, names) for suite in SUITES}
    for name in names:
        cls = get_adapter_class(name)
        entry = {"version": cls.version(), "available": cls.is_available(), "coverage": {}, "speed": {}}
        results["baselines"][name] = entry
        print(f"\n== {name} ({cls.version() or 'not installed'}): {cls.label}")
        for suite, table in tables.items():
            cov = next(b for b in table.per_baseline() if b.name == name)
            entry["coverage"][suite] = {"supported": cov.supported, "total": cov.total}
            top = "; ".join(f"{r} ({c})" for r, c in cov.top_reasons[:2])
            print(f"  {suite:13s} {cov.supported:4d}/{cov.total:<4d} {top}")
        if not cls.is_available():
            print(f"  skipped timing: {cls.unavailable_reason()}")
            continue
        for causal in (True, False):
            label = "causal" if causal else "full"
            try:
                r = probe_speed(name, headline(causal), args.samples)
            except Exception as exc:  # one broken baseline must not hide the others
                r = {"status": "error", "reason": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
            entry["speed"][label] = r
            if r["status"] == "passed":
                print(f"  b1 s16384 h16 d128 bf16 {label:6s} {r['median_ms']:8.3f} ms  {r['tflops']:6.1f} TFLOP/s  "
                      f"(bind {r['bind_s']:.1f} s, {r['method']}, max |err| {r['max_abs_err']:.2e})")
            else:
                print(f"  b1 s16384 h16 d128 bf16 {label:6s} {r['status'].upper()}: {r['reason']}")
        time.sleep(1)  # let clocks and power settle between libraries, as FA's benchmark does
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
