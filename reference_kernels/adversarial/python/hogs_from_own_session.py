"""hogs_between_rounds.py's way past the stop: the supervisor stops the candidate's process
group between its requests (solbench/supervisor/pause.py), so at import this candidate forks a child that leaves
the group -- its own session (setsid), or else the supervisor's group (setpgid) -- and loads a CPU from there
while the parent is stopped, i.e. while the comparators are timed. Its answers are honest. The seccomp filter
makes setsid and setpgid do nothing (solbench/sandbox/privileges.py): the child stays in the group and is
stopped with it. tests/test_confine_and_hold_cpu.py checks the child's state while the worker is held.

expect: passed
"""

import hashlib
import os
import time
from pathlib import Path

from solbench.sandbox.impls import PythonImpl

forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward
LIFETIME_S = 60.0


def _leave_and_hog(tell: int) -> None:
    try:
        os.setsid()
    except OSError:
        pass
    try:
        os.setpgid(0, os.getpgid(os.getppid() if os.getppid() != 1 else 0))
    except OSError:
        pass
    os.write(tell, f"child {os.getpid()} group {os.getpgid(0)} session {os.getsid(0)}".encode())
    os.close(tell)
    block, end = b"x" * (64 << 10), time.monotonic() + LIFETIME_S
    while time.monotonic() < end:
        hashlib.sha256(block).digest()
    os._exit(0)


_read, _write = os.pipe()
if os.fork() == 0:
    _leave_and_hog(_write)
os.close(_write)
print(f"hogs_from_own_session: {os.read(_read, 200).decode()}", flush=True)  # where the child ended up
