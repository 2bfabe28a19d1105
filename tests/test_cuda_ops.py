"""CudaOps and the runtime shim, driven on a CPU-only machine through a stand-in torch.cuda.

These pin the logic (flush size, persisting-L2 reset and detection, cover calibration, recovery after a
failed capture); the gpu-marked tests in test_timing.py check it against the real device.
"""

import contextlib
import enum
import sys
import types

import pytest
import torch

from solbench.gpu import cudart
from solbench.gpu.cuda_ops import CudaOps

L2 = 50 << 20
CYCLES_PER_MS = 1.98e6


class FakeRuntime:
    source = "fake"

    def __init__(self, fail_limit=False):
        self.limit = 4 << 20  # a carve-out left by someone else
        self.calls = []
        self.fail_limit = fail_limit

    def set_persisting_l2_limit(self, nbytes):
        self.calls.append(("set", nbytes))
        if self.fail_limit:
            raise RuntimeError("cudaDeviceSetLimit failed: CUDA error 1")
        self.limit = nbytes

    def persisting_l2_limit(self):
        return self.limit

    def reset_persisting_l2(self):
        self.calls.append(("reset",))

    def clear_last_error(self):
        self.calls.append(("clear",))
        return 0


def fake_torch(capture_error=None):
    clock = [0.0]  # ms of simulated device time

    class Event:
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self, stream=None):
            self.t = clock[0]

        def elapsed_time(self, other):
            return other.t - self.t

    @contextlib.contextmanager
    def graph(g):
        yield
        if capture_error:
            raise RuntimeError(capture_error)

    stream = types.SimpleNamespace(synchronize=lambda: None, wait_stream=lambda other: None)
    buffers = []

    def zeros(n, dtype, device):
        buf = types.SimpleNamespace(n=n, dtype=dtype, device=device, fills=[], reads=0)
        buf.numel = lambda: buf.n
        buf.fill_ = buf.fills.append
        buffers.append(buf)
        return buf

    def total(buf, dim, dtype, out):
        buf.reads += 1

    cuda = types.SimpleNamespace(
        is_available=lambda: True, current_device=lambda: 0,
        get_device_properties=lambda i: types.SimpleNamespace(name="Fake H200", L2_cache_size=L2),
        device=lambda i: contextlib.nullcontext(), Event=Event, current_stream=lambda i=None: stream,
        synchronize=lambda i=None: None, _sleep=lambda cycles: clock.__setitem__(0, clock[0] + cycles / CYCLES_PER_MS),
        Stream=lambda i=None: stream, stream=lambda s: contextlib.nullcontext(),
        CUDAGraph=lambda: types.SimpleNamespace(replay=lambda: None, reset=lambda: None), graph=graph,
    )
    return types.SimpleNamespace(cuda=cuda, device=torch.device, zeros=zeros, sum=total, int32=torch.int32,
                                 int64=torch.int64, buffers=buffers)


@pytest.fixture
def fake(monkeypatch):
    def install(runtime=None, capture_error=None):
        ft = fake_torch(capture_error)
        monkeypatch.setitem(sys.modules, "torch", ft)
        if runtime is None:
            monkeypatch.setattr(cudart, "load", lambda: (_ for _ in ()).throw(cudart.RuntimeUnavailable("none here")))
        else:
            monkeypatch.setattr(cudart, "load", lambda: runtime)
        return ft
    return install


def test_flush_buffer_is_twice_l2_and_each_flush_writes_it(fake):
    ft = fake(FakeRuntime())
    notes = []
    ops = CudaOps("cuda", cold_l2=True, notes=notes)
    buf = ft.buffers[0]
    assert buf.n * 4 >= 2 * L2 and buf.device == "cuda:0"
    ops.flush()
    ops.flush()
    assert len(buf.fills) == 2 and buf.fills[0] != buf.fills[1]
    assert any("L2 flush" in n for n in notes)
    assert ops.describe()["flush_bytes"] >= 2 * L2


def test_read_flush_reads_instead_of_writing(fake):
    ft = fake(FakeRuntime())
    notes = []
    ops = CudaOps("cuda", cold_l2=True, notes=notes, flush="read")
    ops.flush()
    buf = ft.buffers[0]
    assert buf.reads == 1 and buf.fills == [] and ops.describe()["flush"] == "read"
    assert any("read before every" in n for n in notes)


