"""Result records: Status, ErrorStats, Measurement, Outcome, RunResult.

Spec (Scenario, TimingPolicy), observation (Measurement, ErrorStats) and verdict (Status) are separate
types; nothing downstream recomputes what upstream measured. All times are milliseconds (`_ms`).
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any

from solbench.core.errors import ScenarioError

SCHEMA = "solbench.run/1"
ERROR_BUDGET = "seed-emulated/2"
"""Id of the error budget this solbench judges under (the rule: solbench.supervisor.budget)."""
LEGACY_ERROR_BUDGET = "seed-x8+atol/1"
"""The budget of runs recorded before budgets had ids: mean |err| <= 8x (fp8: 50x) the timed seed's + atol / 10,
and none at all when the run timed no seed."""
RENAMED_SUITES = {
    ("hopper", "aee7ae7f79ee6fa7ac33714bda758ef703d1ff6504b65b2a8c8ea62a3250dc7b"): "hopper-d128",
    ("blackwell", "af8afc275d28abab1ea8dc8afeece38839f13f15f9b4f4db8c3714e20304bf3d"): "blackwell-d128",
}
"""(name, hash) a run recorded -> the suite's name now: the first hopper/blackwell grids (all head dim 128) were
renamed when new grids took their names, and a recorded run keeps matching its scenarios by hash."""


def current_suite_name(name: str, suite_hash: str) -> str:
    """The name a suite recorded as (name, suite_hash) has now (RENAMED_SUITES), else `name`."""
    return RENAMED_SUITES.get((name, suite_hash), name)


SUPERVISOR_OUT_OF_MEMORY = "the supervisor ran out of device memory for this scenario"
"""How an outcome's reason begins when the supervisor, not the implementation, failed the scenario (its inputs
or reference did not fit beside the workers): a machine error, retried by --retry-errors, never counted as
the implementation being wrong."""
AGENT_DIED = "agent died"
"""How a lost unit's reason begins (the supervisor-side process evaluating it died, on every GPU or Ray task
it was given): a machine error, evaluated again by --retry-errors."""
SUPERVISOR_FAILED = "the supervisor failed while evaluating it"
"""How an outcome's reason begins when evaluating the scenario raised in the supervisor: counted against the
candidate (what its worker sent may have caused it) and never evaluated again, whatever words follow."""
AFTER_CONTENTS = "after the candidate was given its contents: not evaluated again"
"""In such a reason: the candidate held the scenario's contents when the device ran out, so it may have filled
the device itself to get a new draw at a scenario it knew it failed; neither the run nor --retry-errors
evaluates it again (it stays a machine error: never passed, never counted as wrong)."""


class Status(str, enum.Enum):
    """What happened to one (scenario, implementation) pair."""

    PASSED = "passed"
    SKIPPED = "skipped"
    BUILD_ERROR = "build_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    MISMATCH = "mismatch"
    UNWRITTEN = "unwritten"
    NONFINITE = "nonfinite"
    FASTER_THAN_LIGHT = "faster_than_light"
    HIDDEN_WORK = "hidden_work"
    """Device time on the timed stream far below the synchronised wall time: work escaped the stream."""
    TAMPERED = "tampered"
    """The candidate changed the measurement itself: harness code, a persisting-L2 carve-out."""
    FORBIDDEN_LIBRARY = "forbidden_library"
    """A vendor library (cuBLAS, cuDNN, CUTLASS) was mapped or its kernels launched at run time."""
    OUT_OF_BOUNDS = "out_of_bounds"
    """A call wrote past the start or end of out or lse (the guard bytes around them changed)."""
    NONDETERMINISTIC = "nondeterministic"
    """Two checked calls on the same inputs gave different bits, and the candidate did not declare itself
    non-deterministic."""
    SANITIZER_ERROR = "sanitizer_error"
    """`solbench run --sanitize`: compute-sanitizer reported an error in the call (memcheck, racecheck,
    initcheck, synccheck), or the call did not complete under it."""

    @property
    def is_failure(self) -> bool:
        return self not in (Status.PASSED, Status.SKIPPED)


@dataclass(frozen=True)
class ErrorStats:
    """How far an output is from the fp32 reference."""

    max_abs: float
    """Largest |out - ref| over all output elements."""
    mean_abs: float
    """Mean |out - ref|."""
    frac_outside_tol: float
    """Fraction of elements with |out - ref| > atol + rtol * |ref|."""
    atol: float
    """Absolute tolerance used."""
    rtol: float
    """Relative tolerance used."""
    lse_max_abs: float | None = None
    """Largest |lse - ref_lse| over rows where the reference LSE is finite; None if no LSE."""
    unwritten: int = 0
    """Output elements still holding the poison pattern (not written by the kernel)."""
    nonfinite: int = 0
    """NaN or Inf output elements (and finite-vs-infinite LSE disagreements)."""
    seed_max_abs: float | None = None
    """The seed kernel's max_abs on the same inputs: its emulation (the reference rounded to the output dtype,
    solbench.supervisor.budget); before budget ids, the timed seed's, when the run timed one."""
    seed_mean_abs: float | None = None
    """The emulated seed's mean_abs on the same inputs: the yardstick of the budget's mean bound."""
    row_max_mean_abs: float | None = None
    """The worst row's mean |out - ref| (row: one query token x one query head)."""
    seed_row_max_mean_abs: float | None = None
    """The emulated seed's worst row: the yardstick of the budget's row bound."""
    budget: str | None = None
    """Id of the error budget this was judged under (solbench.supervisor.budget.BUDGET_ID)."""


