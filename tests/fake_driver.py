"""A stand-in for libcuda, so that solbench.gpu.device_memory and solbench.gpu.ipc run on a CPU: "device"
memory is host memory (tensors over it are CPU tensors), IPC handles name an allocation and its process,
and every call is recorded. Importable by a spawned worker process (pytest puts tests/ on sys.path, and
spawn passes sys.path on), which installs its own with `install()`.
"""

from __future__ import annotations

import ctypes
import os
import struct

from solbench.gpu import device_memory, driver

ALIGN = 4096
"""Alignment of the fake's allocations (the real driver's is 2 MiB for these sizes; kernels need 256 B)."""



def _aligned(size: int):
    """Host memory standing in for an allocation: (the buffer, its first ALIGN-aligned address)."""
    buf = ctypes.create_string_buffer(size + ALIGN)
    return buf, -(-ctypes.addressof(buf) // ALIGN) * ALIGN

class _Fn:
    """A ctypes function's stand-in: argtypes and restype can be set, calls go to `body`."""

    def __init__(self, body):
        self.body, self.argtypes, self.restype = body, None, None

    def __call__(self, *args):
        return self.body(*args)


def _out(arg):
    """The ctypes object behind a byref() argument."""
    return arg._obj


class FakeLib:
    """libcuda.so.1 with the entry points of solbench.gpu.driver.SIGNATURES."""

    def __init__(self, capacity_bytes: int = 1 << 34):
        self.capacity_bytes = capacity_bytes
        self.memory: dict[int, tuple[object, int]] = {}  # ptr -> (host buffer, size): allocations alive
        self.mapped: dict[int, tuple[object, int]] = {}  # ptr -> (host buffer or None, size): IPC mappings open
        self.allocated: list[int] = []
        self.freed: list[int] = []
        self.opened: list[bytes] = []
        self.closed: list[int] = []
        self.memsets: list[tuple[int, int, int]] = []
        self.depth = 0  # contexts pushed and not popped
        for name in driver.SIGNATURES:
            setattr(self, name, _Fn(getattr(self, "_" + name)))

    # --- contexts
    def _cuInit(self, flags):
        return 0

    def _cuDeviceGet(self, dev, ordinal):
        _out(dev).value = ordinal
        return 0

    def _cuDevicePrimaryCtxRetain(self, ctx, dev):
        _out(ctx).value = 0x1000 + dev
        return 0

    def _cuCtxPushCurrent_v2(self, ctx):
        self.depth += 1
        return 0

    def _cuCtxPopCurrent_v2(self, ctx):
        self.depth -= 1
        return 0 if self.depth >= 0 else 201

    # --- memory
    def _cuMemAlloc_v2(self, pptr, size):
        if size == 0:
            return 1  # CUDA_ERROR_INVALID_VALUE, as the driver answers
        if sum(s for _, s in self.memory.values()) + size > self.capacity_bytes:
            return driver.CUDA_ERROR_OUT_OF_MEMORY
        buf, ptr = _aligned(size)
        self.memory[ptr] = (buf, size)
        self.allocated.append(ptr)
        _out(pptr).value = ptr
        return 0

    def _cuMemFree_v2(self, ptr):
        ptr = ptr.value
        if ptr not in self.memory:
            return 1
        del self.memory[ptr]
        self.freed.append(ptr)
        return 0

    def _cuMemGetAddressRange_v2(self, pbase, psize, ptr):
        ptr = ptr.value
        for base, (_, size) in {**self.memory, **self.mapped}.items():
            if base <= ptr < base + size:
                _out(pbase).value, _out(psize).value = base, size
                return 0
        return 1

    def _cuMemGetInfo_v2(self, pfree, ptotal):
        used = sum(s for _, s in self.memory.values())
        _out(pfree).value, _out(ptotal).value = self.capacity_bytes - used, self.capacity_bytes
        return 0

    def _cuMemsetD8_v2(self, ptr, value, count):
        ptr = ptr.value
        if not any(base <= ptr and ptr + count <= base + size for base, (_, size) in self.memory.items()):
            return 1
        ctypes.memset(ptr, value, count)
        self.memsets.append((ptr, value, count))
        return 0

    # --- IPC
    def _cuIpcGetMemHandle(self, phandle, ptr):
        ptr = ptr.value
        if ptr not in self.memory:
            return 1
        raw = struct.pack("<4sQQQ", b"FAKE", os.getpid(), ptr, self.memory[ptr][1])
        raw = raw.ljust(driver.IPC_HANDLE_BYTES, b"\0")
        ctypes.memmove(ctypes.addressof(_out(phandle)), raw, len(raw))
        return 0

    def _cuIpcOpenMemHandle_v2(self, pptr, handle, flags):
        raw = bytes(handle)
        magic, pid, ptr, size = struct.unpack_from("<4sQQQ", raw)
        if magic != b"FAKE" or flags != driver.IPC_LAZY_ENABLE_PEER_ACCESS:
            return 400  # CUDA_ERROR_INVALID_HANDLE
        if pid == os.getpid():  # the exporter itself (a test in one process): the same memory
            if ptr not in self.memory:
                return 400
            self.mapped[ptr] = (None, size)
        else:  # another process's: memory of its own here, of the allocation's size
            buf, ptr = _aligned(size)
            self.mapped[ptr] = (buf, size)
        self.opened.append(raw)
        _out(pptr).value = ptr
        return 0

    def _cuIpcCloseMemHandle(self, ptr):
        ptr = ptr.value
        if ptr not in self.mapped:
            return 1
        del self.mapped[ptr]
        self.closed.append(ptr)
        return 0


class _HostView:
    """Host memory as numpy sees it, holding the owner (a Block or Mapping) as torch's CUDA import would."""

    def __init__(self, owner):
        cai = owner.__cuda_array_interface__
        self.owner = owner
        self.__array_interface__ = {"shape": cai["shape"], "typestr": "|u1", "data": cai["data"], "version": 3}


def host_bytes(owner, ordinal):
    """device_memory._as_bytes for the fake: a CPU uint8 tensor over the owner's memory, keeping it alive."""
    import numpy as np
    import torch

    return torch.from_numpy(np.asarray(_HostView(owner)))


def install(monkeypatch=None, **kwargs) -> FakeLib:
    """Put a FakeLib behind solbench.gpu.driver (with pytest's monkeypatch: undone after the test)."""
    put = monkeypatch.setattr if monkeypatch is not None else setattr
    lib = FakeLib(**kwargs)
    put(driver, "_driver", driver.Driver(lib))
    put(device_memory, "_as_bytes", host_bytes)
    put(device_memory, "_ordinal", lambda device: 0)
    return lib


def worker_main(conn, fails_on: str, how: str = "exit") -> None:
    """A Python worker's stand-in in its own process: maps what it is sent (the fake's own memory) and answers
    'ok', until it is sent `fails_on`: then it exits without a word (`how` 'exit', as one that segfaults does)
    or reports an error (`how` 'error', as one whose candidate raised), holding all it was sent."""
    from solbench.sandbox.replies import send_reply as _reply

    os.setsid()  # its own group, as a real worker's: stopping it stops nothing else
    install()
    held = []
    while True:
        cmd, payload = conn.recv()
        held.append(payload)
        if cmd == fails_on and how == "exit":
            os._exit(3)
        if cmd == fails_on:
            _reply(conn, "error", "RuntimeError: planted")
            continue
        _reply(conn, "ok", {"writes_lse": True} if cmd == "prepare" else None)
