"""How long the audit's input fingerprint takes on a scenario's inputs, fused (Triton) against the torch form,
and that both agree (run on a GPU: python3 benchmarks/fingerprint_speed.py [SCENARIO_ID ...]).

The audit fingerprints each candidate copy twice a round (before and after it); on the H200 the torch form was
most of the ~0.1 s per GB of inputs a hopper round spent outside the calls (H200, 2026-12-03)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from solbench.core.suites import load_suite  # noqa: E402
from solbench.supervisor import fingerprint  # noqa: E402
from solbench.supervisor.inputs import input_fingerprint, make_inputs  # noqa: E402

DEFAULT = ["splitkvdecode-n8-tq8-tkv548864-L9f7f39-hq16-hkv8-d256-bf16-page64-causal-peaked",
           "prefill-b2-sq8192-skv8192-hq32-hkv32-d128-bf16-full-wl511-wr511-peaked"]


def timed(fn, repeat=5):
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeat):
        value = fn()
    torch.cuda.synchronize()
    return value, (time.perf_counter() - start) / repeat * 1e3


def main(ids):
    scenarios = {s.id: s for s in load_suite("hopper").scenarios}
    print(f"{'scenario':72} {'GB':>6} {'torch ms':>9} {'fused ms':>9}  same")
    for sid in ids:
        one(sid, make_inputs(scenarios[sid], trial=1, device="cuda"))
        torch.cuda.empty_cache()


def one(sid, inputs):
    gb = sum(t.numel() * t.element_size() for t in (inputs.q, inputs.k, inputs.v)) / 1e9
    fused, fused_ms = timed(lambda: input_fingerprint(inputs, 0x5DEECE66D))
    if not fingerprint._fused_agrees(0):
        print("the fused pass is not used on this machine (no Triton, or it disagreed with the torch form)")
    agrees = fingerprint._fused_agrees
    fingerprint._fused_agrees = lambda index: False  # the torch form
    try:
        plain, plain_ms = timed(lambda: input_fingerprint(inputs, 0x5DEECE66D), repeat=2)
    finally:
        fingerprint._fused_agrees = agrees
    print(f"{sid[:72]:72} {gb:6.2f} {plain_ms:9.1f} {fused_ms:9.2f}  {fused == plain}")


if __name__ == "__main__":
    main(sys.argv[1:] or DEFAULT)
