"""How a worker reaches the supervisor's tensors: each tensor has an allocation of its own
(solbench.gpu.device_memory), and a worker can map an allocation only through a file descriptor the
supervisor exported for it (cuMemExportToShareableHandle, POSIX fd) and passed it over a Unix socket
(SCM_RIGHTS). A file descriptor is not a value that can be guessed or forged: a process holds one only
if it was given one (or opened it, which needs the fd in another process and the right to reach it). The
legacy CUDA IPC handles used before were 64 bytes that anyone who knew them could open, and on an H200 the
handles of consecutive allocations differed in two bytes that counted up (benchmarks/ipc_handle_probe.py).

A message to a worker is its tokens plus the fds they name, sent first on the socket:

    fd batches   FD_BATCH fds at most each, on a 4-byte little-endian header: how many fds are still to
                 come, this batch's included (one batch with header 0 when there are none)
    tokens       "fd:INDEX:SERIAL:SIZE:OFFSET": the message's INDEXth fd (from 0, in the order sent) maps
                 the allocation SERIAL (a number the supervisor never reuses, so a worker maps each
                 allocation once however often it is sent) of SIZE bytes; the tensor starts OFFSET bytes in

An allocation named twice in one message has one fd. The supervisor closes its fds as soon as they are
sent (`Exports.close`): what a worker received is the only copy, and no fd of the supervisor's is left to
be taken from it (/proc/PID/fd, pidfd_getfd). The worker closes each fd once it mapped (or failed to map)
what the message named, so nothing it was sent outlives its mappings.

A Python worker gets the fd batches and then its pickled command on its Connection (a socketpair: `send`,
`receive`) and maps the tensors while unpickling (`_mapped_tensor`). A CPU tensor travels the same way: a copy
of the fd of its storage's sealed memfd (`sealed_cpu`; the storage keeps its own, in the supervisor as in the
worker), mapped by `_shared_cpu_tensor`, once per message and storage. Not as torch.multiprocessing sends it: that
hands each fd out from a listener thread in the supervisor, which unpickles whatever a client sends it and
admits anyone with the supervisor's multiprocessing key. Nothing here starts a listener:
the pickler is plain pickle's, without the reductions torch and multiprocessing register on theirs.

The native runner gets the fd batches on a socket of its own (its fdsock= argument) and the tokens on its
'copy' lines, and maps them the same way (runner.cu map_tensor). Through the driver API, not torch's own
CUDA IPC: torch's format is private, and it keeps a shared block allocated in the supervisor until the
worker's process says it let go, which a worker that dies never does. Making a token lends the allocation
to the worker it is for (device_memory.lend), so it is not freed while that worker may still map it.
"""

from __future__ import annotations

import io
import os
import pickle
import select
import socket
import struct
import threading
from dataclasses import dataclass, field

NULL_TOKEN = "-"
SEND_TIMEOUT_S = 30.0
"""How long a send waits for the worker's socket to take a batch: a worker that never reads its socket
(hostile, or hung) makes the send a TimeoutError, a WorkerFailure of that worker, not a supervisor blocked
for good (after ~139 unread prepares the send blocked forever)."""
FD_BATCH = 64
"""The most fds one sendmsg carries (the kernel takes 253 at most)."""
_HEADER = struct.Struct("<I")


class IpcError(RuntimeError):
    """A tensor could not be shared (not in an allocation of its own, or no driver), or a message's tokens
    and file descriptors do not match."""


@dataclass
class Exports:
    """The file descriptors exported for one message, in the order its tokens name them."""

    fds: list[int] = field(default_factory=list)
    _index: dict = field(default_factory=dict)  # allocation serial, or ("cpu", storage address) -> index in fds

    def index_of(self, allocation) -> int:
        """The index of the allocation's fd in this message (exported now if it has none yet)."""
        if allocation.serial not in self._index:
            from solbench.gpu import device_memory

            self.fds.append(device_memory.export_fd(allocation))
            self._index[allocation.serial] = len(self.fds) - 1
        return self._index[allocation.serial]

    def index_of_storage(self, storage) -> int:
        """The index of a CPU storage's shared-memory fd in this message (a copy of it, made now if none yet);
        IpcError unless it is memory of `sealed_cpu`'s."""
        key = ("cpu", storage.data_ptr())
        if key not in self._index:
            fd = _fd_of(storage)
            if fd is None or not _sealed(fd):
                raise IpcError("a CPU tensor sent to a worker must be in memory made by solbench.gpu.ipc.sealed_cpu "
                               "(solbench.supervisor.inputs makes every one there)")
            self.fds.append(os.dup(fd))  # the storage keeps its own
            self._index[key] = len(self.fds) - 1
        return self._index[key]

    def close(self) -> None:
        """Close every fd (once sent: the receiver has its own copies)."""
        _close_all(self.fds)
        self.fds, self._index = [], {}


@dataclass(frozen=True)
class Token:
    index: int
    serial: int
    size: int
    offset: int


_SEALS = ("F_SEAL_SHRINK", "F_SEAL_GROW", "F_SEAL_SEAL")


