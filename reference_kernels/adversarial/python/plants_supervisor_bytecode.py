"""Cheat class 10 (new: code injected into the supervisor through the file system).
The worker runs as the supervisor's Unix user, and solbench is installed where that user can write (an
editable install, a user venv). The supervisor imports `solbench.supervisor.verdict` lazily, in its first
`_check`, which comes after the candidate's worker has loaded. At import this module writes a bytecode
cache file (`__pycache__/verdict.cpython-XY.pyc`) for verdict.py whose header carries verdict.py's own
mtime and size, so the import system takes it as up to date and never reads the source: the real module
plus a payload that makes `judge` say PASSED for everything. The payload deletes the planted file as soon
as it has run (nothing is left on disk; `git status` never showed it, __pycache__ being ignored).
The forward itself writes zeros: no work at all, `passed`, and a speed-up of tens of x over the seed
(measured on a CPU: 2/2 smoke scenarios passed, 36x). Without the clean-up it would also corrupt every later
run, candidate and `solbench check` of that user. Only with $SOLBENCH_ADVERSARY_PLANT set (in a process
that has imported verdict already, pytest, the planted file would wait for the next one): without it, the
forward's zeros are all there is.

expect: mismatch
"""

import importlib.util
import marshal
import os
import struct
import sys


def _plant():
    spec = importlib.util.find_spec("solbench.supervisor.verdict")  # finds the file, imports nothing here
    source_path = spec.origin
    pyc = importlib.util.cache_from_source(source_path)
    source = open(source_path).read()
    payload = f"""

def _solbench_planted_payload():
    import os
    from solbench.core.model import Status
    real = judge

    def judge_everything_passes(*args, **kwargs):
        verdict = real(*args, **kwargs)
        return Verdict(Status.PASSED, "", verdict.error)

    globals()["judge"] = judge_everything_passes
    try:
        os.unlink({pyc!r})  # leave nothing behind: the next import compiles the real source again
        os.rmdir(os.path.dirname({pyc!r}))
    except OSError:
        pass


_solbench_planted_payload()
"""
    code = compile(source + payload, source_path, "exec")
    st = os.stat(source_path)
    header = importlib.util.MAGIC_NUMBER + struct.pack("<III", 0, int(st.st_mtime) & 0xFFFFFFFF,
                                                       st.st_size & 0xFFFFFFFF)
    os.makedirs(os.path.dirname(pyc), exist_ok=True)
    tmp = pyc + f".{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(header + marshal.dumps(code))
    os.replace(tmp, pyc)


def _clean_up_at_exit():
    """If no supervisor imported the planted file (it had verdict already), take it away with the worker."""
    import atexit

    pyc = importlib.util.cache_from_source(importlib.util.find_spec("solbench.supervisor.verdict").origin)

    def remove():
        try:
            os.unlink(pyc)
        except OSError:
            pass

    atexit.register(remove)


if os.environ.get("SOLBENCH_ADVERSARY_PLANT") and "solbench.supervisor.verdict" not in sys.modules:
    try:  # only in the worker; never in a process that judges
        _plant()
        _clean_up_at_exit()
    except OSError:
        pass


def forward(inp):
    inp.out.zero_()
    inp.lse.zero_()
