"""TimingPolicy: the one recorded measurement method, applied identically to every implementation."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from solbench.core.errors import ConfigError


@dataclass(frozen=True)
class TimingPolicy:
    """How every implementation is timed; stored in each RunResult."""

    warmup_ms: float = 30.0
    """Warm-up by time (clocks ramp from idle; JIT and caches settle) before any sample. 30 (was 100 until
    2026-12-04): the GPU is already warm from the previous scenario's rounds; the A/A over `hopper` at 30 kept
    p95 0.33 % (reports/h200/launch-count)."""
    round_samples: int = 3
    """Timed iterations per implementation per interleaved round."""
    round_budget_ms: float = 0.0
    """Device time one implementation's round aims at: after its first round, an implementation whose calls
    take longer than round_budget_ms / round_samples gets fewer calls a round, down to one (round_calls). On
    the H200 the seed's >= 15 ms calls on 78 of 150 `hopper` scenarios took 214 s of the 270 s of rounds at three
    calls a round (reports/h200/launch-count), where one call varies far less than the CI asks.
    0 (always round_samples) stays the default until the A/A over `hopper` with 30 is measured on the H200
    (benchmarks/h200_scaleout.sh hopper); ratios rest on min_rounds rounds either way."""
    min_rounds: int = 6
    """Rounds always taken, whatever the noise. Ratios are formed per round, so this is how many ratios
    the candidate's per-scenario CI rests on: six is the fewest whose (min, max) covers the median with
    95 % (stats.min_samples_for_ci); with four, an A/A on the H200 had 32 of 176 CIs miss 1."""
    max_rounds: int = 40
    """Rounds at most."""
    target_rel_ci: float = 0.005
    """Stop once every implementation's median CI half-width / median is below this, or every per-round
    ratio against the candidate has a CI that tight."""
    max_time_s: float = 6.0
    """Time cap per scenario for the sampling loop (all implementations together)."""
    cold_l2: bool = True
    """Evict L2 with a buffer of >= 2x L2 before every timed iteration (GPU only)."""
    l2_flush: str = "read"
    """How the cold-L2 buffer evicts: 'read' (sum it: the lines left behind are clean), 'write' (overwrite
    it; its dirty lines are written back inside the timed kernel) or 'both' (write, then read). Measured on
    the H200 (benchmarks/flush_compare.py, vllm-fa3 A/A on the 25 hopper-d128 scenarios under 2x L2 it runs;
    reports/h200/ipc-l2-flush-scaleout/flush): read A/A p95 1.1 %, write 26 % and +6.8 % on the
    geomean time, both 6.4 %. Runs recorded before 2026-12-03 used 'write' (their policy says so)."""
    rotate_inputs: int = 4
    """Distinct input copies cycled through so consecutive iterations see different pointers (at most:
    fewer where every implementation's copies would not fit in device memory, recorded per outcome)."""
    host_check_tolerance: float = 0.5
    """Flag a sample whose event time is below (1 - this) x the host wall time of the synced call
    minus the measured host floor: work hidden on another stream."""
    launcher_budget_ms: float = 60.0
    """Rough device-time budget of the launcher-only A/B per implementation and scenario: repetitions
    shrink for calls longer than ~1 ms (whose launcher overhead is negligible next to them), down to
    one per part; shorter calls, where the launcher matters, get the full count (100 until 2026-12-04)."""
    launch_cover_ms: float = 0.25
    """At most this long the timing stream is held by a spin kernel (sized from the measured launch time)
    while the host issues the call, so launcher host time does not leak into event time; 0 disables."""
    launcher_ab: bool = True
    """Also measure the launcher-only A/B (CUDA-graph device time vs eager host path)."""
    retake_throttled: bool = True
    """Retake a round during which the GPU reported a throttle reason other than idle."""
    method: str = "auto"
    """'cuda_events' on a GPU, 'host_clock' on CPU; 'auto' picks by device."""

    def __post_init__(self):
        for name, (low, high) in _RANGES.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"TimingPolicy.{name} must be a number, got {value!r}")
            if not (value >= low[0] if low[1] else value > low[0]) or (high is not None and not value < high):
                raise ConfigError(f"TimingPolicy.{name} must be {_describe(low, high)}, got {value}")
        if self.max_rounds < self.min_rounds:
            raise ConfigError(f"TimingPolicy.max_rounds ({self.max_rounds}) must be >= min_rounds ({self.min_rounds})")
        if self.method not in ("auto", "cuda_events", "host_clock"):
            raise ConfigError(f"TimingPolicy.method must be auto, cuda_events or host_clock, got {self.method!r}")
        if self.l2_flush not in L2_FLUSH_METHODS:
            raise ConfigError(f"TimingPolicy.l2_flush must be one of {', '.join(L2_FLUSH_METHODS)}, "
                              f"got {self.l2_flush!r}")

    def to_dict(self) -> dict:
        return asdict(self)


