"""The supervisor's handle on the native runner (solbench/sandbox/native/runner.cu): the process a .cu
implementation is timed in, with no Python in it, so the CPython C API offers a candidate nothing to
patch. Same interface as solbench.supervisor.python_worker.Worker (start / request / stop / pid / running), so the
evaluation loop cannot tell them apart; the runner's pipe protocol is in runner.cu's opening comment.

The runner reports raw numbers only. Everything that decides is computed here from them: the host-gap
flag (the rule of solbench.sandbox.timing, against the floors the runner measured before the candidate
was loaded), CUPTI's evidence of work outside the events (a timed call whose own kernels, on any stream,
span more than its events, or kernels that land between calls), and the GPU's telemetry (sampled by this
process around each round).
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from solbench.core.policy import TimingPolicy
from solbench.sandbox.impls import ImplSpec
from solbench.sandbox import hide
from solbench.sandbox.confine import CACHE_VARIABLES, remove_scratch, scratch_dir, shared_memory_dirs
from solbench.sandbox.replies import decode_json, describe_exit
from solbench.supervisor import lifeline, pause
from solbench.supervisor.cupti_verdict import round_flags
from solbench.supervisor.python_worker import WorkerFailure

_FIELDS = ("q", "k", "v", "out", "lse", "cu_seqlens_q", "cu_seqlens_kv", "kv_lens", "page_table", "sinks",
           "mask_bits", "q_descale", "k_descale", "v_descale")
"""The pointer fields of SolbenchAttentionParams in the order a 'copy' line names their tensors."""


def runner_argv(runner: Path, spec: ImplSpec, policy: TimingPolicy, device_index: int,
                own_memory: Path | None = None, writable: tuple[str, ...] = (), fd_socket: int | None = None
                ) -> list[str]:
    """The runner's command line: the library, the GPU and the policy's timing fields; with `own_memory`
    (sanitizing: checks only) no CUPTI, flush or calibration, and the tensors' contents from that file;
    with `writable`, the runner confines itself to writing beneath those folders before the library loads;
    with `fd_socket`, the descriptor (inherited) on which it receives the fds its tokens name."""
    checks_only = own_memory is not None
    argv = [str(runner), f"so={spec.path}", f"device={device_index}", f"cold_l2={int(policy.cold_l2 and not checks_only)}",
            f"flush={policy.l2_flush}", f"cover_ms={policy.launch_cover_ms:g}", f"warmup_ms={policy.warmup_ms:g}",
            f"launcher_budget_ms={policy.launcher_budget_ms:g}", f"cupti={int(not checks_only)}",
            f"allow={','.join(spec.allow)}"] + ([f"confine={':'.join(writable)}"] if writable else [])
    argv += [f"fdsock={fd_socket}"] if fd_socket is not None else []
    return argv + ["calibrate=0", f"data={own_memory}"] if checks_only else argv


def copy_line(inputs, token) -> str:
    """One 'copy' line: the parameter struct as solbench.abi fills it, then each pointer field's token
    (`token(tensor)`: solbench.gpu.ipc's, or OwnTensors')."""
    from solbench import abi

    struct = bytes(abi.params_from_inputs(inputs)).hex()
    return " ".join(["copy", struct, *(token(getattr(inputs, name)) for name in _FIELDS)])


class OwnTensors:
    """Tokens for a runner that allocates every tensor itself at its exact size ("own:OFFSET:BYTES"), the
    inputs' bytes appended to one data file and the outputs left uninitialised ("own:-:BYTES"): what a
    sanitizer needs to see each tensor's bounds and every read of memory nothing wrote."""

    OUTPUTS = ("out", "lse")

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.write_bytes(b"")
        self._outputs: set[int] = set()

    def tokens_for(self, inputs):
        self._outputs = {id(getattr(inputs, name)) for name in self.OUTPUTS}
        return self.token

    def token(self, tensor) -> str:
        if tensor is None:
            return "-"
        nbytes = tensor.numel() * tensor.element_size()
        if id(tensor) in self._outputs:
            return f"own:-:{nbytes}"
        import torch

        data = tensor.detach().contiguous().view(torch.uint8).cpu().numpy().tobytes()
        with self.path.open("ab") as f:
            offset = f.tell()
            f.write(data)
        return f"own:{offset}:{nbytes}"


MAX_LINE_BYTES = 64 << 20
"""The longest reply line read from the runner (its replies are a few KiB; a flood is cut off)."""


