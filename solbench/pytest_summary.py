"""The plugin's terminal summary: what ran, geomean speedups with their intervals, the BASE verdicts."""

from __future__ import annotations

from solbench import stats
from solbench.check import Verdict, comparator_medians
from solbench.model import Status


def summary_lines(session) -> list[str]:
    """Lines for pytest_terminal_summary, from a SolbenchSession that ran (or failed to)."""
    if session.error:
        return [f"kernel {session.kernel}: {session.error}"]
    result = session.result
    outcomes = result.outcomes
    wrong = [o for o in outcomes if o.status.is_failure]
    skipped = sum(o.status is Status.SKIPPED for o in outcomes)
    lines = [f"kernel {session.kernel} on suite {result.suite} (arch {result.arch}): {len(outcomes)} scenarios, "
             f"{len(outcomes) - len(wrong) - skipped} correct, {len(wrong)} wrong, {skipped} skipped"]
    passed = [o for o in outcomes if o.status is Status.PASSED]
    names = sorted({name for o in passed for name in comparator_medians(o)}, key=lambda n: (n != "seed", n))
    for name in names:
        samples = [o.ratios[name] for o in passed if name in comparator_medians(o)]
        g, lo, hi = stats.geomean_ci(samples, session.criteria.confidence)
        score = f"; score 0: {len(wrong)} scenario(s) wrong" if wrong else ""
        lines.append(f"geomean speedup vs {name}: {g:.3f}x ({session.criteria.confidence:.0%} CI {lo:.3f}-{hi:.3f}) "
                     f"over {len(samples)} scenarios{score}")
    if session.base is not None:
        items = list(session.verdicts.values())
        count = {v: sum(i.verdict is v for i in items) for v in Verdict}
        line = (f"vs BASE {session.base.run_id}: {count[Verdict.FAIL]} regressed, {count[Verdict.AMBIGUOUS]} ambiguous "
                f"after re-measuring, {count[Verdict.PASS]} not slower (epsilon {session.criteria.epsilon:g})")
        speedups = [i.numbers["speedup"] for i in items if "speedup" in i.numbers]
        if speedups:
            line += f"; geomean t_base/t_new {stats.geomean(speedups):.3f}x"
        lines.append(line)
        lines += [f"  ambiguous {i.scenario_id}: {i.message}" for i in items if i.verdict is Verdict.AMBIGUOUS]
    lines.append(f"run: {result.run_id}")
    return lines
