"""The two yardsticks a candidate is reported against beside the seed and each library, as the paper
reports them ("1.16x vs FA3, 1.10x vs fastest available"):

- upstream: the FlashAttention release written for the run's arch family, the library a kernel engineer
  names first: FA3 on Hopper, FA4 on Blackwell. The family comes from the arch's spec (`sm_arch` in
  roofline/<arch>.toml); FA3 is vLLM's build (`vllm-fa3`), or the `fa3-fwd` wheel in a run without it
  (runs recorded before vllm-fa3 call that one `fa3`). A run without the library has no upstream.
- fastest available: per scenario, the comparator library that passed its own check with the least
  median time. The seed is not a library: a user runs a library, so it never stands in.

Both use the per-round ratios the run formed, so their geomeans carry the same kind of 95 % interval as
every score (tables.scores), and each says how many scenarios it is over: a library that does not support
a scenario leaves it out of that yardstick's geomean, visibly.
"""

from __future__ import annotations

from dataclasses import dataclass

from solbench.core.model import Outcome, RunResult, Status
from solbench.core.stats import median

UPSTREAM = {90: ("FA3", ("vllm-fa3", "fa3-fwd")), 100: ("FA4", ("fa4",))}
"""SM version of the arch family -> (the library's name in reports, its adapters, preferred first)."""
NOT_LIBRARIES = ("candidate", "seed")


@dataclass(frozen=True)
class Upstream:
    """The upstream library of a run's arch and the comparator that timed it."""

    library: str
    """'FA3' or 'FA4'."""
    comparator: str
    """Its name in the run ('vllm-fa3', 'fa3-fwd', or a recorded run's 'fa3', 'fa4')."""


def family_sm(arch: str) -> int:
    """SM version of an arch name through its spec ('h100_pcie' -> 90), or of 'sm_90a'-like names; -1 if unknown."""
    from solbench.baselines.base import sm_of
    from solbench.core.archspec import known_arches, load_arch

    return sm_of(load_arch(arch).sm_arch) if arch.lower() in known_arches() else sm_of(arch)


def upstream(result: RunResult) -> Upstream | None:
    """The run's upstream library and the comparator that ran it; None for an arch without one (Ampere,
    CPU) or a run that timed none of its adapters."""
    from solbench.baselines import current_name

    library, adapters = UPSTREAM.get(family_sm(result.arch), ("", ()))
    named = {current_name(n): n for n in _comparators(result)}
    chosen = next((a for a in adapters if a in named), None)
    return Upstream(library, named[chosen]) if chosen else None


def _comparators(result: RunResult) -> list[str]:
    names = [n for n in result.candidate.get("implementations", {}) if n != "candidate"]
    return names + [n for o in result.outcomes for n in o.comparators if n not in names]


def timed_ms(o: Outcome, name: str) -> float | None:
    """The comparator's median time where it passed its check and was timed against the candidate."""
    check = o.comparators.get(name) or {}
    m = o.measurements.get(name)
    return median(m.samples_ms) if check.get("status") == Status.PASSED.value and m and o.ratios.get(name) else None


def fastest(o: Outcome) -> str | None:
    """The comparator library with the least median time among those that passed on this scenario."""
    times = {n: t for n in o.comparators if n not in NOT_LIBRARIES and (t := timed_ms(o, n)) is not None}
    return min(times, key=times.get) if times else None


def cell(o: Outcome, name: str | None) -> dict:
    """One yardstick on one scenario: its comparator, time (µs) and the candidate's speedup over it (median
    per-round t_comparator / t_candidate); time and speedup null where it was not timed."""
    t = timed_ms(o, name) if name else None
    return {"comparator": name, "time_us": t * 1e3 if t is not None else None,
            "speedup": median(o.ratios[name]) if t is not None else None}
