"""What the two HTML pages (a run's summary.html, the leaderboard) share: table markup with sort keys,
CSS that lets tables wrap inside the page instead of running off it (cells wrap at spaces, ids after
each '-', long names and version lists anywhere), and a small inline sorter (no CDN: the pages work
offline).

A table is `table(id, cls, columns, rows)` with columns (key, label, "num" | "str"); a header shows its
label with spaces for underscores and non-breaking hyphens (`time_us` reads "time us"; it wraps between
words only); a cell's
`data-v` is its sort value when the shown text is not (e.g. "1.23x [1.20, 1.25]"), its `title` the whole
text where it shows less. A click on a header sorts by that column, again reverses; blanks sort last
either way.
"""

from __future__ import annotations

import html

TABLE_CSS = """
div.table-box{max-width:100%;overflow-x:auto}table{border-collapse:collapse;margin:8px 0}
th,td{padding:3px 6px;border-bottom:1px solid #ddd;text-align:right;vertical-align:top}
th{background:#f2f2f2;cursor:pointer;user-select:none}
td.l,th.l{text-align:left}td.id{min-width:12em}td.wrap{overflow-wrap:anywhere;min-width:10em}
td details summary{font-weight:normal}
td.reason{text-align:left;min-width:9em;max-width:45em;overflow-wrap:anywhere}
th.asc::after{content:" \\25B2"}th.desc::after{content:" \\25BC"}
.swatch{display:inline-block;width:.8em;height:.8em;margin-right:.35em;border-radius:2px;vertical-align:-.05em}
"""

SORT_SCRIPT = """
function cellValue(row, i, num) {
  const c = row.cells[i]; const v = c ? (c.dataset.v ?? c.textContent) : "";
  if (!num) return v.toLowerCase();
  const x = parseFloat(v); return isNaN(x) ? null : x;
}
function sortTable(table, i, desc) {
  const th = table.tHead.rows[0].cells[i], num = th.dataset.type === "num", body = table.tBodies[0];
  const rows = Array.from(body.rows);
  rows.sort((a, b) => {
    const x = cellValue(a, i, num), y = cellValue(b, i, num);
    if (x === null || y === null) return (x === null) - (y === null);  /* blanks last either way */
    const r = x < y ? -1 : x > y ? 1 : 0; return desc ? -r : r;
  });
  rows.forEach(r => body.appendChild(r));
  Array.from(th.parentNode.cells).forEach(h => h.classList.remove("asc", "desc"));
  th.classList.add(desc ? "desc" : "asc");
}
document.querySelectorAll("table.sortable").forEach(table => {
  Array.from(table.tHead.rows[0].cells).forEach((th, i) => th.addEventListener("click",
    () => sortTable(table, i, th.classList.contains("asc"))));
});
"""


def esc(value) -> str:
    return html.escape(str(value), quote=True)


def cell(text, sort_value=None, cls: str = "", breakable: bool = False, title: str | None = None) -> str:
    """One <td>; `breakable` text (a scenario id) may wrap after each '-'; `title` shows on hover."""
    attrs = f' data-v="{esc(sort_value)}"' if sort_value is not None else ""
    attrs += f' class="{cls}"' if cls else ""
    attrs += f' title="{esc(title)}"' if title else ""
    shown = esc(text).replace("-", "-<wbr>") if breakable else esc(text)
    return f"<td{attrs}>{shown}</td>"


def table(table_id: str, cls: str, columns, rows: list[str]) -> str:
    """A sortable table: columns are (key, label, "num" | "str"), rows already-made <tr> strings. Its box
    scrolls sideways in a window too narrow for even the wrapped table: the page itself never does."""
    head = "".join(f'<th data-key="{esc(k)}" data-type="{t}" class="{"" if t == "num" else "l"}">'
                   f'{header_label(label)}</th>' for k, label, t in columns)
    return (f'<div class="table-box"><table id="{table_id}" class="{cls} sortable"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def header_label(label: str) -> str:
    """A header's HTML: underscores as spaces, hyphens non-breaking (U+2011), so that a header wraps between
    words only ("x sdpa‑efficient", never "x_sdpa-" over "efficient")."""
    return esc(label.replace("_", " ")).replace("-", "\u2011")


def swatch(color: str, title: str) -> str:
    """A small square in an implementation's chart colour (solbench.report.plots.impl_style)."""
    return f'<span class="swatch" style="background:{esc(color)}" title="{esc(title)}"></span>'
