"""The supervisor's side of every timed call: the input copies an implementation is timed on, owned and
filled here, poisoned before each round and, for the candidate, checked after it.

Each round calls every copy in its order once. Just before a round those copies get fresh contents and
poisoned outputs; after a candidate's round each copy called must have written all of its outputs, left
its inputs bit for bit as they were (a keyed, position-dependent fingerprint), and match the fp32
reference on a few rows drawn after the round. So no timed call ever sees contents seen before
(nothing can be replayed, by pointer or by content), every timed call can be the checked one, and none
of this is decided by code in the worker's process.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

import numpy as np

from solbench.core.model import Status
from solbench.core.scenario import Scenario
from solbench.core.tensors import Inputs, guard_damage, poisoned

ROWS_PER_CHECK = 4
"""Query rows (all heads each) compared with the reference per copy and round: one drawn by its share of the
work (its visible keys), the others uniformly, so a sloppiness confined to a few long rows that hold most of
the work is sampled as often as the work it saves."""

CLOCK_GAP = "supervisor_clock_gap"
"""Flag: the supervisor's own clock saw the candidate's rounds take longer than its reported device times and
the loop's overhead (measured on the trusted comparators' rounds) explain, on fresh rounds too."""
CLOCK_GAP_SHARE = 0.25
CLOCK_GAP_SHARE_CPU = 0.5
CLOCK_LOOP_SHARE = 0.55
CLOCK_GAP_SLACK_MS = 2.0
"""A round's unexplained time must exceed CLOCK_GAP_SLACK_MS and CLOCK_GAP_SHARE of its reported device time
plus CLOCK_LOOP_SHARE of the loop's allowance: the loop's own jitter (pipe, telemetry, the interpreter) never
does. On 846 honest rounds on an H100 (native and Python hosts, `real` and `fa3-h2h`) the largest took 0.67 of
that bound. A forger of long calls reporting D/f leaves D - D/f unexplained: it passes up to f = 1.25. On
a CPU the "device" is the cores the loop shares, and its noise grows with the work: CLOCK_GAP_SHARE_CPU there. Together with the launch cover
(TimingPolicy.launch_cover_ms a call) they are the most a forger can take off its reported times unseen."""
CLOCK_CONFIRM_ROUNDS = 4
"""Fresh rounds (two pairs, both orders) taken when a round was out of its bound; CLOCK_CONFIRM_TRIES batches
of them, each with half its rounds out of bound, flag the candidate. A round out of its bound scores at the
clock's time (clock_time_ms), never at the time reported."""
CLOCK_CONFIRM_TRIES = 2


class AuditFailure(Exception):
    """A timed call of the candidate failed a check; `status` is its Outcome status."""

    def __init__(self, status: Status, reason: str):
        super().__init__(reason)
        self.status = status


def scenario_rng(sc: Scenario, secret: bytes) -> random.Random:
    """The supervisor's choices for one scenario (rows to check, fingerprint keys): unpredictable
    without the run's secret."""
    return random.Random(secret + sc.id.encode())


