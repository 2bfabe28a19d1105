"""summary.html's layout, read from its markup (the page as a browser lays it out is tested in
test_html_pages.py where Chromium is installed): the score block, then the charts, then failures and the
per-scenario table; the gap and triage tables folded, their C++ kernel names short with the whole text on
hover; headers that break between words only; the %-of chart named by the README's word for its bound;
and a CPU run says in one line why it has no charts."""

from __future__ import annotations

import html
import re

import numpy as np
import pytest

import synthetic_runs as syn
from recorded import HOPPER_RUN, ROOT
from solbench.report import gap_report
from solbench.report.tables import write_reports
from solbench.supervisor.run_files import load_run

REAL_RUN = ROOT / "baselines" / "h200" / "real.json"
"""A recorded run whose implementations carry kernel records (FA3's templates, hundreds of characters)."""


@pytest.fixture(scope="module")
def real_page(tmp_path_factory):
    folder = tmp_path_factory.mktemp("real")
    write_reports(load_run(REAL_RUN), folder)
    return (folder / "summary.html").read_text()


def positions(page: str, *needles: str) -> list[int]:
    found = [page.find(n) for n in needles]
    assert -1 not in found, [n for n, at in zip(needles, found) if at < 0]
    return found


def test_the_charts_come_first_and_the_long_tables_folded(real_page):
    order = positions(real_page, "<pre id='summary'>", "<img id='chart-roofline'", "<img id='chart-sol'",
                      "<h2>Per scenario</h2>", '<details id="gap-details">', '<details id="triage-details">')
    assert order == sorted(order)
    for folded in ("gap-details", "triage-details"):
        tag = re.search(rf'<details id="{folded}"[^>]*>', real_page).group()
        assert " open" not in tag
    assert re.search(r'<details id="triage-details"><summary>Gap triage: \d+ \(scenario, implementation\) rows: '
                     r"\d+ \w", real_page)


def test_kernel_names_are_short_and_whole_on_hover(real_page):
    triage = real_page[real_page.index('<table id="triage"'):]
    triage = triage[:triage.index("</table>")]
    cells = re.findall(r'<td class="reason"( title="([^"]*)")?>([^<]*)</td>', triage)
    shown = [html.unescape(text) for _, _, text in cells]
    titled = [(html.unescape(title), html.unescape(text)) for _, title, text in cells if title]
    assert titled and all(len(text) < len(title) for title, text in titled)
    assert max(len(t) for t in shown) < 1200 < max(len(title) for title, _ in titled)
    assert not any("cute::tuple<cute::C<1>" in t for t in shown)
    assert any("cute::tuple<cute::C<1>" in title for title, _ in titled)


def test_headers_do_not_break_inside_names(real_page):
    headers = re.findall(r"<th [^>]*>(.*?)</th>", real_page)
    assert headers and not any("<wbr>" in h or "_" in h or "-" in h for h in headers)
    assert "time us" in headers and "% of attainable (measured)" in headers


def test_the_percent_chart_says_attainable_as_the_docs_do(tmp_path, monkeypatch):
    docs = (ROOT / "docs" / "timing.md").read_text()
    assert "% of attainable" in docs and "**Attainable**" in docs  # the docs' word for the measured bound
    titles = []

    def sol_bar_chart(rows, path, limit=None, title=None, bound="SOL"):
        titles.append((title, bound))
        return path

    monkeypatch.setattr("solbench.report.plots.sol_bar_chart", sol_bar_chart)
    monkeypatch.setattr("solbench.report.plots.roofline_chart", lambda *a, **k: tmp_path / "roofline.png")
    gap_report.write_charts(load_run(HOPPER_RUN), tmp_path)  # a run with measured bounds
    [(title, bound)] = titles
    assert bound == "attainable" and title.startswith("% of attainable") and "measured ceilings" not in title
    from solbench.report.plots import sol_chart_title

    assert sol_chart_title("t", 60, 182, "attainable") == "t: 60 of 182 scenarios (furthest from attainable)"


def test_a_cpu_run_says_why_it_has_no_charts(tmp_path):
    rng = np.random.default_rng(0)
    result = syn.run([syn.outcome(s, rng) for s in syn.scenario_ids(3)], arch="cpu", gpu=None)
    written = write_reports(result, tmp_path)
    page = (tmp_path / "summary.html").read_text()
    assert not any(p.suffix == ".png" for p in written) and "<img" not in page
    [line] = re.findall(r"<p class='nochart' id='no-charts'>([^<]*)</p>", page)
    assert line.startswith("No charts: a run on cpu has no roofline")
    assert line in (tmp_path / "summary.md").read_text()
    assert gap_report.no_charts_reason(load_run(HOPPER_RUN)) is None
