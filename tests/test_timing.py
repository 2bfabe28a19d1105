"""Timer: the CPU path, the CUDA procedure against a simulated device, and (gpu marker) the real thing."""

import contextlib
import time
import types

import pytest

from solbench.core.errors import ConfigError
from solbench.core.policy import TimingPolicy
from solbench.sandbox.timing import HOST_GAP, PERSISTING_L2, LauncherSplit, Sample, Timer, cover_for, host_gap

try:
    import torch

    HAS_CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover
    HAS_CUDA = False



def gpu(test):
    """The device tier: marked `gpu`, skipped cleanly where torch sees no CUDA device."""
    return pytest.mark.gpu(pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")(test))


POLICY = TimingPolicy(warmup_ms=5.0)


def _spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class FakeDevice:
    """A simulated GPU on the host clock: one in-order timing stream and one side stream."""

    def __init__(self):
        self.stream_free = 0.0
        self.side_free = 0.0
        self.flushes = 0
        self.carve_out = False
        self.capture_error = None
        self.capturing = None

    def _enqueue(self, ms):
        self.stream_free = max(time.perf_counter(), self.stream_free) + ms / 1e3

    def kernel(self, ms):
        if self.capturing is not None:
            self.capturing.append(ms)
        else:
            self._enqueue(ms)

    def side_kernel(self, ms):
        self.side_free = max(time.perf_counter(), self.side_free) + ms / 1e3

    # --- the ops protocol Timer uses
    def event(self):
        return types.SimpleNamespace(t=None)

    def record(self, ev):
        ev.t = max(time.perf_counter(), self.stream_free)

    def elapsed_ms(self, a, b):
        return (b.t - a.t) * 1e3

    def flush(self):
        self.flushes += 1
        self._enqueue(0.2)

    def cover(self, ms):
        self._enqueue(ms)

    def observe_cover(self, requested_ms, actual_ms):
        pass

    def wait_stream(self):
        _spin(self.stream_free - time.perf_counter())

    def wait_device(self):
        _spin(max(self.stream_free, self.side_free) - time.perf_counter())

    def on_device(self):
        return contextlib.nullcontext()

    def persisting_l2_set(self):
        found, self.carve_out = self.carve_out, False
        return found

    def capture(self, call):
        """Like a CUDA graph: the host launcher runs once; replay enqueues only the device work."""
        if self.capture_error:
            raise RuntimeError(self.capture_error)
        self.capturing = []
        call()
        work, self.capturing = self.capturing, None
        return (lambda: [self._enqueue(ms) for ms in work]), (lambda: None)

    def describe(self):
        return {"gpu": "fake"}


def _median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


# ---------------------------------------------------------------- pure helpers


def test_host_gap_rule():
    # honest: the device span explains the wall time
    assert not host_gap(span_ms=1.0, host_ms=1.05, issued_ms=0.01, floor_ms=0.02, tolerance=0.5)
    # slow launcher, idle device: the host's own issue time explains it
    assert not host_gap(span_ms=0.05, host_ms=2.0, issued_ms=1.9, floor_ms=0.02, tolerance=0.5)
    # work elsewhere: neither explains it
    assert host_gap(span_ms=0.05, host_ms=3.0, issued_ms=0.01, floor_ms=0.02, tolerance=0.5)
    # differences within the slack are jitter
    assert not host_gap(span_ms=0.001, host_ms=0.02, issued_ms=0.001, floor_ms=0.005, tolerance=0.5)


def test_cover_for_tracks_launch_time_within_cap():
    assert cover_for([], 0.0) == 0.0
    assert 0 < cover_for([], 0.25) <= 0.25
    assert cover_for([0.1] * 10, 0.25) == pytest.approx(0.13)
    assert cover_for([5.0] * 10, 0.25) == 0.25


# ---------------------------------------------------------------- CPU path


def test_cpu_samples_positive_and_host_equals_device():
    timer = Timer(POLICY, "cpu")
    samples = timer.take([lambda: _spin(0.0005)], 4)
    assert len(samples) == 4 and all(isinstance(s, Sample) for s in samples)
    assert all(s.device_ms > 0.4 and s.device_ms == s.host_ms and not s.flags for s in samples)


def test_cpu_warm_up_honours_time_budget_and_runs_each_call():
    counts = [0, 0, 0]
    calls = [lambda i=i: counts.__setitem__(i, counts[i] + 1) for i in range(3)]
    Timer(TimingPolicy(warmup_ms=0.0), "cpu").warm_up(calls)
    assert counts == [1, 1, 1]
    t0 = time.perf_counter()
    Timer(TimingPolicy(warmup_ms=30.0), "cpu").warm_up([lambda: _spin(0.001)])
    elapsed_ms = (time.perf_counter() - t0) * 1e3
    assert 30.0 <= elapsed_ms < 30.0 + 50.0


def test_rotation_continues_across_batches():
    seen = []
    calls = [lambda i=i: seen.append(i) for i in range(3)]
    timer = Timer(POLICY, "cpu")
    timer.take(calls, 2)
    timer.take(calls, 4)
    assert seen == [0, 1, 2, 0, 1, 2]


def test_cpu_launcher_split_degrades_cleanly():
    split = Timer(POLICY, "cpu").launcher_split(lambda: _spin(0.0002))
    assert isinstance(split, LauncherSplit)
    assert split.graph_device_ms is None and "CPU" in split.graph_error
    assert split.eager_device_ms > 0 and split.eager_host_ms > 0 and split.eager_single_ms > 0
    assert set(split.to_dict()) >= {"graph_device_ms", "eager_host_ms", "eager_device_ms", "overhead_ms"}


def test_launcher_split_repetitions_follow_the_budget():
    """A long call gets the minimum repetitions (its launcher is negligible next to it), a short one many."""
    def counted(seconds):
        count = [0]

        def call():
            count[0] += 1
            _spin(seconds)
        return call, count

    timer = Timer(TimingPolicy(warmup_ms=5.0, launcher_budget_ms=60.0), "cpu")
    long_call, long_count = counted(0.04)
    short_call, short_count = counted(0.0001)
    timer.launcher_split(long_call)
    timer.launcher_split(short_call)
    assert long_count[0] == 1 + 1 + 2  # eager, single, one batch of 2: a quarter of 60 ms each
    assert short_count[0] == 15 + 15 + 5 * 10


def test_bad_device_is_a_config_error():
    with pytest.raises(ConfigError):
        Timer(POLICY, "tpu")
    with pytest.raises(ConfigError):
        Timer(POLICY, "cpu").take([], 1)


@pytest.mark.skipif(HAS_CUDA, reason="checks the no-GPU message")
def test_cuda_without_gpu_is_a_config_error():
    with pytest.raises(ConfigError, match="no CUDA device"):
        Timer(POLICY, "cuda")


# ---------------------------------------------------------------- CUDA procedure, simulated device


def _fake_timer(**policy):
    dev = FakeDevice()
    return dev, Timer(TimingPolicy(warmup_ms=5.0, **policy), "cuda", ops=dev)


# Simulated kernels run for tens of ms, so that a loaded CI host preempting the test for a few ms cannot
# look like hidden work (on a GPU host the worker has its cores to itself).


def test_honest_kernel_timed_by_events_and_not_flagged():
    dev, timer = _fake_timer()
    call = lambda: dev.kernel(20.0)  # noqa: E731
    timer.warm_up([call])
    samples = timer.take([call], 5)
    assert _median([s.device_ms for s in samples]) == pytest.approx(20.0, abs=0.5)
    assert not any(s.flags for s in samples)
    assert dev.flushes >= 5 + 1  # one per timed iteration, warm-up flushes too


def test_side_stream_work_is_flagged():
    dev, timer = _fake_timer()
    call = lambda: dev.side_kernel(20.0)  # noqa: E731
    timer.warm_up([call])
    samples = timer.take([call], 5)
    assert all(s.device_ms < 1.0 and s.host_ms > 19.0 for s in samples)
    assert all(HOST_GAP in s.flags for s in samples)


def test_one_glitch_in_a_batch_is_not_flagged():
    dev, timer = _fake_timer()
    n = [0]

    def call():
        n[0] += 1
        (dev.side_kernel if n[0] == 3 else dev.kernel)(20.0)

    assert not any(s.flags for s in timer.take([call], 5))


def test_slow_launcher_is_not_hidden_work():
    dev, timer = _fake_timer()

    def call():
        _spin(0.002)  # host-side planning with the device idle
        dev.kernel(0.2)

    assert not any(s.flags for s in timer.take([call], 5))


def test_launch_cover_keeps_launcher_gap_out_of_event_time():
    def call_on(dev):
        def call():
            _spin(0.0001)  # 0.1 ms of launcher work before the kernel is enqueued
            dev.kernel(1.0)
        return call

    dev, timer = _fake_timer()
    timer.warm_up([call_on(dev)])
    covered = _median([s.device_ms for s in timer.take([call_on(dev)], 7)])
    dev2, bare = _fake_timer(launch_cover_ms=0.0)
    uncovered = _median([s.device_ms for s in bare.take([call_on(dev2)], 7)])
    assert covered == pytest.approx(1.0, abs=0.04)
    assert uncovered > covered + 0.06


def test_no_flush_when_cold_l2_is_off():
    dev, timer = _fake_timer(cold_l2=False)
    timer.take([lambda: dev.kernel(0.1)], 3)
    assert dev.flushes == 0


def test_persisting_carve_out_is_flagged():
    dev, timer = _fake_timer()
    dev.carve_out = True
    assert all(PERSISTING_L2 in s.flags for s in timer.take([lambda: dev.kernel(0.1)], 3))
    assert not any(s.flags for s in timer.take([lambda: dev.kernel(0.1)], 3))


def test_launcher_split_separates_host_path_from_device_time():
    dev, timer = _fake_timer()

    def call():
        _spin(0.0005)
        dev.kernel(0.1)

    split = timer.launcher_split(call)
    assert split.graph_device_ms == pytest.approx(0.1, abs=0.03)
    assert split.eager_host_ms >= 0.45  # the host path is the bottleneck (a loaded CI host only adds)
    assert split.overhead_ms == pytest.approx(split.eager_host_ms - split.graph_device_ms)
    assert split.eager_single_ms >= 0.45


def test_launcher_split_records_capture_failure():
    dev, timer = _fake_timer()
    dev.capture_error = "operation not permitted when stream is capturing"
    split = timer.launcher_split(lambda: dev.kernel(0.1))
    assert split.graph_device_ms is None and "not permitted" in split.graph_error
    assert split.overhead_ms == pytest.approx(split.eager_host_ms - split.eager_device_ms)


# ---------------------------------------------------------------- real GPU


def _sleep_cycles_for(ms):
    """Cycles of torch.cuda._sleep that take about `ms` at the current SM clock."""
    cycles = 1_000_000
    for _ in range(3):
        cycles = int(cycles * ms / _reference_ms(lambda c=cycles: torch.cuda._sleep(c), n=3))
    return cycles


def _reference_ms(fn, n=10):
    """Plain events around n back-to-back calls, / n: the device queue never idles, so no launch gap."""
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(2_000_000)  # keep the stream busy while the calls are queued
    a.record()
    for _ in range(n):
        fn()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) / n


