"""Timing rounds: every implementation that passed its check is called in interleaved rounds under one
TimingPolicy until the medians (or the per-round ratios) are tight, the supervisor's clock checks what each
worker reports, and the per-round ratios against the candidate are formed.

Every reply a round brings is shape-checked (solbench.supervisor.reply_shapes) and its kernel records kept
only in the shape the triage reads; the candidate's copies are audited after each of its rounds
(solbench.supervisor.audit.TimedCopies)."""

from __future__ import annotations

import time

from solbench.core.model import Measurement
from solbench.core.policy import TimingPolicy, round_calls
from solbench.supervisor.python_worker import Worker, WorkerFailure
from solbench.supervisor.audit import (CLOCK_CONFIRM_ROUNDS, CLOCK_CONFIRM_TRIES, CLOCK_GAP, CLOCK_GAP_SHARE,
                                      CLOCK_GAP_SHARE_CPU, TimedCopies, clock_outliers, clock_rounds,
                                      clock_time_ms, outside_per_call, unexplained_ms)
from solbench.supervisor.cupti_verdict import CUPTI_BLIND, WORK_OUTSIDE_EVENTS
from solbench.supervisor.trace import trace, trace_clock, trace_rounds

EVIDENCE = frozenset({WORK_OUTSIDE_EVENTS, CUPTI_BLIND})
"""Flags of a round whose times are dropped (a throttled round taken again, the clock check's extra rounds)
that still count: what CUPTI saw of the candidate's work does not depend on the clocks (a candidate
could otherwise do its hiding in rounds it makes the supervisor drop)."""

MAX_RETAKEN_SHARE = 4
"""At most one round in this many (and one more) is taken again for throttling: a worker that could make the
sampler see throttling at will would otherwise redo any round it liked."""

AUDITED_PART = 2
"""Calls of a round sent together, after their copies are made ready (time_interleaved): with two, no call of
the candidate's can do the work of more than one other. The
comparators' rounds go in the same parts, so that every implementation is timed the same way."""


def _mean(xs) -> float:
    return sum(xs) / len(xs)


def _joined(replies: list[dict]) -> dict:
    """One round's reply from the replies of its parts: their samples in order, every flag, the last
    telemetry with throttling and the power cap as any part saw them."""
    if len(replies) == 1:
        return replies[0]
    joined = {"device_ms": [x for r in replies for x in r["device_ms"]],
              "host_ms": [x for r in replies for x in r["host_ms"]],
              "flags": sorted({f for r in replies for f in r["flags"]}),
              "telemetry": dict(replies[-1]["telemetry"])}
    for key in ("throttled", "power_capped"):
        joined["telemetry"][key] = any(r["telemetry"].get(key) for r in replies)
    return joined


def _process_kind(worker) -> str:
    """'native' for the native runner, 'python' for a Python host."""
    spec = getattr(worker, "spec", None)
    return "native" if getattr(spec, "kind", "") == "cu" and getattr(spec, "runner", "") == "native" else "python"


def _supervisor_telemetry(worker):
    """A TelemetrySampler of this process around a Python host's round (the native worker's side already keeps
    one): the candidate's process says nothing of clocks or throttling, and a round called throttled is taken
    again. On a CPU run it reads nothing and says so; a null context for the native runner."""
    import contextlib

    if _process_kind(worker) == "native":
        return contextlib.nullcontext()
    from solbench.gpu.telemetry import TelemetrySampler

    device = str(getattr(worker, "device", "cpu"))
    if not device.startswith("cuda"):
        return TelemetrySampler(-1)
    return TelemetrySampler(int(device.split(":")[1]) if ":" in device else _current_device())


def _current_device() -> int:
    import torch

    return torch.cuda.current_device()


def _clock_evidence(rounds, clocked, yardstick, cover_ms: float) -> dict:
    """The numbers behind a clock flag, for its reason: the worst round out of bound in each batch."""
    outside = outside_per_call([(w, d, c) for n in yardstick for w, _, d, c, _ in clocked[n]])
    return {"allowance_per_call_ms": round(outside + cover_ms, 4),
            "rounds": [{"wall_ms": round(w, 3), "device_ms": round(d, 3), "calls": c,
                        "unexplained_ms": round(unexplained_ms(w, d, c, outside + cover_ms), 3)}
                       for w, _, d, c, _ in rounds]}


