"""Gap triage: per scenario and implementation, where the time beyond the bound goes, in one word.

    host      the launcher (eager host path beyond the device work) is more than host_share_pct of a call
    at-bound  the kernel reaches at_bound_pct of the attainable bound (measured ceilings)
    routing   another implementation is routing_speedup x faster on this shape with a different kernel
              family (kernel records name it; without them: this call's tiles under-fill the GPU's SMs,
              the shape a split-KV family exists for)
    kernel    the kernel itself is below at_bound_pct of attainable, and nothing routes around it

Reads only a RunResult (several of one suite merge: the seed's run with the +flashinfer and +flex runs),
so it works on recorded runs without a GPU. The launcher A/B is measurements' telemetry["launcher"]
(solbench.sandbox.timing.LauncherSplit); CUPTI kernel records, where a run has them, telemetry["kernels"]
as [{name, grid, block, duration_ms, stream}].
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from solbench.core.errors import ConfigError, ScenarioError
from solbench.core.model import RunResult

CLASSES = ("host", "routing", "kernel", "at-bound")


@dataclass(frozen=True)
class TriagePolicy:
    """The thresholds the classification uses; recorded with every triage."""

    host_share_pct: float = 20.0
    """`host` when the launcher's cost beyond the device work is more than this % of the eager call."""
    at_bound_pct: float = 85.0
    """`at-bound` at or above this % of the attainable bound; `kernel` below it."""
    routing_speedup: float = 1.25
    """`routing` needs another implementation at least this many times faster on the same scenario."""

    def to_dict(self) -> dict:
        return asdict(self)


def policy_with(spec: str | None) -> TriagePolicy:
    """TriagePolicy with `spec` ("at_bound_pct=90,host_share_pct=10") applied; ConfigError names a bad key."""
    if not spec:
        return TriagePolicy()
    names = {f.name for f in fields(TriagePolicy)}
    changes = {}
    for item in filter(None, (p.strip() for p in spec.split(","))):
        key, _, raw = item.partition("=")
        try:
            if key not in names:
                raise ValueError
            changes[key] = float(raw)
        except ValueError:
            raise ConfigError(f"--thresholds {item!r}: expected KEY=NUMBER with KEY one of {', '.join(sorted(names))}") from None
    return replace(TriagePolicy(), **changes)


@dataclass(frozen=True)
class Triage:
    """One (scenario, implementation)'s classification and the numbers behind it."""

    scenario_id: str
    impl: str
    time_us: float
    """Median timed (cold-L2 device) time."""
    sol_pct: float | None
    """% of SOL: datasheet bound / time."""
    attainable_pct: float | None
    """% of attainable: measured-ceiling bound / time (None for a run without a measured profile)."""
    tight_pct: float | None
    """% of the tight estimate (solbench.core.tight) / time; None where the arch has no spec."""
    host_share_pct: float | None
    """Launcher overhead per call / eager per-call host time, %; None without a launcher A/B."""
    kernels: tuple[dict, ...] | None
    """CUPTI kernel records of the call, or None: "no kernel records"."""
    fastest: str | None
    """The fastest other implementation on this scenario, if any."""
    fastest_us: float | None
    classification: str
    """One of CLASSES."""
    evidence: str
    """One line: the numbers the classification rests on."""

    def to_dict(self) -> dict:
        return asdict(self)


def merge(results: list[RunResult]) -> tuple[RunResult, dict[str, dict]]:
    """The first run, and per scenario id every implementation's Measurement across all runs (the first
    run's wins a name clash: each +library run repeats the candidate)."""
    if not results:
        raise ConfigError("no run given")
    base = results[0]
    for other in results[1:]:
        if other.suite != base.suite or other.arch != base.arch:
            raise ConfigError(f"run {other.run_id} is suite {other.suite!r} on {other.arch!r}, not "
                              f"{base.suite!r} on {base.arch!r}; give runs of one suite and GPU")
    merged: dict[str, dict] = {}
    for result in reversed(results):
        for o in result.outcomes:
            merged.setdefault(o.scenario_id, {}).update(o.measurements)
    return base, merged


def _median(samples) -> float:
    from solbench.core.stats import median

    return median(samples)


