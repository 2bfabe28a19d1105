"""The runner: resolves the candidate and its comparators, starts one worker each, evaluates every
scenario of the suite, and keeps `reports/<run-id>/results.json` valid after each scenario (written
atomically), so an interruption loses nothing finished and `--resume` skips what is done.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from solbench import __version__, abi
from solbench.core.errors import ConfigError
from solbench.core.paths import KERNELS_DIR
from solbench.sandbox.impls import ImplSpec, candidate_kind
from solbench.core.model import (AFTER_CONTENTS, AGENT_DIED, ERROR_BUDGET, SUPERVISOR_OUT_OF_MEMORY, Outcome,
                                  RunResult, Status)
from solbench.core.policy import TimingPolicy, as_recorded
from solbench.supervisor.run_files import load_run

DEFAULT_SEED = {"cuda": "seed_attention.cu", "cpu": "torch_attention.py"}
RUNNERS = ("auto", "native", "python")


@dataclass(frozen=True)
class RunConfig:
    """Everything one run needs; the CLI and the pytest plugin both build one of these."""

    candidate: str
    """Path to a .cu file or a Python module file."""
    suite: str = "smoke"
    """Suite name or path."""
    arch: str | None = None
    """Target arch; None = the GPU present (or 'cpu')."""
    device: str | None = None
    """'cuda' or 'cpu'; None = cuda when present."""
    baselines: tuple[str, ...] | None = None
    """Baselines to time against; None = every available one; () = none."""
    seed: str | None = "default"
    """Seed kernel path; 'default' = the shipped seed for the device; None = no seed comparator."""
    policy: TimingPolicy = field(default_factory=TimingPolicy)
    """Timing method, recorded in the result."""
    out_dir: Path | None = None
    """Run folder; None = reports/<run-id>/."""
    timeout_s: float = 120.0
    """Per request to a worker (one scenario's check, or one timing round)."""
    resume: Path | None = None
    """A previous run folder (or its results.json) to finish."""
    retry_errors: bool = False
    """With resume: evaluate again the scenarios `errored` picks (machine-caused errors, comparator failures)."""
    filter: str | None = None
    """Only scenarios whose id contains this."""
    max_scenarios: int | None = None
    """Only the first N (after the filter)."""
    build_flags: tuple[str, ...] = ()
    """Extra nvcc flags for a .cu candidate."""
    allow_libs: tuple[str, ...] = ()
    """Forbidden libraries to allow in the candidate's binary."""
    runner: str = "auto"
    """Which process times .cu implementations (candidate and seed): 'native' (solbench's runner, no Python
    in the timed process), 'python' (the Python host), 'auto' = native on a GPU."""
    seed_runner: str | None = None
    """The seed's runner when it differs from `runner` (the native-vs-Python A/A); None = `runner`."""
    gpus: str | None = None
    """'all' or GPU ordinals '0,1,3': one agent and worker set per GPU (solbench.executor.local); None = plain run."""
    executor: str = "local"
    """'local' (this machine) or 'ray' (a Ray cluster; solbench.executor.ray_executor)."""
    ray_address: str | None = None
    """With executor 'ray': an existing cluster's address; None starts a local one."""
    workers: int | None = None
    """With executor 'ray': units in flight at once (default: the cluster's GPUs)."""
    sanitize: int = 0
    """After timing, compute-sanitizer's four tools over this many of the smallest scenarios, those that passed,
    each on the inputs of one of its scored calls (solbench.supervisor.sanitize); 0 = off."""

    def __post_init__(self):
        for name in ("runner", "seed_runner"):
            value = getattr(self, name)
            if value is not None and value not in RUNNERS:
                raise ConfigError(f"--{name.replace('_', '-')} must be one of {', '.join(RUNNERS)}, got {value!r}")
        if not self.timeout_s > 0:  # (max_scenarios is checked where it is applied, Suite.select)
            raise ConfigError(f"--timeout must be above 0 seconds, got {self.timeout_s}")


def resolve_device(requested: str | None) -> str:
    if requested in ("cpu", "cuda"):
        if requested == "cuda":
            import torch

            if not torch.cuda.is_available():
                raise ConfigError("--device cuda: no CUDA GPU is visible (torch.cuda.is_available() is False)")
        return requested
    if requested is not None:
        raise ConfigError(f"--device must be 'cuda' or 'cpu', got {requested!r}")
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def gpu_arch() -> str | None:
    """The arch name of the GPU present (h100, h200, b200, rtx3080), or None."""
    try:
        import torch

        if not torch.cuda.is_available():
            return None
        name = torch.cuda.get_device_name()
        memory = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
    except Exception:
        return None
    from solbench.core.archdetect import detect_arch  # exact name and memory size, roofline/*.toml [match]

    arch = detect_arch(name, memory)
    if arch is not None:
        return arch
    return "sm_" + "".join(map(str, torch.cuda.get_device_capability()))


def implementation_specs(config: RunConfig, device: str, arch: str) -> dict[str, ImplSpec]:
    """candidate, seed, baselines: built and named, in the order they are reported."""
    specs = {"candidate": _source_spec("candidate", config.candidate, arch, config)}
    if config.seed:
        seed_path = str(KERNELS_DIR / DEFAULT_SEED[device]) if config.seed == "default" else config.seed
        if not Path(seed_path).exists():
            raise ConfigError(f"seed kernel {seed_path} not found; pass --seed PATH or --seed none")
        specs["seed"] = _source_spec("seed", seed_path, arch, config, candidate=False)
    if device == "cuda":
        from solbench.baselines import resolve_baselines

        for name in resolve_baselines(config.baselines):
            specs[name] = ImplSpec(name, "baseline", name, name)
    elif config.baselines:
        raise ConfigError("baselines need a GPU; on --device cpu pass no --baselines")
    return specs


BASELINE_PREFIX = "baseline:"
"""`solbench run baseline:fa3`: a baseline library as the candidate (A/A experiments, leaderboard entries)."""


def _source_spec(name: str, path: str, arch: str, config: RunConfig, candidate: bool = True) -> ImplSpec:
    if path.startswith(BASELINE_PREFIX):
        from solbench.baselines import resolve_baselines

        (library,) = resolve_baselines((path[len(BASELINE_PREFIX):],))
        return ImplSpec(name, "baseline", library, path)
    if not Path(path).exists():
        raise ConfigError(f"{path}: no such file")
    kind = candidate_kind(path)
    if kind == "cu":
        from solbench.build.binary_check import check_binary
        from solbench.build.exports import check_exports
        from solbench.build.nvcc import build

        so_path = build(path, arch, extra_flags=config.build_flags if candidate else ()).so_path if path.endswith(".cu") else path
        # Prebuilt .so files too: the entry point and the library policy are about the binary, however it was made.
        defined = check_exports(so_path, source=path)
        check_binary(so_path, allow=config.allow_libs if candidate else ())
        chosen = (config.runner if candidate else config.seed_runner or config.runner)
        runner = "native" if chosen in ("auto", "native") else "python"
        allow = tuple(config.allow_libs) if candidate else ()
        deterministic = abi.NONDETERMINISTIC_SYMBOL not in (defined or ())
        return ImplSpec(name, "cu", str(Path(so_path).resolve()), Path(path).name, runner=runner, allow=allow,
                        deterministic=deterministic)
    from solbench.supervisor.python_source import check_python_candidate, declares_nondeterministic

    tree = check_python_candidate(path)  # read, never imported here: only its worker runs candidate code
    return ImplSpec(name, kind, str(Path(path).resolve()), Path(path).name,
                    deterministic=not declares_nondeterministic(tree))


def new_run_id(candidate: str, suite: str) -> str:
    stem = candidate.replace(":", "-") if candidate.startswith(BASELINE_PREFIX) else Path(candidate).stem
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{stem}-{suite}"


def write_result(result: RunResult, folder: Path) -> str:
    """Atomically replace folder/results.json (a reader never sees a half-written file); returns the
    sha256 of what was written."""
    folder.mkdir(parents=True, exist_ok=True)
    data = json.dumps(result.to_dict(), indent=1, allow_nan=False).encode()  # strict JSON for every reader
    tmp = folder / ".results.json.tmp"
    tmp.write_bytes(data)
    os.replace(tmp, folder / "results.json")
    return hashlib.sha256(data).hexdigest()


class RecordKeeper:
    """Writes results.json from the supervisor's own RunResult, and notices when the file on disk is no
    longer what it last wrote (something else wrote it: the truth stays the in-memory result)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.digest = ""
        """sha256 of the results.json last written."""
        self.overwritten: list[str] = []
        """Moments at which the file on disk was found changed by someone else."""

    def write(self, result: RunResult, when: str) -> None:
        if self.digest and _file_sha256(self.folder / "results.json") != self.digest:
            self.overwritten.append(when)
        self.digest = write_result(result, self.folder)


def _file_sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def _raise_open_file_limit() -> None:
    """The soft limit on open files up to the hard one: on a GPU every shared tensor of a prepare travels as a
    file descriptor (solbench.gpu.ipc), and eleven workers with five copies of ~9 tensors each have ~500 in
    flight at once, near the common soft limit of 1024 (an export or a send past it failed the scenario)."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, ValueError, OSError):
        pass  # not raised: the run goes on with the limit it has


def run(config: RunConfig, on_outcome: Callable[[Outcome], None] | None = None,
        on_start: Callable[[str, int, int], None] | None = None) -> RunResult:
    """Evaluate the candidate on the suite; returns the RunResult also written to disk. When the call
    returns, every process the workers started has ended, so results.json is final (`record_digest`).

    The runner never prints: a front-end follows it through `on_start(scenario_id, index, total)` before
    each scenario of this invocation (index counts those finished so far) and `on_outcome(outcome)` after."""
    import secrets

    _raise_open_file_limit()
    from solbench.executor import UnitContext, make_executor, unit_order
    from solbench.gpu.environment import collect
    from solbench.core.roofline import profile_provenance
    from solbench.core.suites import load_suite

    device = resolve_device(config.device)
    arch = config.arch or (gpu_arch() if device == "cuda" else "cpu")
    suite = load_suite(config.suite)
    scenarios = suite.select(config.filter, config.max_scenarios).scenarios
    if not scenarios:
        raise ConfigError(f"no scenario of suite {suite.name!r} matches --filter {config.filter!r}")
    policy = replace(config.policy, method="cuda_events" if device == "cuda" else "host_clock")
    specs = implementation_specs(config, device, arch)
    sanitizer, planned = None, []
    if config.sanitize:
        from solbench.supervisor.sanitize import check_can_sanitize, find_sanitizer, smallest

        check_can_sanitize(specs["candidate"].kind, device, config.sanitize)
        sanitizer = find_sanitizer()  # said now, not after the timing
        planned = smallest(scenarios, config.sanitize)  # chosen now: a scored call of each is kept (witness)

    previous = load_run(config.resume) if config.resume else None
    folder = Path(config.resume or config.out_dir or Path("reports") / new_run_id(config.candidate, suite.name))
    if folder.suffix == ".json":
        folder = folder.parent
    if config.retry_errors and not previous:
        raise ConfigError("--retry-errors goes with --resume RUN (it evaluates that run's errored scenarios again)")
    kept = {o.scenario_id: o for o in previous.outcomes} if previous else {}
    candidate_info = {"name": Path(config.candidate).name, "path": str(config.candidate),
                      "kind": specs["candidate"].kind, "sha256": _sha256(config.candidate),
                      "build_flags": list(config.build_flags),
                      "implementations": {n: s.label for n, s in specs.items()}}
    environment = collect(device, {"solbench_version": __version__})
    environment["roofline_profile"] = profile_provenance(arch)
    if previous:
        _same_run_or_refuse(previous, config, suite.hash, candidate_info, arch, policy, environment)
    result = RunResult(
        run_id=folder.name, suite=suite.name, suite_hash=suite.hash, candidate=candidate_info, arch=arch,
        environment=environment, policy=policy.to_dict(),
        outcomes=tuple(kept[s.id] for s in scenarios if s.id in kept), scenario_count=len(scenarios),
    )
    record = RecordKeeper(folder)
    secret = secrets.token_bytes(16)  # the inputs' contents: known to this process alone, never written down
    folder.mkdir(parents=True, exist_ok=True)
    ctx = UnitContext(specs, device, policy, config.timeout_s, arch, folder.name, str(folder),
                      witnessed=tuple(s.id for s in planned))
    # Each unit's agent holds its workers, on its GPU (solbench.executor); the record stays here.
    executor = make_executor(ctx, secret, config.executor, config.gpus, config.ray_address, config.workers)
    # Scenarios never run first, then those retried: a retry replaces its outcome only once it is done,
    # so an interrupted retry loses nothing.
    todo = [s for s in scenarios if s.id not in kept]
    if config.retry_errors:
        todo += [s for s in scenarios if s.id in kept and errored(kept[s.id])]
    parallel = config.gpus is not None or config.executor != "local"
    try:
        if todo:
            executor.start()
        record.write(result, "start")
        for outcome in executor.outcomes(unit_order(todo, ctx, parallel), on_start):
            kept[outcome.scenario_id] = outcome
            result = replace(result, outcomes=tuple(kept[s.id] for s in scenarios if s.id in kept))
            record.write(result, outcome.scenario_id)
            if on_outcome:
                on_outcome(outcome)
        result = replace(result, complete=not executor.unfinished)
    finally:
        executor.close()  # every agent stopped its workers and swept what they left: nothing can touch the record
    if parallel:
        result = replace(result, environment={**result.environment, "executor": {
            "kind": config.executor, "gpus": config.gpus, "ray_address": config.ray_address,
            "workers": config.workers, "events": list(executor.events), "unfinished": list(executor.unfinished)}})
    if sanitizer and result.complete:
        result = _sanitized(result, specs["candidate"], planned, ctx, secret, sanitizer)
    if record.overwritten:  # someone else wrote the file mid-run; what is written now is the supervisor's
        result = replace(result, environment={**result.environment, "record_overwritten_at": record.overwritten})
    record.write(result, "end")
    return result


def _sanitized(result: RunResult, spec, planned, ctx, secret: bytes, sanitizer: str) -> RunResult:
    """The result with --sanitize's findings over the planned scenarios that passed, and sanitizer_error for
    each with one."""
    from solbench.supervisor.processes import Reaper
    from solbench.supervisor.sanitize import sanitize, verdicts

    passed = {o.scenario_id for o in result.outcomes if o.status is Status.PASSED}
    picked = [s for s in planned if s.id in passed]
    reaper = Reaper()  # the sanitized runners are not confined: what they leave behind is ended before the record
    findings = sanitize(spec, picked, ctx.arch, Path(ctx.log_dir), ctx.device, ctx.policy, secret, sanitizer=sanitizer)
    reaper.sweep()
    failed = verdicts(findings)
    outcomes = tuple(replace(o, status=Status.SANITIZER_ERROR, reason=failed[o.scenario_id])
                     if o.scenario_id in failed else o for o in result.outcomes)
    return replace(result, outcomes=outcomes, sanitize=tuple(f.to_dict() for f in findings))


def record_digest(folder: Path) -> str:
    """sha256 of a run's results.json, as `solbench run` prints it at the end."""
    return _file_sha256(Path(folder) / "results.json")


def errored(outcome: Outcome) -> bool:
    """Worth evaluating again (`--retry-errors`): the supervisor's side failed (it ran out of device memory
    before the candidate was given the scenario's contents, or the agent evaluating it died), or a comparator
    failed in any way (an adapter is solbench's code, fixed or narrowed since the run was recorded: the retry
    records its new answer or the failure again). A failure of the candidate itself -- a timeout, a crash, an
    out-of-memory error -- is final: it had the contents when it failed, and can fail on purpose (raise with
    any words, hang, kill itself) to have a scenario drawn again until the draw suits it."""
    reason = outcome.reason
    if AFTER_CONTENTS in reason:
        return False
    if reason.startswith((SUPERVISOR_OUT_OF_MEMORY, AGENT_DIED)):  # only the supervisor's code writes these first
        return True
    return any(Status(c.get("status", Status.SKIPPED.value)).is_failure for c in outcome.comparators.values())


def _same_run_or_refuse(previous: RunResult, config: RunConfig, suite_hash: str, candidate: dict, arch: str,
                        policy: TimingPolicy, environment: dict) -> None:
    """--resume finishes the same run: same suite version, candidate source, arch, policy, GPU and set of
    implementations (a baseline missing on the resuming machine would change the denominators halfway)."""
    gpu = (environment.get("gpu") or {}).get("name")
    checks = {
        "suite version": (previous.suite_hash, suite_hash),
        "error budget": (previous.error_budget, ERROR_BUDGET),
        "candidate source (sha256)": (previous.candidate.get("sha256"), candidate["sha256"]),
        "arch": (previous.arch, arch),
        "timing policy": (as_recorded(previous.policy), policy.to_dict()),
        "GPU": ((previous.environment.get("gpu") or {}).get("name"), gpu),
        "set of implementations (install the same baselines, or pass the same --baselines)":
            (sorted(previous.candidate.get("implementations", candidate["implementations"])),
             sorted(candidate["implementations"])),
    }
    for what, (before, now) in checks.items():
        if before != now:
            raise ConfigError(f"--resume {config.resume}: the {what} differs from the interrupted run's; "
                              "start a new run instead")


def _sha256(path: str) -> str:
    """Of the candidate's source; for a baseline, of its name and installed version."""
    import hashlib

    if path.startswith(BASELINE_PREFIX):
        from solbench.baselines import get_adapter_class

        library = path[len(BASELINE_PREFIX):]
        return hashlib.sha256(f"{library} {get_adapter_class(library).version()}".encode()).hexdigest()
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
