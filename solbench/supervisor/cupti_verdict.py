"""The verdict flags of a native runner's round, decided here from its raw numbers: the host-gap rule, and what
CUPTI's records and the launch count say of work the events did not see (the runner reports, never judges)."""

from __future__ import annotations

from solbench.sandbox.timing import HOST_GAP, gap_in_batch, host_gap

WORK_OUTSIDE_EVENTS = "work_outside_events"
"""Flag: CUPTI saw the call's own kernels or copies (any stream) run outside its start/end events, or land
between timed calls, or the candidate launched work in another CUDA context than the runner's."""
CUPTI_BLIND = "cupti_blind"
"""Flag: CUPTI did not record the runner's own marks in a timed call, or a kernel or graph launch it counted
(driver-API callback) left no record of its work: recording was switched off or disturbed from inside the
process."""
SPAN_TOLERANCE = 0.02
SPAN_SLACK_MS = 0.005
"""A call's kernels may span its events by this share plus this much (timestamp granularity) and no more."""
OUTSIDE_SLACK_MS = 0.001
"""A call's kernels may start before the cover's end, or end after the end mark, by this much and no more
(CUPTI's timestamps of kernels on one stream are exact to well under a microsecond)."""


def round_flags(raw: dict, floors: dict, tolerance: float) -> list[str]:
    """The verdict flags of one round from the runner's raw numbers (see the module docstring)."""
    gaps = [host_gap(span, host, issued, floors["host_floor_ms"], tolerance, floors["host_gap_slack_ms"])
            for span, host, issued in zip(raw["span_ms"], raw["host_ms"], raw["issued_ms"])]
    flags = set(raw.get("flags", ()))
    if gap_in_batch(gaps):
        flags.add(HOST_GAP)
    spans = raw.get("work_span_ms")
    before = floors.get("before_load") or {}
    if before.get("cupti") is True and spans is None:  # CUPTI recorded before the candidate loaded, and now not
        flags.add(CUPTI_BLIND)
    if spans is not None:
        longer = [work > dev * (1 + SPAN_TOLERANCE) + SPAN_SLACK_MS for work, dev in zip(spans, raw["device_ms"])]
        outside = [ms > OUTSIDE_SLACK_MS for ms in raw.get("outside_ms", ())]
        if any(longer) or any(outside) or raw.get("stray_kernels", 0) or raw.get("foreign_launches", 0):
            flags.add(WORK_OUTSIDE_EVENTS)
        # A runner that counted launches before the candidate loaded must say, every round, how many left no record.
        uncounted = before.get("launch_count") is True and not isinstance(raw.get("unrecorded"), int)
        if raw.get("unmarked", 0) or raw.get("unrecorded", 0) or uncounted:
            flags.add(CUPTI_BLIND)
    return sorted(flags)