BEFORE_FIELDS = {"round_budget_ms": 0.0}
"""Fields added after runs were recorded, with the value that describes what those runs did (every round
took round_samples calls before 2026-12-04k): `as_recorded` fills them in, so such a run resumes under the
same policy and is refused under another."""


def as_recorded(policy: dict) -> dict:
    """A recorded policy with the fields it predates filled in as BEFORE_FIELDS says they were in effect."""
    return {**BEFORE_FIELDS, **policy}


L2_FLUSH_METHODS = ("write", "read", "both")
"""The L2 flush methods CudaOps implements (see TimingPolicy.l2_flush)."""

_RANGES = {
    "warmup_ms": ((0, True), None), "round_samples": ((1, True), None), "min_rounds": ((1, True), None),
    "max_rounds": ((1, True), None), "target_rel_ci": ((0, False), 1), "max_time_s": ((0, False), None),
    "rotate_inputs": ((1, True), None), "host_check_tolerance": ((0, True), 1),
    "launcher_budget_ms": ((0, True), None), "launch_cover_ms": ((0, True), None),
    "round_budget_ms": ((0, True), None),
}
"""Per numeric field: ((lowest, whether the lowest itself is allowed), exclusive upper limit or None)."""


def _describe(low, high) -> str:
    bound = f"{'>=' if low[1] else '>'} {low[0]}"
    return bound if high is None else f"{bound} and < {high}"


QUICK = TimingPolicy(warmup_ms=5.0, round_samples=3, min_rounds=2, max_rounds=4, target_rel_ci=0.05,
                     max_time_s=1.0, cold_l2=False, rotate_inputs=1, launcher_ab=False)
"""For CPU smoke runs and tests: a few samples, enough to exercise every code path."""


_PARSERS = {"int": int, "float": float, "str": str,
            "bool": lambda raw: {"true": True, "1": True, "false": False, "0": False}[raw.lower()]}


def round_calls(policy: TimingPolicy, call_ms: float) -> int:
    """Calls a round makes of an implementation whose calls take `call_ms`: round_samples, fewer (down to
    one) where that many would take longer than round_budget_ms."""
    if policy.round_budget_ms <= 0 or not call_ms > 0:
        return policy.round_samples
    return max(1, min(policy.round_samples, int(policy.round_budget_ms // call_ms)))


def with_overrides(base: TimingPolicy, spec: str | None) -> TimingPolicy:
    """`base` with the fields named in `spec` ("warmup_ms=30,launcher_ab=false") replaced.

    The result is what gets recorded in the RunResult, so a lighter policy is always visible there."""
    if not spec:
        return base
    types = {f.name: f.type for f in fields(TimingPolicy)}
    changes = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or key not in types:
            raise ConfigError(f"--policy {item!r}: expected KEY=VALUE with KEY one of {', '.join(types)}")
        kind = types[key]  # a string: this module has `from __future__ import annotations`
        try:
            changes[key] = _PARSERS[kind](raw.strip())
        except (ValueError, KeyError):
            raise ConfigError(f"--policy {key}={raw!r}: not a valid {kind}") from None
    try:
        return replace(base, **changes)
    except ConfigError as exc:  # say which option the out-of-range value came from
        raise ConfigError(f"--policy {spec!r}: {exc}") from None


MEASURING_FIELDS = ("cold_l2", "l2_flush", "rotate_inputs", "method")
"""TimingPolicy fields that change what a sample measures (warm vs cold L2, how it was made cold: a write
flush added 6.8 % to the geomean time of small-working-set scenarios on the H200, reused vs fresh pointers,
events vs host clock); the others only change how many samples are taken."""


def measuring_differences(a: dict, b: dict) -> list[str]:
    """'field a_value vs b_value' for each MEASURING_FIELDS entry both recorded policies hold and differ in."""
    return [f"{k} {a[k]!r} vs {b[k]!r}" for k in MEASURING_FIELDS if k in a and k in b and a[k] != b[k]]
