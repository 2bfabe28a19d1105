"""`--gpus all|0,1,3`: one agent process per GPU of this machine, each with its own worker set, fed one
unit at a time, longest first, as soon as it is free; outcomes stream back as they finish.

Each agent is started with CUDA_VISIBLE_DEVICES naming its GPU alone, set before the process exists, so
CUDA starts in it (and in the workers it spawns, which inherit it) seeing that GPU only; the inputs,
the reference and the verdict of its units live in it, never across GPUs. An agent is supervisor code
(solbench.executor.units.Agent): it never imports a candidate. An agent that dies, or fails outside any
worker (a GPU fallen off the bus makes CUDA raise in the agent itself), costs its GPU and the unit in
flight; that unit is dealt again, under a new key, to another GPU.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time
from dataclasses import dataclass, replace
from multiprocessing.connection import wait
from typing import Callable, Iterator

from solbench.core.errors import NoGpuLeftError
from solbench.core.model import AGENT_DIED, Outcome
from solbench.core.scenario import Scenario
from solbench.executor.keys import SealError, unit_key, unseal
from solbench.executor.units import Agent, UnitContext, lost_outcome, tampered_outcome

MAX_ATTEMPTS = 2
"""Attempts at one unit before it is recorded as lost (a runtime error `--retry-errors` takes again)."""


def agent_main(conn, ctx: UnitContext, label: str) -> None:
    """An agent process: load, say so, then evaluate each unit it is sent and send back its sealed outcome."""
    from solbench.core.errors import LoadError
    from solbench.sandbox.replies import first_line

    agent = Agent(ctx, log_tag=f"-gpu{label}")
    try:
        try:
            agent.load()
        except LoadError as exc:
            conn.send(("load_error", str(exc)))
            return
        conn.send(("ready", None))
        while True:
            message = conn.recv()
            if message[0] == "quit":
                return
            _, sc, key, attempt = message
            try:
                doc = agent.evaluate(sc, key, attempt).to_dict()
            except Exception as exc:  # outside any worker: this agent (its GPU, its CUDA context) is broken
                conn.send(("agent_error", f"{type(exc).__name__}: {first_line(exc)}"))
                return
            from solbench.executor.keys import seal

            conn.send(("outcome", doc, seal(doc, key)))
    except (EOFError, BrokenPipeError):
        return
    finally:
        agent.close()


def visible_label(ordinal: int, parent_visible: str | None) -> str:
    """CUDA_VISIBLE_DEVICES for the agent of this machine's GPU `ordinal` (as this process numbers them:
    through its own CUDA_VISIBLE_DEVICES when set)."""
    if parent_visible:
        entries = [e.strip() for e in parent_visible.split(",") if e.strip()]
        if ordinal < len(entries):
            return entries[ordinal]
    return str(ordinal)


@contextlib.contextmanager
def _visible(label: str):
    before = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = label
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = before


@dataclass
class _Slot:
    """One GPU's agent, as the supervisor sees it."""

    label: str
    proc: object
    conn: object
    busy: tuple | None = None
    """(scenario, attempt, key, deadline on the monotonic clock) while a unit is in flight."""
    alive: bool = True


