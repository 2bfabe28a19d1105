"""The native runner's launch count on a CPU: the launcher split's
own launches answer in the scenario that made them."""

import pytest

pytest.importorskip("torch")

SPLIT = {"eager_device_ms": 1.0, "eager_host_ms": 1.1, "eager_single_ms": 1.1, "host_floor_ms": 0.01,
         "overhead_ms": 0.1, "graph_device_ms": 0.95, "graph_error": ""}


class _Native:
    """A native-kind worker with clean rounds; its launcher split says how many of its launches left no record."""

    def __init__(self, unrecorded=None):
        from types import SimpleNamespace

        self.spec = SimpleNamespace(kind="cu", runner="native")
        self.unrecorded = unrecorded

    def request(self, cmd, payload=None, timeout_s=0.0):
        if cmd == "launcher_split":
            return SPLIT if self.unrecorded is None else {**SPLIT, "unrecorded": self.unrecorded}
        if cmd != "round":
            return None
        calls = len(payload["order"])
        return {"device_ms": [1.0] * calls, "host_ms": [1.0] * calls, "flags": [], "telemetry": {},
                "clock": (calls + 0.2, float(calls))}


@pytest.mark.parametrize("unrecorded, blind", [(None, False), (0, False), (3, True)])
def test_launches_of_the_launcher_split_that_left_no_record_make_the_scenario_blind(unrecorded, blind):
    from fake_rounds import candidate_flags

    flags = candidate_flags(_Native(unrecorded), {"seed": _Native()}, round_samples=3, launcher_ab=True)
    assert ("cupti_blind" in flags) is blind, flags


def test_a_split_without_the_count_its_runner_promised_before_the_load_is_blind():
    from fake_rounds import candidate_flags

    promised = _Native()
    promised.description = {"before_load": {"cupti": True, "launch_count": True}}
    assert "cupti_blind" in candidate_flags(promised, {"seed": _Native()}, round_samples=3, launcher_ab=True)
    promised.unrecorded = 0
    assert "cupti_blind" not in candidate_flags(promised, {"seed": _Native()}, round_samples=3, launcher_ab=True)
