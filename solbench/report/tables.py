"""Reports from a RunResult: the terminal table, summary.md and results.csv. Consumes results, never
measures, so `solbench report results.json` works on a file made on another machine.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

from solbench.core.model import Outcome, RunResult, Status


@dataclass(frozen=True)
class Score:
    """The suite score against one comparator: geomean speedup with its interval, or 0 with why."""

    comparator: str
    """'seed', a baseline name, or 'best' (per scenario, the fastest comparator that ran)."""
    geomean: float
    """Geomean over scenarios of the median per-round speedup; 0 when any scenario failed."""
    lo: float
    """Lower end of the 95 % interval (measurement noise)."""
    hi: float
    """Upper end."""
    scenarios: int
    """Scenarios that contributed."""
    failed: tuple[str, ...] = ()
    """Ids of failing scenarios (any makes the score 0)."""


def comparator_names(result: RunResult) -> list[str]:
    names: list[str] = []
    for o in result.outcomes:
        names += [n for n in o.ratios if n not in names]
    return names


INCOMPLETE = "run incomplete"
"""Marks a Score.failed entry that stands for the scenarios an interrupted run never reached."""


def best_ratios(o: Outcome) -> tuple[float, ...] | None:
    """Per round, the speedup against the fastest comparator of that round (min over comparators)."""
    if not o.ratios:
        return None
    return tuple(min(r) for r in zip(*o.ratios.values()))


def _not_scored(result: RunResult) -> tuple[str, ...]:
    """What zeroes every score: scenarios not passed, and the ones an interrupted run never reached."""
    # A declined (skipped) scenario disqualifies too: a score over only the easy scenarios is no score.
    failed = tuple(o.scenario_id for o in result.outcomes if o.status is not Status.PASSED)
    if not result.complete:  # a geomean over the finished scenarios only is no suite score
        failed += (f"{INCOMPLETE}: {result.scenario_count - len(result.outcomes)} of {result.scenario_count} "
                   "scenarios not run",)
    return failed


def _score(name: str, per: list, failed: tuple[str, ...]) -> Score:
    from solbench.core.stats import geomean_ci

    per = [p for p in per if p]
    if failed or not per:
        return Score(name, 0.0, 0.0, 0.0, len(per), failed)
    return Score(name, *geomean_ci(per), len(per))


def scores(result: RunResult) -> list[Score]:
    failed = _not_scored(result)
    names = comparator_names(result)
    return [_score(name, [best_ratios(o) if name == "best" else o.ratios.get(name) for o in result.outcomes], failed)
            for name in names + (["best"] if len(names) > 1 else [])]


@dataclass(frozen=True)
class Headline:
    """The suite score against one yardstick (solbench.report.yardsticks), over the scenarios it ran."""

    label: str
    """'FA3' or 'FA4' (the arch's upstream library), or 'fastest available'."""
    comparator: str | None
    """The upstream library's comparator in the run; None for the fastest, which is chosen per scenario."""
    score: Score
    """Its geomean over the scenarios where the yardstick was timed (`score.scenarios` of them)."""
    scenarios_total: int
    """Scenarios of the run: those beyond `score.scenarios` are ones the yardstick does not run."""


def headlines(result: RunResult) -> list[Headline]:
    """vs upstream (where the arch has one and the run timed it) and vs fastest available (where the run
    timed a library): per scenario the candidate's per-round ratios to that library."""
    from solbench.report.yardsticks import fastest, timed_ms, upstream

    failed, total = _not_scored(result), len(result.outcomes)
    up = upstream(result)
    out = []
    if up:
        per = [o.ratios[up.comparator] for o in result.outcomes if timed_ms(o, up.comparator) is not None]
        out.append(Headline(up.library, up.comparator, _score("upstream", per, failed), total))
    per = [o.ratios[name] for o in result.outcomes if (name := fastest(o))]
    if per or up:
        out.append(Headline("fastest available", None, _score("fastest", per, failed), total))
    return out


def headline_line(hs: list[Headline]) -> str:
    """The paper's sentence: '1.16x [95% CI ...] vs FA3 (vllm-fa3) on 28 of 182; 1.1x ... vs fastest
    available on ...'; a recorded run's 'fa3' is named as the adapter it is today (fa3-fwd)."""
    from solbench.baselines import current_name

    if hs and hs[0].score.failed:
        return f"headline: 0 vs {' and vs '.join(h.label for h in hs)} ({zero_because(hs[0].score)})"
    parts = []
    for h in hs:
        s, who = h.score, h.label + (f" ({current_name(h.comparator)})" if h.comparator else "")
        value = f"{s.geomean:.4g}x [95% CI {s.lo:.4g}-{s.hi:.4g}]" if s.scenarios else "no scenario timed"
        parts.append(f"{value} vs {who} on {s.scenarios} of {h.scenarios_total}")
    return "headline: " + "; ".join(parts)


def status_counts(result: RunResult) -> dict[str, int]:
    counts: dict[str, int] = {}
    for o in result.outcomes:
        counts[o.status.value] = counts.get(o.status.value, 0) + 1
    return counts


def zero_because(s: Score) -> str:
    """Why a score is 0, in a few words: '3 scenario(s) not passed; run incomplete: ...'."""
    why = [f for f in s.failed if f.startswith(INCOMPLETE)]
    failed = len(s.failed) - len(why)
    if failed:
        why.insert(0, f"{failed} scenario(s) not passed")
    return "; ".join(why)


def score_line(s: Score) -> str:
    """One line per comparator: the geomean with its interval, or 0 and how many scenarios failed."""
    if s.failed:
        return f"score vs {s.comparator}: 0 ({zero_because(s)})"
    return (f"geomean speedup vs {s.comparator}: {s.geomean:.4f}x (95% CI {s.lo:.4f}-{s.hi:.4f}) "
            f"over {s.scenarios} scenarios")


def noise_pct(samples_ms) -> float | None:
    """The 95 % CI half-width of the median, percent of it; None (null in JSON, "-" in tables) while there
    are too few samples for a 95 % CI (stats.min_samples_for_ci: 6), as under --quick."""
    from solbench.core.stats import min_samples_for_ci, rel_ci_halfwidth

    if samples_ms is None or len(samples_ms) < min_samples_for_ci():
        return None
    return rel_ci_halfwidth(samples_ms) * 100


def scenario_rows(result: RunResult) -> list[dict]:
    from solbench.core.stats import median

    from solbench.report.yardsticks import NOT_LIBRARIES, cell, fastest

    rows = []
    names = comparator_names(result)
    libraries = [n for n in names if n not in NOT_LIBRARIES]
    bounded = any(o.bound for o in result.outcomes)  # every row has the same columns (the CSV and HTML need it)
    for o in result.outcomes:
        row = {"scenario": o.scenario_id, "status": o.status.value,
               "max_abs_err": o.error.max_abs if o.error else None}
        cand = o.measurements.get("candidate")
        row["time_us"] = median(cand.samples_ms) * 1e3 if cand else None
        row["noise_pct"] = noise_pct(cand.samples_ms) if cand else None
        for n in names:
            row[f"x_{n}"] = median(o.ratios[n]) if o.ratios.get(n) else None
        if libraries:  # per scenario the fastest library that passed (yardsticks.fastest), its time, the speedup
            fast = cell(o, fastest(o))
            row.update(fastest=fast["comparator"], fastest_us=fast["time_us"], x_fastest=fast["speedup"])
        if bounded:
            row["sol_pct"] = o.bound["bound_ms"] / median(cand.samples_ms) * 100 if o.bound and cand else None
        row["reason"] = o.reason
        rows.append(row)
    return rows


def format_value(v) -> str:
    """A table cell: 4 significant digits, "-" for nothing."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e4 or math.isinf(v) else f"{v:.0f}"  # 48931, not 4.893e+04
    return str(v)


def render_table(result: RunResult, fmt: str = "simple", max_reason: int = 70) -> str:
    from tabulate import tabulate

    rows = scenario_rows(result)
    for r in rows:
        r["reason"] = (r["reason"][: max_reason - 1] + "…") if len(r["reason"]) > max_reason else r["reason"]
    table = [[format_value(v) for v in r.values()] for r in rows]
    headers = list(rows[0].keys()) if rows else []
    return tabulate(table, headers=headers, tablefmt=fmt)


def summary_head(result: RunResult) -> list[str]:
    """The summary's first lines: counts, the score per comparator, input copies."""
    counts = status_counts(result)
    done = f"{len(result.outcomes)}/{result.scenario_count}" + ("" if result.complete else " (incomplete)")
    lines = [f"suite {result.suite} on {result.arch}: {done} scenarios; "
             + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))]
    lines += [score_line(s) for s in scores(result)]
    hs = headlines(result)
    if hs:
        lines.append(headline_line(hs))
    fewer = fewer_input_copies(result)
    if fewer:
        lines.append(f"timed on fewer than the policy's {result.policy.get('rotate_inputs')} input copies (device "
                     f"memory): {len(fewer)} scenario(s), e.g. {fewer[0]}")
    return lines


