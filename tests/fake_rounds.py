"""Timing rounds without a worker process: `candidate_flags` runs solbench's interleaved timing loop on fake
workers (an object with `spec.kind`, `spec.runner` and `request(cmd, payload, timeout_s)` replying to "round") and
returns the candidate's flags, so the clock check can be tested with any numbers a worker might report."""


class Copies:
    """TimedCopies with nothing to fill or check."""

    audited = False

    def order(self, r, n):
        return list(range(n))

    def before_round(self, order):
        pass

    def after_round(self, order, r):
        pass


def candidate_flags(candidate, comparators: dict, round_samples: int, launcher_ab: bool = False) -> tuple[str, ...]:
    from solbench.core.policy import TimingPolicy
    from solbench.supervisor.rounds import time_interleaved

    workers = {"candidate": candidate, **comparators}
    policy = TimingPolicy(warmup_ms=0, round_samples=round_samples, min_rounds=2, max_rounds=2, launcher_ab=launcher_ab)
    measurements, _ = time_interleaved(workers, {n: Copies() for n in workers}, policy, 5.0, "cuda_events")
    return measurements["candidate"].flags
