"""The leaderboard in a terminal: one table per board, then the entries too narrow to rank and those listed
apart for another reason, each with why; fitted to the terminal's width unless `wide`. Also its Markdown
and its JSON document (`document`: solbench/schemas/leaderboard.schema.json)."""

from __future__ import annotations

from solbench import schemas
from solbench.leaderboard.rank import Board, Standing

DRIFT_LEGEND = ("baseline drift: how far this entry's run timed the denominator's library (the seed where it did not "
                "run it) from the recorded baseline run, geomean, in %; + = slower in this run. Drift between runs, "
                "which the interval does not include.")
"""What the `baseline drift` column is (Standing.drift_pct), said under every table that shows it."""


def document(boards: list[Board]) -> dict:
    """What `leaderboard show --json` prints and `export` writes as leaderboard.json (solbench.leaderboard/1)."""
    return {"schema": schemas.LEADERBOARD, "ok": True, "boards": [b.to_dict() for b in boards]}


def rank_label(s: Standing, weighted: bool = False) -> str:
    """'1', '=2' for a shared rank, '-' when not ranked (in the headline, or in the weighted view)."""
    rank, tied = (s.weighted_rank, s.weighted_tied) if weighted else (s.rank, s.tied)
    if rank is None:
        return "-"
    return f"={rank}" if tied else str(rank)


def score_label(s: Standing) -> str:
    """The headline: the geomean over the board's common set with its interval."""
    if s.score is None:
        return "0" if s.wrong else "-"
    return f"{s.score:.3f}x [{s.lo:.3f}, {s.hi:.3f}]"


def weighted_label(s: Standing) -> str:
    """The coverage-weighted geomean and its rank: '0.758x (=2)'."""
    return f"{s.weighted.score:.3f}x ({rank_label(s, weighted=True)})" if s.weighted else "-"


def coverage_label(s: Standing) -> str:
    """Scored scenarios it supports, of the board's: '28/182'."""
    return f"{s.claims}/{s.scored}"


def own_label(s: Standing) -> str:
    """The geomean over the scenarios it claims, with its coverage: '0.979x (28/182)'."""
    return f"{s.own.score:.3f}x ({coverage_label(s)})" if s.own else "-"


def pct(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.1f}%" if signed else f"{value:.1f}%"


def board_title(b: Board) -> str:
    source = (f"denominator: per scenario, the best baseline of run {b.baseline_run_id}"
              if b.baseline_run_id else "no recorded baseline run: nothing can rank")
    return f"suite {b.suite} on {b.gpu_model} ({b.arch}), solbench {b.solbench_major}.x; {source}"


def rule_line(b: Board) -> str:
    """Who ranks and what each score is over, with the size of the common set."""
    scored = len(b.denominators)
    common = (f"on the {len(b.common)} of them every ranked entry supports" if b.common
              else "by the coverage-weighted view (no scored scenario is supported by every ranked entry)")
    return (f"ranks entries supporting at least half of the {scored} scored scenarios, {common}; coverage-weighted: "
            f"all {scored}, one an entry does not support at the fastest other library's time (the seed's where "
            "none ran it); own: the scenarios it supports (coverage)")


HEADERS = ("rank", "entry", "author", "impl", "common set [95% CI]", "weighted (rank)", "own (coverage)",
           "SOL (datasheet)", "baseline drift", "source")


def render_board(b: Board, wide: bool = False) -> str:
    from solbench.report.terminal import fit_lines, fit_table

    rows = [dict(zip(HEADERS, (rank_label(s), s.entry.name, s.entry.author or "-", s.entry.impl, score_label(s),
                               weighted_label(s), own_label(s), pct(s.sol_pct), pct(s.drift_pct, signed=True),
                               s.entry.source_sha256[:12] or "-"))) for s in b.ranked]
    lines = [board_title(b), rule_line(b)]
    if b.note:
        lines.append(b.note)
    table = fit_table(rows, wrap={"entry": 16, "author": 10}, optional=("source", "author", "baseline drift", "impl"),
                      wide=wide)
    lines.append(table or "(no entry ranks on this board)")
    if table and "drift" in table.split("\n-", 1)[0]:  # the column is shown (its header may wrap)
        lines.append(DRIFT_LEGEND)
    if b.narrow:
        lines.append("too narrow to rank:")
        lines += [f"  {s.entry.name} [{s.entry.impl}]: own {own_label(s)}; {s.reason}" for s in b.narrow]
    if b.apart:
        lines.append("not ranked:")
        for s in b.apart:
            shown = f" (partial score {own_label(s)})" if s.own else ""
            lines.append(f"  {s.entry.name} [{s.entry.impl}]{shown}: {s.reason}")
    return fit_lines("\n".join(lines), wide=wide)


def markdown(b: Board) -> str:
    """The ranked entries of a board as a Markdown table, its rule line above, then those too narrow to rank
    in a table of their own (the README's tables)."""
    lines = [f"{b.suite} on {b.gpu_model}: {rule_line(b)}.", "",
             "| rank | entry | common set [95% CI] | coverage-weighted (rank) | own (coverage) | % of SOL |",
             "| ---: | --- | --- | --- | --- | ---: |"]
    lines += [f"| {rank_label(s)} | {s.entry.name} | {score_label(s)} | {weighted_label(s)} | {own_label(s)} "
              f"| {pct(s.sol_pct)} |" for s in b.ranked]
    if b.narrow:
        lines += ["", "Too narrow to rank:", "", "| entry | own (coverage) | % of SOL | why |",
                  "| --- | --- | ---: | --- |"]
        lines += [f"| {s.entry.name} | {own_label(s)} | {pct(s.sol_pct)} | {s.reason} |" for s in b.narrow]
    return "\n".join(lines)


def render(boards: list[Board], wide: bool = False) -> str:
    if not boards:
        return "the leaderboard has no entries (for this selection)"
    return "\n\n".join(render_board(b, wide) for b in boards)