@gpu
def test_gpu_events_match_known_duration_kernel():
    timer = Timer(TimingPolicy(warmup_ms=50.0), "cuda")
    cycles = _sleep_cycles_for(1.0)
    call = lambda: torch.cuda._sleep(cycles)  # noqa: E731
    timer.warm_up([call])
    samples = timer.take([call], 9)
    reference = _reference_ms(call)
    assert _median([s.device_ms for s in samples]) == pytest.approx(reference, rel=0.03)
    assert not any(HOST_GAP in s.flags for s in samples)


@gpu
def test_gpu_launch_cover_hides_host_launcher_time():
    timer = Timer(TimingPolicy(warmup_ms=50.0), "cuda")
    cycles = _sleep_cycles_for(0.2)

    def call():
        _spin(0.0001)  # 0.1 ms of launcher work before the kernel is enqueued
        torch.cuda._sleep(cycles)

    timer.warm_up([call])
    measured = _median([s.device_ms for s in timer.take([call], 9)])
    assert measured == pytest.approx(_reference_ms(lambda: torch.cuda._sleep(cycles)), abs=0.02)


@gpu
def test_gpu_l2_flush_makes_small_memory_bound_op_slower():
    x = torch.randn(4 << 20, device="cuda")  # 16 MiB in, 16 MiB out: fits in L2 warm
    y = torch.empty_like(x)
    call = lambda: torch.mul(x, 2.0, out=y)  # noqa: E731
    medians = {}
    for cold in (True, False):
        timer = Timer(TimingPolicy(warmup_ms=50.0, cold_l2=cold), "cuda")
        timer.warm_up([call])
        medians[cold] = _median([s.device_ms for s in timer.take([call], 21)])
    assert medians[True] > 1.1 * medians[False], medians


