"""Cheat class 1 of issue 39 (a way from the worker into the supervisor), its other half: on the CPU the worker
holds an fd of the shared memory behind each tensor it was sent, a file in /dev/shm that torch made, opened for
writing (Landlock checks a truncation when a file is opened, and this one was opened by the supervisor). In its
first call this candidate truncates every such fd to nothing: the supervisor's own mapping of the tensor now
runs past the end of its file, and its next read of the outputs is a SIGBUS that ends the run (no record of the
scenario, no later scenario run; before the fix, on a CPU: `solbench run` killed by SIGBUS, exit 135). Only
with $SOLBENCH_ADVERSARY_SHRINK set (it would end a pytest process that runs the corpus in-process); without
it, the forward's zeros are all there is.

expect: mismatch
"""

import os
import sys

_done = []


def _shrink() -> str:
    said = []
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if target.startswith(("/dev/shm/", "/memfd:")):
            try:
                os.ftruncate(int(name), 0)
                said.append(f"{target}: truncated")
            except OSError as exc:
                said.append(f"{target}: {exc.strerror}")
    return "; ".join(said) or "no shared memory held"


def forward(inp):
    inp.out.zero_()
    inp.lse.zero_()
    if os.environ.get("SOLBENCH_ADVERSARY_SHRINK") and not _done:  # after its own last touch of the memory
        _done.append(1)
        print(f"shrinks_the_supervisors_memory: {_shrink()}", file=sys.stderr, flush=True)
