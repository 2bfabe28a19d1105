"""summary.html: the run's summary, per-scenario and gap tables, and charts in one self-contained page."""

from __future__ import annotations

import base64
import html
from pathlib import Path

from solbench.core.model import RunResult

STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}table{border-collapse:collapse;
font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}td:first-child{text-align:left}
pre{background:#f6f6f6;padding:1em;white-space:pre-wrap}img{max-width:100%}"""


def write_html(result: RunResult, path: Path, charts: dict | None = None) -> None:
    from solbench.report.tables import render_gap_table, render_summary, render_table

    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>solbench {html.escape(result.run_id)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>solbench run {html.escape(result.run_id)}</h1>",
        f"<pre>{html.escape(render_summary(result))}</pre>",
        "<h2>Per scenario</h2>", render_table(result, fmt="html", max_reason=120),
        "<h2>Gap to the speed of light</h2>", render_gap_table(result, fmt="html"),
    ]
    for name, chart in (charts or {}).items():
        data = base64.b64encode(Path(chart).read_bytes()).decode()
        parts.append(f"<h2>{html.escape(name)}</h2><img alt='{html.escape(name)}' src='data:image/png;base64,{data}'>")
    parts.append("</body></html>")
    path.write_text("\n".join(parts))