@dataclass
class NativeWorker:
    """Supervisor-side handle on one runner process; started lazily and again after every failure."""

    spec: ImplSpec
    device: str
    policy: TimingPolicy
    log_path: Path
    arch: str = "h200"
    """The run's arch: the runner is built for it (as candidates are)."""
    setup_s: float = 0.0
    runner: Path | None = None
    """The runner executable; None = built (or taken from the cache) at the first start."""
    description: dict = field(default_factory=dict)
    """The runner's first reply: floors, flush, cover, whether CUPTI records."""
    wrap: tuple[str, ...] = ()
    """A command line the runner runs under (compute-sanitizer and its options); () = none."""
    own_memory: Path | None = None
    """Sanitizing: the runner allocates every tensor itself, filled from this file (OwnTensors); None = it
    maps the supervisor's tensors from the fds sent on its fd socket (solbench.gpu.ipc)."""

    def __post_init__(self):
        from solbench.gpu import device_memory

        self._proc: subprocess.Popen | None = None
        self._fds: socket.socket | None = None
        """The supervisor's end of the socket the runner receives its fds on (None under own_memory)."""
        self._buffer = b""
        self._scratch = None
        self._holder = device_memory.new_holder()
        """Who the supervisor's device allocations are lent to when their tokens go to this runner."""
        self.writes_lse = True
        self.prepares = 0
        """'prepare' requests sent: how many times it was given a scenario's contents (never reset)."""
        self._hold = pause.Hold(judged=self.spec.name == "candidate")
        """Its process group, stopped between requests (solbench.supervisor.pause); judged for the candidate."""

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self.running else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout_s: float = 120.0) -> None:
        import torch

        from solbench.build.native import build_runner, cupti_library
        from solbench.gpu import device_memory

        if self._proc is not None:  # its leader is gone: whatever is left in its group goes too
            pause.end_group(self._proc.pid)
            lifeline.forget(self._proc.pid)
        device_memory.returned(self._holder)  # no runner of this handle's is alive: none maps anything
        if self.runner is None:
            self.runner = build_runner(self.arch)
        env = dict(os.environ)
        lib = cupti_library()
        if lib and "SOLBENCH_CUPTI_LIB" not in env:
            env["SOLBENCH_CUPTI_LIB"] = lib
        index = torch.cuda.current_device() if self.device.startswith("cuda") else 0
        # The candidate is confined (solbench/sandbox/confine.py), except under a sanitizer, whose own
        # library in the process writes where it likes.
        self._scratch = None if self.wrap else scratch_dir(self.spec)
        if self._scratch:
            env.update({name: self._scratch for name in CACHE_VARIABLES})
        writable = (self._scratch, *shared_memory_dirs()) if self._scratch else ()
        log = open(self.log_path, "ab")
        # The runner's end of a socketpair, inherited under its own number: the tensors' fds go there.
        theirs, started = None, False
        if self._fds is not None:  # a runner that died unseen left its socket
            self._fds.close()
            self._fds = None
        if self.own_memory is None:
            self._fds, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            argv = [*self.wrap, *runner_argv(self.runner, self.spec, self.policy, index, self.own_memory, writable,
                                             theirs.fileno() if theirs else None)]
            if self._scratch:  # where a server hides its state, the candidate reads its own build and scratch only
                argv = hide.command(argv, keep=[Path(self.spec.path).parent, Path(self.runner).parent, *writable])
            # From the spawner thread: the runner's death signal follows the supervisor, not this thread
            self._proc = lifeline.popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env,
                                        pass_fds=(theirs.fileno(),) if theirs else (),
                                        start_new_session=True)  # its own group: stop() ends what it started
            lifeline.watch(self._proc.pid)  # and it ends if the supervisor dies first
            started = True
        finally:
            log.close()
            if theirs is not None:
                theirs.close()  # the runner's copy is the only one: its end closes when it is gone
            if self._fds is not None and not started:
                self._fds.close()
                self._fds = None
        self._buffer = b""
        status, body = self._reply("load", timeout_s + self.setup_s)
        before = None
        if status == "ready":  # what CUPTI records, said before the candidate was loaded
            try:
                before = decode_json(body)
            except ValueError:
                before = None
            status, body = self._reply("load", timeout_s + self.setup_s)
        if status == "load_failed":
            self.stop(kill=True)
            raise WorkerFailure("load", f"{self.spec.name}: {body}")
        if status != "ok":
            self.stop(kill=True)
            raise WorkerFailure("crash", f"{self.spec.name}: the native runner did not start: {body}")
        if not isinstance(before, dict):
            self.stop(kill=True)
            raise WorkerFailure("crash", f"{self.spec.name}: the native runner did not say what CUPTI records before "
                                         f"it loaded the candidate")
        try:  # said after the candidate loaded: its constructor may have written it
            described = decode_json(body)
        except ValueError:
            described = None
        if not isinstance(described, dict):
            self.stop(kill=True)
            raise WorkerFailure("tampered", f"{self.spec.name}: malformed reply from the runner to load: not a JSON object")
        # Held against every round (round_flags), whatever the runner says of itself once the candidate is loaded.
        self.description = {**described, "before_load": before}
        self._hold.hold(self._held_pid())

    def request(self, cmd: str, payload=None, timeout_s: float = 120.0):
        if not self.running:
            self.start(timeout_s)
        self.prepares += cmd == "prepare"
        if cmd not in ("prepare", "release", "check", "round", "warm_up", "launcher_split"):
            raise ValueError(f"NativeWorker: unknown command {cmd!r}")
        if why := self._hold.release():
            self.stop(kill=True)
            raise WorkerFailure("tampered", f"{self.spec.name}: {why}")
        try:
            return self._request(cmd, payload, timeout_s)
        finally:
            self._hold.hold(self._held_pid())

    def _held_pid(self) -> int | None:
        """The process group to hold between requests (solbench.supervisor.pause): its runner's (held even
        when the runner is gone), when no sanitizer wraps it."""
        return self._proc.pid if self._proc is not None and pause.wanted(self.spec) and not self.wrap else None

    def _request(self, cmd: str, payload, timeout_s: float):
        from solbench.gpu import device_memory

        try:
            if cmd in ("prepare", "release"):  # the runner unmaps every earlier copy first (runner.cu release_all)
                mark = device_memory.loan_mark(self._holder)
                value = self._prepare(payload, timeout_s + self.setup_s) if cmd == "prepare" else self._ask(cmd, timeout_s)
                device_memory.returned(self._holder, mark)
                return value
            if cmd == "check":
                return self._ask(f"check {int(bool((payload or {}).get('keep')))}", timeout_s)
            if cmd == "round":
                return self._round(payload["order"], timeout_s)
            return self._ask(cmd, timeout_s)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
            # The runner's lines are the candidate's to forge: one that is not the JSON expected (bad JSON, a
            # missing field, a string where a number goes) is tampering, and ends that runner, not the run.
            self.stop(kill=True)
            raise WorkerFailure("tampered", f"{self.spec.name}: malformed reply from the runner to {cmd}: "
                                            f"{type(exc).__name__}: {str(exc)[:200]}") from None

    def stop(self, kill: bool = False, grace_s: float = 5.0) -> None:
        """Quit (waiting `grace_s` for the runner, and any wrap, to leave), then end its whole group."""
        if self._proc is None:
            return
        self._hold.release()  # a stopped runner reads no quit (and SIGKILL needs no resume)
        if not kill and self._proc.poll() is None:
            try:
                self._proc.stdin.write(b"quit\n")
                self._proc.stdin.flush()
                self._proc.wait(grace_s)
            except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
                pass
        pause.end_group(self._proc.pid)
        try:
            self._proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        lifeline.forget(self._proc.pid)
        for pipe in (self._proc.stdin, self._proc.stdout, self._fds):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass
        self._proc = self._fds = None
        remove_scratch(self._scratch)
        self._scratch = None
        from solbench.gpu import device_memory

        device_memory.returned(self._holder)  # the runner is gone, and its mappings with it

    # ------------------------------------------------------------------ commands

    def _prepare(self, payload, timeout_s: float):
        copies = [payload["check"], *payload["rotation"]]
        if self.own_memory is not None:
            own = OwnTensors(self.own_memory)
            lines = [f"prepare {len(copies)}", *(copy_line(c, own.tokens_for(c)) for c in copies)]
        else:
            from solbench.gpu import ipc

            exports = ipc.Exports()

            def token(tensor):  # lent to this runner until it lets go (its next prepare or release) or is gone
                return ipc.token(tensor, exports, self._holder)

            try:
                lines = [f"prepare {len(copies)}", *(copy_line(c, token) for c in copies)]
                # First the fds, in the order the tokens number them: the runner takes them off its socket
                # when it reads the prepare line. Then closed here: the runner's copies are the only ones.
                ipc.send_fds(self._fds.fileno(), exports.fds)
            except (BrokenPipeError, ConnectionResetError):
                self._died("prepare")
            except OSError as exc:  # fds it never reads (a timeout), or too many fds in flight for this user
                self.stop(kill=True)
                raise WorkerFailure("crash", f"{self.spec.name}: could not be sent its prepare: {exc}") from None
            finally:
                exports.close()
        return self._ask("\n".join(lines), timeout_s)

    def _round(self, order: list[int], timeout_s: float):
        from solbench.gpu.telemetry import TelemetrySampler

        index = int(self.description.get("device", "cuda:0").split(":")[-1])
        with TelemetrySampler(index) as sampler:
            sent = time.perf_counter()
            raw = self._ask("round " + " ".join(str(i) for i in order), timeout_s)
            wall_ms = (time.perf_counter() - sent) * 1e3
        # The clock check's figures for this round (solbench.supervisor.audit.clock_gap): the wall time of the
        # runner's round on this process's clock, and what the runner says it spent, between calls too (its
        # flush, syncs and CUPTI bookkeeping cost ~ms per call: against the comparators' Python loop they
        # would read as hidden time). A runner whose replies are forged can forge this as well (README).
        out = {"clock": (wall_ms, float(raw.get("busy_ms", sum(raw["host_ms"])))),
               "device_ms": raw["device_ms"], "host_ms": raw["host_ms"],
               "flags": round_flags(raw, self.description, self.policy.host_check_tolerance),
               "telemetry": sampler.summary()}
        out["telemetry"]["runner"] = {k: self.description.get(k)
                                      for k in ("runner", "cupti", "launch_count", "cover", "notes")}
        out["telemetry"]["sandbox"] = self.description.get("sandbox", "")
        if "kernels" in raw:
            out["telemetry"]["kernels"] = raw["kernels"]
            out["telemetry"]["stray_kernels"] = raw.get("stray_kernels", 0)
            out["telemetry"]["cupti"] = {k: raw.get(k) for k in ("work_span_ms", "outside_ms", "late_open_ms", "cover_ms",
                                                                 "launch_ms", "launches", "unrecorded", "foreign_launches",
                                                                 "dropped_records")}
        return out

    def _ask(self, line: str, timeout_s: float):
        try:
            self._proc.stdin.write((line + "\n").encode())
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self._died(line.split()[0])
        status, body = self._reply(line.split()[0], timeout_s)
        if status == "ok":
            try:
                return decode_json(body) if body else None
            except ValueError as exc:
                self.stop(kill=True)
                raise WorkerFailure("tampered", f"{self.spec.name}: malformed reply from the runner to "
                                                f"{line.split()[0]!r} ({exc})") from None
        if status == "unsupported":
            return {"unsupported": body}
        self.stop(kill=True)  # after an error or a forbidden library the runner has left (or must)
        kind = "forbidden" if status == "forbidden" else "error"
        raise WorkerFailure(kind, f"{self.spec.name}: {body}")

    def _reply(self, what: str, timeout_s: float) -> tuple[str, str]:
        """The runner's next line as (status, rest); WorkerFailure when it hangs or dies first."""
        deadline = time.monotonic() + timeout_s
        out = self._proc.stdout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop(kill=True)
                raise WorkerFailure("timeout", f"{self.spec.name}: no answer to {what!r} within {timeout_s:g} s")
            ready, _, _ = select.select([out], [], [], left)
            if not ready:
                continue
            chunk = os.read(out.fileno(), 1 << 16)
            if not chunk:
                self._died(what)
            self._buffer += chunk
            if len(self._buffer) > MAX_LINE_BYTES:  # a line without end: not the runner's own reply
                self.stop(kill=True)
                raise WorkerFailure("error", f"{self.spec.name}: a reply to {what!r} over {MAX_LINE_BYTES >> 20} MiB")
        line, self._buffer = self._buffer.split(b"\n", 1)
        status, _, body = line.decode(errors="replace").partition(" ")
        return status, body

    def _died(self, what: str):
        try:  # a runner that closed its end but lives on (a hostile one can) is killed below
            code = self._proc.wait(5) if self._proc is not None else None
        except subprocess.TimeoutExpired:
            code = None
        self.stop(kill=True)
        during = " while loading" if what == "load" else ""
        raise WorkerFailure("crash", f"{self.spec.name}: native runner died{during} "
                                     f"({describe_exit(code)}){self._log_tail()}") from None

    def _log_tail(self, lines: int = 3) -> str:
        try:
            tail = [l for l in self.log_path.read_text(errors="replace").splitlines() if l.strip()][-lines:]
        except OSError:
            return ""
        return (": " + " | ".join(tail)) if tail else ""