@dataclass
class TimedCopies:
    """One implementation's input copies for timing, in the supervisor's memory (shared with its worker)."""

    sc: Scenario
    copies: list[Inputs]
    audited: bool
    """True for the candidate: every copy called is checked after each round."""
    secret: bytes
    rng: random.Random
    writes_lse: bool = True
    next_trial: int = 0
    """The next trial number to draw fresh contents from."""
    fingerprints: list[dict] = field(default_factory=list)
    structures: list[dict] = field(default_factory=list)
    """Per copy, the supervisor's private clones of its structure (offsets, page table, mask): never mapped by a
    worker, so what a call does to another copy's structure is seen and undone before that copy is called."""
    key: int = 0
    outliers: int = 0
    """Elements outside the tolerance in every row sampled so far, and how many elements those rows hold."""
    sampled: int = 0
    work: "np.ndarray | None" = None
    """Cumulative visible keys over the query rows (for drawing a row by its work), made at the first check."""

    @classmethod
    def make(cls, sc: Scenario, count: int, device: str, secret: bytes, audited: bool,
             rng: random.Random) -> TimedCopies:
        from solbench.supervisor.inputs import make_inputs, private_structure

        copies = [make_inputs(sc, trial=t, device=device, secret=secret) for t in range(1, 1 + count)]
        # Every round refills what it calls first and records the fingerprints then (before_round).
        return cls(sc, copies, audited, secret, rng, next_trial=1 + count, key=rng.getrandbits(62),
                   fingerprints=[{} for _ in copies], structures=[private_structure(c) for c in copies])

    def order(self, r: int, n: int) -> list[int]:
        """The copies round r calls, each once: n of them, continuing the rotation of round r - 1."""
        n = min(n, len(self.copies))
        return [(r * n + j) % len(self.copies) for j in range(n)]

    def before_round(self, order: list[int]) -> None:
        """Fresh contents and poisoned outputs for the copies the round calls, written just before it for
        every implementation alike (what was written last sits in L2 where a policy does not flush): a
        trial never used before, behind the same pointers."""
        from solbench.supervisor.inputs import draw_values, input_fingerprint, refill, restore_structure

        for i in order:
            # The values are drawn afresh; the structure must be as made. Every copy is mapped by its worker for
            # the whole scenario, so a call could rewrite an idle copy's page table, offsets or mask (an empty
            # mask: no work) and that copy's next fingerprint and reference would take it as given.
            changed = restore_structure(self.copies[i], self.structures[i])
            if changed and self.audited:
                raise AuditFailure(Status.MISMATCH, f"the structure of input copy {i} ({', '.join(changed)}) was "
                                                    f"rewritten while it was not being called")
            refill(self.copies[i], draw_values(self.sc, self.next_trial, str(self.copies[i].device), self.secret))
            self.next_trial += 1
            if self.audited:
                self.fingerprints[i] = input_fingerprint(self.copies[i], self.key)
            self.copies[i].poison()
        sync_outputs(self.copies[0])

    def after_round(self, order: list[int], round_index: int) -> None:
        """Check the candidate's copies just called (raise AuditFailure)."""
        if self.audited:
            for i in order:
                self._check(i, round_index)

    def _check(self, i: int, round_index: int) -> None:
        from solbench.supervisor.inputs import input_fingerprint
        from solbench.supervisor.reference import reference_rows
        from solbench.supervisor.verdict import OUTLIER_ALPHA, TOLERANCES, judge, too_many_outside

        inp = self.copies[i]
        where = f"timed call on input copy {i} in round {round_index + 1}"
        damaged = damaged_guards(inp)
        if damaged:
            raise AuditFailure(Status.OUT_OF_BOUNDS, f"{where} wrote past the ends of {damaged}: the guard bytes changed")
        if bool(poisoned(inp.out).any()) or (self.writes_lse and bool(poisoned(inp.lse).any())):
            raise AuditFailure(Status.UNWRITTEN, f"{where} left its freshly poisoned outputs unwritten (work skipped)")
        touched = changed_inputs(self.fingerprints[i], input_fingerprint(inp, self.key))
        if touched:
            raise AuditFailure(Status.MISMATCH, f"{where} modified its inputs in place: {', '.join(touched)}")
        if self.sc.total_q == 0:
            return
        tokens = self._rows()
        ref_out, ref_lse = reference_rows(inp, tokens)
        index = _index(tokens, inp.out.device)
        tol = replace(TOLERANCES[self.sc.dtype], max_outside_frac=1.0)  # the fraction is judged over all samples
        out = inp.out[index]
        verdict = judge(out, inp.lse[index], ref_out, ref_lse, self.sc.dtype, writes_lse=self.writes_lse, tol=tol)
        if verdict.status is not Status.PASSED:
            raise AuditFailure(verdict.status, f"{where}, rows {tokens}: {verdict.reason}")
        self.outliers += round(verdict.error.frac_outside_tol * out.numel())
        self.sampled += out.numel()
        allowed = TOLERANCES[self.sc.dtype].max_outside_frac
        # over all rows sampled in the scenario: a few rows are too few to hold the fraction to each check
        if too_many_outside(self.outliers, self.sampled, allowed):
            raise AuditFailure(Status.MISMATCH, f"{where}: {self.outliers} of {self.sampled} elements in the rows "
                                                f"sampled so far lie outside the tolerance, more than the {allowed:g} "
                                                f"allowed (binomial p < {OUTLIER_ALPHA:g})")

    def _rows(self) -> list[int]:
        """ROWS_PER_CHECK distinct query rows: the first by its share of the visible keys, the rest uniform."""
        total = self.sc.total_q
        if total <= ROWS_PER_CHECK:
            return list(range(total))
        if self.work is None:
            from solbench.core import masks

            self.work = np.cumsum(np.concatenate(
                [np.subtract(*masks.row_intervals(self.sc, b)[::-1]) for b in range(self.sc.batch)]))
        rows = self.rng.sample(range(total), ROWS_PER_CHECK)
        if self.work[-1]:
            heavy = min(int(np.searchsorted(self.work, self.rng.random() * self.work[-1], side="right")), total - 1)
            if heavy not in rows:
                rows[0] = heavy
        return sorted(rows)


def clock_outliers(candidate_rounds, trusted_rounds, allowance_per_call_ms: float = 0.0,
                   share: float = CLOCK_GAP_SHARE, full_calls: int | None = None) -> list[int]:
    """The candidate's rounds that hide time, by index: each round is (wall_ms on the supervisor's clock, the
    ms its reports explain -- the sum of its *device* times, the ones that are scored -- and calls). The time
    outside the calls per call (flush, the pipe, the loop) is taken from the trusted comparators' rounds, which
    run the same loop, plus `allowance_per_call_ms` (the launch cover the candidate may have beyond theirs); a
    worker that reports times shorter than its calls took leaves the difference unexplained. Every round is
    held to its bound: no majority, no median (a forger of every other round moved an even median halfway).
    `full_calls` is a full round's calls (the policy's round_samples): a shorter round gets its share of the floor."""
    if not candidate_rounds or not trusted_rounds:
        return []
    loop = outside_per_call(trusted_rounds) + allowance_per_call_ms
    # The reported time's share bounds what a forger takes off each call; the loop's share is the jitter of the
    # loop's cost, which differs between two honest processes in proportion to itself (the native runner's
    # ~2.8 ms a call between 90 us calls).
    return [i for i, (wall, told, calls) in enumerate(candidate_rounds)
            if unexplained_ms(wall, told, calls, loop) > clock_bound_ms(told, calls, loop, share, full_calls)]


