"""Rounds the supervisor drops, on a CPU (the span cover and the out-of-memory retry): what CUPTI
saw in a round whose times the supervisor drops still counts. The out-of-memory retry's tests are in
tests/test_executor.py."""

import pytest

pytest.importorskip("torch")


class _HidesInDroppedRounds:
    """A native-kind candidate whose every other round says the GPU throttled and carries CUPTI's evidence of
    work outside its events; the retake it provokes is clean."""

    def __init__(self):
        from types import SimpleNamespace

        self.spec = SimpleNamespace(kind="cu", runner="native")
        self.replies = 0

    def request(self, cmd, payload=None, timeout_s=0.0):
        if cmd != "round":
            return None
        self.replies += 1
        calls = len(payload["order"])
        hiding = (self.replies - 1) // 2 % 2 == 0  # a round of 3 samples is 2 requests: hide in every other round
        return {"device_ms": [1.0] * calls, "host_ms": [1.0] * calls,
                "flags": ["work_outside_events"] if hiding else [],
                "telemetry": {"throttled": True} if hiding else {}, "clock": (calls + 0.2, float(calls))}


class _Honest(_HidesInDroppedRounds):
    def request(self, cmd, payload=None, timeout_s=0.0):
        if cmd != "round":
            return None
        calls = len(payload["order"])
        return {"device_ms": [1.0] * calls, "host_ms": [1.0] * calls, "flags": [], "telemetry": {},
                "clock": (calls + 0.2, float(calls))}


def test_evidence_of_hidden_work_in_a_retaken_round_is_kept():
    from fake_rounds import candidate_flags

    flags = candidate_flags(_HidesInDroppedRounds(), {"seed": _Honest()}, round_samples=3)
    assert "throttled_retaken" in flags and "work_outside_events" in flags


def test_an_honest_throttled_round_adds_no_evidence():
    from fake_rounds import candidate_flags

    class Throttled(_HidesInDroppedRounds):
        def request(self, cmd, payload=None, timeout_s=0.0):
            reply = super().request(cmd, payload, timeout_s)
            if reply:
                reply["flags"] = []
            return reply

    flags = candidate_flags(Throttled(), {"seed": _Honest()}, round_samples=3)
    assert "throttled_retaken" in flags and "work_outside_events" not in flags
