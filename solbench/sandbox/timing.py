"""Timer: how one implementation's calls are timed, identically for candidate, seed and baselines.

One timed iteration on CUDA, in order (each step's reason in `Timer._iterate`):

    flush L2 (TimingPolicy.l2_flush: read >= 2x L2 by default) -> wait for it -> t0 -> [cover] -> start event
    -> call() -> end event
    -> synchronize the whole device -> t1

`device_ms` = start->end event time; `host_ms` = t1 - t0. A call that leaves work on another stream
returns early, so its events are short while the device-wide synchronize still waits for the work: the
host clock sees what the events miss, and such samples are flagged `host_gap`. All times are in ms.
The CUDA specifics live in `solbench.gpu.cuda_ops.CudaOps`; this module only orders them, so the whole
procedure runs on a CPU-only machine against a simulated device in the tests.
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, NamedTuple

from solbench.core.errors import ConfigError
from solbench.core.policy import TimingPolicy

if TYPE_CHECKING:
    from solbench.gpu.cuda_ops import DeviceOps

Call = Callable[[], object]

HOST_GAP = "host_gap"
"""Flag: most samples of a batch spent far more host wall time than the device or launcher explain."""
PERSISTING_L2 = "persisting_l2"
"""Flag: a persisting-L2 carve-out was found set after the batch (and was reset)."""

_FLOOR_REPS = 40
_SPLIT_REPS = 15
_SPLIT_BATCH = 10
_MIN_SLACK_MS = 0.02
"""Host-clock differences below this are jitter, never evidence of hidden work."""


@dataclass(frozen=True)
class Sample:
    """One timed iteration."""

    device_ms: float
    """Start->end event time on the timing stream (CPU: equal to host_ms)."""
    host_ms: float
    """Host wall time from an idle device (after the flush) until the device is idle again; includes
    cover_ms and the host floor."""
    launch_ms: float = 0.0
    """Host time until call() returned: launcher work plus any wait it does itself."""
    cover_ms: float = 0.0
    """How long the stream was held before the start event while the host issued the call."""
    flags: tuple[str, ...] = ()
    """HOST_GAP, PERSISTING_L2; see the module constants."""


@dataclass(frozen=True)
class LauncherSplit:
    """Device time vs the eager host path of one call, all with warm L2 (a loop in an application has no
    flush; cold-L2 kernel time is what `Timer.take` measures)."""

    graph_device_ms: float | None
    """Median event time of replaying a CUDA graph holding one call (no host launcher involved); None
    when capture failed (graph_error says why) or on CPU."""
    graph_error: str
    """Why there is no graph time; '' when there is one."""
    eager_device_ms: float
    """Median event time of the ordinary eager call, with the launch cover (CPU: median wall time)."""
    eager_host_ms: float
    """Per-call wall time of back-to-back eager calls with one synchronize at the end (median over
    batches of _SPLIT_BATCH): what a loop pays per call; never below the device time."""
    eager_single_ms: float
    """Median wall time of one eager call plus synchronize, from an idle device: the latency of one call."""
    host_floor_ms: float
    """Wall time of a bare device synchronize with nothing queued (to read eager_single_ms against)."""
    overhead_ms: float
    """eager_host_ms - (graph_device_ms, else eager_device_ms): launcher cost per call in a loop beyond
    the device work; about 0 when the device is the bottleneck and the launcher hides behind it."""

    def to_dict(self) -> dict:
        return asdict(self)


class _Raw(NamedTuple):
    """One iteration before the batch-level verdict: a Sample's fields plus what the host check needs."""

    device_ms: float
    host_ms: float
    launch_ms: float
    cover_ms: float
    span_ms: float
    """Event time from before the cover to the end event."""
    issued_ms: float
    """Host time from t0 until call() returned."""


def host_gap(span_ms: float, host_ms: float, issued_ms: float, floor_ms: float, tolerance: float,
             slack_ms: float = _MIN_SLACK_MS) -> bool:
    """True when neither the device span on the timing stream (cover + call) nor the host's own time to
    issue the call accounts for (1 - tolerance) of the synced wall time above the floor: the device was
    still busy with work the events did not see."""
    excess = host_ms - floor_ms
    explained = max(span_ms, issued_ms)
    return excess - explained > slack_ms and explained < (1.0 - tolerance) * excess


def gap_in_batch(gaps: Sequence[bool]) -> bool:
    """A batch shows a host gap when most of its samples do (a lone slow sample is jitter)."""
    return sum(gaps) * 2 > len(gaps)


def cover_for(launch_ms: Sequence[float], cap_ms: float) -> float:
    """Cover = 1.25 x the 90th percentile of recent launch times + 5 us, at most cap_ms: long enough that
    the start event and the kernel sit queued together (so the gap is not timed), short enough that
    little work could hide under it."""
    if cap_ms <= 0:
        return 0.0
    if not launch_ms:
        return min(cap_ms, 0.05)
    ordered = sorted(launch_ms)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return min(cap_ms, 1.25 * p90 + 0.005)