@dataclass(frozen=True)
class Measurement:
    """Raw timing samples of one implementation on one scenario, and how they were taken."""

    impl: str
    """Implementation name: 'candidate', 'seed', or a baseline name."""
    samples_ms: tuple[float, ...]
    """Device (or CPU) time per call, one per timed round (the mean of its calls, as the clock check bounds
    it), in the order taken."""
    method: str
    """'cuda_events' or 'host_clock'."""
    host_samples_ms: tuple[float, ...] = ()
    """Host wall time of synchronised calls (cross-check and launcher-only A/B host path)."""
    device_graph_ms: float | None = None
    """Launcher-only A/B: device time of a CUDA-graph replay of the call, if captured."""
    flags: tuple[str, ...] = ()
    """Warnings attached to this measurement (e.g. 'throttled', 'noisy', 'host_gap')."""
    telemetry: dict[str, Any] = field(default_factory=dict)
    """Clocks, temperature, power and throttle reasons sampled while it ran."""

    def __post_init__(self):
        object.__setattr__(self, "samples_ms", tuple(float(x) for x in self.samples_ms))
        object.__setattr__(self, "host_samples_ms", tuple(float(x) for x in self.host_samples_ms))
        object.__setattr__(self, "flags", tuple(self.flags))
        if not self.samples_ms:
            raise ScenarioError(f"Measurement of {self.impl!r} has no samples")
        if min(self.samples_ms) <= 0:
            raise ScenarioError(f"Measurement of {self.impl!r} has a non-positive sample")

    @classmethod
    def from_dict(cls, d: dict) -> "Measurement":
        return cls(**d)


