"""Device memory the supervisor shares with its workers: one driver allocation per tensor, so that a worker
which maps a tensor (a worker maps whole allocations) reaches that tensor and nothing else of the
supervisor's, and a worker that dies leaves nothing behind (the driver drops a dead process's mappings
and closes its file descriptors).

Each allocation is made with the driver's virtual memory management: cuMemCreate (exportable as a POSIX
file descriptor and nothing else), an address range of its own (cuMemAddressReserve), cuMemMap and
cuMemSetAccess. A worker can map it only through a file descriptor the supervisor exported for it
(cuMemExportToShareableHandle) and sent it over a Unix socket (solbench.gpu.ipc): there is no handle whose
bytes could be guessed or forged, as there was with legacy CUDA IPC handles.

Supervisor side: `empty(shape, dtype)` is a torch tensor over a fresh allocation (no copy: torch wraps it
through __cuda_array_interface__, and the tensor keeps its owner, a `Block`, alive). When the last tensor
over it is gone the allocation is freed, unless a worker it was lent to (`lend`, by solbench.gpu.ipc when
it makes the worker's token) may still map it: then it waits until that worker says it let go (`returned`
after its release or prepare) or is gone (`returned` with no mark). `export_fd` makes one file descriptor
of an allocation for one message.

Worker side: `open_mapping(fd, serial, size, nbytes)` maps an allocation from a file descriptor it was
sent (once per process: `serial` names the allocation across messages), `take_opened()` names those
mapped since the last call, and `Mapping.close()` unmaps one.

Sizes are rounded up to the driver's recommended granularity, and to IPC_GRANULE at least; the slack past
the bytes asked for is zeroed (it may be memory the supervisor freed). Addresses are aligned to the
granularity (2 MiB), more than the 256 bytes every kernel expects.
"""

from __future__ import annotations

import bisect
import ctypes
import itertools
import os
import threading
import weakref

from solbench.gpu import driver

IPC_GRANULE = 2 << 20
"""The least every allocation is rounded up to (the driver's recommended granularity is 2 MiB on the GPUs
solbench runs on; a larger one rounds further)."""


