"""solbench.core.stats: known values, coverage by simulation, log-space stability, determinism."""

import math

import numpy as np
import pytest

from solbench.core import stats


def test_median_and_iqr_known_values():
    assert stats.median([3.0, 1.0, 2.0]) == 2.0
    assert stats.median([1.0, 2.0, 3.0, 10.0]) == 2.5
    assert stats.iqr([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(2.0)
    assert stats.iqr([7.0] * 9) == 0.0


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")], [float("inf")]])
def test_median_rejects_empty_and_nonfinite(bad):
    with pytest.raises(ValueError):
        stats.median(bad)


def test_median_ci_small_n_is_the_range():
    # n = 3: no pair of order statistics reaches 95 %, so the widest one is returned ...
    assert stats.median_ci([3.0, 1.0, 2.0]) == (1.0, 3.0)
    assert stats.median_ci([5.0]) == (5.0, 5.0)
    # ... and the stopping rule is told the width is unknown.
    assert stats.rel_ci_halfwidth([1.0, 1.1, 0.9]) == math.inf
    assert stats.min_samples_for_ci(0.95) == 6


def test_median_ci_exact_order_statistics_when_coverage_is_hit():
    # n = 6 at confidence = 1 - 2 / 64: (min, max) has exactly that coverage, no interpolation.
    xs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert stats.median_ci(xs, confidence=1 - 2 / 64) == (1.0, 6.0)


def test_median_ci_contains_median_and_narrows_with_n():
    rng = np.random.default_rng(0)
    small = rng.normal(10.0, 1.0, 20)
    large = rng.normal(10.0, 1.0, 2000)
    for xs in (small, large):
        lo, hi = stats.median_ci(xs)
        assert lo <= np.median(xs) <= hi
    assert np.subtract(*stats.median_ci(large)[::-1]) < np.subtract(*stats.median_ci(small)[::-1])


@pytest.mark.slow
@pytest.mark.parametrize("n", [8, 15, 40, 120])
def test_median_ci_coverage_is_near_nominal(n):
    rng = np.random.default_rng(n)
    trials = 2000
    # a skewed, heavy-ish right tail like timing noise; true median of lognormal(0, s) is 1
    hits = sum(lo <= 1.0 <= hi for lo, hi in (stats.median_ci(rng.lognormal(0.0, 0.3, n)) for _ in range(trials)))
    assert 0.93 <= hits / trials <= 0.975


def test_rel_ci_halfwidth_matches_definition():
    rng = np.random.default_rng(3)
    xs = rng.normal(2.0, 0.02, 200)
    lo, hi = stats.median_ci(xs)
    assert stats.rel_ci_halfwidth(xs) == pytest.approx((hi - lo) / 2 / np.median(xs))
    assert stats.rel_ci_halfwidth(xs) < 0.005


def test_geomean_known_values():
    assert stats.geomean([2.0, 8.0]) == pytest.approx(4.0, rel=1e-15)
    assert stats.geomean([5.0]) == pytest.approx(5.0, rel=1e-15)
    assert stats.geomean([0.5, 2.0]) == pytest.approx(1.0)


def test_geomean_log_space_stability():
    big, tiny = 1e300, 1e-300
    assert stats.geomean([big, tiny]) == pytest.approx(1.0)
    assert stats.geomean([big] * 1000) == pytest.approx(big)
    assert stats.geomean([tiny] * 1000) == pytest.approx(tiny)
    assert stats.geomean([big, big, tiny]) == pytest.approx(1e100)


@pytest.mark.parametrize("bad", [[], [1.0, 0.0], [2.0, -1.0], [float("nan")]])
def test_geomean_rejects_non_positive(bad):
    with pytest.raises(ValueError):
        stats.geomean(bad)


def test_geomean_ci_point_and_interval():
    rng = np.random.default_rng(7)
    per_scenario = [rng.normal(2.0, 0.02, 30), rng.normal(8.0, 0.08, 50)]
    g, lo, hi = stats.geomean_ci(per_scenario)
    assert g == pytest.approx(stats.geomean([np.median(s) for s in per_scenario]))
    assert lo < g < hi
    assert g == pytest.approx(4.0, rel=0.01)
    assert hi / lo < 1.02


def test_geomean_ci_noise_free_scenarios_give_a_point():
    assert stats.geomean_ci([[2.0, 2.0, 2.0], [8.0]]) == pytest.approx((4.0, 4.0, 4.0))


def test_bootstrap_determinism_and_seed_dependence():
    rng = np.random.default_rng(11)
    per_scenario = [rng.lognormal(0.1, 0.05, 25) for _ in range(5)]
    assert stats.geomean_ci(per_scenario, seed=3) == stats.geomean_ci(per_scenario, seed=3)
    assert stats.geomean_ci(per_scenario, seed=3) != stats.geomean_ci(per_scenario, seed=4)
    a, b = rng.lognormal(0, 0.05, 20), rng.lognormal(0, 0.05, 20)
    assert stats.ratio_ci(a, b, seed=1) == stats.ratio_ci(a, b, seed=1)


def test_ratio_ci_known_ratio_and_coverage():
    rng = np.random.default_rng(5)
    trials, hits = 300, 0
    for t in range(trials):
        base = rng.lognormal(np.log(1.05), 0.02, 40)  # true median 1.05
        new = rng.lognormal(0.0, 0.02, 40)  # true median 1.0
        r, lo, hi = stats.ratio_ci(base, new, seed=t)
        assert lo <= r <= hi
        hits += lo <= 1.05 <= hi
    assert 0.90 <= hits / trials <= 0.99


def test_ratio_ci_single_samples_is_a_point():
    assert stats.ratio_ci([3.0], [1.5]) == (2.0, 2.0, 2.0)


def test_bootstrap_argument_checks():
    with pytest.raises(ValueError):
        stats.geomean_ci([])
    with pytest.raises(ValueError):
        stats.geomean_ci([[1.0, -1.0]])
    with pytest.raises(ValueError):
        stats.ratio_ci([1.0], [1.0], confidence=1.5)
    with pytest.raises(ValueError):
        stats.ratio_ci([1.0], [1.0], n_resamples=10)