def test_no_flush_buffer_when_cold_l2_is_off(fake):
    ft = fake(FakeRuntime())
    ops = CudaOps("cuda", cold_l2=False, notes=[])
    ops.flush()
    assert ft.buffers == [] and ops.describe()["flush_bytes"] == 0


def test_persisting_carve_out_reset_at_start_and_detected_later(fake):
    rt = FakeRuntime()
    fake(rt)
    notes = []
    ops = CudaOps("cuda", cold_l2=True, notes=notes)
    assert rt.limit == 0 and ("reset",) in rt.calls
    assert any("persisting-L2 carve-out set to 0" in n for n in notes)
    assert ops.persisting_l2_set() is False
    rt.limit = 1 << 20  # a candidate sets one
    assert ops.persisting_l2_set() is True and rt.limit == 0


def test_persisting_reset_impossible_or_refused_is_noted(fake):
    fake(None)
    notes = []
    ops = CudaOps("cuda", cold_l2=True, notes=notes)
    assert any("impossible" in n for n in notes) and ops.persisting_l2_set() is False
    rt = FakeRuntime(fail_limit=True)
    fake(rt)
    notes = []
    CudaOps("cuda", cold_l2=True, notes=notes)
    assert any("failed" in n for n in notes) and ("clear",) in rt.calls


def test_cover_calibrates_to_the_sm_clock(fake):
    fake(FakeRuntime())
    ops = CudaOps("cuda", cold_l2=False, notes=[])
    assert ops._cycles_per_ms == pytest.approx(CYCLES_PER_MS, rel=1e-6)
    a, b = ops.event(), ops.event()
    ops.record(a)
    ops.cover(0.1)
    ops.record(b)
    assert ops.elapsed_ms(a, b) == pytest.approx(0.1, rel=1e-3)


def test_failed_capture_raises_and_clears_the_pending_error(fake):
    rt = FakeRuntime()
    fake(rt, capture_error="operation not permitted when stream is capturing")
    ops = CudaOps("cuda", cold_l2=False, notes=[])
    rt.calls.clear()
    ran = []
    with pytest.raises(RuntimeError, match="capturing"):
        ops.capture(lambda: ran.append(1))
    assert len(ran) == 4  # three warm-up calls on the side stream, one captured
    assert ("clear",) in rt.calls


def test_python_runtime_caller_unpacks_cuda_python_tuples():
    class Err(enum.IntEnum):
        cudaSuccess = 0
        cudaErrorInvalidValue = 1

    class Limit(enum.IntEnum):
        cudaLimitPersistingL2CacheSize = 6

    rt = types.SimpleNamespace(
        cudaLimit=Limit,
        cudaDeviceGetLimit=lambda limit: (Err.cudaSuccess, 1024 if limit == 6 else 0),
        cudaDeviceSetLimit=lambda limit, value: (Err.cudaErrorInvalidValue,),
        cudaRuntimeGetVersion=lambda: (Err.cudaSuccess, 12080),
        cudaGetLastError=lambda: (Err.cudaErrorInvalidValue,),
    )
    runtime = cudart.Runtime("fake", cudart._python_caller(rt))
    assert runtime.persisting_l2_limit() == 1024
    assert runtime.runtime_version() == 12080
    assert runtime.clear_last_error() == 1
    with pytest.raises(RuntimeError, match="cudaErrorInvalidValue"):
        runtime.set_persisting_l2_limit(0)


def test_runtime_load_on_a_machine_without_cuda_says_why():
    try:
        rt = cudart.load()
    except cudart.RuntimeUnavailable as exc:
        assert "no CUDA runtime" in str(exc)
    else:  # a runtime library is installed (e.g. nvidia-cuda-runtime wheels): it must at least load
        assert rt.source


def test_timer_drives_cuda_ops_end_to_end(fake):
    from solbench.core.policy import TimingPolicy
    from solbench.sandbox.timing import Timer

    ft = fake(FakeRuntime())
    timer = Timer(TimingPolicy(warmup_ms=1.0), "cuda")
    kernel = lambda: ft.cuda._sleep(int(0.5 * CYCLES_PER_MS))  # noqa: E731  0.5 ms of device time
    timer.warm_up([kernel])
    samples = timer.take([kernel, kernel], 4)
    assert [s.device_ms for s in samples] == pytest.approx([0.5] * 4)
    assert all(s.cover_ms > 0 for s in samples)
    split = timer.launcher_split(kernel)
    assert split.graph_device_ms is not None and split.graph_error == ""
    assert timer.describe()["gpu"] == "Fake H200" and timer.notes
