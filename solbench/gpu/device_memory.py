"""Device memory the supervisor shares with its workers: one driver allocation per tensor, so that a worker
which maps a tensor (CUDA IPC maps whole allocations) reaches that tensor and nothing else of the
supervisor's, and a worker that dies leaves nothing behind (the driver drops a dead process's mappings).

Supervisor side: `empty(shape, dtype)` is a torch tensor over a fresh cuMemAlloc allocation (no copy:
torch wraps it through __cuda_array_interface__, and the tensor keeps its owner, a `Block`, alive). When
the last tensor over it is gone the allocation is freed, unless a worker it was lent to (`lend`, by
solbench.gpu.ipc when it makes the worker's token) may still map it: then it waits until that worker says
it let go (`returned` after its release or prepare) or is gone (`returned` with no mark).

Worker side: `open_mapping(handle, nbytes)` maps an allocation from its IPC handle (once per process),
`take_opened()` names those mapped since the last call, and `Mapping.close()` unmaps one.

Sizes are rounded up to IPC_GRANULE: the driver packs smaller allocations into shared 2 MiB blocks, and
CUDA IPC then shares the whole block, neighbours included (CUDA programming guide, "Interprocess
Communication"). The slack past the bytes asked for is zeroed (it may be memory the supervisor freed).
Addresses are at least 256-byte aligned (in practice 2 MiB), as every kernel expects.
"""

from __future__ import annotations

import bisect
import ctypes
import threading
import weakref

from solbench.gpu import driver

IPC_GRANULE = 2 << 20
"""Bytes every allocation is rounded up to: the granularity at which CUDA IPC shares memory."""