@gpu
def test_gpu_side_stream_trick_is_flagged():
    timer = Timer(TimingPolicy(warmup_ms=50.0), "cuda")
    cycles = _sleep_cycles_for(2.0)
    side = torch.cuda.Stream()

    def cheat():
        with torch.cuda.stream(side):
            torch.cuda._sleep(cycles)

    timer.warm_up([cheat])
    flagged = timer.take([cheat], 5)
    assert all(HOST_GAP in s.flags for s in flagged), flagged
    honest = timer.take([lambda: torch.cuda._sleep(cycles)], 5)
    assert not any(HOST_GAP in s.flags for s in honest), honest


@gpu
def test_gpu_graph_device_time_not_above_eager_host_path():
    a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(a)
    timer = Timer(TimingPolicy(warmup_ms=50.0), "cuda")
    split = timer.launcher_split(lambda: torch.matmul(a, a, out=out))
    assert split.graph_device_ms is not None, split.graph_error
    assert split.graph_device_ms <= split.eager_host_ms * 1.05 + 0.005
    bad = timer.launcher_split(lambda: torch.matmul(a, a, out=out).sum().item())  # host sync: no graph
    assert bad.graph_device_ms is None and bad.graph_error
    assert timer.take([lambda: torch.matmul(a, a, out=out)], 3)  # the context survived the failed capture


