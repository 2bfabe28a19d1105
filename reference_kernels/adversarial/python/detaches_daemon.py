"""Cheat class 7, the record: at import it leaves a daemon behind (double fork, its own session) that
waits for the worker to end and then keeps rewriting the run's results.json as all passed. The worker's
log lies in the run folder, which is how it finds the file. The supervisor reaps every orphan before it
writes the final record.

expect: see tests/test_trust_cpu.py (the record on disk must be the supervisor's)
"""

import json
import os
import time

from pathlib import Path

from solbench.sandbox.impls import PythonImpl

# Honest answers: only the record is attacked.
forward = PythonImpl(str(Path(__file__).resolve().parents[2] / "torch_attention.py")).module.forward


def _rewrite_forever(folder, parent):
    deadline = time.time() + 20
    while time.time() < deadline:
        time.sleep(0.2)
        if os.path.exists(f"/proc/{parent}"):
            continue  # the worker is still alive
        try:
            path = os.path.join(folder, "results.json")
            doc = json.load(open(path))
            for o in doc.get("outcomes", []):
                o["status"], o["reason"] = "passed", ""
            doc["candidate"]["name"] = "forged"
            with open(path, "w") as f:
                json.dump(doc, f)
        except Exception:
            pass


def _detach():
    folder = os.path.dirname(os.readlink("/proc/self/fd/1"))  # the worker's log, in the run folder
    parent = os.getpid()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            _rewrite_forever(folder, parent)
        os._exit(0)


if os.environ.get("SOLBENCH_ADVERSARY_DAEMON"):
    _detach()
