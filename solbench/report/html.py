"""summary.html: a run in one self-contained page (no CDN, works offline) for people, in the order they
read it: the verdict and scores, then the charts (or one line saying why there are none), whose colours the
implementation legend repeats (solbench.report.plots.impl_style), then what failed, then the per-scenario
table (sortable, wrapping inside the page); what is long and read on demand comes folded (<details>): the
gap to the speed of light, the gap triage (its C++ kernel names shortened, whole on hover), and the
(scenario, comparator) pairs a comparator does not support (hundreds on a wide suite).
"""

from __future__ import annotations

import base64
from pathlib import Path

from solbench.core.model import RunResult
from solbench.report.page import SORT_SCRIPT, TABLE_CSS, cell, esc, swatch, table

STYLE = """body{font:13px/1.4 system-ui,sans-serif;margin:1.5em;max-width:1400px;color:#1a1a1a}
pre{background:#f6f6f6;padding:.8em;white-space:pre-wrap;overflow-wrap:anywhere}img{max-width:100%}
table{font-size:12px}details{margin:.8em 0}summary{cursor:pointer;font-weight:600}.legend span.item{margin-right:1.2em}
p.nochart{color:#555;font-style:italic}
"""
OPEN_UP_TO = 10
"""A list of failures this long or shorter is shown open; a longer one starts collapsed."""
LABELS = {"pct_of_sol_datasheet": "% of SOL (datasheet)", "pct_of_attainable_measured": "% of attainable (measured)",
          "pct_of_tight": "% of tight", "host_share_pct": "host share %", "sol_pct": "% of SOL",
          "sol_measured_pct": "% of attainable", "measured_bound_us": "attainable bound us"}
"""Header labels where the key alone would not say which bound (README: SOL = datasheet, attainable = measured
ceilings); any other key is shown with spaces for underscores."""


CHART_TITLES = {"roofline": "Roofline", "sol": "How close each scenario comes to its bound"}
"""Section titles of the charts write_charts draws (each chart's own title names its bound)."""


def rows_table(table_id: str, rows: list[dict]) -> str:
    """A sortable table of dict rows (scenario_rows, gap_rows): numbers sort as numbers, ids wrap at '-', the
    triage's evidence shows its kernel names short (the whole text on hover)."""
    from solbench.report.kernel_names import short_kernel_names
    from solbench.report.tables import format_value

    if not rows:
        return "<p>(none)</p>"
    keys = list(rows[0])
    numeric = {k for k in keys if any(isinstance(r[k], (int, float)) and not isinstance(r[k], bool) for r in rows)}
    columns = [(k, LABELS.get(k, k), "num" if k in numeric else "str") for k in keys]
    body = []
    for r in rows:
        cells = []
        for k in keys:
            v = r[k]
            if k in numeric:
                cells.append(cell(format_value(v), "" if v is None else repr(float(v))))
            elif k == "scenario":
                cells.append(cell(v, cls="l id", breakable=True))
            elif k == "evidence":
                short = short_kernel_names(v)
                cells.append(cell(short, cls="reason", title=v if short != v else None))
            else:
                cells.append(cell(format_value(v), cls="reason" if k == "reason" else "l"))
        body.append("<tr>" + "".join(cells) + "</tr>")
    return table(table_id, table_id, columns, body)


def _listed(summary_id: str, title: str, rows: list[dict]) -> str:
    """A <details> list, open when short."""
    is_open = " open" if len(rows) <= OPEN_UP_TO else ""
    return (f'<details id="{summary_id}"{is_open}><summary>{esc(title)}</summary>'
            f"{rows_table(summary_id + '-table', rows)}</details>")


def _folded(details_id: str, title: str, body: str) -> str:
    """A <details> section, closed until opened."""
    return f'<details id="{details_id}"><summary>{esc(title)}</summary>{body}</details>'


def _legend(result: RunResult) -> str:
    from solbench.report.plots import impl_style

    names = list(result.candidate.get("implementations") or {"candidate": ""})
    items = "".join(f'<span class="item" data-impl="{esc(n)}">{swatch(impl_style(n).color, n)}{esc(n)}</span>'
                    for n in names)
    return f'<p class="legend" id="legend">Implementations, as every chart draws them: {items}</p>'


def write_html(result: RunResult, path: Path, charts: dict | None = None) -> None:
    from collections import Counter

    from solbench.core.model import Status
    from solbench.report.gap_report import gap_rows, no_charts_reason
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
    if charts:
        parts.append(_legend(result))
        for name, chart in charts.items():
            data = base64.b64encode(Path(chart).read_bytes()).decode()
            parts.append(f"<h2>{esc(CHART_TITLES.get(name, name))}</h2><img id='chart-{esc(name)}' alt='{esc(name)}' "
                         f"src='data:image/png;base64,{data}'>")
    else:
        parts.append(f"<p class='nochart' id='no-charts'>{esc(no_charts_reason(result) or 'No charts.')}</p>")
    if failed:
        parts.append(_listed("failed", f"{len(failed)} scenario(s) did not pass", failed))
    if broken:
        parts.append(_listed("comparator-failures", f"{len(broken)} comparator run(s) failed", broken))
    gap = gap_rows(result)
    triage_rows, _ = run_triage(result)
    counts = ", ".join(f"{n} {c}" for c, n in Counter(r.classification for r in triage_rows).most_common())
    parts += ["<h2>Per scenario</h2>", rows_table("scenarios", scenario_rows(result)),
              _folded("gap-details", f"Gap to the speed of light: {len(gap)} scenario(s), largest gap first",
                      rows_table("gap", gap)),
              _folded("triage-details", f"Gap triage: {len(triage_rows)} (scenario, implementation) rows"
                      + (f": {counts}" if counts else ""), rows_table("triage", triage_rows_for_table(triage_rows)))]
    if declined:
        total = sum(r["scenarios"] for r in declined)
        parts.append(f'<details id="declined"><summary>Not supported by a comparator: {total} (scenario, '
                     f"comparator) pairs, counted by reason</summary>{rows_table('declined-table', declined)}"
                     "</details>")
    parts.append(f"<script>{SORT_SCRIPT}</script></body></html>")
    path.write_text("\n".join(parts))
