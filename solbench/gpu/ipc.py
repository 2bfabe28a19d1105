"""CUDA IPC tokens for the supervisor's tensors, the one way a worker reaches them: "HANDLEHEX:OFFSET", the
IPC handle of the tensor's allocation and the tensor's byte offset from its start. Every shared tensor has
an allocation of its own (solbench.gpu.device_memory), so the handle maps that tensor (and its guard
bytes) and nothing else of the supervisor's.

The native runner gets the tokens on its 'copy' lines and maps them with cudaIpcOpenMemHandle; a Python
worker gets them inside its pickled commands (`dumps`) and maps them while unpickling (`_mapped_tensor`).
Through the driver API, not torch's own CUDA IPC: torch's format is private, and it keeps a shared block
allocated in the supervisor until the worker's process says it let go, which a worker that dies never does.
Making a token lends the allocation to the worker it is for (device_memory.lend), so it is not freed while
that worker may still map it.
"""

from __future__ import annotations

import ctypes
import io
from multiprocessing.reduction import ForkingPickler

NULL_TOKEN = "-"


class IpcError(RuntimeError):
    """A tensor could not be shared (not in an allocation of its own, or no driver)."""


def token(tensor, holder: int | None = None) -> str:
    """The tensor's token (NULL_TOKEN for None); with `holder`, its allocation is lent to that worker."""
    if tensor is None:
        return NULL_TOKEN
    from solbench.gpu import device_memory, driver

    allocation = device_memory.allocation_of(tensor)
    if allocation is None:
        raise IpcError(f"a {tensor.device} tensor at 0x{tensor.data_ptr():x} is not in an allocation of its own "
                       "(solbench.gpu.device_memory): only those are shared with workers")
    offset = tensor.data_ptr() - allocation.ptr
    if offset + tensor.numel() * tensor.element_size() > allocation.nbytes:
        raise IpcError(f"a tensor runs past the end of its allocation 0x{allocation.ptr:x}")
    try:
        drv = driver.load()
        with drv.context(allocation.ordinal):
            # The driver's word on where the allocation begins and ends, not only this module's records.
            if drv.address_range(tensor.data_ptr()) != (allocation.ptr, allocation.size):
                raise IpcError(f"the driver's allocation around 0x{tensor.data_ptr():x} is not the tensor's own")
            if allocation.handle is None:
                handle = driver.IpcMemHandle()
                drv.call("cuIpcGetMemHandle", ctypes.byref(handle), ctypes.c_uint64(allocation.ptr))
                allocation.handle = bytes(handle)
    except driver.DriverError as exc:
        raise IpcError(str(exc)) from None
    if holder is not None:
        device_memory.lend(allocation, holder)
    return f"{allocation.handle.hex()}:{offset}"


def parse(text: str) -> tuple[bytes, int]:
    """(handle, offset) of a token."""
    hexed, _, offset = text.partition(":")
    return bytes.fromhex(hexed), int(offset)


class _SharingPickler(ForkingPickler):
    """The pickler of a Python worker's commands: a tensor in an allocation of its own travels as its token
    (lent to the worker); CPU tensors as torch.multiprocessing shares them (shared memory); any other CUDA
    tensor is refused (torch's IPC would map a segment of torch's cache and leak when the worker dies)."""

    def __init__(self, file, holder: int):
        super().__init__(file)
        self.holder = holder

    def reducer_override(self, obj):
        import torch

        if not isinstance(obj, torch.Tensor):
            return NotImplemented
        from solbench.gpu import device_memory

        allocation = device_memory.allocation_of(obj)
        if allocation is None:
            if obj.is_cuda:
                raise IpcError("a CUDA tensor sent to a worker must be in an allocation of its own "
                               "(solbench.gpu.device_memory)")
            return NotImplemented
        return _mapped_tensor, (token(obj, self.holder), allocation.nbytes, obj.dtype, tuple(obj.shape),
                                tuple(obj.stride()))


def dumps(obj, holder: int) -> bytes:
    """obj pickled for the Python worker `holder` (see _SharingPickler); send it with send_bytes, and the
    worker's conn.recv() maps the tensors as it unpickles them."""
    import torch.multiprocessing  # registers the CPU tensors' reductions  # noqa: F401

    buf = io.BytesIO()
    _SharingPickler(buf, holder).dump(obj)
    return buf.getvalue()


def _mapped_tensor(text: str, nbytes: int, dtype, shape: tuple, stride: tuple):
    """Worker side, while unpickling: the tensor behind a token, over a mapping of its allocation."""
    from solbench.gpu import device_memory

    handle, offset = parse(text)
    whole = device_memory.open_mapping(handle, nbytes).tensor()
    span = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, stride))
    return whole[offset:offset + span * dtype.itemsize].view(dtype).as_strided(shape, stride)
