"""A stand-in for libcuda, so that solbench.gpu.device_memory and solbench.gpu.ipc run on a CPU: "device"
memory is host memory (tensors over it are CPU tensors), and every call is recorded. The driver's virtual
memory management is played by the kernel's: an allocation is a memfd, an address reservation an
inaccessible anonymous mapping, cuMemMap maps the memfd there (MAP_SHARED: a worker in another process
that imports it shares the very pages) and cuMemSetAccess makes it readable and writable. An exported
"shareable handle" is a real file descriptor of the memfd, so passing it over a socket is what makes it
importable elsewhere, as with the driver. Importable by a spawned worker process (pytest puts tests/ on
sys.path, and spawn passes sys.path on), which installs its own with `install()`.
"""

from __future__ import annotations

import ctypes
import mmap
import os

from solbench.gpu import device_memory, driver

MEMFD_NAME = "solbench-fake-allocation"
"""The name of every fake allocation's memfd (/proc/PID/fd/N reads "/memfd:NAME (deleted)")."""
CUDA_ERROR_INVALID_VALUE = 1
UNSYNCHRONIZED_UNMAP = 999  # not a CUDA code: the fake refuses an unmap with no cuCtxSynchronize just before
MAP_FIXED = 0x10  # Linux; not in the mmap module before Python 3.13
PROT_NONE = 0
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_MAP_FAILED = ctypes.c_void_p(-1).value


def _mmap(addr: int, size: int, prot: int, flags: int, fd: int = -1) -> int:
    got = _libc.mmap(addr or None, size, prot, flags, fd, 0)
    if got in (None, _MAP_FAILED):
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return got


def _inaccessible(addr: int, size: int) -> int:
    """An anonymous range no one may touch (at addr, replacing what was there, when addr is given)."""
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | (MAP_FIXED if addr else 0)
    return _mmap(addr, size, PROT_NONE, flags)


def is_allocation_fd(fd: int, pid: int | str = "self") -> bool:
    """Whether fd (of process pid) is a file descriptor of a fake allocation."""
    try:
        return os.readlink(f"/proc/{pid}/fd/{fd}").startswith(f"/memfd:{MEMFD_NAME}")
    except OSError:
        return False


def allocation_fds(pid: int | str = "self") -> list[int]:
    """Every fd of a fake allocation the process holds."""
    return sorted(int(n) for n in os.listdir(f"/proc/{pid}/fd") if is_allocation_fd(int(n), pid))


class _Fn:
    """A ctypes function's stand-in: argtypes and restype can be set, calls go to `body`."""

    def __init__(self, body):
        self.body, self.argtypes, self.restype = body, None, None

    def __call__(self, *args):
        return self.body(*args)


def _out(arg):
    """The ctypes object behind a byref() argument."""
    return arg._obj


def _value(arg) -> int:
    return arg.value if hasattr(arg, "value") else int(arg)