def _host_share(m) -> float | None:
    """None without a launcher A/B, or with one not of numbers (it is the worker's own report)."""
    import math

    split = (m.telemetry or {}).get("launcher")
    if not isinstance(split, dict):
        return None
    eager, overhead = split.get("eager_host_ms"), split.get("overhead_ms")
    if not all(type(x) in (int, float) and math.isfinite(x) for x in (eager, overhead)) or eager <= 0:
        return None
    return 100.0 * max(0.0, overhead) / eager


def _records(m) -> list[dict] | None:
    """The measurement's kernel records in the shape the triage reads, or None (a record file edited, or
    written before the supervisor checked their shape)."""
    from solbench.core.kernels import valid_records

    return valid_records((m.telemetry or {}).get("kernels"))


def _kernel_names(kernels) -> frozenset[str] | None:
    return None if kernels is None else frozenset(k.get("name", "?") for k in kernels)


def _tight_fn(arch: str):
    from solbench.core.archspec import find_profile, known_arches, load_arch
    from solbench.core.scenario import Scenario
    from solbench.core.tight import estimate

    if arch not in known_arches():
        return lambda scenario: None
    spec, profile = load_arch(arch), find_profile(arch)

    def tight(scenario: dict):
        try:
            sc = Scenario.from_dict(scenario)
        except (ScenarioError, TypeError):  # a file without the scenario's fields (synthetic runs)
            return None
        return estimate(sc, spec, profile) if spec.supports(sc.dtype) else None

    return tight


def triage(results: list[RunResult], scenario: str | None = None,
           policy: TriagePolicy = TriagePolicy()) -> list[Triage]:
    """Every (scenario, implementation) with a passed time, classified; `scenario` keeps one id."""
    base, merged = merge(results)
    tight_of = _tight_fn(base.arch)
    outcomes = [o for o in base.outcomes if scenario is None or o.scenario_id == scenario]
    if scenario is not None and not outcomes:
        raise ConfigError(f"no scenario {scenario!r} in run {base.run_id}; `solbench report` lists them")
    rows = []
    for o in outcomes:
        if o.status.is_failure or not o.bound:
            continue
        times = {impl: _median(m.samples_ms) for impl, m in merged[o.scenario_id].items() if m.samples_ms}
        tight = tight_of(o.scenario)
        for impl, t in times.items():
            m = merged[o.scenario_id][impl]
            rows.append(_classify(o, impl, t, m, times, merged[o.scenario_id], tight, policy))
    return rows


def _classify(o, impl, t, m, times, measurements, tight, policy: TriagePolicy) -> Triage:
    bound = o.bound
    measured = bound.get("measured_bound_ms")
    attainable = 100.0 * measured / t if measured else None
    judged = attainable if attainable is not None else 100.0 * bound["bound_ms"] / t
    judged_name = "attainable" if attainable is not None else "SOL (no measured profile)"
    host = _host_share(m)
    kernels = _records(m)
    others = {n: v for n, v in times.items() if n != impl}
    fastest = min(others, key=others.get) if others else None
    speedup = t / others[fastest] if fastest else 1.0
    kernel_text = "no kernel records" if kernels is None else f"{len(kernels)} kernel(s): " + ", ".join(
        f"{k.get('name', '?')} grid {k.get('grid')} {k.get('duration_ms', 0) * 1e3:.1f} us" for k in kernels[:3])
    if host is not None and host > policy.host_share_pct:
        split = m.telemetry["launcher"]
        cls, why = "host", (f"launcher {split['overhead_ms'] * 1e3:.1f} us of a {split['eager_host_ms'] * 1e3:.1f} us "
                            f"eager call ({host:.0f} % > {policy.host_share_pct:g} %)")
    elif judged >= policy.at_bound_pct:
        cls, why = "at-bound", f"{judged:.1f} % of {judged_name} (>= {policy.at_bound_pct:g} %)"
    elif fastest and speedup >= policy.routing_speedup and _routes_differently(
            kernels, _records(measurements[fastest]), tight):
        mine, theirs = _kernel_names(kernels), _kernel_names(_records(measurements[fastest]))
        family = (f"kernels {sorted(theirs)} vs {sorted(mine)}" if mine is not None and theirs is not None else
                  f"{tight.tiles} tiles of a {tight.waves}-wave grid fill {100 * tight.wave_efficiency:.0f} % of the "
                  f"SMs: a split-KV family fills them (no kernel records)")
        cls, why = "routing", (f"{fastest} {others[fastest] * 1e3:.1f} us is {speedup:.2f}x faster; {family}; "
                               f"this kernel {judged:.1f} % of {judged_name}")
    else:
        faster = f"; fastest other {fastest} {speedup:.2f}x" if fastest and speedup > 1 else ""
        cls, why = "kernel", f"{judged:.1f} % of {judged_name} (< {policy.at_bound_pct:g} %){faster}"
    return Triage(
        scenario_id=o.scenario_id, impl=impl, time_us=t * 1e3, sol_pct=100.0 * bound["bound_ms"] / t,
        attainable_pct=attainable, tight_pct=100.0 * tight.tight_ms / t if tight else None, host_share_pct=host,
        kernels=None if kernels is None else tuple(kernels), fastest=fastest,
        fastest_us=others[fastest] * 1e3 if fastest else None, classification=cls,
        evidence=f"{why}; {kernel_text}")


