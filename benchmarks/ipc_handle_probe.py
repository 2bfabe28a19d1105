"""A probe (on a GPU; torch optional): can a worker open device memory it was never sent?

Three questions, one line each that ends in OPENED or refused:

  legacy, forged from its neighbours   Six consecutive cuMemAlloc allocations, each exported as a legacy CUDA
                                       IPC handle (cuIpcGetMemHandle); a child given handle 2 alone tries
                                       handles forged from the difference of handles 2 and 3 (on the H200:
                                       two bytes that count up), and two real ones it was never sent.
  (a) legacy, never exported           A, B, C allocated one after the other, A and C exported, B never
                                       (cuIpcGetMemHandle never called on it): handles forged around and
                                       between A's and C's, opened in a child; with cuMemAlloc, and with
                                       torch's caching allocator (memory the supervisor never shares at all).
  (b) fd path                          What solbench does now (solbench/gpu/device_memory.py, ipc.py): X sent
                                       to a child as a POSIX fd over a Unix socket, Y exported and closed but
                                       sent to no one, Z never exported; the child tries the fd numbers
                                       around the one it got and /proc/<parent>/fd/N for every fd the parent
                                       holds and every number its exported fds had.

A legacy handle that opens is why solbench moved off them; the exit status is 1 only when the fd path
lets the child open something it was not sent.

    python3 benchmarks/ipc_handle_probe.py
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import socket
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from solbench.gpu import driver  # noqa: E402

SIZE = 2 << 20
IPC_HANDLE_BYTES = 64
_u64 = ctypes.c_uint64


class IpcMemHandle(ctypes.Structure):
    """CUipcMemHandle: 64 opaque bytes, passed by value to cuIpcOpenMemHandle (solbench no longer uses it)."""

    _fields_ = [("reserved", ctypes.c_char * IPC_HANDLE_BYTES)]


def load() -> driver.Driver:
    """solbench's driver, with the legacy calls this probe needs besides (driver.py no longer declares them)."""
    drv = driver.load()
    for name, argtypes in {"cuMemAlloc_v2": [ctypes.POINTER(_u64), ctypes.c_size_t], "cuMemFree_v2": [_u64],
                           "cuIpcGetMemHandle": [ctypes.POINTER(IpcMemHandle), _u64],
                           "cuIpcOpenMemHandle_v2": [ctypes.POINTER(_u64), IpcMemHandle, ctypes.c_uint],
                           "cuIpcCloseMemHandle": [_u64],
                           "cuMemcpyDtoH_v2": [ctypes.c_void_p, _u64, ctypes.c_size_t]}.items():
        fn = getattr(drv.lib, name)
        fn.argtypes, fn.restype = argtypes, ctypes.c_int
    return drv


def first_byte(drv, ptr: int) -> int:
    out = ctypes.c_ubyte(0)
    drv.call("cuMemcpyDtoH_v2", ctypes.byref(out), _u64(ptr), 1)
    return out.value


def legacy_handle(drv, ptr: int) -> bytes:
    handle = IpcMemHandle()
    drv.call("cuIpcGetMemHandle", ctypes.byref(handle), _u64(ptr))
    return bytes(handle)


def cu_alloc(drv, fill: int) -> int:
    ptr = _u64(0)
    drv.call("cuMemAlloc_v2", ctypes.byref(ptr), SIZE)
    drv.call("cuMemsetD8_v2", ptr, fill, SIZE)
    return ptr.value


def make_handles(n: int) -> list[tuple[int, bytes]]:
    drv, out = load(), []
    with drv.context(0):
        for i in range(n):
            ptr = cu_alloc(drv, 0x40 + i)
            out.append((ptr, legacy_handle(drv, ptr)))
    return out


def try_open(handles: list[tuple[str, bytes]], queue) -> None:
    """Child: open each legacy handle; (label, what happened)."""
    drv, results = load(), []
    with drv.context(0):
        for label, handle in handles:
            ptr = _u64(0)
            try:
                drv.call("cuIpcOpenMemHandle_v2", ctypes.byref(ptr), IpcMemHandle.from_buffer_copy(handle), 1)
                results.append((label, f"OPENED, first byte 0x{first_byte(drv, ptr.value):02x}"))
            except driver.DriverError as exc:
                results.append((label, f"refused: {exc}"))
    queue.put(results)


def in_child(handles: list[tuple[str, bytes]]) -> list[tuple[str, str]]:
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=try_open, args=(handles, queue), daemon=True)
    child.start()
    results = queue.get(timeout=120)
    child.join(30)
    return results


