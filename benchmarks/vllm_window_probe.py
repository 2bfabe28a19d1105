"""Which rows vllm-fa3 gets wrong on non-causal sliding windows, and which window it computed there.

On the H200 (2026-12-03) vllm-fa3 failed 2 of the 3 hopper scenarios with a window on both sides
(wl511 wr511, peaked profile): LSE off by up to 0.046 on a few rows (every other library 5.7e-6). A window
that is off by one key on one side changes a row by that key's weight: ~1/1000 on an ordinary row (inside
tolerance), a lot on a row whose outlier key (the peaked profile's) sits exactly at the edge. This runs the
library on such a scenario, lists the worst rows, and for each finds the window (wl + dl, wr + dr), dl and dr
in -1..1, whose fp32 reference matches the library's LSE there: "(0, 0)" everywhere means a numerical
fault, one shift everywhere means a window convention (the adapter's or the library's).

    python3 benchmarks/vllm_window_probe.py                      # on the H200, with vllm-fa3 staged
    python3 benchmarks/vllm_window_probe.py --simulate 0,1 --device cpu   # the probe's own check, no GPU:
        # the "library" is the reference with window (wl, wr + 1); the probe must name (0, 1) on its rows
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from solbench.core.scenario import Scenario  # noqa: E402
from solbench.core.suites import load_suite  # noqa: E402
from solbench.supervisor.inputs import make_inputs  # noqa: E402
from solbench.supervisor.reference import reference, reference_rows  # noqa: E402

SHIFTS = [(dl, dr) for dl in (-1, 0, 1) for dr in (-1, 0, 1)]


def small_scenario() -> Scenario:
    """A quick stand-in with the same features: non-causal, window 511 on both sides, peaked."""
    return Scenario(q_lens=(4096,), kv_lens=(4096,), heads_q=8, heads_kv=8, head_dim_qk=128, head_dim_v=128,
                    causal=False, window_left=511, window_right=511, input_profile="peaked")


def library_output(sc: Scenario, inputs, simulate: tuple[int, int] | None):
    """(out, lse) of vllm-fa3 on `inputs`, or of the reference with the window shifted by `simulate`."""
    import torch

    if simulate is not None:
        shifted = replace(sc, window_left=sc.window_left + simulate[0], window_right=sc.window_right + simulate[1])
        return reference(replace(inputs, scenario=shifted))
    from solbench.baselines import get_adapter_class

    adapter = get_adapter_class("vllm-fa3")(device=str(inputs.device))
    call = adapter.bind(inputs)
    inputs.poison()
    call()
    torch.cuda.synchronize()
    return inputs.out.float(), inputs.lse.float()


def probe(sc: Scenario, device: str, simulate, rows: int) -> None:
    import torch

    inputs = make_inputs(sc, trial=0, device=device)
    ref_out, ref_lse = reference(make_inputs(sc, trial=0, device=device))
    out, lse = library_output(sc, inputs, simulate)
    lse_err = (lse - ref_lse).abs().nan_to_num(0.0)
    out_err = (out - ref_out).abs().amax(dim=-1)
    print(f"{sc.id}: LSE max |err| {float(lse_err.max()):.4g}, rows with LSE err > 1e-3: "
          f"{int((lse_err > 1e-3).sum())} of {lse_err.numel()}, out max |err| {float(out_err.max()):.4g}")
    worst = torch.topk(lse_err.flatten(), rows).indices.tolist()
    starts = [0]
    for q_len in sc.q_lens:
        starts.append(starts[-1] + q_len)
    hot = inputs.k[..., -1].float() != 0  # the peaked profile's outlier keys (their last channel)
    shifted_refs = {}
    for shift in SHIFTS:
        shifted = replace(sc, window_left=sc.window_left + shift[0], window_right=sc.window_right + shift[1])
        tokens = sorted({i // sc.heads_q for i in worst})  # plain ints, as the supervisor's sampled rows are
        shifted_refs[shift] = (tokens, reference_rows(replace(inputs, scenario=shifted), tokens)[1])
    verdicts = []
    for flat in worst:
        token, head = divmod(flat, sc.heads_q)
        b = max(i for i, s in enumerate(starts[:-1]) if s <= token)
        i = token - starts[b]  # the row's position; non-causal, q_len == kv_len: keys i - wl .. i + wr
        matches = [shift for shift, (tokens, lse_s) in shifted_refs.items()
                   if abs(float(lse_s[tokens.index(token), head]) - float(lse[token, head])) < 1e-3]
        edge = []
        if sc.kv_layout == "contiguous":
            kv_head = head // (sc.heads_q // sc.heads_kv)
            base = sum(sc.kv_lens[:b])
            for j in (i - sc.window_left - 1, i - sc.window_left, i + sc.window_right, i + sc.window_right + 1):
                if 0 <= j < sc.kv_lens[b] and bool(hot[base + j, kv_head]):
                    edge.append(j - i)
        verdicts.append(tuple(matches))
        print(f"  seq {b} row {i} head {head}: LSE err {float(lse_err[token, head]):.4g}; outlier keys at offsets "
              f"{edge or 'none'} of the edges; matching windows (dl, dr): {matches or 'none'}")
    common = set(verdicts[0]).intersection(*verdicts[1:]) if verdicts else set()
    print(f"  window shift matching every listed row: {sorted(common) or 'none'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--simulate", help="dl,dr: the 'library' is the reference with the window shifted so")
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--hopper", action="store_true", help="also the two failing hopper scenarios (larger)")
    args = parser.parse_args()
    simulate = tuple(int(x) for x in args.simulate.split(",")) if args.simulate else None
    scenarios = [small_scenario()]
    if args.hopper:
        scenarios += [s for s in load_suite("hopper").scenarios
                      if s.window_left == 511 and s.window_right == 511 and not s.causal and s.dtype == "bf16"]
    for sc in scenarios:
        probe(sc, args.device, simulate, args.rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
