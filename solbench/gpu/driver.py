"""The CUDA driver calls solbench makes itself, through ctypes on libcuda.so.1 (which every CUDA process has):
the device memory the supervisor shares with its workers (solbench.gpu.device_memory) and the IPC handles
of that memory (solbench.gpu.ipc). torch keeps its allocations in a caching allocator whose segments hold
many tensors; these calls give a tensor an allocation of its own.

Every call runs with the device's primary context pushed (the one the CUDA runtime, so torch, uses), and
popped after, so the calling thread's current device is left as it was.
"""

from __future__ import annotations

import ctypes
import threading
from contextlib import contextmanager

CUDA_SUCCESS = 0
CUDA_ERROR_OUT_OF_MEMORY = 2
IPC_HANDLE_BYTES = 64
IPC_LAZY_ENABLE_PEER_ACCESS = 1
"""CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS: the one flag cuIpcOpenMemHandle takes."""


class DriverError(RuntimeError):
    """A driver call failed (`code`: the CUresult), or libcuda.so.1 could not be loaded (code None)."""

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        self.code = code


class IpcMemHandle(ctypes.Structure):
    """CUipcMemHandle: 64 opaque bytes, passed by value to cuIpcOpenMemHandle."""

    _fields_ = [("reserved", ctypes.c_char * IPC_HANDLE_BYTES)]


_u64, _size = ctypes.c_uint64, ctypes.c_size_t
SIGNATURES = {
    "cuInit": [ctypes.c_uint],
    "cuDeviceGet": [ctypes.POINTER(ctypes.c_int), ctypes.c_int],
    "cuDevicePrimaryCtxRetain": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int],
    "cuCtxPushCurrent_v2": [ctypes.c_void_p],
    "cuCtxPopCurrent_v2": [ctypes.POINTER(ctypes.c_void_p)],
    "cuMemAlloc_v2": [ctypes.POINTER(_u64), _size],
    "cuMemFree_v2": [_u64],
    "cuMemGetAddressRange_v2": [ctypes.POINTER(_u64), ctypes.POINTER(_size), _u64],
    "cuMemGetInfo_v2": [ctypes.POINTER(_size), ctypes.POINTER(_size)],
    "cuMemsetD8_v2": [_u64, ctypes.c_ubyte, _size],
    "cuIpcGetMemHandle": [ctypes.POINTER(IpcMemHandle), _u64],
    "cuIpcOpenMemHandle_v2": [ctypes.POINTER(_u64), IpcMemHandle, ctypes.c_uint],
    "cuIpcCloseMemHandle": [_u64],
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
