"""Tables and lines that fit the terminal: its width (`terminal_width`: $COLUMNS, else the terminal's own
size, else WIDTH when the output is not a terminal).

Scenario ids (up to ~90 characters) are wrapped at their '-' joints, free text at spaces, headers at
'_' and '-'; when that is not enough, the columns a command marks as optional are left out, in its
order, and a line under the table names them. `--wide` prints everything unfitted.
"""

from __future__ import annotations

import re
import shutil
from typing import Mapping, Sequence

WIDTH = 120
"""Columns when there is no terminal to measure (a pipe, a file, CI) and $COLUMNS is not set."""
GAP = 2
"""Spaces between columns in tabulate's "simple" format."""
HEADER_PAD = 2
"""tabulate makes a column at least its header plus this wide."""
HEADER_KEPT = 8
"""Headers up to this long stay on one line."""
LEAST_WRAPPED = 10
"""The narrowest a wrapped column gets when a narrow terminal leaves less than its least width."""


def terminal_width() -> int:
    """The width to fit: $COLUMNS when set, else the terminal's, else WIDTH."""
    return shutil.get_terminal_size((WIDTH, 24)).columns


def break_text(text: str, width: int, joints: str = "-") -> list[str]:
    """Lines of at most `width` characters, broken at a space or after one of `joints` where possible."""
    joint = re.escape(joints)
    pieces = re.findall(rf"[^\s{joint}]*(?:[{joint}]+|\s+|$)", text)
    lines, line = [], ""
    for piece in filter(None, pieces):
        if line and len((line + piece).rstrip()) > width:
            lines.append(line.rstrip())
            line = ""
        while len(piece.rstrip()) > width:  # one piece longer than the line: cut it
            lines.append(piece[:width])
            piece = piece[width:]
        line += piece
    if line.strip() or not lines:
        lines.append(line.rstrip())
    return lines


def _width(cell: str) -> int:
    return max((len(line) for line in str(cell).split("\n")), default=0)


def _header(key: str, cells: list[str]) -> str:
    """A header no wider than its column's cells where it can break (at least its longest part)."""
    parts = re.findall(r"[^\s_-]*(?:[\s_-]|$)", key)
    width = max([_width(c) for c in cells] + [len(p) for p in parts] + [HEADER_KEPT])
    return "\n".join(break_text(key, width, joints="_-"))


def _column_width(header: str, cells: list[str]) -> int:
    return max(_width(header) + HEADER_PAD, max(map(_width, cells)))


def fit_table(rows: Sequence[Mapping[str, object]], width: int | None = None, wrap: Mapping[str, int] | None = None,
              optional: Sequence[str] = (), wide: bool = False) -> str:
    """`rows` (dicts with the same keys, values already formatted) as a tabulate "simple" table of at most
    `width` columns (default: the terminal's). `wrap` maps the columns that may wrap (ids, text) to the least
    width each may get; the first gets the room the others leave before the next does. The `optional` columns
    are left out, first to last, while the wrapped ones would get less than their least width; when even
    that is not enough, the wrapped ones share what room there is."""
    from tabulate import tabulate

    if not rows:
        return ""
    width = width or terminal_width()
    wrap = dict(wrap or {})
    keys = list(rows[0])
    cells = {k: ["" if r[k] is None else str(r[k]) for r in rows] for k in keys}
    if sum(_column_width(k, cells[k]) for k in keys) + GAP * (len(keys) - 1) <= width:
        wide = True  # fits as it is: nothing to wrap
    if wide:
        return tabulate([[cells[k][i] for k in keys] for i in range(len(rows))], headers=keys, tablefmt="simple",
                        numalign="right")
    headers = {k: k if k in wrap else _header(k, cells[k]) for k in keys}
    left_out = []
    for dropping in [None, *(k for k in optional if k in keys)]:
        if dropping:
            keys.remove(dropping)
            left_out.append(dropping)
        fixed = sum(_column_width(headers[k], cells[k]) for k in keys if k not in wrap)
        room = width - fixed - GAP * (len(keys) - 1)
        wrapped = {k: least for k, least in wrap.items() if k in keys}
        if room >= sum(wrapped.values()):
            break
    if room < sum(wrapped.values()):  # every optional column is out and still no fit: share the room there is
        total = sum(wrapped.values())
        wrapped = {k: max(LEAST_WRAPPED, room * least // total) for k, least in wrapped.items()}
    shares = dict(wrapped)
    spare = room - sum(shares.values())
    for k in shares:
        grow = max(0, min(spare, _column_width(headers[k], cells[k]) - shares[k]))
        shares[k] += grow
        spare -= grow
    table = [[("\n".join(break_text(cells[k][i], shares[k])) if k in shares else cells[k][i]) for k in keys]
             for i in range(len(rows))]
    text = tabulate(table, headers=[headers[k] for k in keys], tablefmt="simple", numalign="right")
    if left_out:
        note = f"({', '.join(left_out)} left out to fit {width} columns; --wide shows every column)"
        text += "\n" + "\n".join(break_text(note, width))
    return text


def scenario_table(result, wide: bool = False) -> str:
    """The per-scenario table for a terminal. --wide: every column of tables.render_table, reasons whole.
    Otherwise a short set fitted to the terminal: status, time, noise, the speedup vs the seed, vs the arch's
    upstream library (x_FA3 / x_FA4) and vs the fastest library that passed (with its name), % of SOL and
    the reason; ids wrapped to the terminal's width."""
    from solbench.report.tables import comparator_names, format_value, render_table, scenario_rows
    from solbench.report.yardsticks import upstream

    if wide:
        return render_table(result, max_reason=1 << 20)
    names = comparator_names(result)
    up = upstream(result)
    rows = []
    for full in scenario_rows(result):
        row = {k: format_value(full[k]) for k in ("scenario", "status", "time_us", "noise_pct")}
        if "seed" in names:
            row["x_seed"] = format_value(full["x_seed"])
        if up:
            row[f"x_{up.library}"] = format_value(full.get(f"x_{up.comparator}"))
        if "fastest" in full:
            row["x_fastest"], row["fastest"] = format_value(full["x_fastest"]), format_value(full["fastest"])
        row["sol_pct"] = format_value(full.get("sol_pct"))
        row["reason"] = full["reason"]
        rows.append(row)
    if not any(r["reason"] for r in rows):
        for r in rows:
            del r["reason"]
    return fit_table(rows, wrap={"scenario": 46, "reason": 24}, optional=("noise_pct", "reason", "fastest"))


def fit_lines(text: str, width: int | None = None, wide: bool = False) -> str:
    """Each line longer than `width` (default: the terminal's) broken into lines of at most `width`,
    continuations indented."""
    if wide:
        return text
    width = width or terminal_width()
    out = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        first = break_text(line, width)[0]  # a prefix of the line: breaks only drop trailing spaces
        out.append(first)
        out += ["    " + more for more in break_text(line[len(first):].lstrip(), width - 4)]
    return "\n".join(out)
