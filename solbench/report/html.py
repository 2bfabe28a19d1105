"""summary.html: a run in one self-contained page (no CDN, works offline) that opens with what matters:
the summary lines, then the per-scenario and gap tables (sortable, wrapping inside the page), then what
is only counted (scenarios a comparator does not support: hundreds on a wide suite), then the charts,
whose colours the implementation legend repeats (solbench.report.plots.impl_style).
"""

from __future__ import annotations

import base64
from pathlib import Path

from solbench.core.model import RunResult
from solbench.report.page import SORT_SCRIPT, TABLE_CSS, cell, esc, swatch, table

STYLE = """body{font:13px/1.4 system-ui,sans-serif;margin:1.5em;max-width:1400px;color:#1a1a1a}
pre{background:#f6f6f6;padding:.8em;white-space:pre-wrap;overflow-wrap:anywhere}img{max-width:100%}
table{font-size:12px}details{margin:.8em 0}summary{cursor:pointer;font-weight:600}.legend span.item{margin-right:1.2em}
"""
OPEN_UP_TO = 10
"""A list of failures this long or shorter is shown open; a longer one starts collapsed."""


def rows_table(table_id: str, rows: list[dict]) -> str:
    """A sortable table of dict rows (scenario_rows, gap_rows): numbers sort as numbers, ids wrap at '-'."""
    from solbench.report.tables import format_value

    if not rows:
        return "<p>(none)</p>"
    keys = list(rows[0])
    numeric = {k for k in keys if any(isinstance(r[k], (int, float)) and not isinstance(r[k], bool) for r in rows)}
    columns = [(k, k, "num" if k in numeric else "str") for k in keys]
    body = []
    for r in rows:
        cells = []
        for k in keys:
            v = r[k]
            if k in numeric:
                cells.append(cell(format_value(v), "" if v is None else repr(float(v))))
            elif k == "scenario":
                cells.append(cell(v, cls="l id", breakable=True))
            else:
                cells.append(cell(format_value(v), cls="reason" if k == "reason" else "l"))
        body.append("<tr>" + "".join(cells) + "</tr>")
    return table(table_id, table_id, columns, body)


def _listed(summary_id: str, title: str, rows: list[dict]) -> str:
    """A <details> list, open when short."""
    is_open = " open" if len(rows) <= OPEN_UP_TO else ""
    return (f'<details id="{summary_id}"{is_open}><summary>{esc(title)}</summary>'
            f"{rows_table(summary_id + '-table', rows)}</details>")


def _legend(result: RunResult) -> str:
    from solbench.report.plots import impl_style

    names = list(result.candidate.get("implementations") or {"candidate": ""})
    items = "".join(f'<span class="item" data-impl="{esc(n)}">{swatch(impl_style(n).color, n)}{esc(n)}</span>'
                    for n in names)
    return f'<p class="legend" id="legend">Implementations, as every chart draws them: {items}</p>'


def write_html(result: RunResult, path: Path, charts: dict | None = None) -> None:
    from solbench.core.model import Status
    from solbench.report.gap_report import gap_rows
    from solbench.report.triage import run_triage, triage_rows_for_table
    from solbench.report.tables import comparator_failures, declined_counts, scenario_rows, summary_head

    failed = [{"scenario": o.scenario_id, "status": o.status.value, "reason": o.reason}
              for o in result.outcomes if o.status is not Status.PASSED]
    broken = [{"scenario": sid, "comparator": name, "status": c["status"], "reason": c["reason"]}
              for sid, name, c in comparator_failures(result)]
    declined = [{"comparator": name, "reason": reason, "scenarios": n}
                for name, per in declined_counts(result).items() for reason, n in per.items()]
    parts = [
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>solbench {esc(result.run_id)}</title>",
        f"<style>{STYLE}{TABLE_CSS}</style></head><body>",
        f"<h1>solbench run {esc(result.run_id)}</h1>",
        f"<pre id='summary'>{esc(chr(10).join(summary_head(result)))}</pre>",
    ]
    if failed:
        parts.append(_listed("failed", f"{len(failed)} scenario(s) did not pass", failed))
    if broken:
        parts.append(_listed("comparator-failures", f"{len(broken)} comparator run(s) failed", broken))
    parts += [_legend(result),
              "<h2>Per scenario</h2>", rows_table("scenarios", scenario_rows(result)),
              "<h2>Gap to the speed of light</h2>", rows_table("gap", gap_rows(result)),
              "<h2>Gap triage</h2>", rows_table("triage", triage_rows_for_table(run_triage(result)[0]))]
    if declined:
        total = sum(r["scenarios"] for r in declined)
        parts.append(f'<details id="declined"><summary>Not supported by a comparator: {total} (scenario, '
                     f"comparator) pairs, counted by reason</summary>{rows_table('declined-table', declined)}"
                     "</details>")
    for name, chart in (charts or {}).items():
        data = base64.b64encode(Path(chart).read_bytes()).decode()
        parts.append(f"<h2>{esc(name)}</h2><img id='chart-{esc(name)}' alt='{esc(name)}' "
                     f"src='data:image/png;base64,{data}'>")
    parts.append(f"<script>{SORT_SCRIPT}</script></body></html>")
    path.write_text("\n".join(parts))