def sealed_cpu(t):
    """A copy of CPU tensor `t` in shared memory no worker can shrink: a memfd sealed against shrinking and
    growing. The worker gets its fd; with torch's shared memory (a file in /dev/shm) it could ftruncate that fd,
    and the supervisor's next read of the tensor was a SIGBUS that ended the run."""
    import fcntl

    import torch

    nbytes = t.untyped_storage().nbytes()  # the whole storage: offset and strides stay t's
    if nbytes == 0:
        return t.clone()  # no memory: sent without an fd
    fd = os.memfd_create("solbench-tensor", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, nbytes)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, sum(getattr(fcntl, seal) for seal in _SEALS))
        storage = torch.UntypedStorage._new_shared_fd_cpu(fd, nbytes)  # maps it, and keeps a copy of the fd
    finally:
        os.close(fd)
    storage.copy_(t.untyped_storage())
    return torch.empty(0, dtype=t.dtype).set_(storage, t.storage_offset(), t.shape, t.stride())


def _fd_of(storage) -> int | None:
    """The fd a shared CPU storage keeps (None: not shared, or shared by file name)."""
    try:
        return storage._share_fd_cpu_()[0] if storage.is_shared() else None
    except RuntimeError:
        return None


def _sealed(fd: int) -> bool:
    import fcntl

    try:
        return fcntl.fcntl(fd, fcntl.F_GET_SEALS) & fcntl.F_SEAL_SHRINK != 0
    except OSError:  # not a file that takes seals
        return False


def token(tensor, exports: Exports, holder: int | None = None) -> str:
    """The tensor's token (NULL_TOKEN for None), its allocation's fd added to `exports`; with `holder`, the
    allocation is lent to that worker."""
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
            # The driver's word on where the mapping begins and ends, not only this module's records.
            if drv.address_range(tensor.data_ptr()) != (allocation.ptr, allocation.size):
                raise IpcError(f"the driver's allocation around 0x{tensor.data_ptr():x} is not the tensor's own")
        index = exports.index_of(allocation)
    except driver.DriverError as exc:
        raise IpcError(str(exc)) from None
    if holder is not None:
        device_memory.lend(allocation, holder)
    return f"fd:{index}:{allocation.serial}:{allocation.size}:{offset}"


def parse(text: str) -> Token:
    """The fields of a token (IpcError if it is not one)."""
    kind, *fields = text.split(":")
    try:
        if kind != "fd" or len(fields) != 4:
            raise ValueError
        parsed = Token(*(int(f) for f in fields))
    except ValueError:
        raise IpcError(f"not a tensor token: {text!r}") from None
    if min(parsed.index, parsed.serial, parsed.size, parsed.offset) < 0:
        raise IpcError(f"not a tensor token: {text!r}")
    return parsed


# ---------------------------------------------------------------- fds over a Unix socket