def comparator_failures(result: RunResult) -> list[tuple[str, str, dict]]:
    """(scenario id, comparator, its record) for every comparator that ran and did not pass."""
    return [(o.scenario_id, name, c) for o in result.outcomes for name, c in o.comparators.items()
            if c["status"] not in (Status.PASSED.value, Status.SKIPPED.value)]


def render_summary(result: RunResult) -> str:
    """A few lines: counts, score per comparator, which scenarios failed and why, comparator failures, and
    how many scenarios each comparator does not support."""
    from solbench.report.spread import spread_lines

    lines = summary_head(result) + spread_lines(result)
    for o in result.outcomes:
        if o.status is not Status.PASSED:
            lines.append(f"FAILED {o.scenario_id}: {o.status.value}: {o.reason}")
    for scenario_id, name, c in comparator_failures(result):
        lines.append(f"comparator {name} on {scenario_id}: {c['status']}: {c['reason']}")
    declined = declined_counts(result)
    if declined:
        per = ", ".join(f"{name} {sum(reasons.values())}" for name, reasons in declined.items())
        lines.append(f"not supported by a comparator (skipped, the reasons counted in summary.md and summary.html): "
                     f"{sum(sum(r.values()) for r in declined.values())} (scenario, comparator) pairs: {per}")
    if result.sanitize:
        lines.append(_sanitize_line(result))
    lines.append(_triage_line(result))
    return "\n".join(lines)


