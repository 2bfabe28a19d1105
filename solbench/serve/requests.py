"""What a client may ask for: a job's `solbench run` options, check's clauses, the limits, the tokens. Each
request type maps to the command-line options of the same meaning; nothing here names a file of the server."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,120}\.(py|cu)$")
"""A candidate's file name: a plain name, .py or .cu (it becomes a file in the job's folder)."""
NVCC_FLAG = re.compile(r"^(-D[A-Za-z_]\w*(=[\w.+-]*)?|-U[A-Za-z_]\w*|-O[0-3]|-{1,2}use_fast_math|-lineinfo"
                       r"|-{1,2}maxrregcount=\d+|-Xptxas=-v|-std=c\+\+(17|20))$")
"""The nvcc flags a server takes from a client: macros, optimisation, registers, fast math. Not paths: an
output (-o), include or library path names the server's files, which the build, run unconfined, would write
or quote."""


class JobRequest(BaseModel):
    """The `solbench run` options a job may set (the server chooses the device, the run folder and --json)."""

    suite: str = Field("smoke", description="suite name (`GET /v1/suites`)")
    quick: bool = Field(False, description="few samples, no L2 flush: for smoke tests, not for numbers")
    policy: str | None = Field(None, description="TimingPolicy overrides, e.g. 'warmup_ms=30,launcher_budget_ms=50'")
    baselines: str | None = Field(None, description="comma-separated baselines ('none' for none; default: every available one)")
    seed: str | None = Field(None, description="'none' to time without the seed kernel; default: the shipped seed")
    filter: str | None = Field(None, description="only scenarios whose id contains this")
    max_scenarios: int | None = Field(None, ge=1, description="only the first N scenarios")
    timeout_s: float | None = Field(None, gt=0, description="per request to a worker (run's --timeout)")
    flags: list[str] = Field(default_factory=list, description="extra nvcc flags for a .cu candidate")
    allow_libs: list[str] = Field(default_factory=list, description="forbidden libraries to allow (cublas, cudnn, cutlass, cute)")
    runner: str | None = Field(None, description="auto, native or python (run's --runner)")

    def run_args(self) -> list[str]:
        """As `solbench run` options."""
        args = ["--suite", self.suite]
        for flag, value in (("--policy", self.policy), ("--baselines", self.baselines), ("--seed", self.seed),
                            ("--filter", self.filter), ("--max-scenarios", self.max_scenarios),
                            ("--timeout", self.timeout_s), ("--runner", self.runner)):
            if value is not None:
                args += [flag, str(value)]
        args += [f"--flag={f}" for f in self.flags] + [a for lib in self.allow_libs for a in ("--allow-lib", lib)]
        return args + (["--quick"] if self.quick else [])


class CheckCriteria(BaseModel):
    """The clauses `solbench check` adds to 'every scenario correct' (its options of the same names)."""

    epsilon: float | None = Field(None, ge=0, description="regression margin (default 0.02)")
    strict: bool = Field(False, description="also fail on ambiguous comparisons")
    min_ratio: float | None = Field(None, description="every scenario's median speedup vs its best comparator >= R")
    min_geomean: float | None = Field(None, description="geomean speedup vs `comparator` >= G")
    comparator: str | None = Field(None, description="for min_geomean: seed (default), a baseline, best, upstream, fastest")
    min_sol: float | None = Field(None, description="every scenario reaches >= this percent of the speed of light")

    def options(self) -> list[str]:
        args = []
        for flag, value in (("--epsilon", self.epsilon), ("--min-ratio", self.min_ratio),
                            ("--min-geomean", self.min_geomean), ("--comparator", self.comparator),
                            ("--min-sol", self.min_sol)):
            if value is not None:
                args.append(f"{flag}={value}")
        return args + (["--strict"] if self.strict else [])


@dataclass(frozen=True)
class Limits:
    """What one client may ask for."""

    upload_bytes: int = 1 << 20
    """Largest candidate file (a request body may be a third larger: base64)."""
    queue_per_client: int = 8
    """Jobs of one client queued or running at once."""
    job_time_s: float = 3600.0
    """Wall time of one job's process, after which it is stopped (what finished is kept)."""