def clock_bound_ms(told: float, calls: int, loop_per_call: float, share: float = CLOCK_GAP_SHARE,
                   full_calls: int | None = None) -> float:
    """The most a round may leave unexplained: a share of its reported time and of its loop's allowance, or the
    floor: CLOCK_GAP_SLACK_MS for a full round, its share for a round of fewer calls. A worker sets its own
    calls a round (round_calls follows what it reports of its first round): reporting long calls once would
    otherwise buy each short call the whole floor. An honest round of fewer calls has long ones, and their share
    passes the floor's part wherever round_budget_ms * share >= CLOCK_GAP_SLACK_MS."""
    floor = CLOCK_GAP_SLACK_MS * (min(1.0, calls / full_calls) if full_calls else 1.0)
    return max(share * told + CLOCK_LOOP_SHARE * calls * max(0.0, loop_per_call), floor)


def outside_per_call(trusted_rounds) -> float:
    """The loop's time per call outside the reported times, as the trusted rounds (wall, told, calls) show it."""
    import statistics

    # never below 0: a comparator's reported times do not shrink what the candidate's must explain
    return max(0.0, statistics.median((wall - told) / max(1, calls) for wall, told, calls in trusted_rounds))


def unexplained_ms(wall: float, told: float, calls: int, outside_per_call: float) -> float:
    """What a round's wall time leaves unexplained by its reported times and the loop's allowance."""
    return wall - told - calls * outside_per_call


def clock_gap(candidate_rounds, trusted_rounds, allowance_per_call_ms: float = 0.0,
              share: float = CLOCK_GAP_SHARE, full_calls: int | None = None) -> bool:
    """Whether any of the candidate's rounds is out of its bound (clock_outliers)."""
    return bool(clock_outliers(candidate_rounds, trusted_rounds, allowance_per_call_ms, share, full_calls))


def clock_time_ms(told: float, unexplained: float) -> float:
    """What a round out of its bound scores as: its reported time and all it left unexplained, the most the
    supervisor's clock lets it have taken."""
    return told + max(0.0, unexplained)


NATIVE_BETWEEN_CAP_MS = 3.0
"""With no trusted native runner in the scenario (--seed none beside Python-hosted libraries only), the most time
per call the candidate's runner may claim for its own work between calls and around its events (flush, syncs,
CUPTI bookkeeping): against the Python host's loop that time read as hidden, and the seed's ~2 ms calls were
flagged on the H200. The claim comes from the candidate's process, so a forger may use this much per call too
(docs/threat-model.md; `SOLBENCH_TRACE` prints what honest runners spend, to set it from measurements)."""


def clock_rounds(clocked: dict, yardstick: list[str], claims_between: bool):
    """The clock check's rounds (wall, explained, calls) of the candidate and of its yardstick, from rounds of
    (wall, reported host, reported device, calls, the native runner's reported time between calls). A round is
    explained by its reported device times, which are what is scored; beside a trusted runner of its own kind,
    the yardstick's time outside them (the same loop) is the allowance. With `claims_between` (a native
    candidate, no trusted native runner beside it) its runner's own account of the time between and around its
    calls explains its rounds too, up to NATIVE_BETWEEN_CAP_MS a call (unbounded, that account let a forger
    report any time)."""
    trusted = [(w, d, c) for n in yardstick for w, _, d, c, _ in clocked[n]]
    cap = NATIVE_BETWEEN_CAP_MS if claims_between else 0.0
    return [(w, d + min(max(0.0, b + h - d), c * cap), c) for w, h, d, c, b in clocked["candidate"]], trusted


def damaged_guards(inp: Inputs) -> str:
    """'out (N bytes), lse (M bytes)' for the output buffers whose guard bytes changed; '' when none did."""
    return ", ".join(f"{name} ({n} bytes)" for name in ("out", "lse") if (n := guard_damage(getattr(inp, name))))


def changed_inputs(before: dict, after: dict) -> list[str]:
    """Names of the input tensors whose fingerprints differ."""
    return [name for name, value in before.items() if after.get(name) != value]


def _index(tokens, device):
    import torch

    return torch.tensor(tokens, dtype=torch.long, device=device)


def sync_outputs(inp: Inputs) -> None:
    """Make the supervisor's writes visible before a worker runs on the same memory."""
    if inp.out.device.type == "cuda":
        import torch

        torch.cuda.synchronize(inp.out.device)
