"""Evaluate one scenario: check every implementation against the fp32 reference, then time them
interleaved in rounds under one TimingPolicy, and form the per-round ratios.

The candidate is checked last; if it is wrong, nothing is timed (its score is 0 anyway). Every verdict's
yardstick is the seed's emulated error (solbench.supervisor.budget), whether or not the run times the seed. A comparator that is wrong or crashes is recorded under `Outcome.comparators` and
left out of timing: truth comes from the reference, never from a comparator. Every tensor lives in this
process and is shared with the workers; the candidate's timed calls are checked here (solbench.supervisor.audit),
timed in rounds by solbench.supervisor.rounds.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import replace

from solbench.core.model import Measurement, Outcome, Status
from solbench.core.policy import TimingPolicy
from solbench.core.scenario import Scenario
from solbench.supervisor.python_worker import Worker, WorkerFailure
from solbench.supervisor.audit import (CLOCK_GAP, AuditFailure, TimedCopies, changed_inputs, damaged_guards, scenario_rng,
                                       sync_outputs)
from solbench.supervisor.rounds import TimingFailure, time_interleaved
from solbench.supervisor.trace import trace

MEMORY_SHARE = 0.5
"""At most this share of the device's memory goes to input copies (every implementation's together);
the rest is left to the libraries' workspaces, the reference and the allocator's slack."""


def input_copies(policy: TimingPolicy, copy_bytes: int, holders: int, device_bytes: int) -> int:
    """How many rotated input copies each implementation times on: policy.rotate_inputs, fewer when the
    copies of all `holders` (plus each one's trial-0 copy) would not fit in MEMORY_SHARE of the device,
    never below 1.

    Fewer copies change nothing the verdicts rest on: every timed call still gets poisoned outputs and a
    cold L2, and every copy gets fresh contents after each round that calls it. Inputs this large (GBs)
    are far
    beyond any cache, so the pointers' reuse cannot flatter the time either."""
    if device_bytes <= 0 or copy_bytes <= 0:
        return policy.rotate_inputs
    fit = int(MEMORY_SHARE * device_bytes // (max(1, holders) * copy_bytes)) - 1
    return max(1, min(policy.rotate_inputs, fit))


def comparators_share(copy_bytes: int, holders: int, device_bytes: int) -> bool:
    """True when not even one timing copy each (plus trial 0) fits in MEMORY_SHARE of the device: then the
    comparators (trusted, never the candidate) time on one set of copies between them. Each of their parts is
    still refilled and poisoned just before it, so nothing a call sees changes; only the memory does (seven
    libraries on a 12 GB decode scenario asked for 120 GB of a 141 GB H200 and ran it out of memory)."""
    return device_bytes > 0 and 2 * max(1, holders) * copy_bytes > MEMORY_SHARE * device_bytes


def plan_copies(policy: TimingPolicy, copy_bytes: int, holders: int, device_bytes: int) -> tuple[bool, int]:
    """(comparators share one set of copies, input copies per set). Where they share, one copy a set: the
    candidate and the pool time on one copy each, as their checks already use trial 0 and a clone. On the
    H200 two copies a set still ran the supervisor out of memory on six decode scenarios of 10-15 GB a copy
    (it held 57-84 GiB; three SDPA workers 17-29 GiB each, their adapters gathering paged KV once per copy)."""
    if comparators_share(copy_bytes, holders, device_bytes):
        return True, 1
    return False, input_copies(policy, copy_bytes, holders, device_bytes)


def _return_cached_memory(device: str) -> None:
    """Hand the blocks the supervisor's allocator keeps cached (the previous scenario's copies, the reference's
    fp32 temporaries) back to the device: the libraries in the workers allocate their own workspaces, and on
    the H200 the supervisor's 97 GB of mostly cached memory left sdpa-efficient 700 MB on a 6.7 GB decode."""
    if device == "cuda":
        import gc

        import torch

        gc.collect()
        torch.cuda.empty_cache()


def _device_bytes(device: str) -> int:
    if device != "cuda":
        return 0
    import torch

    return torch.cuda.mem_get_info()[1]


FAILURE_STATUS = {"timeout": Status.TIMEOUT, "crash": Status.RUNTIME_ERROR, "error": Status.RUNTIME_ERROR,
                  "tampered": Status.TAMPERED, "forbidden": Status.FORBIDDEN_LIBRARY,
                  "load": Status.RUNTIME_ERROR}  # a restarted worker that no longer loads (the run began with it loaded)


@contextmanager
def _one_host_thread(device: str):
    """On a CPU, the supervisor's own work between rounds (refills, fingerprints, reference rows) on one thread:
    torch's idle threads spin on for a while after each op, and on a small host they took the core a comparator's
    round needed (its loop cost ~3 ms a call more, measured on 2 cores), which the clock check then granted
    every call of the candidate as the loop's cost."""
    if device != "cpu":
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def evaluate(sc: Scenario, workers: dict[str, Worker], policy: TimingPolicy, device: str,
             timeout_s: float, bound_fn=None, supports=None, secret: bytes = b"") -> Outcome:
    """workers: 'candidate' first, then comparators ('seed', baselines) in a fixed order.

    supports: per baseline, scenario -> (ok, reason); a pair a baseline does not claim is recorded as
    skipped with its reason and never sent to the worker. secret: the run's secret, from which every
    input's content is drawn (b"" in tests: reproducible contents)."""
    (status, reason, error), comparators, timed = _check_all(sc, workers, policy, device, timeout_s,
                                                             supports or {}, secret)
    base = dict(scenario_id=sc.id, scenario=sc.to_dict(), error=error, comparators=comparators)
    if status is not Status.PASSED:
        return Outcome(status=status, reason=reason, **base)
    copies = len(timed["candidate"].copies)
    policy = replace(policy, rotate_inputs=copies)
    base["input_copies"] = copies
    t = time.perf_counter()
    method = "cuda_events" if device == "cuda" else "host_clock"
    while True:
        try:
            with _one_host_thread(device):
                measurements, ratios = time_interleaved({n: workers[n] for n in timed}, timed, policy, timeout_s,
                                                        method)
            break
        except AuditFailure as exc:
            return Outcome(status=exc.status, reason=f"while timing: {exc}", **base)
        except TimingFailure as exc:
            if exc.worker == "candidate":
                return Outcome(status=FAILURE_STATUS[exc.kind], reason=f"while timing: {exc}", **base)
            # A comparator that breaks while timed is dropped; the candidate is timed without it.
            comparators[exc.worker].update(status=FAILURE_STATUS[exc.kind].value, reason=f"while timing: {exc}")
            del timed[exc.worker]
    trace(f"{sc.id} timing", t)
    bound = bound_fn(sc) if bound_fn else None
    status, reason = _speed_verdict(measurements["candidate"], bound)
    return Outcome(status=status, reason=reason, measurements=measurements, ratios=ratios,
                   bound=bound.to_dict() if bound else None, **base)


def _check_all(sc, workers, policy, device, timeout_s, supports, secret):
    """Check every implementation on trial 0: the candidate's verdict, the comparators' records, and the
    input copies (TimedCopies) of those that passed, which are the ones timed."""
    from solbench.supervisor.inputs import clone_inputs, footprint_bytes, make_inputs, with_outputs
    from solbench.supervisor.reference import reference

    t = time.perf_counter()
    # Workers still map the previous scenario's copies until they let go (solbench.gpu.device_memory frees
    # them then): have them let go before this scenario's inputs are made.
    for worker in workers.values():
        if worker.running:
            try:
                worker.request("release", None, timeout_s)
            except WorkerFailure:
                pass  # a broken worker is restarted by its next request and holds nothing
    rng = scenario_rng(sc, secret)
    trial0 = make_inputs(sc, trial=0, device=device, secret=secret)
    copy_bytes, device_bytes = footprint_bytes(trial0), _device_bytes(device)
    claims = {n: supports[n](sc) for n in workers if n in supports}  # (ok, why); unlisted: always run
    holders = sum(1 for n in workers if claims.get(n, (True, ""))[0])  # those that will prepare
    shared, copies = plan_copies(policy, copy_bytes, holders, device_bytes)
    pool = None  # the comparators' one set of copies when they share
    comparators: dict[str, dict] = {}
    timed: dict[str, TimedCopies] = {}
    # The comparators (trusted) first, their prepare and check requests each from a thread of its own while
    # this one computes the reference: libraries' JIT and plan building (FA4 2.5 s, torch-cudnn 1.7 s a
    # scenario on the H200) overlap it and each other; nothing here is timed. Not where memory is short
    # (fewer copies than the policy's): there the reference's temporaries go back to the device first.
    overlap = not shared and copies == policy.rotate_inputs
    pending = {}
    with ThreadPoolExecutor(max_workers=max(1, len(workers))) as threads:
        if not overlap:
            ref_out, ref_lse = reference(trial0)
            _return_cached_memory(device)
            t = trace(f"{sc.id} reference", t)
        for name in [n for n in workers if n != "candidate"]:
            ok, why = claims.get(name, (True, ""))
            if not ok:
                comparators[name] = {"status": Status.SKIPPED.value, "reason": f"not supported: {why}", "error": None}
                continue
            check_copy = with_outputs(trial0)  # trusted comparators share trial 0's input tensors
            copies_for = pool = (pool or TimedCopies.make(sc, copies, device, secret, False, rng)) if shared else \
                TimedCopies.make(sc, copies, device, secret, False, rng)
            call = threads.submit(_checked_call, workers[name], check_copy, copies_for, timeout_s, False, device)
            pending[name] = (check_copy, copies_for, call)
            if not overlap:
                wait([call])  # one at a time, as memory allows
        if overlap:
            ref_out, ref_lse = reference(trial0)
            t = trace(f"{sc.id} reference", t)
        for name, (check_copy, copies_for, call) in pending.items():
            status, reason, error = _comparator_verdict(sc, workers[name], check_copy, copies_for, call, ref_out, ref_lse)
            comparators[name] = {"status": status.value, "reason": reason, "error": error.__dict__ if error else None}
            if status is Status.PASSED:
                timed[name] = copies_for
            t = trace(f"{sc.id} check {name}", t)  # overlapped: what the reference did not hide
    del pending
    if overlap:
        _return_cached_memory(device)
    # Then the candidate, alone on the GPU.
    ok, why = claims.get("candidate", (True, ""))
    if not ok:
        return (Status.SKIPPED, f"not supported: {why}", None), comparators, timed
    check_copy = clone_inputs(trial0)  # the candidate gets copies of its own
    copies_for = TimedCopies.make(sc, copies, device, secret, True, rng)
    candidate = _check(sc, workers["candidate"], check_copy, copies_for, ref_out, ref_lse, timeout_s, rng=rng,
                       deterministic=getattr(workers["candidate"].spec, "deterministic", True))
    del check_copy
    if candidate[0] is Status.PASSED:
        timed["candidate"] = copies_for
    trace(f"{sc.id} check candidate", t)
    return candidate, comparators, timed


def _check(sc, worker: Worker, check_copy, timed: TimedCopies, ref_out, ref_lse, timeout_s, rng,
           deterministic: bool = True):
    """(status, reason, ErrorStats | None) for one implementation on trial 0, after a fresh prepare that
    binds its check copy and its timing copies. The candidate's check copy is called twice: the second
    call, on the same inputs with outputs poisoned again, must give the same bits unless it declared itself
    non-deterministic (a race or uninitialised memory that passed by luck once rarely repeats its bits)."""
    from solbench.supervisor.inputs import input_fingerprint
    from solbench.supervisor.verdict import judge

    key = rng.getrandbits(62)
    audited = timed.audited
    before = input_fingerprint(check_copy, key) if audited else None
    try:
        info, reply = _checked_call(worker, check_copy, timed, timeout_s, audited)
    except WorkerFailure as exc:
        return FAILURE_STATUS[exc.kind], str(exc), None
    if isinstance(reply, dict):
        return Status.SKIPPED, f"declined (unsupported): {reply['unsupported']}", None
    # A comparator library may not produce the LSE; the candidate must (the ABI), whatever its worker says.
    info["writes_lse"] = worker.writes_lse = timed.writes_lse = audited or bool(info["writes_lse"])
    if audited:
        failure = _outside_outputs(check_copy, before, key, "the checked call")
        if failure:
            return (*failure, None)
    verdict = judge(check_copy.out, check_copy.lse, ref_out, ref_lse, sc.dtype, writes_lse=info["writes_lse"])
    if not audited or verdict.status is not Status.PASSED:
        return verdict.status, verdict.reason, verdict.error
    first = (check_copy.out.clone(), check_copy.lse.clone())
    check_copy.poison()
    sync_outputs(check_copy)
    try:
        if worker.request("check", {"keep": False}, timeout_s) is not None:  # it answered once: it must again
            raise WorkerFailure("tampered", "malformed check reply: not null after a first call that answered")
    except WorkerFailure as exc:
        return FAILURE_STATUS[exc.kind], f"second checked call: {exc}", None
    failure = _outside_outputs(check_copy, before, key, "the second checked call")
    if failure:
        return (*failure, None)
    again = judge(check_copy.out, check_copy.lse, ref_out, ref_lse, sc.dtype, writes_lse=info["writes_lse"])
    if again.status is not Status.PASSED:  # the second output must pass on its own (unwritten, wrong, ...)
        return again.status, f"second checked call: {again.reason}", again.error
    differ = _bits_differ(first[0], check_copy.out) + (_bits_differ(first[1], check_copy.lse) if info["writes_lse"] else 0)
    if differ and deterministic:
        return Status.NONDETERMINISTIC, (f"two checked calls on the same inputs differ in {differ} output elements "
                                         "(a race, uninitialised memory, or atomics; a kernel that is meant to be "
                                         "non-deterministic declares it: see the README's Candidates section)"), verdict.error
    return verdict.status, verdict.reason, verdict.error


def _checked_call(worker: Worker, check_copy, timed: TimedCopies, timeout_s, keep: bool, device: str = "cpu"):
    """(prepare's reply, the check call's reply) of one implementation: a fresh prepare binds its check copy
    and its timing copies, then the check copy is called once. Runs in a thread of its own for a comparator.
    A reply of the wrong shape is WorkerFailure('tampered') (solbench.supervisor.reply_shapes)."""
    from solbench.supervisor.reply_shapes import check_problem, prepare_problem

    if device == "cuda":
        import torch

        torch.cuda.synchronize()  # binds this thread to the device's context (exporting the tensors' fds is a driver call)
    info = worker.request("prepare", {"check": check_copy, "rotation": timed.copies}, timeout_s + worker.setup_s)
    if why := prepare_problem(info):
        raise WorkerFailure("tampered", f"malformed prepare reply: {why}")
    reply = worker.request("check", {"keep": keep}, timeout_s)
    if why := check_problem(reply):
        raise WorkerFailure("tampered", f"malformed check reply: {why}")
    return info, reply


def _comparator_verdict(sc, worker: Worker, check_copy, timed: TimedCopies, call, ref_out, ref_lse):
    """(status, reason, ErrorStats | None) of a comparator's check call (`call`: the Future of _checked_call)."""
    from solbench.supervisor.verdict import judge

    try:
        info, reply = call.result()
    except WorkerFailure as exc:
        return FAILURE_STATUS[exc.kind], str(exc), None
    if isinstance(reply, dict):
        return Status.SKIPPED, f"declined (unsupported): {reply['unsupported']}", None
    info["writes_lse"] = worker.writes_lse = timed.writes_lse = bool(info["writes_lse"])
    verdict = judge(check_copy.out, check_copy.lse, ref_out, ref_lse, sc.dtype, writes_lse=info["writes_lse"])
    return verdict.status, verdict.reason, verdict.error


def _outside_outputs(inputs, before: dict, key: int, what: str):
    """(status, reason) when a call wrote past its outputs or changed its inputs; None when it did neither."""
    from solbench.supervisor.inputs import input_fingerprint

    damaged = damaged_guards(inputs)
    if damaged:
        return Status.OUT_OF_BOUNDS, f"{what} wrote past the ends of {damaged}: the guard bytes changed"
    touched = changed_inputs(before, input_fingerprint(inputs, key))
    if touched:
        return Status.MISMATCH, f"the candidate modified its inputs in place: {', '.join(touched)}"
    return None


def _bits_differ(a, b) -> int:
    """Elements whose bits differ (NaN payloads included)."""
    import torch

    as_int = {2: torch.int16, 4: torch.int32, 1: torch.uint8}[a.element_size()]
    return int((a.view(as_int) != b.view(as_int)).sum())


def _speed_verdict(measurement: Measurement, bound) -> tuple[Status, str]:
    """faster_than_light more than FTL_TOLERANCE below SOL (the datasheet bound, never the measured ceilings);
    hidden_work when the host clock saw work the stream's events did not."""
    from solbench.core.roofline import is_faster_than_light
    from solbench.core.stats import median
    from solbench.sandbox.timing import HOST_GAP, PERSISTING_L2
    from solbench.supervisor.cupti_verdict import CUPTI_BLIND, WORK_OUTSIDE_EVENTS

    t_ms = median(measurement.samples_ms)
    if bound is not None and is_faster_than_light(t_ms, bound):
        return Status.FASTER_THAN_LIGHT, (f"median {t_ms * 1e3:.2f} us is below the {bound.arch} speed-of-light "
                                          f"(datasheet) bound {bound.bound_ms * 1e3:.2f} us")
    if PERSISTING_L2 in measurement.flags:
        return Status.TAMPERED, ("a persisting-L2 carve-out was set while it was timed: cold-L2 timing "
                                    "does not hold, so the times do not count")
    if CUPTI_BLIND in measurement.flags:
        return Status.TAMPERED, ("CUPTI stopped recording the runner's own marks around a timed call: recording was "
                                 "switched off or disturbed from inside the process, so its work was not seen")
    if CLOCK_GAP in measurement.flags:
        seen = measurement.telemetry.get("clock_check") or {}
        rounds = "; ".join(f"{x['wall_ms']} ms on its clock for {x['calls']} calls reported as {x['device_ms']} ms "
                           f"({x['unexplained_ms']} ms unexplained)" for x in seen.get("rounds", [])[:3])
        return Status.TAMPERED, ("clock check: the supervisor's clock saw timed rounds take longer than the reported "
                                 "device times and the loop's allowance "
                                 f"({seen.get('allowance_per_call_ms', '?')} ms a call) explain, on fresh rounds "
                                 f"again: {rounds or 'no figures kept'}; the times were not those of the calls")
    if WORK_OUTSIDE_EVENTS in measurement.flags:
        return Status.HIDDEN_WORK, ("CUPTI saw the call's own kernels or copies (on some stream) run outside its "
                                    "timing events, or land between timed calls: the events did not time all its work")
    if HOST_GAP in measurement.flags:
        return Status.HIDDEN_WORK, ("device time on the timed stream is far below the synchronised wall time "
                                    "of the call: work ran outside the stream it was given")
    return Status.PASSED, ""
