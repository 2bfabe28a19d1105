"""The tight estimate: a closer, softer bound than SOL, for the gap report only (it never rejects a time).

    tight_ms = max(compute_ms / wave_efficiency, memory_ms, exp_ms / wave_efficiency, launch_ms)

compute and memory are at the measured (attainable) ceilings; exp is one exp2 per visible (query head,
query, key) pair at the SFU rate; launch is the measured empty-launch latency. Wave quantisation: a
kernel works in tiles of TILE_ROWS rows (queries x the query heads of one KV head, packed as decode
kernels pack GQA), one tile per CTA and one CTA per SM at a time, so the last wave of
ceil(tiles / SMs) leaves SMs idle; the compute-side terms divide by tiles / (waves x SMs). The memory
term is not quantised: a split-KV kernel spreads the key span over every SM whatever the tile count.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from solbench.core import masks
from solbench.core.archspec import ArchSpec, MeasuredProfile
from solbench.core.roofline import flops, min_bytes
from solbench.core.scenario import Scenario

TILE_ROWS = 128
"""Rows of Q per CTA tile (FA2/FA3/FlashInfer prefill tiles are 64-192 rows; 128 is the common one)."""
EXP_PER_CLK_PER_SM = 16
"""exp2 results per clock per SM: the CUDA C++ Programming Guide's arithmetic-instruction throughput table
(32-bit exp2/sin/cos, special function units) for compute capability 8.x and 9.0."""


@dataclass(frozen=True)
class TightEstimate:
    """The tight estimate of one scenario on one GPU (see the module docstring)."""

    compute_ms: float
    """FLOPs at the attainable matmul rate, divided by wave_efficiency."""
    memory_ms: float
    """Minimal bytes at the attainable bandwidth."""
    exp_ms: float
    """One exp2 per visible pair at EXP_PER_CLK_PER_SM x SMs x boost clock, divided by wave_efficiency."""
    launch_ms: float
    """Measured empty-launch latency (0 without a profile)."""
    tiles: int
    """CTA tiles of TILE_ROWS rows over all sequences and KV heads."""
    waves: int
    """ceil(tiles / sm_count)."""
    wave_efficiency: float
    """tiles / (waves x sm_count): the busy fraction of SM-slots."""
    tight_ms: float
    """max of the four terms."""
    limit: str
    """Which term sets tight_ms: 'compute', 'memory', 'exp' or 'launch'."""

    def to_dict(self) -> dict:
        return asdict(self)


def tiles(sc: Scenario) -> int:
    """CTA tiles: per sequence and KV head, ceil(q_len x group / TILE_ROWS) (0 for an empty sequence)."""
    group = sc.heads_q // sc.heads_kv
    return sc.heads_kv * sum(math.ceil(q * group / TILE_ROWS) for q in sc.q_lens)


def estimate(sc: Scenario, spec: ArchSpec, profile: MeasuredProfile | None) -> TightEstimate:
    """The TightEstimate of `sc`; the datasheet rates stand in where `profile` is None."""
    n_flops = flops(sc)
    tflops = (profile.peak_tflops(sc.dtype) if profile else None) or spec.peak_tflops(sc.dtype)
    tbps = profile.memory_tbps if profile else spec.memory_tbps
    n_tiles = tiles(sc)
    waves = max(1, math.ceil(n_tiles / spec.sm_count))
    efficiency = n_tiles / (waves * spec.sm_count) if n_tiles else 1.0
    exp_per_ms = EXP_PER_CLK_PER_SM * spec.sm_count * spec.boost_clock_mhz * 1e3
    terms = {
        "compute": n_flops / (tflops * 1e9) / efficiency,
        "memory": min_bytes(sc) / (tbps * 1e9),
        "exp": masks.visible_pairs(sc) / exp_per_ms / efficiency,
        "launch": profile.launch_us / 1e3 if profile else 0.0,
    }
    limit = max(terms, key=terms.get)
    return TightEstimate(compute_ms=terms["compute"], memory_ms=terms["memory"], exp_ms=terms["exp"],
                         launch_ms=terms["launch"], tiles=n_tiles, waves=waves, wave_efficiency=efficiency,
                         tight_ms=terms[limit], limit=limit)