def _routes_differently(mine, theirs, tight) -> bool:
    """Kernel records of both: different kernel names. Otherwise: the call's tiles under-fill one wave."""
    if mine is not None and theirs is not None:
        return _kernel_names(mine) != _kernel_names(theirs)
    return tight is not None and tight.waves == 1 and tight.wave_efficiency < 1.0


def triage_dict(rows: list[Triage], policy: TriagePolicy) -> dict:
    """The JSON view: thresholds, counts per class, and every row."""
    counts = {c: sum(r.classification == c for r in rows) for c in CLASSES}
    return {"policy": policy.to_dict(), "counts": counts, "rows": [r.to_dict() for r in rows],
            "percentages": {"sol_pct": "of SOL (datasheet roofline)",
                            "attainable_pct": "of attainable (measured ceilings)",
                            "tight_pct": "of the tight estimate (waves, exp unit, launch floor; never rejects)"}}


def _pct(x) -> str:
    return "-" if x is None else f"{x:.1f}"


def triage_markdown(rows: list[Triage], policy: TriagePolicy) -> str:
    """The Markdown view: one table, worst attainable first within each scenario's order."""
    lines = ["## Gap triage", "",
             f"Classes: host (launcher > {policy.host_share_pct:g} % of the call), routing (another implementation "
             f">= {policy.routing_speedup:g}x faster with another kernel family), kernel (< {policy.at_bound_pct:g} % "
             f"of attainable), at-bound. % SOL = datasheet roofline; % att. = measured ceilings; % tight = the "
             "tight estimate.", "",
             "| scenario | impl | time us | % SOL | % att. | % tight | host % | class | evidence |",
             "|---|---|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        lines.append(f"| {r.scenario_id} | {r.impl} | {r.time_us:.1f} | {_pct(r.sol_pct)} | {_pct(r.attainable_pct)} | "
                     f"{_pct(r.tight_pct)} | {_pct(r.host_share_pct)} | {r.classification} | {r.evidence} |")
    return "\n".join(lines) + "\n"


def run_triage(result: RunResult) -> tuple[list[Triage], TriagePolicy]:
    """The section every report carries: one run on its own (its implementations against each other)."""
    policy = TriagePolicy()
    return triage([result], None, policy), policy


def triage_rows_for_table(rows: list[Triage]) -> list[dict]:
    """Flat rows for the HTML table; percentages say which bound."""
    return [{"scenario": r.scenario_id, "impl": r.impl, "time_us": r.time_us, "pct_of_sol_datasheet": r.sol_pct,
             "pct_of_attainable_measured": r.attainable_pct, "pct_of_tight": r.tight_pct,
             "host_share_pct": r.host_share_pct, "class": r.classification, "evidence": r.evidence} for r in rows]


def triage_text(rows: list[Triage], policy: TriagePolicy) -> str:
    """The terminal view: per row the class and its evidence, then the counts."""
    lines = []
    for r in rows:
        lines.append(f"{r.scenario_id}  {r.impl}: {r.classification.upper()}  {r.time_us:.1f} us, "
                     f"{_pct(r.sol_pct)} % of SOL (datasheet), {_pct(r.attainable_pct)} % of attainable "
                     f"(measured), {_pct(r.tight_pct)} % of tight")
        lines.append(f"    {r.evidence}")
    counts = triage_dict(rows, policy)["counts"]
    lines.append(", ".join(f"{n} {c}" for c, n in counts.items()) + f"  ({len(rows)} rows)")
    return "\n".join(lines)