class TimingFailure(WorkerFailure):
    """A worker failed while timed: which one (`worker`) and how (`kind`)."""

    def __init__(self, worker: str, failure: WorkerFailure):
        super().__init__(failure.kind, str(failure))
        self.worker = worker


def round_order(names: list[str], r: int) -> list[str]:
    """The order of round r: forward on even rounds, reversed on odd ones (A B, B A, ...).

    Whatever favours a position within a round (the first call after the host's pause between rounds ran
    ~0.2 % slower on the H200) then hits every implementation equally often and cancels in the per-round
    ratios over each pair of rounds, instead of biasing them all one way."""
    return names if r % 2 == 0 else names[::-1]


def time_interleaved(workers: dict[str, Worker], timed: dict[str, TimedCopies], policy: TimingPolicy,
                      timeout_s: float, method: str):
    """Rounds of `round_samples` calls per implementation (fewer for long calls after the first round:
    round_calls), each call on a different input copy (so at most `rotate_inputs`), alternating, until every
    median is tight. Each round's copies are refilled just before it; the candidate's are checked after each
    of its rounds (AuditFailure ends the timing).

    Drift (clocks, temperature, neighbours) hits every implementation alike, and ratios are formed
    per round, so a slow drift cancels out of them.
    """
    from solbench.core.stats import median, rel_ci_halfwidth
    from solbench.supervisor.reply_shapes import round_problem, split_problem

    def ask(name, cmd, payload=None):
        try:
            return workers[name].request(cmd, payload, timeout_s)
        except WorkerFailure as exc:
            raise TimingFailure(name, exc) from None

    on_gpu = str(getattr(workers["candidate"], "device", "cpu")).startswith("cuda")  # every worker's device

    def timed_round(name, r):
        copies = timed[name]
        order = copies.order(r, calls[name])
        # When the candidate's copies are checked (TimedCopies.after_round). On a GPU, as each part returns:
        # work its threads launched before the hold still runs on the device and could finish a part's outputs
        # after the part reported them. On a CPU nothing of the candidate's runs while it is held, so the whole
        # round is checked at its end: every implementation's first part then follows those checks equally
        # often (round_order). Checked between the candidate's parts, their memory traffic through the shared
        # cache slowed its next calls alone (A/A of a Python copy against the seed on 2 cores: 0.964 as against
        # 0.974 checked at the round's end, 0.979 not checked at all).
        # A round goes to its worker in parts of at most two calls, each made ready just before it: the
        # candidate's calls can then do no work for another beyond their part (a round whose first call did
        # every ready copy's work: computes_ahead.py). Every implementation alike: the same requests a round,
        # the same freshness in L2.
        parts, wall, host, between = [], 0.0, 0.0, 0.0
        for part in (order[i:i + AUDITED_PART] for i in range(0, len(order), AUDITED_PART)):
            prepared = time.perf_counter()
            copies.before_round(part)
            with _supervisor_telemetry(workers[name]) as sampler:  # its start (NVML, a thread) is not the worker's
                sent = time.perf_counter()
                reply = ask(name, "round", {"order": part})
                returned = time.perf_counter()
            took_ms = (returned - sent) * 1e3  # before the checks below: their time is the supervisor's
            if why := round_problem(reply, len(part)):
                raise TimingFailure(name, WorkerFailure("tampered", f"malformed round reply: {why}"))
            host += sum(reply["host_ms"])
            if _process_kind(workers[name]) == "native":  # put there by the supervisor's side (native_worker)
                wall += reply["clock"][0]
                between += max(0.0, reply["clock"][1] - sum(reply["host_ms"]))
            else:  # the worker's own send-to-reply time where it keeps one: holding the candidate is not its time
                own = getattr(workers[name], "last_request_ms", None)
                wall += own if own is not None else took_ms
            if on_gpu:
                copies.after_round(part, r)
            if sampler is not None:  # a Python host: of its telemetry, only what the supervisor itself put there
                #                      (the sandbox it confirmed) and the kernel records the triage checks;
                #                      clocks and throttling as this process read them
                told = reply["telemetry"] if isinstance(reply["telemetry"], dict) else {}
                reply["telemetry"] = {**{k: told[k] for k in ("kernels", "sandbox") if k in told}, **sampler.summary()}
            parts.append(reply)
            spend = spent[name]
            spend[0] += sent - prepared
            spend[1] += returned - sent
            spend[2] += sum(reply["device_ms"]) / 1e3
            spend[3] += time.perf_counter() - returned
        if not on_gpu:
            audited = time.perf_counter()
            copies.after_round(order, r)
            spent[name][3] += time.perf_counter() - audited
        device = sum(sum(p["device_ms"]) for p in parts)
        clocked[name].append((wall, host, device, len(order), between))  # the whole round, as the comparators' rounds
        return _joined(parts)

    t = time.perf_counter()
    for name in workers:
        ask(name, "warm_up")  # it sees the same contents many times: each round refreshes what it calls first
    t = trace("warm-up", t)
    rounds = {n: [] for n in workers}  # per round: (device_ms, host_ms) as reported
    flags = {n: set() for n in workers}
    telemetry = {n: {} for n in workers}
    spent = {n: [0.0] * 4 for n in workers}  # seconds preparing, requesting (of which device), auditing (trace)
    clocked = {n: [] for n in workers}  # per round: (wall_ms on this process's clock, reported host_ms, reported
    #                                     device_ms, calls, the native runner's reported time between calls)
    calls = {n: policy.round_samples for n in workers}  # a round's calls per implementation (round_calls)
    retaken = {n: [] for n in workers}  # the clock entries of throttled rounds taken again

    def one_round(r):
        for name in round_order(list(workers), r):
            reply = timed_round(name, r)
            if (policy.retake_throttled and reply["telemetry"].get("throttled")
                    and len(retaken[name]) < 1 + r // MAX_RETAKEN_SHARE):
                flags[name].add("throttled_retaken")
                flags[name].update(set(reply["flags"]) & EVIDENCE)  # its times are dropped, not what CUPTI saw
                retaken[name].append(clocked[name].pop())  # the retake stands for the round; this one stays evidence
                reply = timed_round(name, r)
            if reply["telemetry"].get("power_capped"):
                flags[name].add("power_capped")
            rounds[name].append((reply["device_ms"], reply["host_ms"]))
            flags[name].update(reply["flags"])
            telemetry[name] = checked_telemetry(reply["telemetry"])
            if r == 0:
                calls[name] = round_calls(policy, median(reply["device_ms"]))

    start = time.perf_counter()
    for r in range(policy.max_rounds):
        one_round(r)
        # Tight enough when every median is, or when every per-round ratio against the candidate is:
        # drift shared by all implementations (power cap, clocks) widens the former but cancels in the latter.
        per_round = {n: [_mean(d) for d, _ in rounds[n]] for n in workers}
        samples = per_round
        ratio_rounds = [[c / t for c, t in zip(per_round[n], per_round["candidate"])] for n in workers if n != "candidate"]
        tight = (all(rel_ci_halfwidth(s) < policy.target_rel_ci for s in samples.values())
                 or (ratio_rounds and all(rel_ci_halfwidth(r) < policy.target_rel_ci for r in ratio_rounds)))
        # Stop only after whole pairs of rounds, so each position bias cancels (round_order).
        may_stop = r + 1 >= policy.min_rounds and (r + 1) % 2 == 0
        if may_stop and (tight or time.perf_counter() - start > policy.max_time_s):
            break
    t = trace(f"rounds ({r + 1})", t)
    trace_rounds(spent)
    # The clock check: every round of the candidate's is held to what the supervisor's clock saw (audit.
    # clock_outliers), and a round out of its bound never scores its reported time, whatever else happens. A
    # loaded host stalls a round at random; a worker that reports its calls short does it in the rounds it forges.
    # So rounds out of bound are taken again on fresh rounds: half of those out of bound too, CLOCK_CONFIRM_TRIES
    # times over, and the candidate is flagged. A forger of fewer rounds gains nothing: its forged rounds score
    # at the clock's time.
    kind = _process_kind(workers["candidate"])
    same = [n for n in workers if n != "candidate" and _process_kind(workers[n]) == kind]
    yardstick = same or [n for n in workers if n != "candidate"]  # the loop's cost differs between the hosts
    claims_between = kind == "native" and not same  # no trusted native runner beside a native candidate
    cover_ms = policy.launch_cover_ms if on_gpu else 0.0
    share = CLOCK_GAP_SHARE if on_gpu else CLOCK_GAP_SHARE_CPU
    trace_clock(clocked)

    full = len(timed["candidate"].order(0, policy.round_samples))  # a round's calls, had it not set them

    def out_of_bound(first: int = 0, of=None) -> list[int]:
        cand, trusted = clock_rounds(of or clocked, yardstick, claims_between)
        return [i for i in clock_outliers(cand, trusted, cover_ms, share, full) if i >= first]

    # A throttled round taken again is held to the bound too: a round out of it starts the confirming rounds.
    seen = [clocked["candidate"][i] for i in out_of_bound()]
    seen += [retaken["candidate"][i] for i in out_of_bound(of={**clocked, "candidate": retaken["candidate"]})]
    if seen:
        evidence = [max(seen, key=lambda x: x[0] - x[2])]
        for _ in range(CLOCK_CONFIRM_TRIES):
            first = r + 1
            for r in range(first, first + CLOCK_CONFIRM_ROUNDS):
                one_round(r)
            late = out_of_bound(first)
            if 2 * len(late) < CLOCK_CONFIRM_ROUNDS:
                break
            evidence.append(max((clocked["candidate"][i] for i in late), key=lambda x: x[0] - x[2]))
        else:
            flags["candidate"].add(CLOCK_GAP)
            telemetry["candidate"] = {**telemetry["candidate"], "clock_check": _clock_evidence(
                evidence, clocked, yardstick, cover_ms)}
        t = trace(f"clock check rounds (to {r + 1}, after {len(seen)} out of bound)", t)
    out = out_of_bound()
    cand_rounds, trusted_rounds = clock_rounds(clocked, yardstick, claims_between)
    # A round scores as its mean: the sum of its reported device times is what the clock check bounds, and
    # nothing within a round is (a worker that moves time from two calls onto the third keeps the sum and
    # halves a median of calls: the clock never sees it).
    per_round = {n: [_mean(d) for d, _ in rounds[n]] for n in workers}
    if out:
        # A round out of its bound scores at the clock's time, never dropped: a worker pushes any round out of
        # its bound by idling after its calls, and dropping would let it choose which of its rounds are scored
        # (its slow ones gone). At the clock's time, an honest round a loaded host stalled costs a little.
        loop = outside_per_call(trusted_rounds) + cover_ms
        for i in out:
            wall, explained, n = cand_rounds[i]
            told = sum(rounds["candidate"][i][0])
            per_round["candidate"][i] = clock_time_ms(told, unexplained_ms(wall, explained, n, loop)) / n
    for name in workers:  # the same rule for the trusted rounds, each against its own loop: one timing method
        if name != "candidate":
            own = [(w, d, c) for w, _, d, c, _ in clocked[name]]
            for i in clock_outliers(own, own, 0.0, share, full):
                wall, told, n = own[i]
                per_round[name][i] = clock_time_ms(told, unexplained_ms(wall, told, n, outside_per_call(own))) / n
    if trusted_rounds:  # what the bound saw, kept with the times: the forgery bound is read off these
        telemetry["candidate"] = {**telemetry["candidate"], "clock_rounds": {
            "yardstick": yardstick, "allowance_per_call_ms": round(outside_per_call(trusted_rounds) + cover_ms, 4),
            "rounds": [[round(w, 4), round(d, 4), c] for w, d, c in cand_rounds], "out_of_bound": out,
            "full_calls": full}}
    samples = per_round
    host = {n: [x for d, h in rounds[n] for x in h] for n in workers}
    # The candidate's launcher A/B only: the comparators' was recorded and never read, and took ~0.2 s per
    # comparator and scenario on the H200 (benchmarks/trace_summary.py); it runs after the rounds, so no ratio moves.
    splits = {"candidate": ask("candidate", "launcher_split")} if policy.launcher_ab else {}
    if splits and (why := split_problem(splits["candidate"])):
        raise TimingFailure("candidate", WorkerFailure("tampered", f"malformed launcher split reply: {why}"))
    if splits:  # launches of the split that left no record (native runner), or no count where one was promised
        before = (getattr(workers["candidate"], "description", None) or {}).get("before_load") or {}
        if splits["candidate"].get("unrecorded") or (before.get("launch_count") is True and
                                                    "unrecorded" not in splits["candidate"]):
            flags["candidate"].add(CUPTI_BLIND)
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


def checked_telemetry(telemetry: dict) -> dict:
    """A round's telemetry with its kernel records kept only in the shape the triage reads (they come from the
    implementation's own process: kernel_records.valid_records)."""
    from solbench.core.kernels import valid_records

    if isinstance(telemetry, dict) and "kernels" in telemetry:
        telemetry = {**telemetry, "kernels": valid_records(telemetry["kernels"])}
        if telemetry["kernels"] is None:
            del telemetry["kernels"]
    return telemetry
