"""Speed of light per scenario: exact FLOPs, minimal bytes, and the roofline time on an arch.

    bound_ms = max(flops / peak, bytes / bandwidth)

FLOPs count only visible (query head, query, key) triples, 2 * (d_qk + d_v) each (QK^T and PV as
multiply-adds); softmax, softcap and sink work are not counted, as FA, FlashInfer and cuDNN do.
Bytes are the minimum any kernel must move: each input read once, each output written once, and of
K/V only the keys some query of the sequence can see (FA4's `bandwidth_fwd_bytes` convention plus
the small tensors the C ABI passes). A measured time below the bound is an error, never a win.

ArchSpec and MeasuredProfile live in solbench.core.archspec and are re-exported here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from solbench.core import masks
from solbench.core.archspec import (  # noqa: F401  (re-exported)
    ArchSpec,
    MeasuredProfile,
    find_profile,
    known_arches,
    load_arch,
    load_profile,
)
from solbench.core.errors import ConfigError
from solbench.core.scenario import Scenario

ELEMENT_BYTES = {"bf16": 2, "fp16": 2, "fp8_e4m3": 1}
INDEX_BYTES = 4  # int32 page-table entries, cu_seqlens, kv_lens, mask words
FP32_BYTES = 4  # LSE, sinks, descales
FTL_TOLERANCE = 0.03


def flops(sc: Scenario, bits: np.ndarray | None = None) -> int:
    """Useful FLOPs: 2 * (d_qk + d_v) per visible (query head, query, key) triple.

    Exact for bottom-right causal, windows, ragged and empty sequences; custom masks by popcount
    (pass `bits` from masks.mask_bits to avoid regenerating a large mask).
    """
    return 2 * (sc.head_dim_qk + sc.head_dim_v) * masks.visible_pairs(sc, bits)


@dataclass(frozen=True)
class Traffic:
    """Minimal DRAM traffic of one call, per tensor, in bytes."""

    q_bytes: int
    """Q read once."""
    kv_bytes: int
    """K and V read once per KV head, only for each sequence's visible key span."""
    o_bytes: int
    """O written once (every row, including rows that see nothing and are zero)."""
    lse_bytes: int
    """fp32 LSE written once per (query, query head)."""
    page_table_bytes: int
    """int32 page-table entries of the pages covering each sequence's visible key span."""
    mask_bytes: int
    """Custom-mask words covering each row's visible key interval."""
    descale_bytes: int
    """fp8 descale factors for Q, K, V (fp32; one each, or one per KV head each)."""
    sinks_bytes: int
    """fp32 sink logit per query head."""
    seqlens_bytes: int
    """cu_seqlens_q, and cu_seqlens_kv (contiguous) or kv_lens (paged), int32."""

    @property
    def total(self) -> int:
        return sum(getattr(self, name) for name in self.__dataclass_fields__)


def _key_span(sc: Scenario, b: int) -> tuple[int, int]:
    """[first, end) of the keys of sequence b any query can see; (0, 0) if none."""
    lo, hi = masks.row_intervals(sc, b)
    nonempty = hi > lo
    if not nonempty.any():
        return 0, 0
    return int(lo[nonempty].min()), int(hi[nonempty].max())


