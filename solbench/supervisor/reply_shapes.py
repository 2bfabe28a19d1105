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
    if why := _not_json(reply["telemetry"]):
        return f"telemetry {why}"
    return None


MAX_TELEMETRY_ITEMS = 100_000
"""Values a round's telemetry may hold in all (kernel records included): far above what a worker reports."""


def _not_json(value, depth: int = 0, budget: list | None = None) -> str | None:
    """Why `value` cannot be written to a record as strict JSON (NaN, Infinity, a non-string key, nesting
    deeper than 8, more than MAX_TELEMETRY_ITEMS values), or None. The record is written with allow_nan=False:
    a NaN in telemetry stopped the run there and left results.json at the scenario before."""
    budget = budget if budget is not None else [MAX_TELEMETRY_ITEMS]
    budget[0] -= 1
    if budget[0] < 0:
        return f"holds more than {MAX_TELEMETRY_ITEMS} values"
    if value is None or type(value) in (bool, str, int):
        return None
    if type(value) is float:
        return None if math.isfinite(value) else "holds a non-finite number"
    if depth >= 8:
        return "is nested too deep"
    if type(value) is list:
        return next((why for v in value if (why := _not_json(v, depth + 1, budget))), None)
    if type(value) is dict:
        if not all(type(k) is str for k in value):
            return "has a key that is not a string"
        return next((why for v in value.values() if (why := _not_json(v, depth + 1, budget))), None)
    return f"holds a {type(value).__name__}"


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
    unrecorded = reply.get("unrecorded", 0)
    if type(unrecorded) is not int or unrecorded < 0:
        return "unrecorded is not a count"
    if why := _not_json(reply):  # the whole reply is recorded (telemetry["launcher"]), extra keys included
        return why
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