def _sanitize_line(result: RunResult) -> str:
    scenarios = {f["scenario_id"] for f in result.sanitize}
    tools = sorted({f["tool"] for f in result.sanitize})
    dirty = [f for f in result.sanitize if f["errors"] != 0 or f["first"] or f.get("differs")]
    verdict = "clean" if not dirty else f"{len(dirty)} finding(s), the scenarios' status is sanitizer_error"
    held = len({f["scenario_id"] for f in result.sanitize if f.get("compared")})
    return (f"compute-sanitizer ({', '.join(tools)}) on {len(scenarios)} scenario(s), {held} held to a scored call's "
            f"outputs: {verdict}; logs in sanitize/")


def _triage_line(result: RunResult) -> str:
    from solbench.report.triage import run_triage, triage_dict

    rows, policy = run_triage(result)
    counts = triage_dict(rows, policy)["counts"]
    return ("gap triage (% of attainable = measured ceilings): " + ", ".join(f"{n} {c}" for c, n in counts.items())
            + f" of {len(rows)} (scenario, implementation); `solbench triage` gives the evidence")


def declined_counts(result: RunResult) -> dict[str, dict[str, int]]:
    """Per comparator, how many scenarios it declined (skipped: not supported) for each reason; most first.
    Hundreds of such pairs are normal on a wide suite: they are counted, not listed one per line."""
    counts: dict[str, dict[str, int]] = {}
    for o in result.outcomes:
        for name, c in o.comparators.items():
            if c["status"] == Status.SKIPPED.value:
                reasons = counts.setdefault(name, {})
                reasons[c["reason"]] = reasons.get(c["reason"], 0) + 1
    return {name: dict(sorted(r.items(), key=lambda kv: -kv[1]))
            for name, r in sorted(counts.items(), key=lambda kv: -sum(kv[1].values()))}


def fewer_input_copies(result: RunResult) -> list[str]:
    """Scenarios whose implementations were timed on fewer rotated input copies than the policy asks
    (evaluate.input_copies: they would not all have fit in device memory)."""
    wanted = result.policy.get("rotate_inputs")
    return [o.scenario_id for o in result.outcomes
            if wanted is not None and o.input_copies is not None and o.input_copies < wanted]