def shifted(handle: bytes, delta: list[int]) -> bytes:
    return bytes((b + d) & 0xFF for b, d in zip(handle, delta))


def between(a: bytes, c: bytes) -> list[bytes]:
    """Handles forged around and between a and c: the bytes where they differ read as one little-endian
    number, set to values near and between theirs (whatever counter they hold, B's would be among them)."""
    diff = [i for i in range(len(a)) if a[i] != c[i]]
    if not diff:
        return []
    lo, hi = diff[0], diff[-1] + 1
    va, vc = int.from_bytes(a[lo:hi], "little"), int.from_bytes(c[lo:hi], "little")
    step = vc - va
    values = {va - 1, va + 1, va + 2, vc - 1, vc + 1, vc + 2, (va + vc) // 2, vc + step, va - step}
    values = {v for v in values if 0 <= v < 1 << (8 * (hi - lo)) and v not in (va, vc)}
    return [a[:lo] + v.to_bytes(hi - lo, "little") + a[hi:] for v in sorted(values)]


def verdict(results: list[tuple[str, str]], prefix: str) -> str:
    opened = [f"{label} ({what.split(', ', 1)[-1]})" for label, what in results
              if label.startswith(prefix) and what.startswith("OPENED")]
    return ("OPENED: " + "; ".join(opened)) if opened else f"refused ({sum(l.startswith(prefix) for l, _ in results)} tried)"


def legacy_neighbours() -> None:
    """The original question: a handle forged from the difference of two it was given."""
    handles = make_handles(6)
    for ptr, handle in handles:
        print(hex(ptr), handle.hex())
    print("bytes differing between handles 0 and 1:", [i for i in range(64) if handles[0][1][i] != handles[1][1][i]])
    h2, h3 = handles[2][1], handles[3][1]
    up = [(b - a) & 0xFF for a, b in zip(h2, h3)]
    down = [(a - b) & 0xFF for a, b in zip(h2, h3)]
    forged = [("forged 4", shifted(h3, up)), ("forged 5", shifted(shifted(h3, up), up)),
              ("forged 1", shifted(h2, down)), ("forged 0", shifted(shifted(h2, down), down))]
    results = in_child([("given", h2)] + forged + [("real 4, never sent", handles[4][1]),
                                                   ("real 0, never sent", handles[0][1])])
    for label, what in results:
        print(f"  {label:20s} {what}")
    print("legacy, forged from its neighbours:", verdict(results, "forged"))


def legacy_never_exported() -> None:
    """(a): can a legacy handle be made for memory on which cuIpcGetMemHandle was never called?"""
    drv = load()
    with drv.context(0):
        a, b, c = (cu_alloc(drv, fill) for fill in (0x41, 0x42, 0x43))
        ha, hc = legacy_handle(drv, a), legacy_handle(drv, c)
    print(f"  cuMemAlloc A {a:#x} {ha.hex()}\n  cuMemAlloc B {b:#x} (never exported)\n  cuMemAlloc C {c:#x} {hc.hex()}")
    results = in_child([(f"forged B #{i}", h) for i, h in enumerate(between(ha, hc))])
    print("(a) legacy, never exported (cuMemAlloc):", verdict(results, "forged"))
    try:
        import torch
    except ImportError:
        print("(a) legacy, never exported (torch's caching allocator): not tried (no torch)")
        return
    n = (32 << 20) // 4  # 32 MiB each: a segment of its own in torch's cache
    ta, tb, tc = (torch.full((n,), fill, dtype=torch.int32, device="cuda:0").view(torch.uint8)
                  for fill in (0x41414141, 0x42424242, 0x43434343))
    torch.cuda.synchronize()
    with drv.context(0):
        ha, hc = legacy_handle(drv, ta.data_ptr()), legacy_handle(drv, tc.data_ptr())
    print(f"  torch A {ta.data_ptr():#x}  B {tb.data_ptr():#x} (never exported)  C {tc.data_ptr():#x}")
    results = in_child([(f"forged B #{i}", h) for i, h in enumerate(between(ha, hc))])
    print("(a) legacy, never exported (torch's caching allocator):", verdict(results, "forged"))


# ---------------------------------------------------------------- (b) the fd path

_CHILD_FLAG = "--fd-child"


def fd_child(sock_fd: int, size: int, parent_numbers: str) -> int:
    """Child of (b): map the one fd it was sent, then try every other way to an allocation."""
    from solbench.gpu import device_memory, ipc

    drv = load()
    fds = ipc.recv_fds(sock_fd)
    given = fds[0]
    with drv.context(0):
        mapping = device_memory.Mapping(given, 1, size, size, 0)
        print(f"given fd {given}: OPENED, first byte 0x{first_byte(drv, mapping.ptr):02x}", flush=True)
    for fd in fds:
        os.close(fd)  # as a worker does once it mapped

    def attempt(label: str, fd: int) -> None:
        """Import fd as an allocation; if that works, map it (solbench's own steps) and read its first byte."""
        handle = _u64(0)
        try:
            with drv.context(0):
                drv.call("cuMemImportFromShareableHandle", ctypes.byref(handle), ctypes.c_void_p(fd),
                         driver.MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
                try:
                    ptr = device_memory._map(drv, handle.value, size, 0)
                    what = f"first byte 0x{first_byte(drv, ptr):02x}"
                    device_memory._unmap_range(drv, ptr, size)
                except driver.DriverError as exc:
                    what = f"imported, not mapped: {exc}"
                drv.call("cuMemRelease", handle)
            print(f"TRY {label}: OPENED, {what}", flush=True)
        except driver.DriverError as exc:
            print(f"TRY {label}: refused ({exc})", flush=True)

    for fd in range(max(0, given - 4), given + 8):
        attempt(f"fd {fd}", fd)
    parent = os.getppid()
    numbers = {int(n) for n in parent_numbers.split(",") if n} | {int(n) for n in os.listdir(f"/proc/{parent}/fd")}
    for n in sorted(numbers):
        try:
            fd = os.open(f"/proc/{parent}/fd/{n}", os.O_RDONLY)
        except OSError as exc:
            print(f"TRY /proc/{parent}/fd/{n}: refused (open: {exc.strerror})", flush=True)
            continue
        attempt(f"/proc/{parent}/fd/{n}", fd)
        os.close(fd)
    print("DONE", flush=True)
    return 0


def fd_path() -> bool:
    """(b): True when the child opened something it was not sent."""
    from solbench.gpu import device_memory, ipc

    drv = load()
    blocks = [device_memory.Block(SIZE, 0) for _ in range(3)]  # X sent, Y exported for no one, Z never exported
    with drv.context(0):
        for block, fill in zip(blocks, (0x61, 0x62, 0x63)):
            drv.call("cuMemsetD8_v2", _u64(block.allocation.ptr), fill, SIZE)
        drv.call("cuCtxSynchronize")
    x, y, _ = (b.allocation for b in blocks)
    y_fd = device_memory.export_fd(y)
    numbers = [y_fd]
    os.close(y_fd)
    x_fd = device_memory.export_fd(x)
    numbers.append(x_fd)
    ours, theirs = socket.socketpair()
    child = subprocess.Popen([sys.executable, __file__, _CHILD_FLAG, str(theirs.fileno()), str(x.size),
                              ",".join(map(str, numbers))], pass_fds=(theirs.fileno(),), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    theirs.close()
    try:
        ipc.send_fds(ours.fileno(), [x_fd])
    finally:
        os.close(x_fd)  # the child's copy is the only one
    out, err = child.communicate(timeout=180)
    ours.close()
    lines = out.splitlines()
    for line in lines:
        if "OPENED" in line:
            print("  " + line)
    tries = [line for line in lines if line.startswith("TRY")]
    opened = [line for line in tries if "OPENED" in line]
    given = next((line for line in lines if line.startswith("given")), "")
    finished = "DONE" in lines
    if not finished:  # a crash part-way (after an import that should not have worked, say) is no refusal
        last = err.strip().splitlines()[-1] if err.strip() else "no error output"
        opened.append(f"the child did not finish (exit status {child.returncode}, after {tries[-1] if tries else given!r}): {last}")
    print("(b) fd path, the fd it was sent:", "OPENED" if "OPENED, first byte 0x61" in given else f"refused {given!r}")
    print("(b) fd path, anything it was not sent:", ("OPENED: " + "; ".join(opened)) if opened else
          f"refused ({len(tries)} tried: fd numbers around its own, /proc/{os.getpid()}/fd/N)")
    del blocks
    return bool(opened) or "OPENED" not in given


def main() -> int:
    legacy_neighbours()
    legacy_never_exported()
    return 1 if fd_path() else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == _CHILD_FLAG:
        sys.exit(fd_child(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]))
    sys.exit(main())
