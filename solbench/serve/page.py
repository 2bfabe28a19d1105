"""The web page: a client's queue, each job's progress and, once it has ended, its report. Server-rendered
HTML that reloads itself every few seconds; no script, no build step."""

from __future__ import annotations

from html import escape

REFRESH_S = 2

_STYLE = """body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse}
td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left}progress{width:10em}
.done{color:#06612b}.failed,.cancelled{color:#a31515}code{font-size:12px}"""


def login_page(message: str = "") -> str:
    """Asks for the token (kept in an HttpOnly cookie by GET /ui?token=...)."""
    note = f"<p class=failed>{escape(message)}</p>" if message else ""
    return _html("solbench serve", f"""<h1>solbench serve</h1>{note}
<form action="/ui" method="get"><label>token <input name="token" type="password" autocomplete="off"></label>
<button type="submit">open my queue</button></form>""", refresh=False)


def queue_page(client: str, jobs: list[dict], server: str) -> str:
    rows = "".join(_row(j) for j in reversed(jobs)) or '<tr><td colspan="6">no job yet</td></tr>'
    return _html(f"solbench serve: {client}", f"""<h1>solbench serve <small>{escape(server)}</small></h1>
<p>client <b>{escape(client)}</b> · {len(jobs)} job(s) · this page reloads every {REFRESH_S} s ·
<a href="/docs">API</a> (<a href="/openapi.json">OpenAPI</a>)</p>
<table id="queue"><tr><th>job</th><th>candidate</th><th>state</th><th>progress</th><th>running</th><th>report</th></tr>
{rows}</table>""", refresh=True)


def _row(job: dict) -> str:
    done, total = job["done"], job["total"]
    bar = f'<progress value="{done}" max="{total or 1}"></progress> {done}/{total or "?"}'
    if job.get("eta_s") is not None:
        bar += f" · ETA {job['eta_s']:.0f} s"
    state = job["state"]
    if state == "done":
        verdict = "passed" if job.get("passed") else "not passed"
        state_text = f"done: {verdict}"
        report = (f'<a class="report" href="/v1/jobs/{job["id"]}/report">summary.html</a> · '
                  f'<a href="/v1/jobs/{job["id"]}/summary">summary.json</a>')
    else:
        state_text = state + (f": {job['error']}" if job.get("error") else "")
        report = ""
    return (f'<tr class="job" data-job="{escape(job["id"])}" data-state="{escape(state)}">'
            f'<td><code>{escape(job["id"])}</code></td><td>{escape(job["candidate"])}</td>'
            f'<td class="{escape(state)}">{escape(state_text)}</td><td class="progress">{bar}</td>'
            f'<td><code>{escape(job.get("running") or "")}</code></td><td>{report}</td></tr>')


def _html(title: str, body: str, refresh: bool) -> str:
    meta = f'<meta http-equiv="refresh" content="{REFRESH_S}">' if refresh else ""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">{meta}<title>{escape(title)}</title>'
            f"<style>{_STYLE}</style></head><body>{body}</body></html>")
