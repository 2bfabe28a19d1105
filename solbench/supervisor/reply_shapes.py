"""The shape of a worker's replies, checked before the supervisor reads anything from them.

Prepare, check, round and launcher-split replies are written in the implementation's own process, where a
hostile candidate can put anything. The supervisor's clock check and audits judge what the numbers claim; this
keeps a reply that is not numbers at all (a string sample, a missing field, NaN, a zero time, a sample
count other than the calls asked for) from crashing the run or every report of it: it is the candidate's `tampered`
verdict (a comparator's is dropped from the timing), with the first thing found wrong.
"""

from __future__ import annotations

import math

MAX_FLAG_CHARS = 64


def _is_time(x) -> bool:
    return type(x) in (int, float) and math.isfinite(x) and x >= 0


def _is_call_time(x) -> bool:
    """A timed call's device time: no call takes no time (and a relative CI of a zero median is undefined)."""
    return _is_time(x) and x > 0


def round_problem(reply, calls: int) -> str | None:
    """What is wrong with a 'round' reply for `calls` calls, or None."""
    if not isinstance(reply, dict):
        return f"a {type(reply).__name__}, not a dict"
    for key, valid, words in (("device_ms", _is_call_time, "finite positive"),
                              ("host_ms", _is_time, "finite non-negative")):
        samples = reply.get(key)
        if not isinstance(samples, list) or len(samples) != calls:
            return f"{key} is not a list of {calls} samples"
        if not all(valid(x) for x in samples):
            return f"{key} holds something other than {words} numbers"
    flags = reply.get("flags")
    if not isinstance(flags, list) or not all(isinstance(f, str) and len(f) <= MAX_FLAG_CHARS for f in flags):
        return "flags is not a list of short strings"
    if not isinstance(reply.get("telemetry"), dict):
        return "telemetry is not a dict"
    return None


def split_problem(reply) -> str | None:
    """What is wrong with a 'launcher_split' reply (solbench.sandbox.timing.LauncherSplit as a dict), or None."""
    if not isinstance(reply, dict):
        return f"a {type(reply).__name__}, not a dict"
    for key in ("eager_device_ms", "eager_host_ms", "eager_single_ms", "host_floor_ms"):
        if not _is_time(reply.get(key)):
            return f"{key} is not a finite non-negative number"
    overhead = reply.get("overhead_ms")
    if type(overhead) not in (int, float) or not math.isfinite(overhead):  # may be negative: device-bound
        return "overhead_ms is not a finite number"
    graph = reply.get("graph_device_ms")
    if graph is not None and not _is_time(graph):
        return "graph_device_ms is neither null nor a finite non-negative number"
    if not isinstance(reply.get("graph_error", ""), str):
        return "graph_error is not a string"
    return None


def prepare_problem(reply) -> str | None:
    """What is wrong with a 'prepare' reply ({"writes_lse": bool}), or None."""
    if not isinstance(reply, dict) or type(reply.get("writes_lse")) is not bool:
        return "not {'writes_lse': true|false}"
    return None


def check_problem(reply) -> str | None:
    """What is wrong with a 'check' reply (None, or {"unsupported": why} when the implementation declines), or None."""
    if reply is None:
        return None
    if not isinstance(reply, dict) or set(reply) != {"unsupported"} or not isinstance(reply["unsupported"], str):
        return "neither null nor {'unsupported': why}"
    return None
