"""Statistics on raw timing samples: pure functions, no I/O, no device.

Used by the runner (stopping rule), reports, `solbench check` and the leaderboard. Times are whatever
unit the caller passes (solbench passes milliseconds); ratios are unitless.

Why medians: timing noise is one-sided (preemption, clock dips, cache misses only ever add time), so
the median is a stable centre where the mean is dragged by outliers. Its confidence interval comes
from order statistics and needs no distributional assumption. Aggregates over scenarios are
geometric means in log space (a ratio of 2 and one of 0.5 cancel; no overflow with extreme values).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.stats import binom

_BOOTSTRAP_CHUNK_VALUES = 4_000_000
"""Resampled values held in memory at once (32 MB of float64) before the bootstrap works in chunks."""


def _finite_array(xs, what: str = "samples") -> np.ndarray:
    a = np.asarray(xs, dtype=np.float64).ravel()
    if a.size == 0:
        raise ValueError(f"{what}: empty")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what}: contains NaN or Inf")
    return a


def median(xs: Sequence[float]) -> float:
    """Median of the samples (the mean of the two middle values when n is even)."""
    return float(np.median(_finite_array(xs)))


def iqr(xs: Sequence[float]) -> float:
    """Interquartile range, q75 - q25 (linear interpolation between order statistics)."""
    q25, q75 = np.percentile(_finite_array(xs), [25.0, 75.0])
    return float(q75 - q25)


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def _order_stat_coverage(n: int, k: int) -> float:
    """P(x_(k) <= true median <= x_(n-k+1)) for a continuous distribution (1-indexed order stats).

    The count of samples below the median is Binomial(n, 1/2); the interval covers the median
    exactly when that count is in [k, n - k].
    """
    return float(binom.cdf(n - k, n, 0.5) - binom.cdf(k - 1, n, 0.5))


def median_ci(xs: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval (lo, hi) for the median of the population sampled.

    Takes the widest-inside pair of order statistics (x_(k), x_(n-k+1)) whose binomial coverage
    reaches `confidence`, then interpolates towards the next pair inwards so the coverage is close to
    nominal rather than conservative (Hettmansperger & Sheather, 1986). With too few samples for any
    pair to reach `confidence` (n < 6 at 95 %) it returns (min, max), which covers less than asked:
    `rel_ci_halfwidth` reports that case as infinitely wide.
    """
    _check_confidence(confidence)
    x = np.sort(_finite_array(xs))
    n = x.size
    if n == 1 or _order_stat_coverage(n, 1) < confidence:
        return float(x[0]), float(x[-1])
    ks = np.arange(1, (n + 1) // 2 + 1)
    coverage = binom.cdf(n - ks, n, 0.5) - binom.cdf(ks - 1, n, 0.5)  # decreasing in k
    k = int(ks[coverage >= confidence][-1])  # the narrowest pair that still reaches the confidence
    outer_lo, outer_hi = x[k - 1], x[n - k]
    if k + 1 > n - k:  # no narrower pair to interpolate towards
        return float(outer_lo), float(outer_hi)
    inner_lo, inner_hi = x[k], x[n - k - 1]
    g_outer, g_inner = _order_stat_coverage(n, k), _order_stat_coverage(n, k + 1)
    share = (g_outer - confidence) / (g_outer - g_inner)
    lam = (n - k) * share / (k + (n - 2 * k) * share)
    return float((1 - lam) * outer_lo + lam * inner_lo), float((1 - lam) * outer_hi + lam * inner_hi)


def min_samples_for_ci(confidence: float = 0.95) -> int:
    """Fewest samples for which (min, max) already covers the median with `confidence` (6 at 95 %)."""
    _check_confidence(confidence)
    n = 1
    while _order_stat_coverage(n, 1) < confidence:
        n += 1
    return n


def rel_ci_halfwidth(xs: Sequence[float], confidence: float = 0.95) -> float:
    """Half-width of the median's CI relative to the median: (hi - lo) / 2 / median.

    The runner's stopping rule: sample until this drops below TimingPolicy.target_rel_ci. Returns
    math.inf while there are too few samples for a CI at this confidence, so the rule keeps sampling.
    """
    a = _finite_array(xs)
    if a.size < min_samples_for_ci(confidence):
        return math.inf
    m = float(np.median(a))
    if m <= 0:
        raise ValueError(f"median must be positive for a relative width, got {m}")
    lo, hi = median_ci(a, confidence)
    return (hi - lo) / 2.0 / m


def geomean(xs: Sequence[float]) -> float:
    """Geometric mean, exp(mean(log x)), summed with math.fsum; raises ValueError on x <= 0 or empty.

    Log space because prod(x) ** (1 / n) over- or underflows with many or extreme values.
    """
    values = [float(x) for x in xs]
    if not values:
        raise ValueError("geomean of an empty sequence")
    bad = [x for x in values if not (x > 0 and math.isfinite(x))]
    if bad:
        raise ValueError(f"geomean needs positive finite values, got {bad[0]!r}")
    return math.exp(math.fsum(math.log(x) for x in values) / len(values))


def _log_bootstrap_medians(samples: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """log(median) of `n_resamples` resamples (with replacement, same size) of `samples`."""
    n = samples.size
    rows = max(1, _BOOTSTRAP_CHUNK_VALUES // n)
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = np.median(samples[idx], axis=1)
    if np.any(out <= 0):
        raise ValueError("bootstrap medians must be positive (samples must be positive)")
    return np.log(out)


def _interval(log_stats: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = 1.0 - confidence
    lo, hi = np.quantile(log_stats, [alpha / 2.0, 1.0 - alpha / 2.0])
    return math.exp(lo), math.exp(hi)


def _check_bootstrap_args(confidence: float, n_resamples: int) -> None:
    _check_confidence(confidence)
    if n_resamples < 100:
        raise ValueError(f"n_resamples must be >= 100 for a percentile interval, got {n_resamples}")


def geomean_ci(per_scenario_samples: Sequence[Sequence[float]], confidence: float = 0.95,
               n_resamples: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """(geomean, lo, hi): geometric mean over scenarios of each scenario's median, with a bootstrap CI.

    Each inner sequence holds one scenario's samples (solbench passes per-round speedups
    t_comparator / t_candidate). The scenarios are fixed: the interval reflects measurement noise
    only, so each resample redraws every scenario's own samples with replacement and recomputes the
    geomean of medians (percentile interval, in log space). Deterministic for a given `seed`.

    A vectorised numpy bootstrap rather than scipy.stats.bootstrap: its random-state keyword changed
    across the scipy versions solbench supports, and its default BCa interval degenerates on the tied
    samples a timer produces.
    """
    _check_bootstrap_args(confidence, n_resamples)
    arrays = [_finite_array(s, f"scenario {i}") for i, s in enumerate(per_scenario_samples)]
    if not arrays:
        raise ValueError("geomean_ci needs at least one scenario")
    if any(np.any(a <= 0) for a in arrays):
        raise ValueError("geomean_ci needs positive samples")
    point = geomean([float(np.median(a)) for a in arrays])
    rng = np.random.default_rng(seed)
    total = np.zeros(n_resamples)
    for a in arrays:
        total += _log_bootstrap_medians(a, n_resamples, rng)
    lo, hi = _interval(total / len(arrays), confidence)
    return point, lo, hi


def ratio_ci(num_samples: Sequence[float], den_samples: Sequence[float], confidence: float = 0.95,
             n_resamples: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """(ratio, lo, hi): median(num) / median(den) with a bootstrap CI, the two sets independent.

    For two runs' raw samples of the same implementation, e.g. speedup = t_base / t_new is
    ratio_ci(base_samples, new_samples). Each resample redraws both sets independently (percentile
    interval of the log ratio). Deterministic for a given `seed`. A set of one sample contributes no
    noise: with one sample on both sides the interval is the point.
    """
    _check_bootstrap_args(confidence, n_resamples)
    num = _finite_array(num_samples, "num_samples")
    den = _finite_array(den_samples, "den_samples")
    if np.any(num <= 0) or np.any(den <= 0):
        raise ValueError("ratio_ci needs positive samples")
    point = float(np.median(num)) / float(np.median(den))
    rng = np.random.default_rng(seed)
    log_ratio = _log_bootstrap_medians(num, n_resamples, rng) - _log_bootstrap_medians(den, n_resamples, rng)
    lo, hi = _interval(log_ratio, confidence)
    return point, lo, hi