def rounded(nbytes: int) -> int:
    """The bytes an allocation for `nbytes` takes (never 0: cuMemAlloc refuses a size of 0)."""
    return max(1, -(-nbytes // IPC_GRANULE)) * IPC_GRANULE


class Allocation:
    """One cuMemAlloc allocation, alive until freed (its Block may be gone while a worker still holds it)."""

    __slots__ = ("ptr", "size", "nbytes", "ordinal", "holders", "dropped", "handle")

    def __init__(self, ptr: int, size: int, nbytes: int, ordinal: int):
        self.ptr = ptr
        self.size = size
        """Bytes allocated (rounded)."""
        self.nbytes = nbytes
        """Bytes the tensors over it see."""
        self.ordinal = ordinal
        self.holders: dict[int, int] = {}
        """Worker (holder id) -> the generation of its loan; the allocation is freed only once empty."""
        self.dropped = False
        """No tensor of the supervisor's is over it any more."""
        self.handle: bytes | None = None
        """Its IPC handle, once made (solbench.gpu.ipc)."""


_lock = threading.RLock()  # finalizers run wherever the last reference goes, other threads included
_live: dict[int, Allocation] = {}
_bases: list[int] = []  # sorted keys of _live, to find the allocation holding an address
_loans: dict[int, set[int]] = {}  # holder -> pointers of the allocations lent to it
_generation: dict[int, int] = {}
_holder_ids = iter(range(1, 1 << 62))


class Block:
    """Owner of one allocation: exposes its first `nbytes` as a byte array to torch, which keeps the Block
    alive as long as any tensor over it (so the allocation outlives every view of it)."""

    def __init__(self, nbytes: int, ordinal: int):
        drv = driver.load()
        size = rounded(nbytes)
        ptr = ctypes.c_uint64(0)
        with drv.context(ordinal):
            try:
                drv.call("cuMemAlloc_v2", ctypes.byref(ptr), size)
            except driver.DriverError as exc:
                if exc.code != driver.CUDA_ERROR_OUT_OF_MEMORY:
                    raise
                _out_of_memory(drv, ordinal, size, ptr)
        self.allocation = Allocation(ptr.value, size, nbytes, ordinal)
        with _lock:
            _live[ptr.value] = self.allocation
            bisect.insort(_bases, ptr.value)
        finalizer = weakref.finalize(self, _drop, self.allocation)
        finalizer.atexit = False  # at exit the process's memory goes with its context
        if size > nbytes:  # the rounding's slack, which a worker maps too: never what freed memory held
            with drv.context(ordinal):
                drv.call("cuMemsetD8_v2", ctypes.c_uint64(ptr.value + nbytes), 0, size - nbytes)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": (self.allocation.nbytes,), "typestr": "|u1", "data": (self.allocation.ptr, False),
                "version": 3, "strides": None, "stream": None}


def _out_of_memory(drv, ordinal: int, size: int, ptr) -> None:
    """Free blocks torch's caching allocator holds and try once more; torch's OutOfMemoryError if that fails
    too (the error the supervisor records as a machine error for the scenario)."""
    import torch

    torch.cuda.empty_cache()
    try:
        drv.call("cuMemAlloc_v2", ctypes.byref(ptr), size)
    except driver.DriverError as exc:
        if exc.code != driver.CUDA_ERROR_OUT_OF_MEMORY:
            raise
        raise torch.OutOfMemoryError(f"cuMemAlloc of {size} bytes on device {ordinal}: out of memory") from None


def _drop(allocation: Allocation) -> None:
    with _lock:
        allocation.dropped = True
        if not allocation.holders:
            _free(allocation)


def _free(allocation: Allocation) -> None:
    with _lock:
        if _live.pop(allocation.ptr, None) is None:
            return
        del _bases[bisect.bisect_left(_bases, allocation.ptr)]
    drv = driver.load()
    with drv.context(allocation.ordinal):
        drv.call("cuMemFree_v2", ctypes.c_uint64(allocation.ptr))


def _as_bytes(owner, ordinal: int):
    """A uint8 CUDA tensor over owner's memory (no copy; the tensor holds owner)."""
    import torch

    with torch.cuda.device(ordinal):
        t = torch.as_tensor(owner, device=f"cuda:{ordinal}")
    if t.numel() and t.data_ptr() != owner.__cuda_array_interface__["data"][0]:
        raise driver.DriverError("torch copied the memory it was asked to wrap")
    return t


def _ordinal(device) -> int:
    import torch

    device = torch.device(device)
    return device.index if device.index is not None else torch.cuda.current_device()


def empty_bytes(nbytes: int, device="cuda"):
    """An uninitialised uint8 tensor of `nbytes` in an allocation of its own."""
    ordinal = _ordinal(device)
    return _as_bytes(Block(nbytes, ordinal), ordinal)


def empty(shape, dtype, device="cuda"):
    """An uninitialised tensor in an allocation of its own (bf16 and fp8 too: bytes viewed as dtype)."""
    import math

    return empty_bytes(math.prod(shape) * dtype.itemsize, device).view(dtype).view(tuple(shape))


def copy_of(t):
    """A contiguous copy of t in an allocation of its own."""
    fresh = empty(tuple(t.shape), t.dtype, t.device)
    fresh.copy_(t)
    return fresh


def allocation_of(tensor) -> Allocation | None:
    """The allocation of this module's that holds the tensor's memory (None: not one of them)."""
    ptr = tensor.data_ptr()
    with _lock:
        i = bisect.bisect_right(_bases, ptr) - 1
        found = _live[_bases[i]] if i >= 0 else None
    if found is None or found.dropped or not found.ptr <= ptr < found.ptr + max(found.nbytes, 1):
        return None
    return found


def live() -> list[Allocation]:
    """Every allocation not yet freed (those waiting for a worker included)."""
    with _lock:
        return list(_live.values())


# ---------------------------------------------------------------- loans to workers


def new_holder() -> int:
    """An id for one worker handle (a Python worker or a native runner) to lend allocations to."""
    return next(_holder_ids)


def lend(allocation: Allocation, holder: int) -> None:
    """The allocation is sent to `holder`: it is not freed before the holder has let go of it."""
    with _lock:
        allocation.holders[holder] = _generation.get(holder, 0)
        _loans.setdefault(holder, set()).add(allocation.ptr)


def loan_mark(holder: int) -> int:
    """A mark taken before a request after whose reply the holder holds nothing it was lent before it
    (release, prepare): pass it to `returned` once that reply has come."""
    with _lock:
        mark = _generation.get(holder, 0)
        _generation[holder] = mark + 1
        return mark


def returned(holder: int, mark: int | None = None) -> None:
    """The holder let go of what it was lent up to `mark` (None: of everything, its process is gone); what
    no one holds any more and no tensor is over is freed."""
    with _lock:
        for ptr in list(_loans.get(holder, ())):
            allocation = _live.get(ptr)
            if allocation is None or holder not in allocation.holders:
                _loans[holder].discard(ptr)
                continue
            if mark is not None and allocation.holders[holder] > mark:
                continue
            del allocation.holders[holder]
            _loans[holder].discard(ptr)
            if allocation.dropped and not allocation.holders:
                _free(allocation)
        if mark is None:
            _loans.pop(holder, None)


def lent_to(holder: int) -> int:
    """How many allocations the holder may still map."""
    with _lock:
        return len(_loans.get(holder, ()))


# ---------------------------------------------------------------- worker side


class Mapping:
    """One allocation of the supervisor's, mapped here from its IPC handle; exposes its first `nbytes`."""

    def __init__(self, handle: bytes, nbytes: int, ordinal: int):
        drv = driver.load()
        ptr = ctypes.c_uint64(0)
        with drv.context(ordinal):
            drv.call("cuIpcOpenMemHandle_v2", ctypes.byref(ptr), driver.IpcMemHandle.from_buffer_copy(handle),
                     driver.IPC_LAZY_ENABLE_PEER_ACCESS)
        self.handle, self.ptr, self.nbytes, self.ordinal = handle, ptr.value, nbytes, ordinal
        self._closer = weakref.finalize(self, _unmap, handle, ptr.value, ordinal)
        self._closer.atexit = False

    @property
    def closed(self) -> bool:
        return not self._closer.alive

    def close(self) -> None:
        """Unmap it (once; tensors still over it must not be used after)."""
        self._closer()

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": (self.nbytes,), "typestr": "|u1", "data": (self.ptr, False), "version": 3,
                "strides": None, "stream": None}

    def tensor(self):
        """A uint8 tensor over the mapped bytes (it keeps this Mapping alive)."""
        return _as_bytes(self, self.ordinal)


_mapped: dict[bytes, weakref.ref] = {}  # handle -> open Mapping (a handle is opened once per process)
_opened: list[Mapping] = []


def _unmap(handle: bytes, ptr: int, ordinal: int) -> None:
    with _lock:
        ref = _mapped.get(handle)
        if ref is not None and (ref() is None or ref().ptr == ptr):
            del _mapped[handle]
    drv = driver.load()
    with drv.context(ordinal):
        drv.call("cuIpcCloseMemHandle", ctypes.c_uint64(ptr))


def open_mapping(handle: bytes, nbytes: int, device="cuda") -> Mapping:
    """The allocation behind `handle` mapped in this process (the open one if it is already)."""
    with _lock:
        ref = _mapped.get(handle)
        mapping = ref() if ref is not None else None
        if mapping is None or mapping.closed:
            mapping = Mapping(handle, nbytes, _ordinal(device))
            _mapped[handle] = weakref.ref(mapping)
        _opened.append(mapping)
        return mapping


def take_opened() -> list[Mapping]:
    """The mappings opened (or found open) since the last call: a request's own, when called after it was
    received."""
    with _lock:
        taken = list(dict.fromkeys(_opened))
        _opened.clear()
        return taken
