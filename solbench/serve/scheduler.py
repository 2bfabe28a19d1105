"""Starts queued jobs and leases each device to one scenario of one job at a time.

Up to `max_running` job processes live at once (each holds its candidate's and seed's workers loaded); the
next to start is the fairest by client (JobQueue.next_fair). A job asks for its device before each scenario
(solbench.serve.job); a free device goes to the waiting job whose client was served longest ago, so the
scenarios of several clients' jobs interleave and none waits behind another's whole run. A job's own start
(loading its workers) and end (its reports) hold its device too: neither competes with another job's timed
scenario for the host. Every lease is recorded (JobQueue.leases; a start is the scenario START). A job past the time limit, or cancelled, is killed with
its process group; what it finished stays in its run folder.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from solbench.serve.queue import Job, JobQueue

START = "(start)"
"""The lease row of a job's start: from its launch to its first request for the device."""


@dataclass
class _Running:
    """A job process as the scheduler sees it."""

    job: Job
    proc: subprocess.Popen
    sock: socket.socket
    device: str
    started: float
    waiting_since: float | None = None
    """When it asked for its device (None: not waiting)."""
    want: str = ""
    lease: int | None = None
    """Its lease row while it holds the device."""
    last: bool = False
    """Its last scenario has finished: it keeps the device until its process ends (it writes its reports)."""
    why_stopped: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)


class Scheduler:
    """The server's one scheduler; `start()` runs it in a thread, `stop()` ends it and every job process."""

    def __init__(self, queue: JobQueue, devices: list[str], max_running: int, job_time_s: float,
                 run_args_of, device_args_of):
        """`run_args_of(job)`: its `solbench run` arguments (candidate, options, --out or --resume);
        `device_args_of(device)`: (extra run arguments, environment) for a device."""
        self.queue = queue
        self.devices = list(devices)
        self.max_running = max_running
        self.job_time_s = job_time_s
        self._run_args_of = run_args_of
        self._device_args_of = device_args_of
        self._running: dict[str, _Running] = {}
        self._holder: dict[str, str | None] = {d: None for d in self.devices}
        self._last_served: dict[str, float] = {}
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="solbench-scheduler", daemon=True)

    def start(self) -> None:
        self.queue.requeue_interrupted()
        self._thread.start()

    def stop(self) -> None:
        """End the scheduler and every job process; their jobs stay `running` in the queue, so the next start
        resumes them from their run folders."""
        self._stop.set()
        self._thread.join(10)
        with self._lock:
            running = list(self._running.values())
        for r in running:
            _kill(r.proc)

    def running_scenario(self, job_id: str) -> str:
        with self._lock:
            r = self._running.get(job_id)
            return r.want if r and r.lease is not None and not r.last else ""

    def _loop(self) -> None:
        while not self._stop.wait(0.1):
            try:
                self._tick()
            except Exception as exc:  # the scheduler outlives one bad tick; the job it was on fails alone
                print(f"solbench serve: scheduler: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)

    def _tick(self) -> None:
        now = time.monotonic()
        with self._lock:
            for r in list(self._running.values()):
                if self.queue.get(r.job.id).cancel and not r.why_stopped:
                    r.why_stopped = "cancelled"
                    _kill(r.proc)
                elif now - r.started > self.job_time_s and not r.why_stopped:
                    r.why_stopped = f"the job time limit ({self.job_time_s:g} s) was reached"
                    _kill(r.proc)
            for job in self.queue.jobs(states=("queued",)):
                if job.cancel:
                    self.queue.finish(job.id, "cancelled", None, "cancelled before it started")
            self._grant()
            while len(self._running) < self.max_running:
                free = [d for d in self.devices if self._holder[d] is None]
                job = self.queue.next_fair() if free else None
                if job is None:
                    break
                self._launch(job, min(free, key=lambda d: sum(r.device == d for r in self._running.values())))

    def _launch(self, job: Job, device: str) -> None:
        """Start the job's process on `device`, which it holds until it first asks for it."""
        extra, env = self._device_args_of(device)
        ours, theirs = socket.socketpair()
        folder = Path(job.folder)
        argv = [sys.executable, "-m", "solbench.serve.job", "--control-fd", str(theirs.fileno()), "--",
                *self._run_args_of(job), *extra, "--json"]
        with open(folder / "summary.json", "wb") as out, open(folder / "log.txt", "ab") as log:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=log, cwd=folder,
                                    pass_fds=(theirs.fileno(),), env={**os.environ, **env}, start_new_session=True)
        theirs.close()
        self.queue.mark_started(job.id, device)
        running = _Running(job, proc, ours, device, time.monotonic())
        running.lease = self.queue.lease_start(job.id, device, START)
        self._holder[device] = job.id
        self._running[job.id] = running
        threading.Thread(target=self._follow, args=(running,), name=f"solbench-job-{job.id}", daemon=True).start()

    def _follow(self, r: _Running) -> None:
        """Read the job's messages until it ends, then record how it ended."""
        for line in r.sock.makefile("r", encoding="utf-8"):
            message = json.loads(line)
            with self._lock:
                if "want" in message:
                    self._release(r)  # its start's hold
                    r.want, r.waiting_since = message["want"], time.monotonic()
                    self.queue.progress(r.job.id, message["done"], message["total"], message["want"])
                    self._grant()
                elif "finished" in message:
                    r.last = not message.get("more", True)
                    if not r.last:
                        self._release(r)
                    job = self.queue.get(r.job.id)
                    self.queue.progress(r.job.id, job.done + 1, job.total, "")
                    self._grant()
        code = r.proc.wait()
        with self._lock:
            self._release(r)
            self._running.pop(r.job.id, None)
            r.sock.close()
            if self._stop.is_set():  # the server is stopping: the job is not over, the next start resumes it
                return
            self._ended(r, code)
            self._grant()

    def _release(self, r: _Running) -> None:
        if r.lease is not None:
            self.queue.lease_end(r.lease)
            r.lease = None
        if self._holder.get(r.device) == r.job.id:
            self._holder[r.device] = None

    def _grant(self) -> None:
        """Give each free device to its waiting job whose client was served longest ago."""
        for device, holder in self._holder.items():
            if holder is not None:
                continue
            waiting = [r for r in self._running.values() if r.device == device and r.waiting_since is not None]
            if not waiting:
                continue
            r = min(waiting, key=lambda w: (self._last_served.get(w.job.client, 0.0), w.waiting_since))
            r.waiting_since = None
            r.lease = self.queue.lease_start(r.job.id, device, r.want)
            self._holder[device] = r.job.id
            self._last_served[r.job.client] = time.monotonic()
            try:
                r.sock.sendall((json.dumps({"go": r.want}) + "\n").encode())
            except OSError:
                self._release(r)

    def _ended(self, r: _Running, code: int) -> None:
        if r.why_stopped == "cancelled":
            self.queue.finish(r.job.id, "cancelled", None, "cancelled; the finished scenarios are in its results")
            return
        if r.why_stopped:
            self.queue.finish(r.job.id, "failed", None, r.why_stopped)
            return
        try:
            summary = json.loads((Path(r.job.folder) / "summary.json").read_text())
        except (OSError, ValueError):
            summary = {}
        if code in (0, 1) and summary.get("schema") == "solbench.summary/1":
            self.queue.finish(r.job.id, "done", code)
        else:
            error = summary.get("error") or _last_line(Path(r.job.folder) / "log.txt") or f"exit code {code}"
            self.queue.finish(r.job.id, "failed", code, error)


def _kill(proc: subprocess.Popen) -> None:
    """End the job process and its session (its workers end with it: solbench.supervisor.lifeline)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""
