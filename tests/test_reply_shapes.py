"""The shape check of a worker's timing replies (solbench.supervisor.reply_shapes): what a hostile
candidate's process can send instead of numbers is named, never read."""

import math

from solbench.supervisor.reply_shapes import check_problem, prepare_problem, round_problem, split_problem

GOOD_ROUND = {"device_ms": [0.5, 0.25], "host_ms": [0.6, 0.0], "flags": ["noisy"], "telemetry": {}}
GOOD_SPLIT = {"graph_device_ms": None, "graph_error": "cpu", "eager_device_ms": 0.5, "eager_host_ms": 0.6,
              "eager_single_ms": 0.7, "host_floor_ms": 0.01, "overhead_ms": -0.1}


def test_a_well_formed_round_and_split_pass():
    assert round_problem(GOOD_ROUND, 2) is None
    telemetry = {"sm_clock_mhz": {"min": 1980, "max": 1980.0}, "reasons": [], "kernels": [{"name": "k", "grid": [1, 2, 3]}]}
    assert round_problem({**GOOD_ROUND, "telemetry": telemetry}, 2) is None
    assert split_problem(GOOD_SPLIT) is None
    assert split_problem({**GOOD_SPLIT, "graph_device_ms": 0.4, "graph_error": ""}) is None


def test_every_malformed_round_is_named():
    bad = {
        "not a dict": ["0.5"],
        "too few samples": {**GOOD_ROUND, "device_ms": [0.5]},
        "a string sample": {**GOOD_ROUND, "device_ms": ["0.5", 0.5]},
        "a bool sample": {**GOOD_ROUND, "host_ms": [True, 0.5]},
        "NaN": {**GOOD_ROUND, "device_ms": [math.nan, 0.5]},
        "infinity": {**GOOD_ROUND, "host_ms": [math.inf, 0.5]},
        "zero device time": {**GOOD_ROUND, "device_ms": [0.0, 0.5]},
        "negative": {**GOOD_ROUND, "device_ms": [-1.0, 0.5]},
        "missing host": {k: v for k, v in GOOD_ROUND.items() if k != "host_ms"},
        "flags not strings": {**GOOD_ROUND, "flags": [1]},
        "huge flag": {**GOOD_ROUND, "flags": ["x" * 1000]},
        "telemetry not a dict": {**GOOD_ROUND, "telemetry": "hot"},
        "NaN in telemetry": {**GOOD_ROUND, "telemetry": {"sm_clock_mhz": {"min": math.nan}}},
        "Infinity in kernel records": {**GOOD_ROUND, "telemetry": {"kernels": [{"duration_ms": math.inf}]}},
        "telemetry nested too deep": {**GOOD_ROUND, "telemetry": {"a": [[[[[[[[[1]]]]]]]]]}},
        "telemetry too large": {**GOOD_ROUND, "telemetry": {"kernels": list(range(200_000))}},
    }
    named = {case: round_problem(reply, 2) for case, reply in bad.items()}
    assert all(isinstance(why, str) and why for why in named.values()), named


def test_every_malformed_split_is_named():
    bad = [None, {**GOOD_SPLIT, "eager_host_ms": "1"}, {**GOOD_SPLIT, "overhead_ms": math.nan},
           {**GOOD_SPLIT, "graph_device_ms": -1.0}, {**GOOD_SPLIT, "graph_error": 3},
           {k: v for k, v in GOOD_SPLIT.items() if k != "host_floor_ms"}, {**GOOD_SPLIT, "extra": math.nan},
           {**GOOD_SPLIT, "unrecorded": -1}, {**GOOD_SPLIT, "unrecorded": 1.5}]
    assert all(split_problem(reply) for reply in bad)


def test_prepare_and_check_replies_of_the_wrong_shape_are_named():
    assert prepare_problem({"writes_lse": True}) is None and check_problem(None) is None
    assert check_problem({"unsupported": "no fp8"}) is None
    for bad in (None, [], {"writes_lse": 1}, {}):
        assert prepare_problem(bad)
    for bad in ({}, {"unsupported": 3}, {"unsupported": "x", "extra": 1}, "ok", 0):
        assert check_problem(bad)