def traffic(sc: Scenario) -> Traffic:
    """Each tensor's minimal traffic for one call of this scenario (see Traffic)."""
    e_in, e_out = ELEMENT_BYTES[sc.dtype], ELEMENT_BYTES[sc.out_dtype]
    kv_row = sc.heads_kv * (sc.head_dim_qk + sc.head_dim_v) * e_in
    kv_bytes = page_entries = mask_words = 0
    for b in range(sc.batch):
        first, end = _key_span(sc, b)
        # The span is contiguous: consecutive rows move by one key (masks.visible_key_span).
        kv_bytes += masks.visible_key_span(sc, b) * kv_row
        if sc.kv_layout == "paged" and end > first:
            page_entries += (end - 1) // sc.page_size - first // sc.page_size + 1
        if sc.mask is not None:
            lo, hi = masks.row_intervals(sc, b)
            rows = hi > lo
            mask_words += int(((hi[rows] - 1) // 32 - lo[rows] // 32 + 1).sum())
    descales = 0 if sc.descale == "none" else 3 * (1 if sc.descale == "per_tensor" else sc.heads_kv)
    kv_index_entries = sc.batch if sc.kv_layout == "paged" else sc.batch + 1
    return Traffic(
        q_bytes=sc.total_q * sc.heads_q * sc.head_dim_qk * e_in,
        kv_bytes=kv_bytes,
        o_bytes=sc.total_q * sc.heads_q * sc.head_dim_v * e_out,
        lse_bytes=sc.total_q * sc.heads_q * FP32_BYTES,
        page_table_bytes=page_entries * INDEX_BYTES,
        mask_bytes=mask_words * sc.heads_q * INDEX_BYTES,
        descale_bytes=descales * FP32_BYTES,
        sinks_bytes=sc.heads_q * FP32_BYTES if sc.sinks else 0,
        seqlens_bytes=(sc.batch + 1 + kv_index_entries) * INDEX_BYTES,
    )


def min_bytes(sc: Scenario) -> int:
    """Minimal bytes moved by one call: Traffic.total."""
    return traffic(sc).total


@dataclass(frozen=True)
class Bound:
    """The roofline time of one scenario on one arch, against the datasheet and (if given) measured ceilings."""

    arch: str
    """Arch name the bound is for."""
    dtype: str
    """Scenario dtype whose tensor peak was used."""
    flops: int
    """Useful FLOPs (see flops())."""
    bytes: int
    """Minimal bytes moved (see traffic())."""
    intensity_flop_per_byte: float
    """flops / bytes."""
    peak_tflops: float
    """Datasheet dense tensor peak used, TFLOP/s."""
    memory_tbps: float
    """Datasheet DRAM bandwidth used, TB/s."""
    compute_ms: float
    """flops at the datasheet peak."""
    memory_ms: float
    """bytes at the datasheet bandwidth."""
    bound_ms: float
    """max(compute_ms, memory_ms): the datasheet speed of light."""
    limit: str
    """'compute' or 'memory': which term sets bound_ms."""
    measured_tflops: float | None = None
    """Measured matmul rate used (the datasheet peak where the profile lacks this dtype), TFLOP/s."""
    measured_tbps: float | None = None
    """Best measured bandwidth, TB/s."""
    measured_compute_ms: float | None = None
    measured_memory_ms: float | None = None
    measured_bound_ms: float | None = None
    """max of the two against the measured ceilings; None without a profile."""
    measured_limit: str | None = None
    launch_floor_us: float | None = None
    """Measured empty-launch latency, µs; None without a profile."""
    launch_bound: bool | None = None
    """True when the bound is below the launch floor (the call's time is launch latency, not work)."""

    @property
    def judged_ms(self) -> float:
        """The bound %-of-SOL is judged against: measured when present, else datasheet."""
        return self.measured_bound_ms if self.measured_bound_ms is not None else self.bound_ms

    @property
    def judged_against(self) -> str:
        return "measured" if self.measured_bound_ms is not None else "datasheet"

    def to_dict(self) -> dict:
        return asdict(self)


def _limit(compute_ms: float, memory_ms: float) -> str:
    return "compute" if compute_ms >= memory_ms else "memory"


def bound(sc: Scenario, spec: ArchSpec, profile: MeasuredProfile | None = None) -> Bound:
    """The roofline Bound of `sc` on `spec`; also against `profile`'s measured ceilings when given."""
    if profile is not None and profile.arch != spec.name:
        raise ConfigError(f"measured profile is for {profile.arch!r}, not {spec.name!r}")
    n_flops, n_bytes = flops(sc), min_bytes(sc)
    peak_tflops = spec.peak_tflops(sc.dtype)
    compute_ms = n_flops / (peak_tflops * 1e9)
    memory_ms = n_bytes / (spec.memory_tbps * 1e9)
    extra = {}
    if profile is not None:
        m_tflops = profile.peak_tflops(sc.dtype) or peak_tflops
        m_compute_ms = n_flops / (m_tflops * 1e9)
        m_memory_ms = n_bytes / (profile.memory_tbps * 1e9)
        m_bound_ms = max(m_compute_ms, m_memory_ms)
        extra = dict(
            measured_tflops=m_tflops,
            measured_tbps=profile.memory_tbps,
            measured_compute_ms=m_compute_ms,
            measured_memory_ms=m_memory_ms,
            measured_bound_ms=m_bound_ms,
            measured_limit=_limit(m_compute_ms, m_memory_ms),
            launch_floor_us=profile.launch_us,
            launch_bound=m_bound_ms * 1e3 < profile.launch_us,
        )
    return Bound(
        arch=spec.name,
        dtype=sc.dtype,
        flops=n_flops,
        bytes=n_bytes,
        intensity_flop_per_byte=n_flops / n_bytes,
        peak_tflops=peak_tflops,
        memory_tbps=spec.memory_tbps,
        compute_ms=compute_ms,
        memory_ms=memory_ms,
        bound_ms=max(compute_ms, memory_ms),
        limit=_limit(compute_ms, memory_ms),
        **extra,
    )


def bounds_for(arch: str):
    """Scenario -> Bound on `arch` (with its measured profile when calibrated; None for a dtype the arch
    has no tensor cores for), or None where no arch spec exists (cpu)."""
    if arch not in known_arches():
        return None
    spec, profile = load_arch(arch), find_profile(arch)

    def bound_or_none(sc: Scenario) -> Bound | None:
        return bound(sc, spec, profile) if spec.supports(sc.dtype) else None

    return bound_or_none


def profile_provenance(arch: str) -> dict | None:
    """Which measured profile a run's bounds came from (its GPU and date), or None without one."""
    profile = find_profile(arch) if arch in known_arches() else None
    return {"gpu": profile.gpu, "date": profile.date} if profile else None


def sol_fraction(time_ms: float, bound: Bound) -> float:
    """Fraction of the speed of light reached: judged bound / time (1.0 = at the roofline).

    Judged against the measured ceilings when the Bound has them, else the datasheet.
    """
    if not time_ms > 0:
        raise ValueError(f"time_ms must be positive, got {time_ms}")
    return bound.judged_ms / time_ms


def is_faster_than_light(time_ms: float, bound: Bound, tolerance: float = FTL_TOLERANCE,
                         against: str = "datasheet") -> bool:
    """True when `time_ms` beats the bound by more than `tolerance` (a fraction of the bound).

    against='datasheet' (default) is the SOL: the datasheet roofline, the physical limit. The measured
    ceilings (against='judged') are what this GPU was seen to attain, not a limit: FlashInfer already
    reaches 97.9 % of them on split-KV MHA decode on the H200, so an honest kernel 5 % faster would be
    rejected were they the test. A time more than `tolerance` below the datasheet bound is impossible.
    """
    if against not in ("datasheet", "judged"):
        raise ValueError(f"against must be 'datasheet' or 'judged', got {against!r}")
    limit_ms = bound.bound_ms if against == "datasheet" else bound.judged_ms
    return time_ms < limit_ms * (1.0 - tolerance)
