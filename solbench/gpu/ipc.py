"""CUDA IPC tokens for the supervisor's tensors, so a process with no Python in it (the native runner) can
map them: "HANDLEHEX:OFFSET", the IPC handle of the allocation the tensor lives in and the tensor's byte
offset from its start. Through the driver API (libcuda, which every CUDA process has), since torch's own
sharing format is private and changes between releases.
"""

from __future__ import annotations

import ctypes

_HANDLE_BYTES = 64
NULL_TOKEN = "-"


class IpcError(RuntimeError):
    """A tensor could not be exported (not CUDA memory from cudaMalloc, or no driver)."""


class _Driver:
    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise IpcError(f"libcuda.so.1 cannot be loaded: {exc}") from None
        self.lib.cuMemGetAddressRange_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_size_t),
                                                     ctypes.c_uint64]
        self.lib.cuIpcGetMemHandle.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
        self.handles: dict[int, str] = {}

    def token(self, ptr: int) -> str:
        base, size = ctypes.c_uint64(0), ctypes.c_size_t(0)
        code = self.lib.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr))
        if code != 0:
            raise IpcError(f"cuMemGetAddressRange failed for 0x{ptr:x}: CUDA driver error {code}")
        hexed = self.handles.get(base.value)
        if hexed is None:
            buf = ctypes.create_string_buffer(_HANDLE_BYTES)
            code = self.lib.cuIpcGetMemHandle(buf, ctypes.c_uint64(base.value))
            if code != 0:
                raise IpcError(f"cuIpcGetMemHandle failed for 0x{base.value:x}: CUDA driver error {code} (memory "
                               "from expandable segments cannot be shared: unset PYTORCH_CUDA_ALLOC_CONF)")
            hexed = self.handles[base.value] = buf.raw.hex()
        return f"{hexed}:{ptr - base.value}"


_driver: _Driver | None = None


def token(tensor) -> str:
    """The tensor's token, or NULL_TOKEN for None."""
    global _driver
    if tensor is None:
        return NULL_TOKEN
    if not tensor.is_cuda:
        raise IpcError("only CUDA tensors can be shared with the native runner")
    if _driver is None:
        _driver = _Driver()
    return _driver.token(tensor.data_ptr())


def forget() -> None:
    """Drop the cached handles (after the allocations behind them may have been freed and reused)."""
    if _driver is not None:
        _driver.handles.clear()
