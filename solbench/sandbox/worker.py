"""Inside a Python worker's process (the supervisor's handle on it is solbench.supervisor.python_worker; how it
starts, solbench.sandbox.boot): `_serve` loads the implementation and says first whether that worked (a
candidate that cannot be imported is a load failure, not one crash per scenario), then holds it, the inputs
the supervisor shared with it and a Timer. The supervisor allocates every tensor (on a GPU each in an
allocation of its own, on the CPU in shared memory; either sent as a file descriptor beside its token:
solbench.gpu.ipc): the worker only calls, and the supervisor reads the outputs and checks the inputs in its
own memory, so nothing the worker reports decides a verdict. A worker that dies holding a scenario's tensors
leaves nothing behind: the driver unmaps a dead process's mappings and the kernel closes its fds, and the
supervisor frees what it lent once the worker let go of it or is gone (solbench.gpu.device_memory).
"""

from __future__ import annotations

import os
import tempfile
import time
import traceback

from solbench.sandbox.confine import CACHE_VARIABLES
from solbench.sandbox.replies import first_line, send_reply
from solbench.sandbox.impls import ImplSpec
from solbench.core.policy import TimingPolicy


ERROR_CONTEXT_INTACT = "error_context_intact"
"""Reply status: a trusted implementation raised but a device synchronize still succeeds."""

WORKER_LOG_PREFIX = "[solbench worker]"
"""Prefix of the worker's own log lines (command durations), kept out of crash messages."""


LOAD_FAILED = "load_failed"
"""First message of a worker whose implementation could not be loaded (import error, missing symbol)."""

LETS_GO = ("release", "prepare")
"""Commands after whose 'ok' the worker holds none of the tensors it was sent before them."""

def _receive_command(conn, device: str):
    """The supervisor's next (cmd, payload), with the fds of the tensors it names (solbench.gpu.ipc, which maps
    them as it unpickles them)."""
    from solbench.gpu import ipc

    return ipc.receive(conn)


# ---------------------------------------------------------------- worker process side


def _serve(conn, spec: ImplSpec, device: str, policy: TimingPolicy, log_path: str, scratch: str | None = None):
    # Its own process group and session (the supervisor's start_new_session): stopping the worker stops whatever
    # the candidate started.
    log = open(log_path, "a", buffering=1)
    os.dup2(log.fileno(), 1)  # the candidate's own prints and CUDA errors go to the log, not the terminal
    os.dup2(log.fileno(), 2)
    sandbox = None
    if scratch:
        os.environ.update({name: scratch for name in CACHE_VARIABLES})
        tempfile.tempdir = None  # TMPDIR is read again
        # First, while this process has one thread: Landlock binds only the thread that applies it and those it
        # starts later, and CUDA's threads (which run the candidate's host functions) start with CUDA.
        from solbench.sandbox.confine import ConfinedTooLate, NotHidden, confine, shared_memory_dirs

        try:  # its own file's folder stays readable where a server hides its state
            sandbox = confine([scratch, *shared_memory_dirs()], keep=[os.path.dirname(os.path.abspath(spec.path))])
        except ConfinedTooLate as exc:
            send_reply(conn, LOAD_FAILED, f"{exc}; nothing runs in a worker before this but solbench.sandbox.boot, "
                                          "so something in the interpreter's start (a site hook?) started one")
            return
        except NotHidden as exc:
            send_reply(conn, LOAD_FAILED, str(exc))
            return
        except OSError as exc:
            sandbox = f"not confined: {exc}"
    else:  # trusted: under the candidate's syscall filter all the same, which runs on each of its syscalls
        from solbench.sandbox.privileges import filter_syscalls

        try:
            print(f"{WORKER_LOG_PREFIX} {filter_syscalls(new_privs=True)}", flush=True)
        except OSError as exc:
            print(f"{WORKER_LOG_PREFIX} no syscall filter: {exc}", flush=True)
    from solbench.sandbox.integrity import changed, snapshot

    # Before the candidate is imported, so import-time patches count too. Baselines are trusted libraries
    # whose own imports may legitimately touch torch; only the candidate is watched.
    harness = snapshot() if spec.name == "candidate" else None
    started = time.perf_counter()
    try:
        state = _WorkerState(spec, device, policy, sandbox, conn)
    except Exception as exc:
        traceback.print_exc()
        send_reply(conn, LOAD_FAILED, _load_failure(exc))
        return
    send_reply(conn, "ok")
    print(f"{WORKER_LOG_PREFIX} start {spec.name} {time.perf_counter() - started:.3f} s", flush=True)
    while True:
        try:
            cmd, payload = _receive_command(conn, device)  # on a GPU this maps the tensors it names
        except EOFError:
            return
        except Exception as exc:  # the message was read whole: the pipe is still in step
            traceback.print_exc()
            send_reply(conn, "error", f"the supervisor's tensors could not be mapped: {type(exc).__name__}: "
                                  f"{first_line(exc)}")
            continue
        if cmd == "quit":
            return
        try:
            started = time.perf_counter()
            value = getattr(state, cmd)(payload)
            print(f"{WORKER_LOG_PREFIX} {cmd} {time.perf_counter() - started:.3f} s", flush=True)
            tampered = changed(harness) if harness else []
            if tampered:
                send_reply(conn, "tampered", f"the candidate replaced harness code: {', '.join(tampered[:5])}")
                return
            send_reply(conn, "ok", value)
        except Exception as exc:
            traceback.print_exc()
            # The candidate's worker always starts afresh after an error (it may have left anything behind).
            status = ERROR_CONTEXT_INTACT if spec.name != "candidate" and _context_intact(device) else "error"
            send_reply(conn, status, f"{type(exc).__name__}: {first_line(exc)}")


