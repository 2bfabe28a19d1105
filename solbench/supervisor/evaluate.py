"""Evaluate one scenario: check every implementation against the fp32 reference, then time them
interleaved in rounds under one TimingPolicy, and form the per-round ratios.

The candidate is checked first; if it is wrong, nothing is timed (its score is 0 anyway). A comparator
that is wrong or crashes is recorded under `Outcome.comparators` and left out of timing: truth comes
from the reference, never from a comparator.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import replace

from solbench.core.model import ErrorStats, Measurement, Outcome, Status
from solbench.core.policy import TimingPolicy
from solbench.core.scenario import Scenario
from solbench.sandbox.worker import Worker, WorkerFailure

TRACE = os.environ.get("SOLBENCH_TRACE", "")
"""'1' prints phase times to stderr; any other non-empty value is a file they are appended to."""


def trace(what: str, since: float) -> float:
    """With SOLBENCH_TRACE set, record how long a phase took (to find where a slow run spends its time);
    benchmarks/trace_summary.py totals them per phase."""
    now = time.perf_counter()
    if TRACE:
        line = f"[solbench trace] {what}: {now - since:.3f} s"
        if TRACE in ("1", "true", "yes"):
            print(line, file=sys.stderr, flush=True)
        else:
            with open(TRACE, "a") as f:
                print(line, file=f)
    return now


MEMORY_SHARE = 0.5
"""At most this share of the device's memory goes to input copies (every implementation's together);
the rest is left to the libraries' workspaces, the reference and the allocator's slack."""


def input_copies(policy: TimingPolicy, copy_bytes: int, holders: int, device_bytes: int) -> int:
    """How many rotated input copies each implementation times on: policy.rotate_inputs, fewer when the
    copies of all `holders` (plus each one's trial-0 copy) would not fit in MEMORY_SHARE of the device,
    never below 1.

    Fewer copies change nothing the verdicts rest on: every timed call still gets poisoned outputs and a
    cold L2, and the check after timing refills the reused pointers. Inputs this large (GBs) are far
    beyond any cache, so the pointers' reuse cannot flatter the time either."""
    if device_bytes <= 0 or copy_bytes <= 0:
        return policy.rotate_inputs
    fit = int(MEMORY_SHARE * device_bytes // (max(1, holders) * copy_bytes)) - 1
    return max(1, min(policy.rotate_inputs, fit))


def _device_bytes(device: str) -> int:
    if device != "cuda":
        return 0
    import torch

    return torch.cuda.mem_get_info()[1]


FAILURE_STATUS = {"timeout": Status.TIMEOUT, "crash": Status.RUNTIME_ERROR, "error": Status.RUNTIME_ERROR,
                  "tampered": Status.TAMPERED, "modified": Status.MISMATCH,
                  "load": Status.RUNTIME_ERROR}  # a restarted worker that no longer loads (the run began with it loaded)


def evaluate(sc: Scenario, workers: dict[str, Worker], policy: TimingPolicy, device: str,
             timeout_s: float, bound_fn=None, supports=None) -> Outcome:
    """workers: 'candidate' first, then comparators ('seed', baselines) in a fixed order.

    supports: per baseline, scenario -> (ok, reason); a pair a baseline does not claim is recorded as
    skipped with its reason and never sent to the worker."""
    (status, reason, error), comparators, ready, copies = _check_all(sc, workers, policy, device, timeout_s,
                                                                     supports or {})
    base = dict(scenario_id=sc.id, scenario=sc.to_dict(), error=error, comparators=comparators)
    policy = replace(policy, rotate_inputs=copies)  # the check after timing refills the last copy timed
    if status is not Status.PASSED:
        return Outcome(status=status, reason=reason, **base)
    base["input_copies"] = copies
    t = time.perf_counter()
    method = "cuda_events" if device == "cuda" else "host_clock"
    while True:
        try:
            measurements, ratios = _time_interleaved({n: workers[n] for n in ready}, policy, timeout_s, method)
            break
        except _TimingFailure as exc:
            if exc.worker == "candidate":
                return Outcome(status=FAILURE_STATUS[exc.kind], reason=f"while timing: {exc}", **base)
            # A comparator that breaks while timed is dropped; the candidate is timed without it.
            comparators[exc.worker].update(status=FAILURE_STATUS[exc.kind].value, reason=f"while timing: {exc}")
            ready.remove(exc.worker)
    t = trace(f"{sc.id} timing", t)
    status, reason = _recheck_after_timing(sc, workers["candidate"], policy, device, timeout_s)
    trace(f"{sc.id} check after timing", t)
    if status is not Status.PASSED:
        return Outcome(status=status, reason=f"after timing: {reason}", **base)
    bound = bound_fn(sc) if bound_fn else None
    status, reason = _speed_verdict(measurements["candidate"], bound)
    return Outcome(status=status, reason=reason, measurements=measurements, ratios=ratios,
                   bound=bound.to_dict() if bound else None, **base)


def _check_all(sc, workers, policy, device, timeout_s, supports):
    """Check every implementation on trial 0: the candidate's verdict, the comparators' records, the
    names that passed (only those are timed) and the number of rotated input copies they time on."""
    from solbench.supervisor.inputs import make_inputs
    from solbench.supervisor.reference import reference

    t = time.perf_counter()
    trial0 = make_inputs(sc, trial=0, device=device)
    copy_bytes, device_bytes = trial0.nbytes, _device_bytes(device)
    claims = {n: supports[n](sc) for n in workers if n in supports}  # (ok, why); unlisted: always run
    holders = sum(1 for n in workers if claims.get(n, (True, ""))[0])  # those that will prepare
    policy = replace(policy, rotate_inputs=input_copies(policy, copy_bytes, holders, device_bytes))
    if device_bytes and holders * (1 + policy.rotate_inputs) * copy_bytes > MEMORY_SHARE / 2 * device_bytes:
        # Idle workers still hold the previous scenario until their own prepare: free them all first.
        for name, worker in workers.items():
            if not worker.running:
                continue
            try:
                worker.request("release", None, timeout_s)
            except WorkerFailure as exc:
                # A broken worker is restarted by its next request and holds nothing; but the candidate
                # caught replacing harness code (checked after every command) is this scenario's verdict.
                if name == "candidate" and exc.kind == "tampered":
                    return (Status.TAMPERED, str(exc), None), {}, [], policy.rotate_inputs
    ref_out, ref_lse = reference(trial0)
    del trial0
    t = trace(f"{sc.id} reference", t)
    errors: dict[str, ErrorStats] = {}
    comparators: dict[str, dict] = {}
    ready: list[str] = []
    # Comparators first, so the candidate's verdict can use the seed's error as a yardstick.
    for name in [n for n in workers if n != "candidate"] + ["candidate"]:
        if name in claims:
            ok, why = claims[name]
            if not ok and name == "candidate":
                candidate = (Status.SKIPPED, f"not supported: {why}", None)
                continue
            if not ok:
                comparators[name] = {"status": Status.SKIPPED.value, "reason": f"not supported: {why}", "error": None}
                continue
        status, reason, error = _check(sc, workers[name], ref_out, ref_lse, policy, timeout_s,
                                       seed_error=errors.get("seed") if name == "candidate" else None)
        if error is not None and status is Status.PASSED:  # a failed seed is no yardstick
            errors[name] = error
        if name == "candidate":
            candidate = (status, reason, error)
        else:
            comparators[name] = {"status": status.value, "reason": reason, "error": error.__dict__ if error else None}
        if status is Status.PASSED:
            ready.append(name)
        t = trace(f"{sc.id} check {name}", t)
    return candidate, comparators, ready, policy.rotate_inputs


def refill_trial(policy: TimingPolicy) -> int:
    """The trial whose inputs refill the last timed copy before the check after timing (never timed)."""
    return policy.rotate_inputs + 1


def _recheck_after_timing(sc, worker, policy, device, timeout_s):
    """Check the candidate again on an input copy the timing loop used many times, refilled with a new
    trial: a kernel whose later calls skip work or replay results cached by pointer fails here."""
    from solbench.supervisor.inputs import make_inputs
    from solbench.supervisor.reference import reference

    fresh = make_inputs(sc, trial=refill_trial(policy), device=device)
    if fresh.page_table is not None:  # the refilled copy keeps its own page table (see worker.refill)
        fresh = replace(fresh, page_table=make_inputs(sc, trial=policy.rotate_inputs, device=device).page_table)
    ref_out, ref_lse = reference(fresh)
    del fresh
    status, reason, _ = _check(sc, worker, ref_out, ref_lse, policy, timeout_s, seed_error=None, timed=True)
    return status, reason


def _speed_verdict(measurement: Measurement, bound) -> tuple[Status, str]:
    """faster_than_light below the measured-ceiling bound (the datasheet one without a profile);
    hidden_work when the host clock saw work the stream's events did not."""
    from solbench.core.roofline import is_faster_than_light
    from solbench.core.stats import median
    from solbench.sandbox.timing import HOST_GAP, PERSISTING_L2
    from solbench.sandbox.worker import UNWRITTEN_IN_TIMING

    t_ms = median(measurement.samples_ms)
    if bound is not None and is_faster_than_light(t_ms, bound):
        return Status.FASTER_THAN_LIGHT, (f"median {t_ms * 1e3:.2f} us is below the {bound.arch} speed-of-light "
                                          f"bound {bound.judged_ms * 1e3:.2f} us ({bound.judged_against} ceilings)")
    if UNWRITTEN_IN_TIMING in measurement.flags:
        return Status.UNWRITTEN, "some timed calls left their freshly poisoned outputs unwritten (work skipped)"
    if PERSISTING_L2 in measurement.flags:
        return Status.TAMPERED, ("a persisting-L2 carve-out was set while it was timed: cold-L2 timing "
                                    "does not hold, so the times do not count")
    if HOST_GAP in measurement.flags:
        return Status.HIDDEN_WORK, ("device time on the timed stream is far below the synchronised wall time "
                                    "of the call: work ran outside the stream it was given")
    return Status.PASSED, ""


def _check(sc, worker: Worker, ref_out, ref_lse, policy, timeout_s, seed_error, timed: bool = False):
    """(status, reason, ErrorStats | None) for one implementation on trial 0 (timed=False, after a
    fresh prepare) or on the last timed input copy (timed=True, after timing)."""
    from solbench.supervisor.inputs import torch_dtype
    from solbench.supervisor.verdict import judge

    try:
        if not timed:
            info = worker.request("prepare", {"scenario": sc.to_dict(), "rotate": policy.rotate_inputs},
                                  timeout_s + worker.setup_s)
        else:
            info = {"writes_lse": worker.writes_lse}
        reply = worker.request("check", {"timed": timed, "refill_trial": refill_trial(policy)}, timeout_s)
        if isinstance(reply, dict):
            return Status.SKIPPED, f"declined (unsupported): {reply['unsupported']}", None
        out, lse = (t.to(ref_out.device) for t in reply)
    except WorkerFailure as exc:
        return FAILURE_STATUS[exc.kind], str(exc), None
    worker.writes_lse = info["writes_lse"]
    expected = {"out": (tuple(ref_out.shape), torch_dtype(sc.out_dtype)), "lse": (tuple(ref_lse.shape), torch_dtype("float32"))}
    for what, t in (("out", out), ("lse", lse)):
        if (tuple(t.shape), t.dtype) != expected[what]:
            return Status.MISMATCH, (f"{what} came back as {tuple(t.shape)} {t.dtype}, expected "
                                     f"{expected[what][0]} {expected[what][1]}: the given buffers were replaced"), None
    verdict = judge(out, lse, ref_out, ref_lse, sc.dtype, writes_lse=info["writes_lse"], seed_error=seed_error)
    return verdict.status, verdict.reason, verdict.error


class _TimingFailure(WorkerFailure):
    def __init__(self, worker: str, failure: WorkerFailure):
        super().__init__(failure.kind, str(failure))
        self.worker = worker


def round_order(names: list[str], r: int) -> list[str]:
    """The order of round r: forward on even rounds, reversed on odd ones (A B, B A, ...).

    Whatever favours a position within a round (the first call after the host's pause between rounds ran
    ~0.2 % slower on the H200) then hits every implementation equally often and cancels in the per-round
    ratios over each pair of rounds, instead of biasing them all one way."""
    return names if r % 2 == 0 else names[::-1]


def _time_interleaved(workers: dict[str, Worker], policy: TimingPolicy, timeout_s: float, method: str):
    """Rounds of `round_samples` per implementation, alternating, until every median is tight.

    Drift (clocks, temperature, neighbours) hits every implementation alike, and ratios are formed
    per round, so a slow drift cancels out of them.
    """
    from solbench.core.stats import median, rel_ci_halfwidth

    def ask(name, cmd, payload=None):
        try:
            return workers[name].request(cmd, payload, timeout_s)
        except WorkerFailure as exc:
            raise _TimingFailure(name, exc) from None

    t = time.perf_counter()
    for name in workers:
        ask(name, "warm_up")
    t = trace("warm-up", t)
    samples = {n: [] for n in workers}
    host = {n: [] for n in workers}
    flags = {n: set() for n in workers}
    telemetry = {n: {} for n in workers}
    per_round = {n: [] for n in workers}
    start = time.perf_counter()
    for r in range(policy.max_rounds):
        for name in round_order(list(workers), r):
            reply = ask(name, "round", {"n": policy.round_samples})
            if policy.retake_throttled and reply["telemetry"].get("throttled"):
                flags[name].add("throttled_retaken")
                reply = ask(name, "round", {"n": policy.round_samples})
            if reply["telemetry"].get("power_capped"):
                flags[name].add("power_capped")
            samples[name] += reply["device_ms"]
            host[name] += reply["host_ms"]
            flags[name].update(reply["flags"])
            telemetry[name] = reply["telemetry"]
            per_round[name].append(median(reply["device_ms"]))
        # Tight enough when every median is, or when every per-round ratio against the candidate is:
        # drift shared by all implementations (power cap, clocks) widens the former but cancels in the latter.
        ratio_rounds = [[c / t for c, t in zip(per_round[n], per_round["candidate"])] for n in workers if n != "candidate"]
        tight = (all(rel_ci_halfwidth(s) < policy.target_rel_ci for s in samples.values())
                 or (ratio_rounds and all(rel_ci_halfwidth(r) < policy.target_rel_ci for r in ratio_rounds)))
        # Stop only after whole pairs of rounds, so each position bias cancels (round_order).
        may_stop = r + 1 >= policy.min_rounds and (r + 1) % 2 == 0
        if may_stop and (tight or time.perf_counter() - start > policy.max_time_s):
            break
    t = trace(f"rounds ({r + 1})", t)
    splits = {n: ask(n, "launcher_split") for n in workers} if policy.launcher_ab else {}
    trace("launcher split", t)
    measurements = {}
    for name in workers:
        if rel_ci_halfwidth(samples[name]) >= policy.target_rel_ci:
            flags[name].add("noisy")
        split = splits.get(name, {})
        measurements[name] = Measurement(
            impl=name, samples_ms=tuple(samples[name]), method=method, host_samples_ms=tuple(host[name]),
            device_graph_ms=split.get("graph_device_ms"), flags=tuple(sorted(flags[name])),
            telemetry={**telemetry[name], "launcher": split} if split else telemetry[name],
        )
    cand = per_round["candidate"]
    ratios = {n: tuple(c / t for c, t in zip(per_round[n], cand)) for n in workers if n != "candidate"}
    return measurements, ratios
