"""The leaderboard as one static, self-contained web page: no server, no CDN, nothing fetched.

Per board: a sortable ranking table, the entries too narrow to rank and those listed apart for another
reason, each with why, the roofline chart (a PNG from solbench.report.plots embedded as base64), and a
drill-down per entry by scenario (<details>). An entry has its implementation's colour
(solbench.report.plots.impl_style) in the tables and on the chart of every board, whatever its rank.
"""

from __future__ import annotations

import base64
import tempfile
import time
from pathlib import Path

from solbench import __version__, schemas
from solbench.leaderboard.rank import Board, Standing
from solbench.leaderboard.text import (DRIFT_LEGEND, board_title, document, own_label, pct, rank_label, rule_line,
                                       score_label, weighted_label)
from solbench.report.page import SORT_SCRIPT, TABLE_CSS, cell, esc, swatch, table
from solbench.report.plots import impl_style

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1a1a1a;max-width:1400px}
h1{margin:0 0 4px}.meta,.note{color:#555}section.board{margin:28px 0;border-top:2px solid #333;padding-top:8px}
tr.tied td:first-child{color:#b45f06}tr.wrong td,td.wrong{color:#b00020}img.roofline{max-width:100%;border:1px solid #ddd}
details{margin:4px 0}summary{cursor:pointer}code{font-size:12px}
"""

SCRIPT = """
window.addEventListener("load", () => {
  const m = /^#sort=([\\w-]+?)(-desc)?$/.exec(location.hash);
  if (m) document.querySelectorAll("table.sortable").forEach(table => {
    const i = Array.from(table.tHead.rows[0].cells).findIndex(th => th.dataset.key === m[1]);
    if (i >= 0) sortTable(table, i, !!m[2]);
  });
  const charts = Array.from(document.images).filter(img => img.classList.contains("roofline"));
  document.body.dataset.charts = String(charts.filter(img => img.complete && img.naturalWidth > 0).length);
  document.body.dataset.ready = "1";
});
"""
"""After solbench.report.page.SORT_SCRIPT: sorts by `#sort=<key>[-desc]` in the address (the browser test
uses it), then marks <body data-ready> and counts the charts that decoded."""

RANK_COLUMNS = (("rank", "rank", "num"), ("name", "entry", "str"), ("author", "author", "str"),
                ("impl", "impl", "str"), ("score", "common set: speedup vs best baseline [95% CI]", "num"),
                ("weighted", "coverage-weighted (rank)", "num"), ("own", "own scenarios (coverage)", "num"),
                ("sol", "% of SOL (datasheet)", "num"), ("drift", "baseline drift", "num"),
                ("source", "source sha256", "str"), ("versions", "solbench / libraries", "str"))
NARROW_COLUMNS = (("name", "entry", "str"), ("impl", "impl", "str"), ("own", "own scenarios (coverage)", "num"),
                  ("sol", "% of SOL (datasheet)", "num"), ("reason", "why not ranked", "str"))
APART_COLUMNS = (("name", "entry", "str"), ("impl", "impl", "str"), ("score", "partial score (coverage)", "num"),
                 ("reason", "why not ranked", "str"))
SCENARIO_COLUMNS = (("scenario", "scenario", "str"), ("status", "status", "str"), ("time", "time µs", "num"),
                    ("denominator", "denominator µs", "num"), ("speedup", "speedup", "num"), ("sol", "% of SOL (datasheet)", "num"),
                    ("reason", "reason", "str"))


def _num(value, fmt: str = "{:.4g}") -> tuple[str, str]:
    return ("-", "") if value is None else (fmt.format(value), repr(float(value)))


def _name_cell(e) -> str:
    """The entry's name after its colour's swatch (the roofline chart's)."""
    return f'<td class="l wrap">{swatch(impl_style(style_key(e)).color, style_key(e))}{esc(e.name)}</td>'


def _ranking_row(b: int, i: int, s: Standing) -> str:
    e = s.entry
    libraries = ", ".join(f"{k} {v}" for k, v in sorted(e.library_versions.items()))
    versions = (f"<details><summary>solbench {esc(e.solbench_version)} + {len(e.library_versions)} packages</summary>"
                f"{esc(libraries)}</details>" if libraries else f"solbench {esc(e.solbench_version)}")
    cells = [cell(rank_label(s), s.rank), _name_cell(e), cell(e.author or "-", cls="l"),
             cell(e.impl, cls="l"), cell(score_label(s), "" if s.score is None else s.score),
             cell(weighted_label(s), s.weighted.score), cell(own_label(s), s.own.score),
             cell(pct(s.sol_pct), s.sol_pct or ""),
             cell(pct(s.drift_pct, True), "" if s.drift_pct is None else s.drift_pct),
             cell(e.source_sha256[:12] or "-", cls="l"), f'<td class="l wrap">{versions}</td>']
    cls = "entry ranked" + (" tied" if s.tied else "")
    return f'<tr id="row-{b}-{i}" class="{cls}" data-name="{esc(e.name)}">{"".join(cells)}</tr>'


def _narrow_row(b: int, i: int, s: Standing) -> str:
    cells = [_name_cell(s.entry), cell(s.entry.impl, cls="l"), cell(own_label(s), "" if s.own is None else s.own.score),
             cell(pct(s.sol_pct), s.sol_pct or ""), cell(s.reason, cls="reason")]
    return f'<tr id="narrow-{b}-{i}" class="entry narrow" data-name="{esc(s.entry.name)}">{"".join(cells)}</tr>'


def _apart_row(b: int, i: int, s: Standing) -> str:
    cells = [cell(s.entry.name, cls="l"), cell(s.entry.impl, cls="l"),
             cell(own_label(s), "" if s.own is None else s.own.score), cell(s.reason, cls="reason")]
    cls = "entry apart" + (" wrong" if s.wrong else "")
    return f'<tr id="apart-{b}-{i}" class="{cls}" data-name="{esc(s.entry.name)}">{"".join(cells)}</tr>'


def _drilldown(b: int, i: int, s: Standing) -> str:
    rows = []
    for x in s.scenarios:
        t, tv = _num(None if x.time_ms is None else x.time_ms * 1e3)
        d, dv = _num(None if x.denominator_ms is None else x.denominator_ms * 1e3)
        sp, spv = _num(x.speedup, "{:.3f}x")
        sol, solv = _num(x.sol_pct, "{:.1f}%")
        wrong = x.status not in ("passed", "skipped")
        status = x.status
        if x.fallback_impl:  # the weighted view's stand-in time and speedup, in parentheses
            status = f"{x.status}: counted at {x.fallback_impl}'s time"
            t, tv = _num(x.fallback_ms * 1e3, "({:.4g})")
            sp, spv = _num(x.denominator_ms / x.fallback_ms, "({:.3f}x)")
        rows.append("<tr>" + cell(x.scenario_id, cls="l id", breakable=True) + cell(status, cls="l wrong" if wrong else "l")
                    + cell(t, tv) + cell(f"{d} ({x.denominator_impl})" if x.denominator_impl else d, dv)
                    + cell(sp, spv) + cell(sol, solv) + cell(x.reason, cls="reason") + "</tr>")
    place = (f"rank {rank_label(s)}" if s.rank else "too narrow to rank" if s.narrow else "not ranked" if s.reason
             else "no common-set rank")
    summary = (f"{s.entry.name} [{s.entry.impl}]: {place}, {score_label(s)} on the common set, weighted "
               f"{weighted_label(s)}, own {own_label(s)}")
    return (f'<details id="detail-{b}-{i}" class="drill"><summary>{esc(summary)}</summary>'
            + table(f"scenarios-{b}-{i}", "scenarios", SCENARIO_COLUMNS, rows) + "</details>")


def style_key(entry) -> str:
    """Whose colour an entry takes: its library's (fa3 is fa3 on every board); a candidate's, its name's
    (the recorded seed is entered as a candidate named seed)."""
    return entry.name if entry.impl == "candidate" else entry.impl


def chart_points(board: Board) -> list[dict]:
    """(scenario, entry) points in the shape solbench.report.plots.roofline_chart takes: only entries with an
    own score on this board (ranked, or partial), so a wrong or incomparable entry draws nothing."""
    points = []
    for s in board.standings:
        if s.own is None or s.wrong:
            continue
        for x in s.scenarios:
            if x.status == "passed" and x.time_ms and x.flops and x.bytes:
                points.append({"scenario_id": x.scenario_id, "impl": s.entry.name, "style": style_key(s.entry),
                               "flops": x.flops,
                               "bytes": x.bytes, "time_ms": x.time_ms, "dtype": x.dtype,
                               "sol_fraction": None if x.sol_pct is None else x.sol_pct / 100.0})
    return points


def _chart(b: int, board: Board) -> str:
    from solbench.core.archspec import find_profile, known_arches, load_arch
    from solbench.report.plots import roofline_chart

    if board.arch not in known_arches():
        return f'<p class="nochart">No roofline: arch {esc(board.arch)} has no spec.</p>'
    with tempfile.TemporaryDirectory() as tmp:
        path = roofline_chart(chart_points(board), load_arch(board.arch), find_profile(board.arch),
                              Path(tmp) / "roofline.png", title=f"{board.suite} on {board.gpu_model}")
        data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure><img id="roofline-{b}" class="roofline" alt="roofline chart of {esc(board.suite)}" '
            f'src="data:image/png;base64,{data}"><figcaption>One marker per scored entry and scenario: achieved '
            "TFLOP/s against arithmetic intensity, under the datasheet (and measured) roofs. Wrong and "
            "incomparable entries are not drawn."
            "</figcaption></figure>")


def render_board(b: int, board: Board) -> str:
    parts = [f'<section class="board" id="board-{b}"><h2>{esc(board.suite)} on {esc(board.gpu_model)} '
             f"({esc(board.arch)})</h2><p class=\"note\">{esc(board_title(board))}</p>"]
    if board.note:
        parts.append(f'<p class="note">{esc(board.note)}</p>')
    parts.append(f'<p class="note" id="rule-{b}">{esc(rule_line(board))}.</p>')
    parts.append("<p class=\"note\">Each score: geomean over scenarios of the best recorded baseline's median time "
                 "/ the entry's median time (&gt; 1: faster), 95 % interval from measurement noise. A library is "
                 "ranked on what it claims: a scenario it does not support is no failure. A shared rank (=) means "
                 "the intervals overlap. Click a header to sort.</p>")
    parts.append(table(f"ranking-{b}", "ranking", RANK_COLUMNS,
                        [_ranking_row(b, i, s) for i, s in enumerate(board.ranked)]))
    parts.append(f'<p class="note" id="drift-{b}">{esc(DRIFT_LEGEND[0].upper() + DRIFT_LEGEND[1:])}</p>')
    if board.narrow:
        rows = [_narrow_row(b, i, s) for i, s in enumerate(board.narrow)]
        parts.append("<h3>Too narrow to rank</h3>" + table(f"narrow-{b}", "narrow", NARROW_COLUMNS, rows))
    if board.apart:
        parts.append("<h3>Not ranked</h3>" + table(f"apart-{b}", "apart", APART_COLUMNS,
                                                     [_apart_row(b, i, s) for i, s in enumerate(board.apart)]))
    parts.append("<h3>Roofline</h3>" + _chart(b, board))
    parts.append("<h3>Per scenario</h3>" + "".join(_drilldown(b, i, s) for i, s in enumerate(board.standings)))
    return "".join(parts) + "</section>"


def render_page(boards: list[Board]) -> str:
    made = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    body = "".join(render_board(b, board) for b, board in enumerate(boards)) or "<p>No entries.</p>"
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>solbench leaderboard</title>'
            f"<style>{STYLE}{TABLE_CSS}</style></head><body><h1>solbench leaderboard</h1>"
            f'<p class="meta">{len(boards)} board(s); made {made} by solbench {esc(__version__)}</p>'
            f"{body}<script>{SORT_SCRIPT}{SCRIPT}</script></body></html>")


def write_site(boards: list[Board], folder: str | Path) -> Path:
    """Write folder/index.html (self-contained) and folder/leaderboard.json; returns the page's path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    index = folder / "index.html"
    index.write_text(render_page(boards), encoding="utf-8")
    (folder / "leaderboard.json").write_text(schemas.dumps(document(boards)))
    return index
