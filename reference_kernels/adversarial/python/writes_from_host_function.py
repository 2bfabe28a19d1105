"""Cheat class 7 (the record), by way of a thread the confinement might not bind: Landlock binds the thread
that applies it and the threads started after it, and a CUDA host function (cuLaunchHostFunc) runs on one
of the driver's own threads. Until 2026-12-04 the Python host confined itself after CUDA had started, so a
host function could have run unconfined and written anywhere the user can: the run folder, the build
cache (a slower seed), solbench's bytecode (see plants_supervisor_bytecode.py). Here, on a GPU and with
$SOLBENCH_ADVERSARY_MARKER set, the first call queues a host function that tries to write that file (a
path outside the scratch folder) and prints what happened to the worker's log; tests/test_trust_gpu.py
checks that it ran, was refused and left nothing. The forward itself writes zeros.

expect: mismatch
"""

import ctypes
import os

_queued = []  # the ctypes callback must outlive the call that queued it


def _host_function(_user_data):
    marker = os.environ["SOLBENCH_ADVERSARY_MARKER"]
    try:
        with open(marker, "w") as f:
            f.write("written from a CUDA host function\n")
        print(f"host function: wrote {marker}", flush=True)
    except OSError as exc:
        print(f"host function: refused: {exc}", flush=True)


def forward(inp) -> None:
    inp.out.zero_()
    inp.lse.zero_()
    if inp.out.is_cuda and os.environ.get("SOLBENCH_ADVERSARY_MARKER") and not _queued:
        import torch

        callback = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(_host_function)
        _queued.append(callback)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        status = ctypes.CDLL("libcuda.so.1").cuLaunchHostFunc(stream, callback, None)
        print(f"host function queued: CUresult {status}", flush=True)