def render_coverage(result: RunResult) -> str:
    """Per comparator: on how many scenarios it passed, was skipped (not supported) or failed; then the
    scenarios that no comparator timed, with each one's reason."""
    from tabulate import tabulate

    counts: dict[str, dict[str, int]] = {}
    uncovered = []
    for o in result.outcomes:
        for name, c in o.comparators.items():
            row = counts.setdefault(name, {"passed": 0, "skipped": 0, "failed": 0})
            row[c["status"] if c["status"] in ("passed", "skipped") else "failed"] += 1
        if o.comparators and not any(c["status"] == "passed" for c in o.comparators.values()):
            why = "; ".join(f"{n}: {c['reason']}" for n, c in o.comparators.items())
            uncovered.append(f"- `{o.scenario_id}`: {why}")
    if not counts:
        return "(no comparators ran)"
    table = tabulate([[n, r["passed"], r["skipped"], r["failed"]] for n, r in counts.items()],
                     headers=["comparator", "passed", "not supported", "failed"], tablefmt="github")
    reasons = [[name, reason, n] for name, per in declined_counts(result).items() for reason, n in per.items()]
    if reasons:
        table += "\n\nWhy not supported:\n\n" + tabulate(reasons, headers=["comparator", "reason", "scenarios"],
                                                       tablefmt="github")
    tail = ["", f"{len(uncovered)} scenario(s) without a comparator:", *uncovered] if uncovered else []
    return "\n".join([table, *tail])


def write_csv(result: RunResult, path: Path) -> None:
    rows = scenario_rows(result)
    with open(path, "w", newline="") as f:
        if rows:
            writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            writer.writeheader()
            writer.writerows(rows)


def render_gap_table(result: RunResult, fmt: str = "github") -> str:
    from tabulate import tabulate

    from solbench.report.gap_report import gap_rows

    rows = gap_rows(result)
    if not rows:
        return "(no timed scenario has a roofline bound)"
    return tabulate([[format_value(v) for v in r.values()] for r in rows], headers=list(rows[0]), tablefmt=fmt)


def write_markdown(result: RunResult, path: Path, charts: dict | None = None) -> None:
    env = result.environment
    gpu = (env.get("gpu") or {}).get("name") if isinstance(env.get("gpu"), dict) else env.get("gpu_name")
    impls = result.candidate.get("implementations", {})
    text = [
        f"# solbench run `{result.run_id}`", "",
        f"- candidate: `{result.candidate.get('name')}` ({result.candidate.get('kind')}), sha256 `{result.candidate.get('sha256', '')[:16]}`",
        "- implementations: " + ", ".join(f"{k} = `{v}`" for k, v in impls.items()),
        f"- suite: `{result.suite}` (hash `{result.suite_hash[:12]}`), arch `{result.arch}`, device {gpu or 'cpu'}",
        f"- timing: {result.policy.get('method')}, target median CI ±{result.policy.get('target_rel_ci', 0):.1%}, "
        f"cold L2 {result.policy.get('cold_l2')}", "",
        "## Summary", "", "```", render_summary(result), "```", "",
        "## Per scenario", "",
        "Speedups `x_<comparator>` are median per-round t_comparator / t_candidate (> 1: candidate faster); "
        "`noise_pct` is the candidate median's 95 % CI half-width (`-` with fewer than the 6 samples a 95 % CI "
        "needs, as under --quick).", "",
        render_table(result, fmt="github", max_reason=120), "",
        "## Comparator coverage", "",
        render_coverage(result), "",
        "## Gap to the speed of light", "",
        "Bounds are max(FLOPs / peak, bytes / bandwidth) for the datasheet and for the measured ceilings; "
        "largest remaining gap first.", "",
        render_gap_table(result), "",
        _triage_markdown(result),
    ]
    for name, chart in (charts or {}).items():
        text += [f"![{name}]({Path(chart).name})", ""]
    if not charts:
        from solbench.report.gap_report import no_charts_reason

        text += [no_charts_reason(result) or "No charts.", ""]
    path.write_text("\n".join(text))


def _triage_markdown(result: RunResult) -> str:
    from solbench.report.triage import run_triage, triage_markdown

    return triage_markdown(*run_triage(result))


def write_reports(result: RunResult, folder: Path) -> list[Path]:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    from solbench.report.gap_report import write_charts
    from solbench.report.html import write_html

    md, csv_path, html = folder / "summary.md", folder / "results.csv", folder / "summary.html"
    charts = write_charts(result, folder)
    write_markdown(result, md, charts)
    write_csv(result, csv_path)
    write_html(result, html, charts)
    return [md, csv_path, html, *charts.values()]
