"""The leaderboard in a terminal: one table per board, then the entries listed apart with why; fitted to
solbench.report.terminal.WIDTH columns unless `wide`."""

from __future__ import annotations

from solbench.leaderboard.rank import Board, Standing


def rank_label(s: Standing) -> str:
    """'1', '=2' for a shared rank, '-' when not ranked."""
    if s.rank is None:
        return "-"
    return f"={s.rank}" if s.tied else str(s.rank)


def score_label(s: Standing) -> str:
    if s.score is None:
        return "0" if s.wrong else "-"
    return f"{s.score:.3f}x [{s.lo:.3f}, {s.hi:.3f}]"


def coverage_label(s: Standing) -> str:
    """Scenarios scored on its own times, and how many more at the seed's (not supported): '28 (+47 on seed)'."""
    own = sum(1 for x in s.scenarios if x.speedup is not None and not x.fallback)
    return f"{own} (+{len(s.fallback)} on seed)" if s.fallback else str(own)


def pct(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.1f}%" if signed else f"{value:.1f}%"


def board_title(b: Board) -> str:
    source = (f"denominator: per scenario, the best baseline of run {b.baseline_run_id}"
              if b.baseline_run_id else "no recorded baseline run: nothing can rank")
    return f"suite {b.suite} on {b.gpu_model} ({b.arch}), solbench {b.solbench_major}.x; {source}"


HEADERS = ("rank", "entry", "author", "impl", "speedup vs best baseline [95% CI]", "SOL (datasheet)", "drift",
           "scenarios", "source")


def render_board(b: Board, wide: bool = False) -> str:
    from solbench.report.terminal import fit_lines, fit_table

    rows = [dict(zip(HEADERS, (rank_label(s), s.entry.name, s.entry.author or "-", s.entry.impl, score_label(s),
                               pct(s.sol_pct), pct(s.drift_pct, signed=True), coverage_label(s),
                               s.entry.source_sha256[:12] or "-"))) for s in b.ranked]
    lines = [board_title(b)]
    if b.note:
        lines.append(b.note)
    table = fit_table(rows, wrap={"entry": 16, "author": 10}, optional=("source", "author", "drift"), wide=wide)
    lines.append(table or "(no entry ranks on this board)")
    if b.apart:
        lines.append("not ranked:")
        for s in b.apart:
            shown = f" (partial score {score_label(s)})" if s.score is not None else ""
            lines.append(f"  {s.entry.name} [{s.entry.impl}]{shown}: {s.reason}")
    return fit_lines("\n".join(lines), wide=wide)


def render(boards: list[Board], wide: bool = False) -> str:
    if not boards:
        return "the leaderboard has no entries (for this selection)"
    return "\n\n".join(render_board(b, wide) for b in boards)