def test_input_copies_shrink_to_fit_device_memory_and_never_below_one():
    from solbench.supervisor.evaluate import input_copies

    policy = TimingPolicy(rotate_inputs=4)
    gib = 1 << 30
    assert input_copies(policy, copy_bytes=gib // 100, holders=7, device_bytes=140 * gib) == 4  # small: as policy
    # The H200 hopper OOM: 4 GB per copy and 7 implementations need 7 x 5 x 4 = 140 GiB; half of 140 fits 2 each.
    assert input_copies(policy, copy_bytes=4 * gib, holders=7, device_bytes=140 * gib) == 1
    assert input_copies(policy, copy_bytes=2 * gib, holders=7, device_bytes=140 * gib) == 4
    assert input_copies(policy, copy_bytes=2 * gib + 1, holders=7, device_bytes=140 * gib) == 3
    assert input_copies(policy, copy_bytes=100 * gib, holders=2, device_bytes=140 * gib) == 1
    assert input_copies(policy, copy_bytes=gib, holders=2, device_bytes=0) == 4  # CPU: no device to fill


def test_comparators_share_copies_only_when_not_even_one_each_fits():
    from solbench.supervisor.evaluate import comparators_share, input_copies, plan_copies

    gib = 1 << 30
    # The H200 hopper OOM: MHA decode at 588k keys, 12 GB a copy, candidate + 7 libraries on 140 GiB.
    assert comparators_share(copy_bytes=12 * gib, holders=8, device_bytes=140 * gib)
    assert input_copies(TimingPolicy(rotate_inputs=4), 12 * gib, 2, 140 * gib) == 1  # candidate + the pool
    assert not comparators_share(copy_bytes=4 * gib, holders=8, device_bytes=140 * gib)  # one each fits
    assert not comparators_share(copy_bytes=100 * gib, holders=8, device_bytes=0)  # CPU: nothing to fill
    # Sharing means one copy a set: the H200 still ran out at two on 5 GB (d96) split-KV decode, 8 holders.
    policy = TimingPolicy(rotate_inputs=4)
    assert plan_copies(policy, copy_bytes=5 * gib, holders=8, device_bytes=140 * gib) == (True, 1)
    assert plan_copies(policy, copy_bytes=4 * gib, holders=8, device_bytes=140 * gib) == (False, 1)
    assert plan_copies(policy, copy_bytes=gib // 100, holders=8, device_bytes=140 * gib) == (False, 4)


def test_l2_flush_is_a_recorded_policy_field():
    from solbench.core.errors import ConfigError
    from solbench.core.policy import TimingPolicy, with_overrides

    assert TimingPolicy().to_dict()["l2_flush"] == "read"
    assert with_overrides(TimingPolicy(), "l2_flush=both").l2_flush == "both"
    with pytest.raises(ConfigError, match="l2_flush"):
        TimingPolicy(l2_flush="erase")


def test_the_supervisor_hands_cached_blocks_back_after_each_reference(monkeypatch):
    """Its allocator's cached blocks are memory no worker's library can use (sdpa-efficient ran out beside
    97 GB held by the supervisor on the H200); CPU runs have nothing to hand back."""
    import torch

    from solbench.supervisor import evaluate

    calls = []
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: calls.append("empty_cache"))
    monkeypatch.setattr(torch.cuda, "ipc_collect", lambda: calls.append("ipc_collect"))
    evaluate._return_cached_memory("cpu")
    assert calls == []
    evaluate._return_cached_memory("cuda")
    assert calls == ["empty_cache"]  # no torch CUDA IPC to collect: workers get allocations of their own


def test_runs_flushed_differently_are_not_compared():
    """A write flush's dirty lines cost the timed kernel 6.8 % on the H200's small working sets: a gate or a
    board must not set a 'read' run against a 'write' one (runs recorded before the field existed lack it)."""
    from solbench.core.policy import measuring_differences

    read, write = TimingPolicy().to_dict(), TimingPolicy(l2_flush="write").to_dict()
    assert measuring_differences(write, read) == ["l2_flush 'write' vs 'read'"]
    old = {k: v for k, v in write.items() if k != "l2_flush"}
    assert measuring_differences(old, read) == []
