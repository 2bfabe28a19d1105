"""The CUDA driver calls solbench makes itself, through ctypes on libcuda.so.1 (which every CUDA process has):
the device memory the supervisor shares with its workers (solbench.gpu.device_memory), made with the
driver's virtual memory management (cuMemCreate, cuMemMap) so that it can be exported as a POSIX file
descriptor and nothing else (solbench.gpu.ipc). torch keeps its allocations in a caching allocator whose
segments hold many tensors; these calls give a tensor an allocation of its own.

Every call runs with the device's primary context pushed (the one the CUDA runtime, so torch, uses), and
popped after, so the calling thread's current device is left as it was.
"""

from __future__ import annotations

import ctypes
import threading
from contextlib import contextmanager

CUDA_SUCCESS = 0
CUDA_ERROR_OUT_OF_MEMORY = 2
MEM_ALLOCATION_TYPE_PINNED = 1
MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
"""The one kind of shareable handle solbench's allocations can be exported as: an fd, which moves between
processes only when sent (SCM_RIGHTS), never by its value."""
MEM_LOCATION_TYPE_DEVICE = 1
MEM_ACCESS_FLAGS_PROT_READWRITE = 3
MEM_ALLOC_GRANULARITY_RECOMMENDED = 1


class DriverError(RuntimeError):
    """A driver call failed (`code`: the CUresult), or libcuda.so.1 could not be loaded (code None)."""

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        self.code = code


class MemLocation(ctypes.Structure):
    """CUmemLocation: where memory lives (here always a device, `id` its ordinal)."""

    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class MemAllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class MemAllocationProp(ctypes.Structure):
    """CUmemAllocationProp (cuda.h, CUDA 11.2 to 13): what cuMemCreate makes."""

    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", MemLocation),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", MemAllocFlags)]


class MemAccessDesc(ctypes.Structure):
    """CUmemAccessDesc: who may access a mapped range, and how."""

    _fields_ = [("location", MemLocation), ("flags", ctypes.c_int)]


def device_allocation_prop(ordinal: int) -> MemAllocationProp:
    """Pinned memory on device `ordinal`, exportable as a POSIX file descriptor only."""
    prop = MemAllocationProp()
    prop.type = MEM_ALLOCATION_TYPE_PINNED
    prop.requestedHandleTypes = MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    prop.location = MemLocation(MEM_LOCATION_TYPE_DEVICE, ordinal)
    return prop


def read_write_access(ordinal: int) -> MemAccessDesc:
    """Read and write access for device `ordinal` (a mapping starts with no access at all)."""
    return MemAccessDesc(MemLocation(MEM_LOCATION_TYPE_DEVICE, ordinal), MEM_ACCESS_FLAGS_PROT_READWRITE)


_u64, _size = ctypes.c_uint64, ctypes.c_size_t
SIGNATURES = {
    "cuInit": [ctypes.c_uint],
    "cuDeviceGet": [ctypes.POINTER(ctypes.c_int), ctypes.c_int],
    "cuDevicePrimaryCtxRetain": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int],
    "cuCtxPushCurrent_v2": [ctypes.c_void_p],
    "cuCtxPopCurrent_v2": [ctypes.POINTER(ctypes.c_void_p)],
    "cuCtxSynchronize": [],
    "cuMemGetAddressRange_v2": [ctypes.POINTER(_u64), ctypes.POINTER(_size), _u64],
    "cuMemGetInfo_v2": [ctypes.POINTER(_size), ctypes.POINTER(_size)],
    "cuMemsetD8_v2": [_u64, ctypes.c_ubyte, _size],
    "cuMemGetAllocationGranularity": [ctypes.POINTER(_size), ctypes.POINTER(MemAllocationProp), ctypes.c_int],
    "cuMemCreate": [ctypes.POINTER(_u64), _size, ctypes.POINTER(MemAllocationProp), _u64],
    "cuMemRelease": [_u64],
    "cuMemAddressReserve": [ctypes.POINTER(_u64), _size, _size, _u64, _u64],
    "cuMemAddressFree": [_u64, _size],
    "cuMemMap": [_u64, _size, _size, _u64, _u64],
    "cuMemUnmap": [_u64, _size],
    "cuMemSetAccess": [_u64, _size, ctypes.POINTER(MemAccessDesc), _size],
    "cuMemExportToShareableHandle": [ctypes.c_void_p, _u64, ctypes.c_int, _u64],
    "cuMemImportFromShareableHandle": [ctypes.POINTER(_u64), ctypes.c_void_p, ctypes.c_int],
}
"""Every entry point used, by its exported name (cuda.h maps cuMemAlloc to cuMemAlloc_v2 and so on)."""


class Driver:
    """libcuda with the signatures above; `call` raises DriverError naming the call and its CUresult."""

    def __init__(self, lib):
        self.lib = lib
        for name, argtypes in SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes = argtypes
            fn.restype = ctypes.c_int
        self.call("cuInit", 0)  # idempotent; the runtime has usually done it already
        self._contexts: dict[int, ctypes.c_void_p] = {}

    def call(self, name: str, *args) -> None:
        code = getattr(self.lib, name)(*args)
        if code != CUDA_SUCCESS:
            raise DriverError(f"{name} failed: CUDA driver error {code}", code)

    @contextmanager
    def context(self, ordinal: int):
        """The device's primary context, current for the duration (retained once, never released: it lives as
        long as the process, as the runtime's does)."""
        ctx = self._contexts.get(ordinal)
        if ctx is None:
            dev, ctx = ctypes.c_int(0), ctypes.c_void_p()
            self.call("cuDeviceGet", ctypes.byref(dev), ordinal)
            self.call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev.value)
            self._contexts[ordinal] = ctx
        self.call("cuCtxPushCurrent_v2", ctx)
        try:
            yield
        finally:
            self.call("cuCtxPopCurrent_v2", ctypes.byref(ctypes.c_void_p()))

    def address_range(self, ptr: int) -> tuple[int, int]:
        """(base, bytes) of the allocation holding device address `ptr`, as the driver knows it."""
        base, size = _u64(0), _size(0)
        self.call("cuMemGetAddressRange_v2", ctypes.byref(base), ctypes.byref(size), _u64(ptr))
        return base.value, size.value

    def mem_info(self) -> tuple[int, int]:
        """(free, total) bytes of the current context's device."""
        free, total = _size(0), _size(0)
        self.call("cuMemGetInfo_v2", ctypes.byref(free), ctypes.byref(total))
        return free.value, total.value


_driver: Driver | None = None
_loading = threading.Lock()


def load() -> Driver:
    """The process's Driver (loaded on first use, by whichever thread comes first)."""
    global _driver
    with _loading:
        if _driver is None:
            try:
                lib = ctypes.CDLL("libcuda.so.1")
            except OSError as exc:
                raise DriverError(f"libcuda.so.1 cannot be loaded: {exc}") from None
            _driver = Driver(lib)
        return _driver