class FakeLib:
    """libcuda.so.1 with the entry points of solbench.gpu.driver.SIGNATURES."""

    def __init__(self, capacity_bytes: int = 1 << 34, granularity: int = 2 << 20):
        self.capacity_bytes = capacity_bytes
        self.granularity = granularity
        self.handles: dict[int, int] = {}  # generic handle -> its own fd of the allocation's memfd
        self.created: set[int] = set()  # handles made by cuMemCreate (the others were imported)
        self.reserved: dict[int, int] = {}  # address ranges reserved: start -> bytes
        self.access: dict[int, int] = {}  # mapped ranges: start -> bytes, once cuMemSetAccess made them usable
        self.memory: dict[int, int] = {}  # mappings of allocations created here: address -> bytes
        self.mapped: dict[int, int] = {}  # mappings of imported allocations: address -> bytes
        self.allocated: list[int] = []  # addresses created allocations were mapped at
        self.freed: list[int] = []  # ... and unmapped from (the allocation freed with it, for the supervisor)
        self.opened: list[int] = []  # addresses imported allocations were mapped at
        self.closed: list[int] = []  # ... and unmapped from
        self.exported: list[int] = []  # fds cuMemExportToShareableHandle made (the caller's to close)
        self.imported: list[int] = []  # fds imported from
        self.memsets: list[tuple[int, int, int]] = []
        self._next_handle = 0x51000
        self.depth = 0  # contexts pushed and not popped
        self.synced_at: list[int] = []  # per cuCtxSynchronize, the unmaps made before it
        for name in driver.SIGNATURES:
            setattr(self, name, _Fn(getattr(self, "_" + name)))

    def loose_fds(self) -> list[int]:
        """The fds of fake allocations this process holds other than the driver's own (its handles'): those
        exported and not yet closed, or received and not yet closed."""
        return sorted(set(allocation_fds()) - set(self.handles.values()))

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

    def _cuCtxSynchronize(self):
        self.synced_at.append(len(self.freed) + len(self.closed))  # how many unmaps came before it
        return 0 if self.depth > 0 else 201  # CUDA_ERROR_INVALID_CONTEXT: no context is current

    def _cuCtxPopCurrent_v2(self, ctx):
        self.depth -= 1
        return 0 if self.depth >= 0 else 201

    # --- memory: allocations and their handles
    def _bytes_created(self) -> int:
        return sum(os.fstat(fd).st_size for h, fd in self.handles.items() if h in self.created)

    def _new_handle(self, fd: int, created: bool) -> int:
        self._next_handle += 1
        self.handles[self._next_handle] = fd
        if created:
            self.created.add(self._next_handle)
        return self._next_handle

    @staticmethod
    def _prop_ok(prop) -> bool:
        p = _out(prop)
        return (p.type == driver.MEM_ALLOCATION_TYPE_PINNED and p.location.type == driver.MEM_LOCATION_TYPE_DEVICE
                and p.requestedHandleTypes == driver.MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)

    def _cuMemGetAllocationGranularity(self, pgran, prop, option):
        if not self._prop_ok(prop) or option != driver.MEM_ALLOC_GRANULARITY_RECOMMENDED:
            return CUDA_ERROR_INVALID_VALUE
        _out(pgran).value = self.granularity
        return 0

    def _cuMemCreate(self, phandle, size, prop, flags):
        if size == 0 or size % self.granularity or not self._prop_ok(prop):
            return CUDA_ERROR_INVALID_VALUE  # as the driver answers
        if self._bytes_created() + size > self.capacity_bytes:
            return driver.CUDA_ERROR_OUT_OF_MEMORY
        fd = os.memfd_create(MEMFD_NAME)
        os.ftruncate(fd, size)  # zeroed pages, as the real driver's are not: device_memory zeroes the slack
        _out(phandle).value = self._new_handle(fd, created=True)
        return 0

    def _cuMemRelease(self, handle):
        fd = self.handles.pop(_value(handle), None)
        if fd is None:
            return CUDA_ERROR_INVALID_VALUE
        self.created.discard(_value(handle))
        os.close(fd)  # a mapping still holds the pages, as the driver's does
        return 0

    def _cuMemExportToShareableHandle(self, pfd, handle, kind, flags):
        fd = self.handles.get(_value(handle))
        if fd is None or kind != driver.MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR:
            return CUDA_ERROR_INVALID_VALUE
        exported = os.open(f"/proc/self/fd/{fd}", os.O_RDWR | os.O_CLOEXEC)  # a new fd, as the driver's is
        _out(pfd).value = exported
        self.exported.append(exported)
        return 0

    def _cuMemImportFromShareableHandle(self, phandle, os_handle, kind):
        fd = _value(os_handle) or 0
        if kind != driver.MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR or not is_allocation_fd(fd):
            return CUDA_ERROR_INVALID_VALUE  # not a file descriptor the driver exported
        self.imported.append(fd)
        _out(phandle).value = self._new_handle(os.dup(fd), created=False)  # the caller closes its fd
        return 0

    # --- memory: address ranges and mappings
    def _cuMemAddressReserve(self, pptr, size, alignment, addr, flags):
        if size == 0 or size % self.granularity or _value(addr):
            return CUDA_ERROR_INVALID_VALUE
        ptr = _inaccessible(0, size)
        self.reserved[ptr] = size
        _out(pptr).value = ptr
        return 0

    def _cuMemAddressFree(self, ptr, size):
        ptr, size = _value(ptr), _value(size)
        if self.reserved.get(ptr) != size or ptr in self.memory or ptr in self.mapped:
            return CUDA_ERROR_INVALID_VALUE  # not a reservation, or still mapped
        del self.reserved[ptr]
        _libc.munmap(ptr, size)
        return 0

    def _cuMemMap(self, ptr, size, offset, handle, flags):
        ptr, size, handle = _value(ptr), _value(size), _value(handle)
        fd = self.handles.get(handle)
        if (fd is None or self.reserved.get(ptr) != size or _value(offset) or ptr in self.memory or ptr in self.mapped
                or os.fstat(fd).st_size != size):
            return CUDA_ERROR_INVALID_VALUE
        _mmap(ptr, size, PROT_NONE, mmap.MAP_SHARED | MAP_FIXED, fd)  # no access until cuMemSetAccess
        if handle in self.created:
            self.memory[ptr] = size
            self.allocated.append(ptr)
        else:
            self.mapped[ptr] = size
            self.opened.append(ptr)
        return 0

    def _cuMemSetAccess(self, ptr, size, desc, count):
        ptr, size = _value(ptr), _value(size)
        d = _out(desc)
        if ({**self.memory, **self.mapped}.get(ptr) != size or _value(count) != 1
                or d.flags != driver.MEM_ACCESS_FLAGS_PROT_READWRITE or d.location.type != driver.MEM_LOCATION_TYPE_DEVICE):
            return CUDA_ERROR_INVALID_VALUE
        _libc.mprotect(ptr, size, mmap.PROT_READ | mmap.PROT_WRITE)
        self.access[ptr] = size
        return 0

    def _cuMemUnmap(self, ptr, size):
        ptr, size = _value(ptr), _value(size)
        if not self.synced_at or self.synced_at[-1] != len(self.freed) + len(self.closed):
            return UNSYNCHRONIZED_UNMAP  # the real call would not wait for kernels still using the range
        mine = self.memory.pop(ptr, None)
        theirs = self.mapped.pop(ptr, None) if mine is None else None
        if (mine or theirs) != size:
            return CUDA_ERROR_INVALID_VALUE
        _inaccessible(ptr, size)  # a reservation again: a late access faults, as on the device
        self.access.pop(ptr, None)
        (self.freed if mine else self.closed).append(ptr)
        return 0

    def _cuMemGetAddressRange_v2(self, pbase, psize, ptr):
        ptr = ptr.value
        for base, size in {**self.memory, **self.mapped}.items():
            if base <= ptr < base + size:
                _out(pbase).value, _out(psize).value = base, size
                return 0
        return CUDA_ERROR_INVALID_VALUE

    def _cuMemGetInfo_v2(self, pfree, ptotal):
        used = self._bytes_created()
        _out(pfree).value, _out(ptotal).value = self.capacity_bytes - used, self.capacity_bytes
        return 0

    def _cuMemsetD8_v2(self, ptr, value, count):
        ptr = ptr.value
        if not any(base <= ptr and ptr + count <= base + size for base, size in self.access.items()):
            return CUDA_ERROR_INVALID_VALUE
        ctypes.memset(ptr, value, count)
        self.memsets.append((ptr, value, count))
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
    """A Python worker's stand-in in its own process: maps what it is sent (fds of the fake's memory) and answers
    'ok', until it is sent `fails_on`: then it exits without a word (`how` 'exit', as one that segfaults does)
    or reports an error (`how` 'error', as one whose candidate raised), holding all it was sent."""
    from solbench.sandbox.replies import send_reply as _reply

    os.setsid()  # its own group, as a real worker's: stopping it stops nothing else
    from solbench.gpu import ipc

    install()
    held = []
    while True:
        cmd, payload = ipc.receive(conn)
        held.append(payload)
        if cmd == fails_on and how == "exit":
            os._exit(3)
        if cmd == fails_on:
            _reply(conn, "error", "RuntimeError: planted")
            continue
        _reply(conn, "ok", {"writes_lse": True} if cmd == "prepare" else None)
