"""The supervisor's handle on a Python worker: one implementation per process, driven over a pipe, so a
crash costs a scenario, not the run (the native runner's handle is solbench.supervisor.native_worker).

`Worker(spec, device, policy, log_path)` with `start(timeout_s)` and `request(cmd, payload, timeout_s)`; a
worker that dies (segfault), hangs (timeout) or reports an error is killed and restarted on the next
request. What runs inside the worker's process is solbench.sandbox.worker.
"""

from __future__ import annotations

import socket
import subprocess
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from solbench.core.policy import TimingPolicy
from solbench.sandbox import boot
from solbench.sandbox.confine import remove_scratch, scratch_dir
from solbench.supervisor import lifeline, pause
from solbench.sandbox.impls import ImplSpec
from solbench.sandbox.replies import Stalled, describe_exit, read_reply, recv_within
from solbench.sandbox.worker import ERROR_CONTEXT_INTACT, LETS_GO, LOAD_FAILED, WORKER_LOG_PREFIX


class WorkerFailure(Exception):
    """The worker died, hung, raised, or found its measuring code replaced; `kind` is 'crash', 'timeout',
    'error', 'tampered' or 'load' (the implementation could not be loaded)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass
class Worker:
    """Runner-side handle; starts the process lazily and after every failure."""

    spec: ImplSpec
    device: str
    policy: TimingPolicy
    log_path: Path
    setup_s: float = 0.0
    """Extra seconds a 'prepare' may take beyond the per-scenario timeout (a baseline's JIT compile)."""

    def __post_init__(self):
        from solbench.gpu import device_memory

        self._proc = None
        self._conn = None
        self._scratch = None
        self._holder = device_memory.new_holder()
        """Who the supervisor's device allocations are lent to when sent to this worker."""
        self.writes_lse = True
        """Whether the implementation writes LSE (learnt from the worker's prepare reply)."""
        self.prepares = 0
        """'prepare' requests sent: how many times it was given a scenario's contents (never reset)."""
        self.sandbox = ""
        """How the worker was confined, in words (said before any candidate code ran in it)."""
        self._hold = pause.Hold(judged=self.spec.name == "candidate")
        """Its process group, stopped between requests (solbench.supervisor.pause); judged for the candidate."""
        self.last_request_ms: float | None = None
        """Wall time of the last request from its send to its reply, the hold's bookkeeping left out (the clock
        check compares it with the reported times)."""

    def start(self, timeout_s: float = 120.0) -> None:
        """Start the process and wait until it has loaded the implementation; WorkerFailure otherwise
        (kind 'load' with the worker's one-line reason, 'crash' or 'timeout')."""
        from solbench.gpu import device_memory

        if self._proc is not None:  # its leader is gone: what the candidate left in its group goes too
            _kill_group(self._proc)
            lifeline.forget(self._proc.pid)
        device_memory.returned(self._holder)  # no process of this handle's is alive: none maps anything
        self._scratch = scratch_dir(self.spec)
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)  # fds pass over it (ipc.send)
        with parent, child, open(self.log_path, "ab") as log:
            # Its own group and session (the hold stops the group); only the socket inherited (solbench.sandbox.boot)
            popen = lifeline.popen(boot.command(child.fileno()), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                   pass_fds=(child.fileno(),), start_new_session=True)
            lifeline.watch(popen.pid)
            self._proc, self._conn = _Process(popen), Connection(parent.detach())
        try:
            self._conn.send(dict(spec=self.spec, device=self.device, policy=self.policy, log_path=str(self.log_path),
                                 scratch=self._scratch))
        except OSError:  # BrokenPipeError, ConnectionResetError: it died at once
            self._died("load")
        status, value = self._receive("load", timeout_s + self.setup_s)
        if status == "sandbox":  # sent before the implementation is loaded, so it is the worker's own word
            self.sandbox = str(value)
            status, value = self._receive("load", timeout_s + self.setup_s)
        if status == LOAD_FAILED:
            self.stop(kill=True)
            raise WorkerFailure("load", f"{self.spec.name}: {value}")
        self._hold.hold(self._held_pid())

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self.running else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    def request(self, cmd: str, payload=None, timeout_s: float = 120.0):
        """Send one command and wait for its reply; raise WorkerFailure (and reset) on any failure."""
        from solbench.gpu import device_memory

        if not self.running:
            self.start(timeout_s)
        self.prepares += cmd == "prepare"
        mark = device_memory.loan_mark(self._holder) if cmd in LETS_GO else None
        if why := self._hold.release():
            self.stop(kill=True)
            raise WorkerFailure("tampered", f"{self.spec.name}: {why}")
        sent = time.perf_counter()
        try:
            self._send((cmd, payload))
        except (BrokenPipeError, ConnectionResetError):
            self._died(cmd)
        except OSError as exc:  # fds it never reads (a timeout), or too many fds in flight for this user
            self.stop(kill=True)
            raise WorkerFailure("crash", f"{self.spec.name}: could not be sent its {cmd}: {exc}") from None
        status, value = self._receive(cmd, timeout_s)
        self.last_request_ms = (time.perf_counter() - sent) * 1e3
        self._hold.hold(self._held_pid())
        if mark is not None and status == "ok":
            device_memory.returned(self._holder, mark)  # it closed its mappings of what it was sent before
        if status == ERROR_CONTEXT_INTACT:
            # A trusted implementation (seed, baseline) raised, and its CUDA context still works: keep the
            # worker, and with it the library's compiled kernels and plans.
            raise WorkerFailure("error", f"{self.spec.name}: {value}")
        if status in ("error", "tampered"):
            # Killed: the CUDA context may be poisoned (illegal address). What it was lent is freed once it is
            # gone (stop), so it need not be asked to let go first.
            self.stop(kill=True)
            raise WorkerFailure(status, f"{self.spec.name}: {value}")
        if cmd == "round" and isinstance(value, dict) and isinstance(value.get("telemetry"), dict):
            value["telemetry"]["sandbox"] = self.sandbox
        return value

    def _held_pid(self) -> int | None:
        """The process group to hold between requests (solbench.supervisor.pause), which its worker leads (held
        even when the leader is gone)."""
        return self._proc.pid if self._proc is not None and pause.wanted(self.spec) else None

    def _send(self, message) -> None:
        """A command down the pipe by solbench.gpu.ipc: each tensor as a token, with the fd of its memory (a GPU
        allocation of its own, lent to this worker, or a CPU tensor's shared memory)."""
        from solbench.gpu import ipc

        ipc.send(self._conn, message, self._holder)

    def _receive(self, what: str, timeout_s: float):
        """The worker's next (status, value); WorkerFailure (and reset) when it hangs or dies first."""
        try:
            return read_reply(recv_within(self._conn, timeout_s, lambda: _kill_group(self._proc)))
        except Stalled as exc:
            self.stop(kill=True)
            why = f"no answer to {what!r} within {timeout_s:g} s" if exc.args[0].startswith("no answer") else \
                f"{exc} (to {what!r})"
            raise WorkerFailure("timeout", f"{self.spec.name}: {why}") from None
        except (EOFError, BrokenPipeError, ConnectionResetError):
            self._died(what)
        except (OSError, ValueError) as exc:  # too long, not JSON, too deep, not a pair: not the worker's own code
            self.stop(kill=True)
            raise WorkerFailure("tampered", f"{self.spec.name}: malformed reply to {what!r} ({exc})") from None

    def _died(self, what: str):
        _wait_for_exit(self._proc, 2)  # reap it, so the exit code (the signal) can be reported; not join (stop())
        code = self._proc.exitcode
        self.stop(kill=True)
        during = " while loading" if what == "load" else ""
        raise WorkerFailure("crash", f"{self.spec.name}: worker died{during} ({describe_exit(code)}){self._log_tail()}"
                            ) from None

    def stop(self, kill: bool = False):
        if self._proc is None:
            return
        self._hold.release()  # a stopped process reads no quit (and SIGKILL needs no resume)
        if not kill and self._proc.is_alive():
            try:
                self._send(("quit", None))
            except (BrokenPipeError, OSError):
                pass
            _wait_for_exit(self._proc, 5)
        _kill_group(self._proc)  # also after a clean quit: what the candidate left in its group goes with it
        _wait_for_exit(self._proc, 5)
        lifeline.forget(self._proc.pid)
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = None
        remove_scratch(self._scratch)
        self._scratch = None
        from solbench.gpu import device_memory

        device_memory.returned(self._holder)  # the process is gone, and its mappings with it

    def _log_tail(self, lines: int = 3) -> str:
        try:
            tail = [l for l in self.log_path.read_text(errors="replace").splitlines()
                    if l.strip() and not l.startswith(WORKER_LOG_PREFIX)][-lines:]
        except OSError:
            return ""
        return (": " + " | ".join(tail)) if tail else ""


class _Process:
    """A worker's Popen as the handle uses it (multiprocessing.Process's names: tests hand in one of those)."""

    def __init__(self, popen: subprocess.Popen):
        self._popen = popen
        self.pid = popen.pid

    def is_alive(self) -> bool:
        return self._popen.poll() is None

    @property
    def exitcode(self) -> int | None:
        return self._popen.poll()

    def kill(self) -> None:
        self._popen.kill()


def _wait_for_exit(proc, timeout_s: float) -> None:
    """Until the process has exited or `timeout_s` passed; is_alive() never blocks."""
    deadline = time.monotonic() + timeout_s
    while proc.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)


def _kill_group(proc) -> None:
    """Kill the worker and anything it started: it leads its own process group (see _serve), so a child
    left behind to load the GPU during the comparators' rounds dies with it."""
    if not pause.end_group(proc.pid) and proc.is_alive():
        proc.kill()
