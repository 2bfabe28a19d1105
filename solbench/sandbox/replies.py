"""How a worker answers the supervisor, and how the supervisor reads it: one JSON [status, value] frame a reply,
of bounded size, read with a deadline (the supervisor never unpickles what a candidate's process wrote, and a
half-sent frame must not hang it); and the one-line words for a worker's exception or exit."""

from __future__ import annotations

import json

MAX_REPLY_BYTES = 16 << 20
"""A reply is JSON of at most this size: the supervisor never unpickles what the candidate's process wrote
(unpickling runs whatever the bytes name). Commands to the worker stay pickled (tensors, trusted side)."""


def send_reply(conn, status: str, value=None) -> None:
    conn.send_bytes(json.dumps([status, value]).encode())


FRAME_S = 30.0
"""Seconds a reply may take to arrive whole once its first bytes have (a 16 MiB reply over a pipe takes ms)."""


class Stalled(Exception):
    """No reply within the time allowed, or one begun and never finished."""


def recv_within(conn, timeout_s: float, on_stall) -> bytes:
    """conn.recv_bytes with a deadline. `poll` says a reply has begun, not that it is whole: a worker that sends
    the start of a frame and stops would block the supervisor for good. The read runs in a thread;
    when the frame is not whole within FRAME_S, `on_stall` (kill the worker, which closes its end and ends the
    read) runs and Stalled is raised."""
    import threading

    if not conn.poll(timeout_s):
        raise Stalled(f"no answer within {timeout_s:g} s")
    box: dict = {}

    def read():
        try:
            box["data"] = conn.recv_bytes(MAX_REPLY_BYTES)
        except BaseException as exc:  # handed to the caller's thread below
            box["error"] = exc

    reader = threading.Thread(target=read, name="solbench-reply", daemon=True)
    reader.start()
    reader.join(FRAME_S)
    if reader.is_alive():
        on_stall()
        reader.join(5.0)
        raise Stalled(f"a reply begun and not finished within {FRAME_S:g} s")
    if "error" in box:
        raise box["error"]
    return box["data"]


MAX_REPLY_DEPTH = 64
"""Nesting a reply may have: the decoder and whatever walks a reply afterwards recurse, and a frame of 100,000
'[' raised RecursionError out of the supervisor, which ended the run on the candidate's say."""


def _bounded_int(text: str) -> int:
    """A reply's integers are counts and sizes: 10**400 would pass decoding and overflow the first float check."""
    if len(text.lstrip("-")) > 19:
        raise ValueError(f"an integer of {len(text)} digits")
    return int(text)


def decode_json(data):
    """A reply's JSON value; ValueError for anything else (malformed, too deep, a number too long), whatever the
    decoder raised: what a candidate's process wrote must cost its scenario, never the run."""
    try:
        value = json.loads(data, parse_int=_bounded_int)
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ValueError(f"not JSON ({type(exc).__name__})") from None
    stack = [(value, 1)]
    while stack:  # iterative: the check itself must not recurse
        item, depth = stack.pop()
        if depth > MAX_REPLY_DEPTH:
            raise ValueError(f"nested deeper than {MAX_REPLY_DEPTH}")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return value


def read_reply(data: bytes):
    """(status, value) of one reply; ValueError for anything but a JSON [str, value] pair."""
    reply = decode_json(data)
    if not (isinstance(reply, list) and len(reply) == 2 and isinstance(reply[0], str)):
        raise ValueError("not a [status, value] pair")
    return reply[0], reply[1]


def first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def describe_exit(code) -> str:
    if code is None:
        return "no exit code"
    if code < 0:
        import signal

        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"