@dataclass(frozen=True)
class Outcome:
    """The verdict for one scenario: status, error against the reference, timings, ratios, bound."""

    scenario_id: str
    """Stable id of the scenario."""
    scenario: dict
    """The scenario's fields (Scenario.to_dict), so a result file is self-describing."""
    status: Status
    """Candidate's verdict on this scenario."""
    reason: str = ""
    """Why, in one line, when status is not passed."""
    error: ErrorStats | None = None
    """Candidate output vs the fp32 reference."""
    measurements: dict[str, Measurement] = field(default_factory=dict)
    """Timing per implementation ('candidate', 'seed', baselines)."""
    ratios: dict[str, tuple[float, ...]] = field(default_factory=dict)
    """Per comparator: per-round speedups t_comparator / t_candidate (> 1 means candidate faster)."""
    comparators: dict[str, dict] = field(default_factory=dict)
    """Per comparator: {'status': ..., 'reason': ..., 'error': ErrorStats dict} from its own check."""
    bound: dict | None = None
    """Roofline bound for this scenario on the run's arch (see solbench.core.roofline)."""
    input_copies: int | None = None
    """Rotated input copies each implementation was timed on: the policy's rotate_inputs, fewer where
    they would not all fit in device memory (solbench.supervisor.evaluate.input_copies); None when nothing was timed."""
    placement: dict | None = None
    """Where the unit ran: host, GPU UUID, name and ordinal, clocks (MHz), wall seconds, attempt
    (solbench.executor.placement.Placement); None in runs recorded before it was kept."""

    def __post_init__(self):
        object.__setattr__(self, "status", Status(self.status))
        if self.status is Status.PASSED and "candidate" not in self.measurements:
            raise ScenarioError(f"{self.scenario_id}: an outcome cannot be 'passed' without the candidate's measurement")
        if self.status is Status.PASSED and self.error is None:
            raise ScenarioError(f"{self.scenario_id}: an outcome cannot be 'passed' without its error check")
        if self.status.is_failure and not self.reason:
            raise ScenarioError(f"{self.scenario_id}: a {self.status.value} outcome needs a reason")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["status"] = self.status.value
        d["ratios"] = {k: list(v) for k, v in self.ratios.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Outcome":
        d = dict(d)
        d["error"] = ErrorStats(**d["error"]) if d.get("error") else None
        d["measurements"] = {k: Measurement.from_dict(m) for k, m in d.get("measurements", {}).items()}
        d["ratios"] = {k: tuple(v) for k, v in d.get("ratios", {}).items()}
        return cls(**d)


@dataclass(frozen=True)
class RunResult:
    """One run: what was evaluated, where, how it was timed, and an Outcome per scenario."""

    run_id: str
    """Folder name under reports/, e.g. '20261129-0712-seed_attention-smoke'."""
    suite: str
    """Suite name."""
    suite_hash: str
    """sha256 over the suite's scenario definitions: an edited suite never compares with the old."""
    candidate: dict
    """{'name', 'path', 'kind' ('cu' or 'python'), 'sha256', ...build info}."""
    arch: str
    """Arch the run targeted (h200, b200, cpu, ...)."""
    environment: dict
    """Manifest: GPU, driver, versions, clocks, solbench version (see solbench.gpu.environment)."""
    policy: dict
    """The TimingPolicy used for every implementation."""
    outcomes: tuple[Outcome, ...] = ()
    """One per finished scenario, in suite order."""
    complete: bool = False
    """False while running or after an interruption; `--resume` finishes it."""
    scenario_count: int = 0
    """Scenarios in the suite (outcomes may be fewer while incomplete)."""
    schema: str = SCHEMA
    """Version of this file format."""
    error_budget: str = ERROR_BUDGET
    """Id of the error budget the verdicts were judged under; runs are compared and ranked only with runs of
    the same budget (files without it: LEGACY_ERROR_BUDGET)."""
    sanitize: tuple[dict, ...] = ()
    """`--sanitize`: one entry per (scenario, tool) (solbench.supervisor.sanitize.Finding); () = not run."""

    def to_dict(self) -> dict:
        d = asdict(self)
        d["outcomes"] = [o.to_dict() for o in self.outcomes]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RunResult":
        if d.get("schema") != SCHEMA:
            raise ScenarioError(f"unsupported results schema {d.get('schema')!r}; this solbench reads {SCHEMA!r}")
        d = dict(d)
        d.setdefault("error_budget", LEGACY_ERROR_BUDGET)
        d["suite"] = current_suite_name(d["suite"], d["suite_hash"])
        d["outcomes"] = tuple(Outcome.from_dict(o) for o in d.get("outcomes", ()))
        d["sanitize"] = tuple(d.get("sanitize", ()))
        return cls(**d)

    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status.is_failure]