class LocalExecutor:
    """Agents on the GPUs `labels` (CUDA_VISIBLE_DEVICES values) of this machine."""

    def __init__(self, ctx: UnitContext, secret: bytes, labels: list[str], target: Callable = agent_main,
                 unit_deadline_s: float | None = None):
        """`target(conn, ctx, label)` is the agent process's body (tests pass one that dies on cue);
        `unit_deadline_s`: an agent silent for longer on one unit is taken for hung, with its GPU."""
        self.ctx = replace(ctx, executor="local")
        self._secret = secret
        self.labels = list(labels)
        self._target = target
        per_request = ctx.timeout_s + max((0.0,) + tuple(_setup(s) for s in ctx.specs.values()))
        self.unit_deadline_s = unit_deadline_s or per_request * (8 + 2 * len(ctx.specs)) + 4 * ctx.policy.max_time_s
        self.slots: list[_Slot] = []
        self.events: list[str] = []
        """What happened to GPUs and agents, in order, one line each (kept in environment['executor'])."""
        self.unfinished: list[str] = []
        """Scenario ids left when no GPU could take them."""
        self._reaper = None

    def start(self) -> None:
        """Start every agent and wait until each has loaded the candidate and the seed. LoadError when the
        candidate cannot be loaded; NoGpuLeftError when no agent started at all."""
        from solbench.core.errors import LoadError
        from solbench.supervisor.processes import Reaper

        self._reaper = Reaper()
        ctx = multiprocessing.get_context("spawn")
        for label in self.labels:
            parent, child = ctx.Pipe()
            with _visible(label):  # inherited at exec: CUDA in the agent and its workers sees this GPU alone
                proc = ctx.Process(target=self._target, args=(child, self.ctx, label), name=f"solbench-agent-gpu{label}")
                proc.start()
            child.close()
            self.slots.append(_Slot(label, proc, parent))
        deadline = time.monotonic() + self.ctx.timeout_s * 2 + 60
        for slot in self.slots:
            reply = self._receive(slot, deadline)
            if reply is None:
                self._lose(slot, "did not start")
            elif reply[0] == "load_error":
                raise LoadError(reply[1])
        if not any(s.alive for s in self.slots):
            raise NoGpuLeftError(f"no agent started on GPU(s) {', '.join(self.labels)}: {'; '.join(self.events)}")

    def _receive(self, slot: _Slot, deadline: float):
        """The agent's next message, or None when it died or stayed silent past `deadline`."""
        try:
            if slot.conn.poll(max(0.0, deadline - time.monotonic())):
                return slot.conn.recv()
        except (EOFError, OSError):
            pass
        return None

    def _lose(self, slot: _Slot, why: str) -> None:
        slot.alive = False
        _stop(slot)
        self.events.append(f"GPU {slot.label}: agent {why}; no further unit goes to it")
        if self._reaper is not None:  # its workers were re-parented here: end them
            self._reaper.sweep({s.proc.pid for s in self.slots if s.alive})

    def outcomes(self, scenarios: list[Scenario], on_start: Callable[[str, int, int], None] | None = None
                 ) -> Iterator[Outcome]:
        """Deal `scenarios` in the order given (longest first: solbench.executor.plan), each to the next free
        GPU; yield each Outcome as it arrives."""
        queue = list(scenarios)
        tried: dict[str, list[str]] = {}
        done = 0
        while True:
            for slot in self.slots:
                if not slot.alive or slot.busy:
                    continue
                pick = next((sc for sc in queue if slot.label not in tried.get(sc.id, ())), None)
                if pick is None:
                    continue
                queue.remove(pick)
                attempt = len(tried.get(pick.id, ())) + 1
                key = unit_key(self._secret, self.ctx.run_id, pick.id, attempt)
                try:
                    slot.conn.send(("unit", pick, key, attempt))
                except (BrokenPipeError, OSError):
                    queue.insert(0, pick)
                    self._lose(slot, "was gone before its next unit")
                    continue
                slot.busy = (pick, attempt, key, time.monotonic() + self.unit_deadline_s)
                if on_start:
                    on_start(pick.id, done, len(scenarios))
            busy = [s for s in self.slots if s.busy]
            if not busy:
                break
            ready = wait([s.conn for s in busy] + [s.proc.sentinel for s in busy],
                         timeout=max(0.0, min(s.busy[3] for s in busy) - time.monotonic()))
            for slot in busy:
                sc, attempt, key, deadline = slot.busy
                message = None
                if slot.conn in ready or slot.proc.sentinel in ready or time.monotonic() >= deadline:
                    message = self._receive(slot, time.monotonic())  # whatever it sent before dying counts
                    if message is None and slot.proc.is_alive() and time.monotonic() < deadline:
                        continue
                else:
                    continue
                slot.busy = None
                if message is not None and message[0] == "outcome":
                    done += 1
                    yield self._unsealed(sc, message, key, slot.label)
                    self._reaper.sweep({s.proc.pid for s in self.slots if s.alive})
                    continue
                why = (f"failed on {sc.id}: {message[1]}" if message is not None and message[0] == "agent_error"
                       else f"died while evaluating {sc.id} ({_exit(slot.proc)})" if not slot.proc.is_alive()
                       else f"gave no answer on {sc.id} within {self.unit_deadline_s:g} s")
                self._lose(slot, why)
                tried.setdefault(sc.id, []).append(slot.label)
                if len(tried[sc.id]) >= MAX_ATTEMPTS:
                    done += 1
                    yield lost_outcome(sc, f"{AGENT_DIED} on GPUs {', '.join(tried[sc.id])} while evaluating it "
                                           f"(the supervisor's side lost the unit twice): {why}")
                else:
                    queue.insert(0, sc)  # the longest left: it goes to the next free GPU
                    self.events.append(f"{sc.id}: dealt again (attempt {attempt + 1})")
        self.unfinished = [sc.id for sc in queue]
        if self.unfinished:
            self.events.append(f"{len(self.unfinished)} scenario(s) left with no GPU to take them")

    def _unsealed(self, sc: Scenario, message, key: bytes, label: str) -> Outcome:
        try:
            return Outcome.from_dict(unseal(message[1], message[2], key, f"{sc.id} on GPU {label}"))
        except SealError as exc:
            return tampered_outcome(sc, str(exc))

    def close(self) -> None:
        for slot in self.slots:
            _stop(slot)
        if self._reaper is not None:
            self._reaper.sweep()


def _stop(slot: _Slot) -> None:
    """Ask the agent to quit (it stops its workers), then make sure it is gone."""
    proc = slot.proc
    if proc.is_alive():
        with contextlib.suppress(BrokenPipeError, OSError):
            slot.conn.send(("quit", None))
        proc.join(10)
    if proc.is_alive():
        proc.kill()
        proc.join(5)
    with contextlib.suppress(OSError):
        slot.conn.close()


def _exit(proc) -> str:
    from solbench.sandbox.replies import describe_exit

    return describe_exit(proc.exitcode)


def _setup(spec) -> float:
    from solbench.executor.units import setup_s

    return setup_s(spec)
