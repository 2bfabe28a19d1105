"""Forged round replies on a CPU, caught on the supervisor's clock: each test states what the harness must do;
the strict xfail is what is still open.

The native runner cannot run here; its round replies are played by a fake worker of the native kind, as in
tests/test_trust_cpu.py, with the numbers reference_kernels/adversarial/forges_replies_past_busy.cu sends."""

import pytest

pytest.importorskip("torch")

CLOCK_GAP = "supervisor_clock_gap"


class _Worker:
    """Every call takes `call_ms` on the supervisor's clock; the reply reports `scale` of it as the call's
    device and host times. A native one carries native_worker._round's "clock": the supervisor's wall time
    of the round and the runner's busy_ms, which the runner measures around the whole round (runner.cu
    cmd_round) and a forger of the other numbers has no need to touch."""

    def __init__(self, kind: str, runner: str, call_ms: float, scale: float = 1.0):
        from types import SimpleNamespace

        self.spec = SimpleNamespace(kind=kind, runner=runner)
        self.call_ms, self.scale = call_ms, scale

    def request(self, cmd, payload=None, timeout_s=0.0):
        import time

        if cmd != "round":
            return None
        calls = len(payload["order"])
        began = time.perf_counter()
        time.sleep(calls * self.call_ms / 1e3)
        busy = (time.perf_counter() - began) * 1e3
        reply = {"device_ms": [self.call_ms * self.scale * 0.9] * calls, "host_ms": [self.call_ms * self.scale] * calls,
                 "flags": [], "telemetry": {}}
        if self.spec.runner == "native":
            reply["clock"] = (busy + 0.2, busy)  # the pipe's 0.2 ms on top of the runner's own account
        return reply


def _candidate_flags(candidate, comparators):
    from fake_rounds import candidate_flags

    return candidate_flags(candidate, comparators, round_samples=3)


def test_the_old_rule_bounded_a_native_forger():
    """Before 2ba16ef a native round's explained time was the sum of its reported host_ms: a forger reporting a
    tenth of 5 ms calls left 90 % of its rounds unexplained, and the clock check flagged it."""
    from solbench.supervisor.audit import clock_gap

    trusted = [(3 * 5.0 + 0.6, 3 * 5.0, 3)] * 4  # an honest comparator: 0.2 ms per call outside its samples
    assert clock_gap([(3 * 5.0 + 0.2, 3 * 0.5, 3)] * 4, trusted)


def test_a_native_forger_beside_a_trusted_native_runner_is_caught_on_the_supervisors_clock():
    """Beside a trusted runner of its kind (the seed), a native round is explained by its reported call times
    alone, whatever its runner says of the time between calls: the forger that leaves busy_ms honest is caught."""
    forger = _Worker("cu", "native", call_ms=5.0, scale=0.1)
    assert CLOCK_GAP in _candidate_flags(forger, {"seed": _Worker("cu", "native", call_ms=5.0),
                                                  "lib": _Worker("py", "python", call_ms=5.0)})


@pytest.mark.xfail(strict=True, reason="bounded: with no trusted native runner beside it "
                                       "(--seed none), the candidate's runner may claim up to 3 ms a call "
                                       "between calls (NATIVE_BETWEEN_CAP_MS); a forger of 5 ms calls hides that "
                                       "much and the clock's share on top (README: limits)")
def test_a_native_forger_that_leaves_busy_ms_alone_is_caught_on_the_supervisors_clock():
    forger = _Worker("cu", "native", call_ms=5.0, scale=0.1)
    assert CLOCK_GAP in _candidate_flags(forger, {"lib": _Worker("py", "python", call_ms=5.0)})


def test_a_native_forger_claiming_more_than_the_cap_is_caught_without_a_trusted_runner():
    """Calls of 20 ms reported as 2 ms leave 18 ms a call to explain: 3 ms of it the runner may claim, the rest
    is far above a third of the round."""
    forger = _Worker("cu", "native", call_ms=20.0, scale=0.1)
    assert CLOCK_GAP in _candidate_flags(forger, {"lib": _Worker("py", "python", call_ms=20.0)})


def test_the_same_forgery_from_a_python_host_is_caught():
    """The Python host's replies carry no clock the supervisor reads: the same numbers are flagged there."""
    forger = _Worker("py", "python", call_ms=5.0, scale=0.1)
    assert CLOCK_GAP in _candidate_flags(forger, {"lib": _Worker("py", "python", call_ms=5.0)})