def rounded(nbytes: int, granule: int = IPC_GRANULE) -> int:
    """The bytes an allocation for `nbytes` takes (never 0: cuMemCreate refuses a size of 0)."""
    return max(1, -(-nbytes // granule)) * granule


_granules: dict[int, int] = {}


def granule(ordinal: int) -> int:
    """What allocations on device `ordinal` are rounded to: the driver's recommended granularity for an
    exportable allocation, rounded up to a multiple of IPC_GRANULE (cached per device)."""
    if ordinal not in _granules:
        drv, got = driver.load(), ctypes.c_size_t(0)
        prop = driver.device_allocation_prop(ordinal)
        drv.call("cuMemGetAllocationGranularity", ctypes.byref(got), ctypes.byref(prop),
                 driver.MEM_ALLOC_GRANULARITY_RECOMMENDED)
        _granules[ordinal] = rounded(IPC_GRANULE, max(got.value, 1))
    return _granules[ordinal]


class Allocation:
    """One cuMemCreate allocation mapped here, alive until freed (its Block may be gone while a worker still
    holds it)."""

    __slots__ = ("ptr", "size", "nbytes", "ordinal", "holders", "dropped", "handle", "serial")

    def __init__(self, ptr: int, size: int, nbytes: int, ordinal: int, handle: int):
        self.ptr = ptr
        self.size = size
        """Bytes allocated (rounded), mapped from ptr."""
        self.nbytes = nbytes
        """Bytes the tensors over it see."""
        self.ordinal = ordinal
        self.holders: dict[int, int] = {}
        """Worker (holder id) -> the generation of its loan; the allocation is freed only once empty."""
        self.dropped = False
        """No tensor of the supervisor's is over it any more."""
        self.handle = handle
        """Its CUmemGenericAllocationHandle (exported for each message that sends it, released when freed)."""
        self.serial = next(_serials)
        """Names it to workers across messages (never reused, unlike an address)."""


_lock = threading.RLock()  # finalizers run wherever the last reference goes, other threads included
_live: dict[int, Allocation] = {}
_bases: list[int] = []  # sorted keys of _live, to find the allocation holding an address
_loans: dict[int, set[int]] = {}  # holder -> pointers of the allocations lent to it
_generation: dict[int, int] = {}
_holder_ids = iter(range(1, 1 << 62))
_serials = itertools.count(1)


def _map(drv, handle: int, size: int, ordinal: int) -> int:
    """Map a whole allocation at an address range of its own, readable and writable by device `ordinal`;
    its address. Whatever was done is undone if a step fails."""
    ptr = ctypes.c_uint64(0)
    drv.call("cuMemAddressReserve", ctypes.byref(ptr), size, 0, 0, 0)  # alignment 0: the granularity
    try:
        drv.call("cuMemMap", ptr, size, 0, handle, 0)
        try:
            drv.call("cuMemSetAccess", ptr, size, ctypes.byref(driver.read_write_access(ordinal)), 1)
        except driver.DriverError:
            drv.call("cuMemUnmap", ptr, size)
            raise
    except driver.DriverError:
        drv.call("cuMemAddressFree", ptr, size)
        raise
    return ptr.value


def _unmap_range(drv, ptr: int, size: int) -> None:
    """Undo _map, once this context's work is done: unlike cuMemFree, cuMemUnmap does not wait for work
    still using the range (PyTorch's expandable segments synchronize before unmapping for the same reason),
    and a kernel of the supervisor's still reading the range would fault the whole context."""
    drv.call("cuCtxSynchronize")
    drv.call("cuMemUnmap", ctypes.c_uint64(ptr), size)
    drv.call("cuMemAddressFree", ctypes.c_uint64(ptr), size)


def _create(drv, size: int, ordinal: int) -> int:
    """A new allocation's handle; after an out-of-memory error, torch's cache gives back what it holds and
    it is tried once more (torch's OutOfMemoryError if that fails too: the error the supervisor records as a
    machine error for the scenario)."""
    handle, prop = ctypes.c_uint64(0), driver.device_allocation_prop(ordinal)
    try:
        drv.call("cuMemCreate", ctypes.byref(handle), size, ctypes.byref(prop), 0)
        return handle.value
    except driver.DriverError as exc:
        if exc.code != driver.CUDA_ERROR_OUT_OF_MEMORY:
            raise
    import torch

    torch.cuda.empty_cache()
    try:
        drv.call("cuMemCreate", ctypes.byref(handle), size, ctypes.byref(prop), 0)
    except driver.DriverError as exc:
        if exc.code != driver.CUDA_ERROR_OUT_OF_MEMORY:
            raise
        raise torch.OutOfMemoryError(f"cuMemCreate of {size} bytes on device {ordinal}: out of memory") from None
    return handle.value


class Block:
    """Owner of one allocation: exposes its first `nbytes` as a byte array to torch, which keeps the Block
    alive as long as any tensor over it (so the allocation outlives every view of it)."""

    def __init__(self, nbytes: int, ordinal: int):
        drv = driver.load()
        with drv.context(ordinal):
            size = rounded(nbytes, granule(ordinal))
            handle = _create(drv, size, ordinal)
            try:
                ptr = _map(drv, handle, size, ordinal)
            except driver.DriverError:
                drv.call("cuMemRelease", ctypes.c_uint64(handle))
                raise
        self.allocation = Allocation(ptr, size, nbytes, ordinal, handle)
        with _lock:
            _live[ptr] = self.allocation
            bisect.insort(_bases, ptr)
        finalizer = weakref.finalize(self, _drop, self.allocation)
        finalizer.atexit = False  # at exit the process's memory goes with its context
        if size > nbytes:  # the rounding's slack, which a worker maps too: never what freed memory held
            with drv.context(ordinal):
                drv.call("cuMemsetD8_v2", ctypes.c_uint64(ptr + nbytes), 0, size - nbytes)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": (self.allocation.nbytes,), "typestr": "|u1", "data": (self.allocation.ptr, False),
                "version": 3, "strides": None, "stream": None}


def _drop(allocation: Allocation) -> None:
    with _lock:
        allocation.dropped = True
        free = not allocation.holders
    if free:  # outside the lock: the free synchronizes the device, and other threads need the lock meanwhile
        _free(allocation)


def _free(allocation: Allocation) -> None:
    with _lock:
        if _live.pop(allocation.ptr, None) is None:
            return
        del _bases[bisect.bisect_left(_bases, allocation.ptr)]
    drv = driver.load()
    with drv.context(allocation.ordinal):
        _unmap_range(drv, allocation.ptr, allocation.size)
        # The memory itself goes once no worker maps it or holds a file descriptor of it either.
        drv.call("cuMemRelease", ctypes.c_uint64(allocation.handle))


def export_fd(allocation: Allocation) -> int:
    """A new file descriptor of the allocation, for one message to one worker: the caller sends it and
    closes it (the worker's copy, made by the kernel as it passes the socket, is the only one left)."""
    drv, fd = driver.load(), ctypes.c_int(-1)
    with drv.context(allocation.ordinal):
        drv.call("cuMemExportToShareableHandle", ctypes.byref(fd), ctypes.c_uint64(allocation.handle),
                 driver.MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)
    os.set_inheritable(fd.value, False)  # no process this one starts may get it, even for the moment it lives
    return fd.value


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
    unheld = []
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
                unheld.append(allocation)
        if mark is None:
            _loans.pop(holder, None)
    for allocation in unheld:  # outside the lock, as in _drop (no tensor is over them: none can be lent again)
        _free(allocation)


def lent_to(holder: int) -> int:
    """How many allocations the holder may still map."""
    with _lock:
        return len(_loans.get(holder, ()))


# ---------------------------------------------------------------- worker side


class Mapping:
    """One allocation of the supervisor's, mapped here from a file descriptor it was sent; exposes its first
    `nbytes`."""

    def __init__(self, fd: int, serial: int, size: int, nbytes: int, ordinal: int):
        drv = driver.load()
        handle = ctypes.c_uint64(0)
        with drv.context(ordinal):
            # The fd is passed by value, as a pointer-sized integer (cuda.h: (void*)(uintptr_t)fd).
            drv.call("cuMemImportFromShareableHandle", ctypes.byref(handle), ctypes.c_void_p(fd),
                     driver.MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
            try:
                ptr = _map(drv, handle.value, size, ordinal)
            finally:
                # The mapping holds the memory from here on: the imported handle has no further use.
                drv.call("cuMemRelease", handle)
        self.serial, self.ptr, self.size, self.nbytes, self.ordinal = serial, ptr, size, nbytes, ordinal
        self._closer = weakref.finalize(self, _unmap, serial, ptr, size, ordinal)
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


_mapped: dict[int, weakref.ref] = {}  # serial -> open Mapping (an allocation is mapped once per process)
_opened: list[Mapping] = []


def _unmap(serial: int, ptr: int, size: int, ordinal: int) -> None:
    with _lock:
        ref = _mapped.get(serial)
        if ref is not None and (ref() is None or ref().ptr == ptr):
            del _mapped[serial]
    drv = driver.load()
    with drv.context(ordinal):
        _unmap_range(drv, ptr, size)


def open_mapping(fd: int, serial: int, size: int, nbytes: int, device="cuda") -> Mapping:
    """The allocation behind the file descriptor `fd` (the supervisor's allocation `serial`, `size` bytes)
    mapped in this process, the open one if it is already. The fd stays the caller's to close."""
    if nbytes > size:
        raise ValueError(f"an allocation of {size} bytes cannot show {nbytes}")
    with _lock:
        ref = _mapped.get(serial)
        mapping = ref() if ref is not None else None
        if mapping is None or mapping.closed:
            mapping = Mapping(fd, serial, size, nbytes, _ordinal(device))
            _mapped[serial] = weakref.ref(mapping)
        _opened.append(mapping)
        return mapping


def take_opened() -> list[Mapping]:
    """The mappings opened (or found open) since the last call: a request's own, when called after it was
    received."""
    with _lock:
        taken = list(dict.fromkeys(_opened))
        _opened.clear()
        return taken
