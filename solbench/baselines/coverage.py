"""Coverage: which baselines claim which scenarios of a suite on an arch, and why the others do not.

Pure: asks each adapter class's `supports`, imports no library, needs no GPU. Used by
`solbench baselines` and by reports (the 'scenarios with no baseline, and why' table).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class ScenarioCoverage:
    """One scenario: who runs it, and each other baseline's reason."""

    scenario_id: str
    """The scenario's stable id."""
    supported_by: tuple[str, ...]
    """Baselines that claim it, in registry order."""
    reasons: tuple[tuple[str, str], ...]
    """(baseline, reason) for every baseline that does not."""

    @property
    def covered(self) -> bool:
        return bool(self.supported_by)


@dataclass(frozen=True)
class BaselineCoverage:
    """One baseline over the suite."""

    name: str
    """Registry name."""
    supported: int
    """Scenarios it claims."""
    total: int
    """Scenarios in the suite."""
    top_reasons: tuple[tuple[str, int], ...]
    """Most frequent reasons for the rest, with their counts, most frequent first."""


@dataclass(frozen=True)
class CoverageTable:
    """Coverage of one suite on one arch by a set of baselines."""

    suite: str
    """Suite name."""
    arch: str
    """Arch the support answers are for."""
    names: tuple[str, ...]
    """Baselines asked, in registry order."""
    rows: tuple[ScenarioCoverage, ...]
    """One per scenario, in suite order."""

    def per_baseline(self, top: int = 3) -> tuple[BaselineCoverage, ...]:
        out = []
        for name in self.names:
            counts = Counter(reason for row in self.rows for n, reason in row.reasons if n == name)
            supported = sum(name in row.supported_by for row in self.rows)
            out.append(BaselineCoverage(name, supported, len(self.rows), tuple(counts.most_common(top))))
        return tuple(out)

    def uncovered(self) -> tuple[ScenarioCoverage, ...]:
        """Scenarios no baseline claims."""
        return tuple(row for row in self.rows if not row.covered)

    def to_dict(self) -> dict:
        return {
            "suite": self.suite, "arch": self.arch, "baselines": list(self.names),
            "per_baseline": [{"name": b.name, "supported": b.supported, "total": b.total,
                              "top_reasons": [{"reason": r, "count": c} for r, c in b.top_reasons]}
                             for b in self.per_baseline()],
            "scenarios": [{"id": r.scenario_id, "supported_by": list(r.supported_by), "reasons": dict(r.reasons)}
                          for r in self.rows],
        }


def coverage(suite, arch: str, names=None) -> CoverageTable:
    """Coverage of `suite` (a Suite, or a name for solbench.core.suites.load_suite) on `arch` by `names`
    (default: every registered baseline, installed or not)."""
    from solbench.baselines import REGISTRY, get_adapter_class
    from solbench.core.suites import load_suite

    if isinstance(suite, str):
        suite = load_suite(suite)
    names = tuple(names) if names is not None else tuple(REGISTRY)
    classes = {name: get_adapter_class(name) for name in names}
    rows = []
    for sc in suite.scenarios:
        answers = {name: cls.supports(sc, arch) for name, cls in classes.items()}
        rows.append(ScenarioCoverage(
            scenario_id=sc.id,
            supported_by=tuple(n for n, s in answers.items() if s.ok),
            reasons=tuple((n, s.reason) for n, s in answers.items() if not s.ok),
        ))
    return CoverageTable(suite.name, arch, names, tuple(rows))


def markdown_summary(tables: list[CoverageTable]) -> str:
    """Markdown for the README and reports: per suite, how many scenarios each baseline claims and how many
    have none; then each group of uncovered scenarios (same reasons) with every baseline's reason."""
    names = tables[0].names
    lines = ["| suite | scenarios | " + " | ".join(names) + " | no baseline |",
             "| --- | ---: | " + " | ".join("---:" for _ in names) + " | ---: |"]
    for t in tables:
        counts = {b.name: b.supported for b in t.per_baseline()}
        lines.append(f"| {t.suite} | {len(t.rows)} | " + " | ".join(str(counts[n]) for n in names)
                     + f" | {len(t.uncovered())} |")
    for t in tables:
        groups: dict[tuple, list[str]] = {}
        for row in t.uncovered():
            groups.setdefault(row.reasons, []).append(row.scenario_id)
        for reasons, ids in groups.items():
            why = "; ".join(f"{n}: {r}" for n, r in reasons)
            lines.append(f"\n- **{t.suite}**, {len(ids)} scenario(s) such as `{ids[0]}`: {why}")
    return "\n".join(lines) + "\n"
