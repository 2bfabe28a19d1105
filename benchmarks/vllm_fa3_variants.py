"""Why vllm-fa3 ran slower than the fa3-fwd wheel in the same hopper recording: times the vllm-fa3 adapter's
call as bound, and with one of its arguments changed, next to fa3-fwd, on the scenarios where the gap was
widest. Needs the H200 with both staged; not a unit test (CUDA events, no L2 flush: relative only).

In baselines/h200/hopper.json (H200, 2026-12-03) vllm-fa3 took 1.18x fa3-fwd's median time on the 28
scenarios both ran (d256 fp8 per-head descale 3.2x, d192 fp8 1.6x, bf16 0.92-1.1x). Candidates: the
scheduler metadata the adapter computes (vLLM computes it once per step the same way), pack_gqa, num_splits,
the varlen path for a dense batch (fa3-fwd's adapter uses the batch path), and the LSE copy.

    python3 benchmarks/vllm_fa3_variants.py [--filter fp8]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from solbench.core.suites import load_suite  # noqa: E402
from solbench.supervisor.inputs import make_inputs  # noqa: E402

WIDEST = ("prefill-b2-sq8192-skv8192-hq16-hkv8-d256-fp8-dsph-causal-peaked",
          "prefill-b2-sq8192-skv8192-hq32-hkv32-d192v128-fp8-dspt-causal-peaked",
          "prefill-b2-sq8192-skv8192-hq32-hkv8-d128-fp8-dspt-causal-peaked",
          "prefill-b2-sq8192-skv8192-hq32-hkv8-d128-bf16-causal-peaked")
VARIANTS = {"as bound": {}, "no scheduler metadata": {"scheduler_metadata": None},
            "pack_gqa=True": {"pack_gqa": True}, "pack_gqa=False": {"pack_gqa": False},
            "num_splits=1": {"num_splits": 1}}


def time_call(call, reps: int = 30) -> float:
    """Median ms of `call` over `reps` calls after 5 warm-up calls (CUDA events around each)."""
    import torch

    for _ in range(5):
        call()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--filter", default="", help="only the listed scenarios whose id contains this")
    args = parser.parse_args()
    from solbench.baselines import get_adapter_class, vllm_fa3

    real_load = vllm_fa3.load_ops
    scenarios = {s.id: s for s in load_suite("hopper").scenarios}
    for sid in (s for s in WIDEST if args.filter in s):
        sc = scenarios[sid]
        inputs = make_inputs(sc, trial=0, device="cuda")
        row = []
        fa3 = get_adapter_class("fa3-fwd")
        if fa3.is_available() and fa3.supports(sc, "h200").ok:
            row.append(("fa3-fwd", time_call(fa3(device="cuda").bind(inputs))))
        for name, change in VARIANTS.items():
            def load_ops(change=change):
                fwd, metadata, names, metadata_names = real_load()
                return (lambda **kw: fwd(**{**kw, **{k: v for k, v in change.items() if k in kw}}),
                        metadata, names, metadata_names)
            vllm_fa3.load_ops = load_ops
            try:
                row.append((name, time_call(get_adapter_class("vllm-fa3")(device="cuda").bind(inputs))))
            except Exception as exc:  # a variant the op refuses: say so, go on
                row.append((name, f"{type(exc).__name__}: {str(exc).splitlines()[0][:80]}"))
            finally:
                vllm_fa3.load_ops = real_load
        print(sid)
        for name, ms in row:
            print(f"  {name:<24} {ms if isinstance(ms, str) else f'{ms * 1e3:9.1f} us'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