def _load_failure(exc: Exception) -> str:
    """One line: solbench's own LoadError already says what and where; anything else gets its type."""
    from solbench.core.errors import SolbenchError

    first = first_line(exc)
    return first if isinstance(exc, SolbenchError) and first else f"{type(exc).__name__}: {first}"


def _context_intact(device: str) -> bool:
    """False when the CUDA context is poisoned (a sticky error such as an illegal address makes every later
    call fail, synchronize included)."""
    if not str(device).startswith("cuda"):
        return True
    try:
        import torch

        from solbench.gpu import cudart

        torch.cuda.synchronize()
        # A non-sticky error the library never read back would surface in the next scenario's first call
        # and be blamed on it: read and clear it here, and start afresh if there was one.
        return cudart.load().clear_last_error() == 0
    except Exception:
        return False


class _WorkerState:
    """The worker's commands: each takes one payload and returns a JSON-serialisable value."""

    def __init__(self, spec: ImplSpec, device: str, policy: TimingPolicy, sandbox: str | None = None, conn=None):
        import torch

        from solbench.sandbox.impls import load_impl
        from solbench.sandbox.timing import Timer

        if device == "cpu":
            torch.set_num_threads(1)  # workers take turns; threads fighting over cores only add noise
        self.device = device
        self.timer = Timer(policy, device)
        self._profile_next_check = device == "cuda" and bool(os.environ.get("SOLBENCH_PROFILE_CHECK"))
        if sandbox is not None:  # the candidate: confined (by _serve) before its code exists here, and says so
            send_reply(conn, "sandbox", sandbox)
        self.impl = load_impl(spec, device)
        self.check_call = None
        self.calls = []
        self.kernels = None  # one call's kernel records (kernel_records.py), taken after each warm-up
        self.mapped = []  # the supervisor's allocations mapped for the scenario held (solbench.gpu.device_memory)

    def _release_memory(self):
        import gc

        gc.collect()
        if self.device == "cuda":
            import torch

            torch.cuda.synchronize()
            torch.cuda.empty_cache()

    def _sync(self):
        if self.device == "cuda":
            import torch

            torch.cuda.synchronize()

    def release(self, payload=None, keep=()):
        """Drop the scenario's tensors and unmap the supervisor's allocations (but those in `keep`), which it
        frees once told, and hand the cached blocks back to the device, so the next implementation to
        prepare a large scenario finds the memory free."""
        self.check_call = None
        self.calls = []
        self.kernels = None
        self._release_memory()
        for mapping in getattr(self, "mapped", ()):  # after the synchronize: no kernel still reads them
            if mapping not in keep:
                mapping.close()
        self.mapped = list(keep)

    def prepare(self, payload):
        """Bind the supervisor's inputs: payload {"check": Inputs, "rotation": [Inputs, ...]}, whose
        allocations were mapped as the payload was received."""
        from solbench.gpu import device_memory

        self.release(keep=device_memory.take_opened())  # a worker never holds two scenarios at once
        self.check_call = self.impl.bind(payload["check"])
        self.calls = [self.impl.bind(inp) for inp in payload["rotation"]]
        return {"writes_lse": bool(getattr(self.impl, "writes_lse", True))}

    def check(self, payload=None):
        """Run the check copy once (the supervisor poisoned its outputs and judges them); None, or
        {"unsupported": why} when the implementation declines the scenario. payload {"keep": True} keeps the
        copy bound for one more check (the determinism check)."""
        self._sync()
        try:
            self._call_checked()
        except Exception as exc:
            if getattr(exc, "unsupported", False) or isinstance(exc, NotImplementedError):
                self.check_call = None
                return {"unsupported": str(exc) or type(exc).__name__}
            # Keep the shared tensors: unmapping shared memory in a poisoned context aborted the process (seen
            # with legacy CUDA IPC mappings)
            # before the error is reported (the worker is replaced after an error anyway).
            raise
        if not (payload or {}).get("keep"):
            self.check_call = None  # checked: the supervisor frees that copy
        return None

    def _call_checked(self):
        """The check copy's call, then a synchronize; under `solbench profile` the first one runs between the
        profiler API's start and stop, which is all the tool records."""
        if not self._profile_next_check:
            self.check_call()
            self._sync()
            return
        import torch

        self._profile_next_check = False
        with torch.cuda.profiler.profile():
            self.check_call()
            self._sync()

    def warm_up(self, payload):
        self.timer.warm_up(self.calls)
        if self.device == "cuda" and self.calls:  # for the triage: once a scenario, never a timed call
            from solbench.sandbox.kernel_records import record_kernels

            self.kernels, why = record_kernels(self.calls[0])
            if why:
                print(f"{WORKER_LOG_PREFIX} no kernel records: {why}", flush=True)
        return None

    def round(self, payload):
        """One timed call of each copy in payload["order"] (the supervisor refreshes their contents and
        poisons their outputs before, and checks them after); returns device/host samples, flags and
        the kernel records. Clocks and throttling are read by the supervisor, not here: this process is the
        candidate's."""
        order = payload["order"]
        samples = self.timer.take([self.calls[i] for i in order], len(order))
        telemetry = {} if self.kernels is None else {"kernels": self.kernels}
        return {
            "device_ms": [s.device_ms for s in samples],
            "host_ms": [s.host_ms for s in samples],
            "flags": sorted({f for s in samples for f in s.flags}),
            "telemetry": telemetry,
        }

    def launcher_split(self, payload):
        split = self.timer.launcher_split(self.calls[0])
        return {k: getattr(split, k) for k in split.__dataclass_fields__}