def _close_all(fds) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def send_fds(sock_fd: int, fds: list[int]) -> None:
    """The fds down a connected Unix stream socket, in batches (see the module docstring); the caller keeps
    and closes its own."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=os.dup(sock_fd)) as sock:
        left = list(fds)
        while True:
            batch, left = left[:FD_BATCH], left[FD_BATCH:]
            header = _HEADER.pack(len(batch) + len(left))
            # select, not a socket timeout: that would make the shared open file (the Connection's) non-blocking
            if not select.select([], [sock], [], SEND_TIMEOUT_S)[1]:
                raise TimeoutError(f"the worker took no file descriptors for {SEND_TIMEOUT_S:g} s")
            if socket.send_fds(sock, [header], batch) != len(header):
                raise IpcError("a file descriptor batch's header was cut short")
            if not left:
                return


def recv_fds(sock_fd: int) -> list[int]:
    """The fds of the next message on a Unix stream socket (the sender's send_fds); EOFError when the other
    end is gone. Every batch is read even when one came short (IpcError then, after), so the stream stays
    in step with the sender."""
    got: list[int] = []
    short = ""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=os.dup(sock_fd)) as sock:
        try:
            while True:
                header, fds, flags, _ = socket.recv_fds(sock, _HEADER.size, FD_BATCH)
                got += fds
                for fd in fds:  # received fds are inheritable: nothing this process starts may get them
                    os.set_inheritable(fd, False)
                if not header:
                    raise EOFError("the socket was closed")
                while len(header) < _HEADER.size:  # the batch's fds came with the header's first byte
                    more = sock.recv(_HEADER.size - len(header))
                    if not more:
                        raise EOFError("the socket was closed")
                    header += more
                (expected,) = _HEADER.unpack(header)
                if flags & socket.MSG_CTRUNC or len(fds) != min(expected, FD_BATCH):
                    # Too many open files here, or a sender that does not follow the protocol.
                    short = short or f"a batch of {min(expected, FD_BATCH)} file descriptors arrived with {len(fds)}"
                if expected <= FD_BATCH:
                    break
            if short:
                raise IpcError(short)
            return got
        except BaseException:
            _close_all(got)
            raise


_incoming = threading.local()  # .fds: the fds of the message being unpickled on this thread


def loads(data: bytes, fds: list[int]):
    """A message unpickled with the fds that came with it; every one of them is closed after (each mapping
    holds its memory by itself)."""
    _incoming.fds, _incoming.storages = list(fds), {}
    try:
        return pickle.loads(data)
    finally:
        _incoming.fds, _incoming.storages = [], {}
        _close_all(fds)


def send(conn, obj, holder: int) -> None:
    """obj to the Python worker `holder` over its Connection (a Unix socket): the fds of the allocations it
    names, then obj pickled (see _SharingPickler); the supervisor's fds are closed once sent."""
    data, exports = dumps(obj, holder)
    try:
        send_fds(conn.fileno(), exports.fds)
        conn.send_bytes(data)
    finally:
        exports.close()


def receive(conn):
    """Worker side of `send`: the next message, its tensors mapped. Its bytes are read whatever else fails,
    so the Connection stays in step."""
    try:
        fds = recv_fds(conn.fileno())
    except IpcError:
        conn.recv_bytes()
        raise
    try:
        data = conn.recv_bytes()
    except BaseException:
        _close_all(fds)
        raise
    return loads(data, fds)


class _SharingPickler(pickle.Pickler):
    """The pickler of a Python worker's commands: a tensor in an allocation of its own travels as its token
    (lent to the worker, its fd in `exports`); a CPU tensor as its storage's shared-memory fd (in `exports`);
    any other CUDA tensor is refused (torch's IPC would map a segment of torch's cache and leak when the worker
    dies), and so is a bare storage."""

    def __init__(self, file, holder: int, exports: Exports):
        super().__init__(file)
        self.holder, self.exports = holder, exports

    def reducer_override(self, obj):
        import torch

        if isinstance(obj, (torch.UntypedStorage, torch.TypedStorage)):
            raise IpcError("a storage is sent to a worker as a tensor")
        if not isinstance(obj, torch.Tensor):
            return NotImplemented
        from solbench.gpu import device_memory

        allocation = device_memory.allocation_of(obj)
        if allocation is None and obj.device.type == "cpu" and obj.untyped_storage().nbytes() == 0:
            return _empty_cpu_tensor, (obj.dtype, tuple(obj.shape), tuple(obj.stride()))  # no memory: no fd
        if allocation is None and obj.device.type == "cpu":
            index = self.exports.index_of_storage(obj.untyped_storage())
            return _shared_cpu_tensor, (index, obj.untyped_storage().nbytes(), obj.dtype, tuple(obj.shape),
                                        tuple(obj.stride()), obj.storage_offset())
        if allocation is None:
            raise IpcError("a CUDA tensor sent to a worker must be in an allocation of its own "
                           "(solbench.gpu.device_memory)")
        return _mapped_tensor, (token(obj, self.exports, self.holder), allocation.nbytes, obj.dtype,
                                tuple(obj.shape), tuple(obj.stride()))


def dumps(obj, holder: int) -> tuple[bytes, Exports]:
    """obj pickled for the Python worker `holder` (see _SharingPickler), and the fds its tokens name: send
    both (`send` does) and close the fds."""
    buf, exports = io.BytesIO(), Exports()
    try:
        _SharingPickler(buf, holder, exports).dump(obj)
    except BaseException:
        exports.close()
        raise
    return buf.getvalue(), exports


def _mapped_tensor(text: str, nbytes: int, dtype, shape: tuple, stride: tuple):
    """Worker side, while unpickling: the tensor behind a token, over a mapping of its allocation."""
    from solbench.gpu import device_memory

    tok = parse(text)
    fds = getattr(_incoming, "fds", [])
    if tok.index >= len(fds):
        raise IpcError(f"token {text} names file descriptor #{tok.index}, but its message came with {len(fds)}")
    whole = device_memory.open_mapping(fds[tok.index], tok.serial, tok.size, nbytes).tensor()
    span = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, stride))
    return whole[tok.offset:tok.offset + span * dtype.itemsize].view(dtype).as_strided(shape, stride)


def _shared_cpu_tensor(index: int, nbytes: int, dtype, shape: tuple, stride: tuple, offset: int):
    """Worker side, while unpickling: a CPU tensor over the shared memory of the message's INDEXth fd (one
    mapping per fd and message: tensors that shared a storage still do)."""
    import torch

    fds = getattr(_incoming, "fds", [])
    if index >= len(fds):
        raise IpcError(f"a CPU tensor names file descriptor #{index}, but its message came with {len(fds)}")
    storages = getattr(_incoming, "storages", {})
    if index not in storages:
        storages[index] = torch.UntypedStorage._new_shared_fd_cpu(fds[index], nbytes)  # keeps a copy of the fd
    return torch.empty(0, dtype=dtype).set_(storages[index], offset, shape, stride)


def _empty_cpu_tensor(dtype, shape: tuple, stride: tuple):
    import torch

    return torch.empty_strided(shape, stride, dtype=dtype)
