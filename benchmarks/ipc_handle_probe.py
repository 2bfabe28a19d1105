"""Review 22's probe (on a GPU; no torch needed): can a worker open CUDA IPC handles it was never sent?

Each tensor the supervisor shares is an allocation of its own, sent to a worker as its IPC handle
(solbench/gpu/device_memory.py, ipc.py). That confines the worker only if a handle cannot be derived from
the ones it was given. This makes six consecutive 2 MiB allocations, prints their handles and which bytes
differ, then gives a child process handle 2 alone and has it try four handles forged from the difference
of handles 2 and 3 and two real handles it was never sent (4 and 0). A forged handle that opens is a hole
(real ones are bearer tokens: they open wherever their bytes are known, which is why each goes only to the
worker it is for); the fix would be file-descriptor export (cuMemCreate + SCM_RIGHTS) or never exporting
trial 0.

    python3 benchmarks/ipc_handle_probe.py
"""

from __future__ import annotations

import ctypes
import multiprocessing
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from solbench.gpu import driver  # noqa: E402

SIZE = 2 << 20


def make_handles(n: int) -> list[tuple[int, bytes]]:
    drv, out = driver.load(), []
    with drv.context(0):
        for i in range(n):
            ptr = ctypes.c_uint64(0)
            drv.call("cuMemAlloc_v2", ctypes.byref(ptr), SIZE)
            drv.call("cuMemsetD8_v2", ptr, 0x40 + i, SIZE)
            handle = driver.IpcMemHandle()
            drv.call("cuIpcGetMemHandle", ctypes.byref(handle), ptr)
            out.append((ptr.value, bytes(handle)))
    return out


def try_open(given: bytes, others: list[tuple[str, bytes]], queue) -> None:
    drv, results = driver.load(), []
    copy = drv.lib.cuMemcpyDtoH_v2
    copy.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t]
    with drv.context(0):
        for label, handle in [("given", given)] + others:
            ptr = ctypes.c_uint64(0)
            try:
                drv.call("cuIpcOpenMemHandle_v2", ctypes.byref(ptr), driver.IpcMemHandle.from_buffer_copy(handle), 1)
                first = ctypes.c_ubyte(0)
                copy(ctypes.byref(first), ptr.value, 1)
                results.append((label, f"OPENED, first byte 0x{first.value:02x}"))
            except driver.DriverError as exc:
                results.append((label, f"refused: {exc}"))
    queue.put(results)


def shifted(handle: bytes, delta: list[int]) -> bytes:
    return bytes((b + d) & 0xFF for b, d in zip(handle, delta))


def main() -> int:
    handles = make_handles(6)
    for ptr, handle in handles:
        print(hex(ptr), handle.hex())
    print("bytes differing between handles 0 and 1:", [i for i in range(64) if handles[0][1][i] != handles[1][1][i]])
    h2, h3 = handles[2][1], handles[3][1]
    up = [(b - a) & 0xFF for a, b in zip(h2, h3)]
    down = [(a - b) & 0xFF for a, b in zip(h2, h3)]
    forged = [("forged 4", shifted(h3, up)), ("forged 5", shifted(shifted(h3, up), up)),
              ("forged 1", shifted(h2, down)), ("forged 0", shifted(shifted(h2, down), down))]
    print("forged 4 equals the real one:", forged[0][1] == handles[4][1],
          "| forged 1 equals the real one:", forged[2][1] == handles[1][1])
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=try_open, args=(h2, forged + [("real 4, never sent", handles[4][1]),
                                                             ("real 0, never sent", handles[0][1])], queue))
    child.start()
    results = queue.get(timeout=60)
    child.join()
    for label, what in results:
        print(f"{label:20s} {what}")
    # Real handles open wherever their bytes are known (bearer tokens, same user): the question is whether a
    # worker can make the bytes of one it was not sent.
    holes = [label for label, what in results if label.startswith("forged") and what.startswith("OPENED")]
    print("HOLE: a forged handle opened:" if holes else "no forged handle opened", ", ".join(holes))
    return 1 if holes else 0


if __name__ == "__main__":
    sys.exit(main())
