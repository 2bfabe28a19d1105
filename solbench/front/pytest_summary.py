"""The plugin's terminal summary: what ran, geomean speedups with their intervals (the headline vs upstream
and fastest available too), the BASE verdicts."""

from __future__ import annotations

from solbench.core import stats
from solbench.report.check import Verdict
from solbench.core.model import Status
from solbench.report.tables import headline_line, headlines, score_line, scores


def summary_lines(session) -> list[str]:
    """Lines for pytest_terminal_summary, from a SolbenchSession: its run (or its error)."""
    if session.error:
        return [f"kernel {session.kernel}: {session.error}"]
    result = session.result
    outcomes = result.outcomes
    wrong = [o for o in outcomes if o.status.is_failure]
    skipped = sum(o.status is Status.SKIPPED for o in outcomes)
    lines = [f"kernel {session.kernel} on suite {result.suite} (arch {result.arch}): {len(outcomes)} scenarios, "
             f"{len(outcomes) - len(wrong) - skipped} correct, {len(wrong)} wrong, {skipped} skipped"]
    lines += [score_line(score) for score in scores(result)]
    heads = headlines(result)  # vs the arch's FA3 / FA4 and the fastest library, where the run timed libraries
    if heads:
        lines.append(headline_line(heads))
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
    lines.append(f"run: {result.run_id} in {session.folder}")
    if session.benchmark_files is not None and session.benchmark_files.written:
        lines.append(f"written for pytest-benchmark: {', '.join(session.benchmark_files.written)}")
    return lines
