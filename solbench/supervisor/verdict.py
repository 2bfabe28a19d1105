"""Correctness verdict: one implementation's output against the fp32 reference (and the seed's error).

Checks, in order: unwritten (poison left), non-finite values, an all-zero output where the reference is
not, element tolerance, the error budget relative to the seed's emulated error (solbench.supervisor.budget:
mean and worst row), LSE. The first failing check decides the status; ErrorStats always carries every number
so a report can say by how much.
"""

from __future__ import annotations

from dataclasses import dataclass

from solbench.core.model import ErrorStats, Status
from solbench.core.tensors import poisoned
from solbench.supervisor.budget import BUDGET_ID, over_budget, row_max_mean_abs, seed_yardstick


@dataclass(frozen=True)
class Tolerance:
    """Element rule |out - ref| <= atol + rtol * |ref|, and how much slack the verdict allows."""

    atol: float
    """Absolute tolerance."""
    rtol: float
    """Relative tolerance."""
    max_outside_frac: float = 1e-4
    """Fraction of elements allowed outside the rule (isolated rounding outliers)."""
    hard_factor: float = 5.0
    """No element may exceed hard_factor times its own tolerance."""
    lse_atol: float = 2e-2
    """Absolute LSE tolerance (natural log) on rows whose reference LSE is finite."""


OUTLIER_ALPHA = 1e-4
"""Elements outside the tolerance fail a check only when a binomial test at this level says they are more than
the allowed fraction (Tolerance.max_outside_frac) admits: a small output is too small to hold the fraction
to a count (two outliers in the 13,312 elements of a small fp8 scenario are 1.5x the 1e-4 allowed, and
vLLM's FA3 had them on the H200), while on a large one the test is the fraction to within a few sigma."""


def too_many_outside(outside: int, elements: int, allowed: float) -> bool:
    """True when `outside` of `elements` is more than the fraction `allowed` admits (binomial, OUTLIER_ALPHA)."""
    from scipy.stats import binom

    return outside > 0 and float(binom.sf(outside - 1, max(1, elements), allowed)) < OUTLIER_ALPHA


# bf16/fp16 outputs round at 2^-8 / 2^-11 relative; fp8 kernels also quantise P to e4m3 (2^-4).
TOLERANCES = {
    "bf16": Tolerance(atol=1e-2, rtol=2e-2),
    "fp16": Tolerance(atol=5e-3, rtol=1e-2),
    "fp8_e4m3": Tolerance(atol=3e-2, rtol=8e-2, lse_atol=5e-2),
}


@dataclass(frozen=True)
class Verdict:
    """Status, one-line reason, and the numbers behind them."""

    status: Status
    reason: str
    error: ErrorStats


def judge(out, lse, ref_out, ref_lse, dtype: str, writes_lse: bool = True, tol: Tolerance | None = None) -> Verdict:
    """Compare (out, lse) with the reference (fp32 tensors of the same shapes, same device), and the error with
    the seed's emulated error on the same reference (the budget)."""
    import torch

    tol = tol or TOLERANCES[dtype]
    seed = seed_yardstick(ref_out, "bf16" if dtype == "fp8_e4m3" else dtype)
    unwritten = int(poisoned(out).sum())
    if writes_lse:
        unwritten += int(poisoned(lse).sum())
    out32 = out.to(torch.float32)
    nonfinite = int((~torch.isfinite(out32)).sum()) - int(poisoned(out).sum())
    diff = (out32 - ref_out).abs()
    finite = torch.isfinite(diff)
    allowed = tol.atol + tol.rtol * ref_out.abs()
    outside = (~finite) | (diff > allowed)
    over_hard = (~finite) | (diff > tol.hard_factor * allowed)
    clean = torch.where(finite, diff, torch.zeros_like(diff))
    numel = max(1, diff.numel())
    lse_err, lse_bad = None, 0
    if writes_lse and lse is not None:
        lse_err, lse_bad = _lse_error(lse, ref_lse)
    error = ErrorStats(
        max_abs=float(clean.max()) if diff.numel() else 0.0,
        mean_abs=float(clean.mean()) if diff.numel() else 0.0,
        frac_outside_tol=float(outside.sum()) / numel,
        atol=tol.atol, rtol=tol.rtol, lse_max_abs=lse_err, unwritten=unwritten,
        nonfinite=max(0, nonfinite) + lse_bad,
        seed_max_abs=seed.max_abs, seed_mean_abs=seed.mean_abs, row_max_mean_abs=row_max_mean_abs(clean),
        seed_row_max_mean_abs=seed.row_max_mean_abs, budget=BUDGET_ID,
    )
    many = too_many_outside(int(outside.sum()), diff.numel(), tol.max_outside_frac)
    return Verdict(*_decide(error, tol, many or bool(over_hard.any()), out32, ref_out, dtype, seed), error)


def _lse_error(lse, ref_lse):
    """(max |lse - ref| on rows with a finite reference, count of rows whose finiteness disagrees)."""
    import torch

    ref_finite = torch.isfinite(ref_lse)
    got_neg_inf = torch.isneginf(lse)
    finiteness_wrong = int(((~ref_finite) & ~got_neg_inf).sum()) + int((ref_finite & ~torch.isfinite(lse)).sum())
    if ref_finite.any():
        d = (lse[ref_finite] - ref_lse[ref_finite]).abs()
        finite = torch.isfinite(d)
        # Non-finite differences are counted in finiteness_wrong; the max stays a finite number (JSON).
        err = float(d[finite].max()) if finite.any() else None
    else:
        err = 0.0
    return err, finiteness_wrong


def _decide(e: ErrorStats, tol: Tolerance, outside_fails: bool, out32, ref_out, dtype, seed):
    if e.unwritten:
        return Status.UNWRITTEN, f"{e.unwritten} output elements never written (poison left)"
    if e.nonfinite:
        return Status.NONFINITE, f"{e.nonfinite} NaN/Inf values (or LSE rows that should be -inf and are not)"
    if out32.numel() and not bool(out32.any()) and bool(ref_out.any()):
        return Status.MISMATCH, "output is all zeros but the reference is not"
    if outside_fails:
        return Status.MISMATCH, (f"{e.frac_outside_tol:.3%} of elements outside atol={tol.atol:g} rtol={tol.rtol:g}; "
                                 f"max |err| {e.max_abs:.3g}")
    if why := over_budget(dtype, e.mean_abs, e.row_max_mean_abs, seed):
        return Status.MISMATCH, why
    if e.lse_max_abs is not None and e.lse_max_abs > tol.lse_atol:
        return Status.MISMATCH, f"LSE max |err| {e.lse_max_abs:.3g} > {tol.lse_atol:g}"
    return Status.PASSED, ""