class Timer:
    """Times zero-argument calls under one TimingPolicy on 'cuda' (or 'cuda:N') or 'cpu'."""

    def __init__(self, policy: TimingPolicy, device: str = "cuda", *, ops: DeviceOps | None = None):
        """`ops` replaces the CUDA operations (tests pass a simulated device); by default they are built
        from `device`. Measures the host floor once."""
        self.policy = policy
        self.device = device
        self.notes: list[str] = []
        """What was done or impossible while setting up (L2 flush size, persisting-L2 reset, cover)."""
        if ops is None and device.startswith("cuda"):
            from solbench.gpu.cuda_ops import CudaOps

            ops = CudaOps(device, cold_l2=policy.cold_l2, notes=self.notes, flush=policy.l2_flush)
        elif ops is None and device != "cpu":
            raise ConfigError(f"Timer: unknown device {device!r}; use 'cuda', 'cuda:N' or 'cpu'")
        self._ops = ops
        self._tick = 0
        self.before_each: Callable[[int], None] | None = None
        """Called with the index of the call about to run, before its flush (the worker poisons that
        copy's outputs here, so a call that skips work leaves poison behind)."""
        self._launches: deque[float] = deque(maxlen=32)
        self.host_floor_ms = 0.0
        """Median host_ms of a timed iteration that calls nothing (events + synchronize only)."""
        self.sync_floor_ms = 0.0
        """Median wall time of a bare synchronize of an idle device."""
        self._slack_ms = _MIN_SLACK_MS
        if ops is not None:
            self._measure_floors()

    # ------------------------------------------------------------------ public

    def warm_up(self, calls: Sequence[Call]) -> None:
        """Iterate exactly as `take` does until policy.warmup_ms of wall time has passed, and at least once
        per call: clocks ramp up, lazy initialisation and allocator growth happen here, not in samples."""
        calls = _as_calls(calls)
        deadline = time.perf_counter() + self.policy.warmup_ms / 1e3
        with self._on_device():
            done = 0
            while done < len(calls) or time.perf_counter() < deadline:
                self._iterate(self._next(calls), self.policy.cold_l2)
                done += 1

    def take(self, calls: Sequence[Call], n: int) -> list[Sample]:
        """n timed iterations, rotating through calls (the rotation continues across batches)."""
        calls = _as_calls(calls)
        with self._on_device():
            carve_out = self._ops is not None and self._ops.persisting_l2_set()
            if self._ops is not None:
                # The supervisor's context just used the GPU (poison, fresh inputs): one event on this
                # context, waited for, so the context switch lands here and not in the first sample.
                self._ops.record(self._events[0])
                self._ops.wait_device()
            samples = [self._iterate(self._next(calls), self.policy.cold_l2) for _ in range(n)]
            carve_out = (self._ops is not None and self._ops.persisting_l2_set()) or carve_out
        gaps = [self._gap(s) for s in samples]
        majority = gap_in_batch(gaps)
        out = []
        for s, gap in zip(samples, gaps):
            flags = ((HOST_GAP,) if gap and majority else ()) + ((PERSISTING_L2,) if carve_out else ())
            out.append(Sample(s.device_ms, s.host_ms, s.launch_ms, s.cover_ms, flags))
        return out

    def launcher_split(self, call: Call) -> LauncherSplit:
        """Launcher-only A/B of one call; see LauncherSplit for what each number means."""
        with self._on_device():
            first = self._iterate(call, False).device_ms
            # Each of the four parts (eager device, graph replay, single, batched) gets a quarter of the
            # policy's budget: a 50 ms call needs no 15 repetitions to show that its launcher costs
            # nothing next to it (one each; its A/B then costs ~6 calls), a 10 us call gets the full count.
            reps = max(1, min(_SPLIT_REPS, int(self.policy.launcher_budget_ms / (4 * max(first, 1e-3)))))
            batch_size = max(2, min(_SPLIT_BATCH, reps))
            eager_device = _median([first] + [self._iterate(call, False).device_ms for _ in range(reps - 1)])
            graph_ms, graph_error = None, "no CUDA device (CPU run)"
            if self._ops is not None:
                graph_ms, graph_error = self._graph_device_ms(call, reps)
            single, batch = [], []
            for _ in range(reps):
                self._sync()
                t0 = time.perf_counter()
                call()
                self._sync()
                single.append((time.perf_counter() - t0) * 1e3)
            for _ in range(max(1, reps // 3)):
                self._sync()
                t0 = time.perf_counter()
                for _ in range(batch_size):  # back-to-back: host and device overlap as in a real loop
                    call()
                self._sync()
                batch.append((time.perf_counter() - t0) * 1e3 / batch_size)
        eager_host = _median(batch)
        device = graph_ms if graph_ms is not None else eager_device
        return LauncherSplit(graph_device_ms=graph_ms, graph_error=graph_error, eager_device_ms=eager_device,
                             eager_host_ms=eager_host, eager_single_ms=_median(single),
                             host_floor_ms=self.sync_floor_ms, overhead_ms=eager_host - device)

    def describe(self) -> dict:
        """What this timer does on this device, for the run's manifest."""
        d = {"device": self.device, "host_floor_ms": self.host_floor_ms, "sync_floor_ms": self.sync_floor_ms,
             "host_gap_slack_ms": self._slack_ms, "notes": list(self.notes)}
        if self._ops is not None:
            d.update(self._ops.describe())
        return d

    # ------------------------------------------------------------------ internals

    def _iterate(self, call: Call, flush: bool) -> _Raw:
        ops = self._ops
        if ops is None:  # CPU: the host clock is the device clock
            t0 = time.perf_counter()
            call()
            ms = (time.perf_counter() - t0) * 1e3
            return _Raw(ms, ms, ms, 0.0, ms, ms)
        if flush:
            ops.flush()  # cold L2: enqueued before the start event, so never timed
        ops.wait_stream()  # the host clock starts from an idle device: a side stream cannot hide in the flush
        cover = cover_for(self._launches, self.policy.launch_cover_ms)
        g0, start, end = self._events
        t0 = time.perf_counter()
        ops.record(g0)
        if cover:
            ops.cover(cover)  # hold the stream so start event and kernel are queued back to back
        ops.record(start)
        tc = time.perf_counter()
        call()
        tr = time.perf_counter()
        ops.record(end)
        ops.wait_device()  # device-wide: waits for work the call left on any stream
        t1 = time.perf_counter()
        self._launches.append((tr - tc) * 1e3)
        held = ops.elapsed_ms(g0, start)
        if cover:
            ops.observe_cover(cover, held)
        return _Raw(ops.elapsed_ms(start, end), (t1 - t0) * 1e3, (tr - tc) * 1e3, held,
                    ops.elapsed_ms(g0, end), (tr - t0) * 1e3)

    def _gap(self, r: _Raw) -> bool:
        if self._ops is None:
            return False
        return host_gap(r.span_ms, r.host_ms, r.issued_ms, self.host_floor_ms,
                        self.policy.host_check_tolerance, self._slack_ms)

    def _measure_floors(self) -> None:
        """Host floor = the timed iteration with nothing called and no cover; its spread sets the slack."""
        ops = self._ops
        self._events = (ops.event(), ops.event(), ops.event())
        with self._on_device():
            floors, syncs = [], []
            for i in range(_FLOOR_REPS + 5):
                ops.wait_device()
                g0, start, end = self._events
                t0 = time.perf_counter()
                ops.record(g0)
                ops.record(start)
                ops.record(end)
                ops.wait_device()
                t1 = time.perf_counter()
                ops.wait_device()
                t2 = time.perf_counter()
                if i >= 5:  # first few include lazy event / context setup
                    floors.append((t1 - t0) * 1e3)
                    syncs.append((t2 - t1) * 1e3)
        floors.sort()
        self.host_floor_ms = _median(floors)
        self.sync_floor_ms = _median(syncs)
        jitter = floors[int(0.9 * (len(floors) - 1))] - self.host_floor_ms
        self._slack_ms = max(_MIN_SLACK_MS, 3.0 * jitter)

    def _graph_device_ms(self, call: Call, reps: int = _SPLIT_REPS) -> tuple[float | None, str]:
        try:
            replay, release = self._ops.capture(call)
        except Exception as exc:  # capture refuses host syncs, unsafe allocations, ...
            msg = str(exc).strip().splitlines()
            return None, f"graph capture failed: {type(exc).__name__}: {msg[0] if msg else ''}"
        learned = list(self._launches)  # a replay launches in microseconds: keep the eager launch history
        try:
            return _median([self._iterate(replay, False).device_ms for _ in range(reps)]), ""
        finally:
            self._launches.clear()
            self._launches.extend(learned)
            release()

    def _next(self, calls: Sequence[Call]) -> Call:
        index = self._tick % len(calls)
        self._tick += 1
        if self.before_each is not None:
            self.before_each(index)  # queued before the flush and the start event: never timed
        return calls[index]

    def _sync(self) -> None:
        if self._ops is not None:
            self._ops.wait_device()

    def _on_device(self):
        import contextlib

        return self._ops.on_device() if self._ops is not None else contextlib.nullcontext()


def _as_calls(calls) -> Sequence[Call]:
    calls = [calls] if callable(calls) else list(calls)
    if not calls:
        raise ConfigError("Timer: no calls to time")
    return calls


def _median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))
