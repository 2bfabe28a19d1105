"""What a client may do, each checked and limited; the REST API and the MCP tools are thin layers over this.

A refusal is a ServeError: an HTTP status in the 4xx range and one line saying what and how to fix it
(the API sends it as a `solbench.error/1` object). A client sees only its own jobs: another client's job id
is answered exactly as an unknown one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from solbench.serve.queue import FINAL, JobQueue
from solbench.serve.requests import NAME, NVCC_FLAG, CheckCriteria, JobRequest, Limits


class ServeError(Exception):
    """A refused request: `status` (4xx), one line, and the exit code `solbench run` gives the same fault."""

    def __init__(self, status: int, message: str, exit_code: int = 2):
        super().__init__(message)
        self.status = status
        self.exit_code = exit_code


@dataclass
class Service:
    """The queue, the scheduler and the state folder of one server."""

    state_dir: Path
    device: str
    """'cpu' or 'cuda'."""
    devices: list[str]
    """Leased units: ['cpu'] or GPU ordinals."""
    limits: Limits = field(default_factory=Limits)
    max_running: int = 2
    arch: str = "cpu"
    """The arch jobs run on ('cpu', or the GPU's)."""
    hidden_too: tuple = ()
    """Files or folders besides the state folder and build cache that no candidate may read (the tokens file)."""

    def __post_init__(self):
        from solbench.serve.scheduler import Scheduler

        self.state_dir = Path(self.state_dir).resolve()
        (self.state_dir / "jobs").mkdir(parents=True, exist_ok=True)
        self.hidden_env = hidden_env([self.state_dir, *self.hidden_too])
        self.queue = JobQueue(self.state_dir / "queue.sqlite3")
        self.scheduler = Scheduler(self.queue, self.devices, self.max_running, self.limits.job_time_s,
                                   self._run_args, self._device_args)

    def start(self) -> None:
        self.scheduler.start()

    def stop(self) -> None:
        self.scheduler.stop()

    def _run_args(self, job) -> list[str]:
        folder = Path(job.folder)
        run = folder / "run"
        where = ["--resume", str(run)] if run.is_dir() else ["--out", str(run)]
        return [str(folder / "candidate" / job.candidate), *JobRequest(**job.request).run_args(), *where]

    def _device_args(self, device: str) -> tuple[list[str], dict]:
        if device == "cpu":
            return ["--device", "cpu"], dict(self.hidden_env)
        return ["--device", "cuda"], {"CUDA_VISIBLE_DEVICES": device, **self.hidden_env}

    # -- jobs ---------------------------------------------------------------------------------------------

    def submit(self, client: str, name: str, data: bytes, request: JobRequest) -> dict:
        if not NAME.match(name or ""):
            raise ServeError(422, f"candidate name {name!r}: give a plain file name ending in .py or .cu")
        if len(data) > self.limits.upload_bytes:
            raise ServeError(413, f"candidate {name} is {len(data)} bytes; this server takes at most "
                                  f"{self.limits.upload_bytes}")
        if self.queue.pending(client) >= self.limits.queue_per_client:
            raise ServeError(429, f"client {client} has {self.limits.queue_per_client} jobs queued or running, "
                                  "the most this server takes; wait for one to end or cancel one")
        self._check_options(request)
        staging = self.state_dir / "staging" / f"{time.time_ns()}"
        (staging / "candidate").mkdir(parents=True)
        path = staging / "candidate" / name
        path.write_bytes(data)
        try:
            self._check_candidate(path, request)
        except ServeError:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        job = self.queue.add(client, name, request.model_dump(), lambda i: self.state_dir / "jobs" / i,
                             place=staging.rename)
        return self.status(client, job.id)

    def _check_options(self, request: JobRequest) -> None:
        """The options as `solbench run` would take them, and the suite among this server's."""
        from solbench.core.errors import SolbenchError
        from solbench.core.options import policy_value
        from solbench.front.selection import selected

        _known_suite(request.suite)
        if request.runner not in (None, "auto", "native", "python"):
            raise ServeError(422, f"runner must be auto, native or python, got {request.runner!r}")
        try:
            selected(request.suite, request.filter, request.max_scenarios)
            policy_value(request.quick, request.policy)
        except SolbenchError as exc:
            raise ServeError(422, str(exc)) from None
        if request.baselines not in (None, "none") and self.device == "cpu":
            raise ServeError(422, "baselines need a GPU; this server evaluates on cpu (pass no baselines)")
        bad = [f for f in request.flags if not NVCC_FLAG.match(f)]
        if bad:
            raise ServeError(422, f"nvcc flag {bad[0]!r} is not taken by a server; it takes -D, -U, -O0..3, "
                                  "--use_fast_math, -lineinfo, --maxrregcount=N, -Xptxas=-v, -std=c++17/20")
        if request.seed not in (None, "none"):
            raise ServeError(422, "seed: only the shipped seed (default) or 'none' on a server")

    def _check_candidate(self, path: Path, request: JobRequest) -> None:
        """Refuse now what `solbench run` would refuse before its first scenario: a .py without `forward`,
        a .cu that does not build here (the build is cached for the run), a .cu on a CPU server."""
        if path.suffix == ".py":
            from solbench.core.errors import SolbenchError
            from solbench.supervisor.python_source import check_python_candidate

            try:
                with _PARSING:  # CPython 3.11's ast.parse fails in two threads at once (a SystemError)
                    check_python_candidate(path)
            except SolbenchError as exc:
                raise ServeError(422, str(exc).replace(str(path.parent) + "/", ""), exc.exit_code) from None
            return
        arch = self.arch if self.arch != "cpu" else "h100"
        code, doc = cli_json(["build", str(path), "--arch", arch, *[f"--flag={f}" for f in request.flags],
                              *[a for lib in request.allow_libs for a in ("--allow-lib", lib)]], cwd=path.parent,
                             env=self.hidden_env)
        if code != 0:
            line = (doc.get("error") or "the build failed").splitlines()[0]
            raise ServeError(422, line.replace(str(path.parent) + "/", ""), code)
        if self.device == "cpu":
            raise ServeError(422, f"{path.name} builds, but a .cu candidate needs a GPU and this server evaluates on cpu")

    def job(self, client: str, job_id: str):
        job = self.queue.get(job_id)
        if job is None or job.client != client:  # another client's job is no different from none
            raise ServeError(404, f"no job {job_id!r} of client {client}")
        return job

    def status(self, client: str, job_id: str) -> dict:
        job = self.job(client, job_id)
        from solbench import schemas

        doc = {"schema": schemas.JOB, "ok": True, **job.to_dict()}
        doc.pop("folder")
        doc["running"] = self.scheduler.running_scenario(job.id) if job.state == "running" else ""
        doc["eta_s"] = _eta_s(job)
        if job.state == "done":
            summary = self.summary(client, job_id)
            doc["passed"] = summary.get("passed")
            doc["status_counts"] = summary.get("status_counts")
        return doc

    def jobs(self, client: str) -> list[dict]:
        return [self.status(client, j.id) for j in self.queue.jobs(client)]

    def cancel(self, client: str, job_id: str) -> dict:
        job = self.job(client, job_id)
        if job.state in FINAL:
            raise ServeError(409, f"job {job_id} has ended ({job.state}); nothing to cancel")
        self.queue.ask_cancel(job_id)
        return self.status(client, job_id)

    def _ended(self, client: str, job_id: str):
        job = self.job(client, job_id)
        if job.state not in FINAL:
            raise ServeError(409, f"job {job_id} is {job.state} ({job.done}/{job.total or '?'}); "
                                  "its results come once it has ended")
        return job

    def summary(self, client: str, job_id: str) -> dict:
        """The `solbench run --json` object the job's run printed (a summary, or the error object)."""
        job = self._ended(client, job_id)
        try:
            return json.loads((Path(job.folder) / "summary.json").read_text())
        except (OSError, ValueError):
            raise ServeError(409, f"job {job_id} {job.state} with no summary: {job.error}") from None

    def run_file(self, client: str, job_id: str, name: str) -> Path:
        """results.json or summary.html of an ended job's run folder."""
        job = self._ended(client, job_id)
        path = Path(job.folder) / "run" / name
        if not path.is_file():
            raise ServeError(404, f"job {job_id} has no {name} ({job.state}: {job.error or 'no scenario ran'})")
        return path

    # -- the CLI's other answers --------------------------------------------------------------------------

    def _run_source(self, client: str, job_id: str | None, baseline: str | None) -> str:
        """A results.json to compare: a job's, or a recorded baseline run ('h200/hopper')."""
        if job_id:
            return str(self.run_file(client, job_id, "results.json"))
        from solbench.core.paths import BASELINES_DIR

        recorded = sorted(str(p.relative_to(BASELINES_DIR).with_suffix("")) for p in BASELINES_DIR.glob("*/*.json"))
        if baseline not in recorded:
            raise ServeError(422, f"unknown recorded run {baseline!r}; recorded: {', '.join(recorded)}")
        return str(BASELINES_DIR / f"{baseline}.json")

    def check(self, client: str, job_id: str, against_job: str | None = None, against_baseline: str | None = None,
              criteria: CheckCriteria | None = None) -> dict:
        """`solbench check` on the job's results (against another job or a recorded run): its JSON object."""
        argv = ["check", self._run_source(client, job_id, None)]
        if against_job or against_baseline:
            argv += ["--against", self._run_source(client, against_job, against_baseline)]
        return self._cli(argv + (criteria or CheckCriteria()).options())

    def triage(self, client: str, jobs: list[str] = (), baselines: list[str] = (), scenario: str | None = None) -> dict:
        runs = [self._run_source(client, j, None) for j in jobs] + [self._run_source(client, None, b) for b in baselines]
        if not runs:
            raise ServeError(422, "triage needs at least one job or recorded run")
        return self._cli(["triage", *runs, *(["--scenario", scenario] if scenario else [])])

    def roofline(self, arch: str, suite: str = "smoke") -> dict:
        return self._cli(["roofline", "--arch", arch, "--suite", _known_suite(suite)])

    def baselines(self, suite: str = "smoke", arch: str | None = None) -> dict:
        return self._cli(["baselines", "--suite", _known_suite(suite), *(["--arch", arch] if arch else [])])

    def suites(self) -> dict:
        from solbench.core.suites import available_suites, load_suite

        from solbench import schemas

        return {"schema": schemas.SUITES, "ok": True,
                "suites": [{"name": n, "scenarios": len(load_suite(n).scenarios)} for n in available_suites()]}

    def _cli(self, argv: list[str]) -> dict:
        code, doc = cli_json(argv)
        if code >= 2:  # (check's exit 1 is an answer: a clause failed)
            raise ServeError(422, (doc.get("error") or f"solbench {argv[0]} failed").splitlines()[0])
        return doc


def _known_suite(name: str) -> str:
    """A suite of this server by name (never a path: a client names no file of the server's)."""
    from solbench.core.suites import available_suites

    if name not in available_suites():
        raise ServeError(422, f"unknown suite {name!r}; available: {', '.join(available_suites())}")
    return name


_PARSING = threading.Lock()


def hidden_env(paths) -> dict:
    """The environment that keeps candidates (their builds, their workers) from reading `paths` (the state
    folder: every client's candidates and records; the tokens file) and the build cache (every candidate's
    binary and build log), where the kernel has Landlock (solbench.sandbox.confine.hidden_reads); empty where
    it has none."""
    from solbench.build.nvcc import cache_root
    from solbench.sandbox.confine import HIDDEN_VARIABLE, abi_version

    if abi_version() < 1:
        return {}
    cache = cache_root()
    cache.mkdir(parents=True, exist_ok=True)
    return {HIDDEN_VARIABLE: os.pathsep.join([*(str(Path(p).resolve()) for p in paths), str(cache.resolve())])}


def cli_json(argv: list[str], cwd: Path | None = None, timeout_s: float = 600, env: dict | None = None
             ) -> tuple[int, dict]:
    """(exit code, JSON object) of `solbench ARGV --json`, in a process of its own: the CLI's own object."""
    proc = subprocess.run([sys.executable, "-m", "solbench", *argv, "--json"], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout_s, env={**os.environ, **(env or {})})
    try:
        return proc.returncode, json.loads(proc.stdout)
    except ValueError:
        lines = proc.stderr.strip().splitlines()
        return proc.returncode or 2, {"ok": False, "error": lines[-1] if lines else f"solbench {argv[0]} failed"}


def _eta_s(job) -> float | None:
    if job.state != "running" or not job.done or not job.total or not job.started_s:
        return None
    return (time.time() - job.started_s) / job.done * (job.total - job.done)
