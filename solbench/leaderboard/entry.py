"""One leaderboard entry: an implementation measured inside a RunResult, with its provenance.

An entry is usually a run's candidate, but the seed and each baseline library timed inside a run are
entries too (`impl='seed'`, `impl='fa3'`): their verdict comes from `Outcome.comparators[impl]` and
their samples from `Outcome.measurements[impl]`, so they are judged and timed exactly like a candidate.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from solbench.core.errors import ConfigError
from solbench.core.model import Outcome, RunResult, Status

CANDIDATE = "candidate"
VERSION_KEYS = ("versions", "libraries", "packages", "baselines")
"""Manifest keys whose {package: version} dicts are kept as the entry's library versions."""


@dataclass(frozen=True)
class Observed:
    """What one implementation did on one scenario, read from an Outcome."""

    status: Status
    """Its verdict (the candidate's own, or the comparator's check)."""
    reason: str
    """Why, when not passed."""
    samples_ms: tuple[float, ...]
    """Its raw timing samples; empty when it was not timed."""


@dataclass(frozen=True)
class Entry:
    """A ranked thing: one implementation of one stored run, and where it came from."""

    name: str
    """Display name, unique per (suite, GPU model) in a store."""
    author: str
    """Who submitted it ('' when not given)."""
    impl: str
    """'candidate', 'seed', or a baseline name measured inside the run."""
    source_sha256: str
    """sha256 of the candidate's source ('' for the seed and baselines, whose source the run does not hash)."""
    build_flags: tuple[str, ...]
    """Extra nvcc flags the candidate was built with."""
    solbench_version: str
    """Version of solbench that made the run ('unknown' when the manifest lacks it)."""
    suite: str
    """Suite name."""
    suite_hash: str
    """sha256 over the suite's scenario definitions, as recorded by the run."""
    gpu_model: str
    """GPU name from the run's manifest, e.g. 'NVIDIA H200'; 'cpu' for a CPU run."""
    arch: str
    """Arch the run targeted (h200, b200, ...)."""
    library_versions: dict = field(default_factory=dict)
    """{package: version} of the baseline libraries (and torch, CUDA, ...) from the manifest."""
    run_id: str = ""
    """The run's id (its folder name)."""
    added_utc: str = ""
    """When it was added to the store, ISO 8601 UTC."""
    result: RunResult | None = None
    """The whole run, raw samples included."""

    @property
    def solbench_major(self) -> str:
        return major_version(self.solbench_version)

    @classmethod
    def from_result(cls, result: RunResult, impl: str = CANDIDATE, name: str | None = None,
                    author: str = "", added_utc: str | None = None) -> "Entry":
        """The entry for `impl` in `result`; ConfigError when the run never measured `impl`."""
        measured = {n for o in result.outcomes for n in (*o.measurements, *o.comparators)}
        if impl != CANDIDATE and impl not in measured:
            known = ", ".join(sorted(measured | {CANDIDATE}))
            raise ConfigError(f"--impl {impl}: run {result.run_id!r} never measured it; it has: {known}")
        cand = result.candidate
        default_name = Path(str(cand.get("name") or result.run_id)).stem if impl == CANDIDATE else impl
        return cls(
            name=name or default_name, author=author, impl=impl,
            source_sha256=str(cand.get("sha256", "")) if impl == CANDIDATE else "",
            build_flags=tuple(cand.get("build_flags", ())) if impl == CANDIDATE else (),
            solbench_version=solbench_version(result.environment), suite=result.suite,
            suite_hash=result.suite_hash, gpu_model=gpu_model(result.environment, result.arch), arch=result.arch,
            library_versions=library_versions(result.environment), run_id=result.run_id,
            added_utc=added_utc or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), result=result,
        )


def observe(outcome: Outcome, impl: str) -> Observed:
    """The verdict and samples of `impl` on this scenario.

    A comparator's measurement counts only with its own passed check: a baseline that was timed but
    never checked against the reference is reported as skipped, never as correct.
    """
    m = outcome.measurements.get(impl)
    if impl == CANDIDATE:
        status, reason = outcome.status, outcome.reason
    elif impl in outcome.comparators:
        c = outcome.comparators[impl]
        status, reason = Status(c.get("status", "skipped")), str(c.get("reason", ""))
    else:
        status, reason = Status.SKIPPED, "not run on this scenario" if m is None else "timed but never checked"
    if status is Status.PASSED and m is None:
        status, reason = Status.SKIPPED, "passed but not timed"
    return Observed(status, reason, m.samples_ms if m and status is Status.PASSED else ())


def gpu_model(environment: dict, arch: str = "") -> str:
    """GPU name from a run manifest: environment['gpu']['name'], else 'gpu_name', else 'cpu'/'unknown'."""
    gpu = environment.get("gpu")
    if isinstance(gpu, dict) and gpu.get("name"):
        return str(gpu["name"])
    if isinstance(gpu, str) and gpu:
        return gpu
    if environment.get("gpu_name"):
        return str(environment["gpu_name"])
    gpus = environment.get("gpus")
    if isinstance(gpus, list) and gpus and isinstance(gpus[0], dict) and gpus[0].get("name"):
        return str(gpus[0]["name"])
    return "cpu" if arch == "cpu" or environment.get("device") == "cpu" else "unknown"


def solbench_version(environment: dict) -> str:
    v = environment.get("solbench_version") or (environment.get("versions") or {}).get("solbench")
    return str(v) if v else "unknown"


def major_version(version: str) -> str:
    """'0.1.0' -> '0'; 'unknown' stays 'unknown' (and never matches a real major)."""
    head = version.split(".", 1)[0]
    return head if head.isdigit() else "unknown"


def library_versions(environment: dict) -> dict:
    out: dict[str, str] = {}
    for key in VERSION_KEYS:
        value = environment.get(key)
        if isinstance(value, dict):
            out.update({str(k): str(v) for k, v in value.items() if isinstance(v, (str, int, float)) and k != "solbench"})
    return out
