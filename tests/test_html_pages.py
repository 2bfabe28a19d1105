"""The pages people open, laid out in headless Chromium: the hopper summary.html of the committed H200 run
and the leaderboard of the recorded runs. The verdict and the charts come first, tables fit the window, the
long gap and triage tables and the hundreds of declined (scenario, comparator) pairs are folded away, tables
sort, and every implementation has one colour
in the legend, the tables and the charts of every board. Screenshots are kept in pytest's temporary
folder (the path is printed). Skips where no Chromium is installed (`.ci/run` installs Debian's).
"""

from __future__ import annotations

import base64
import io
import re
from collections import Counter

import pytest

import headless
from headless import browser  # noqa: F401 (a fixture)
from recorded import HOPPER_RUN, recorded_boards
from solbench.baselines import current_name
from solbench.leaderboard.html import style_key, write_site
from solbench.report.gap_report import SOL_CHART_LIMIT, timed_points
from solbench.report.plots import impl_style, sol_percent_table
from solbench.report.tables import write_reports
from solbench.supervisor.run_files import load_run as load_result

WINDOW = (1280, 900)
ROOFLINE_ALPHA = 0.8
"""plots.roofline_chart draws markers at this opacity over white."""


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    folder = tmp_path_factory.mktemp("screenshots")
    print(f"screenshots in {folder}")
    return folder


@pytest.fixture(scope="module")
def hopper_summary(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hopper")
    write_reports(load_result(HOPPER_RUN), folder)
    return folder / "summary.html"


@pytest.fixture(scope="module")
def leaderboard(tmp_path_factory):
    return write_site(recorded_boards(), tmp_path_factory.mktemp("site"))


def embedded_colors(page_html: str, img_id: str) -> Counter:
    """Pixel count per colour of a PNG chart embedded in the page."""
    from PIL import Image

    data = re.search(rf"<img id=['\"]{img_id}['\"][^>]*src=['\"]data:image/png;base64,([^'\"]+)", page_html).group(1)
    image = Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB")
    return Counter({color: n for n, color in image.getcolors(maxcolors=1 << 24)})


def pixels_near(colors: Counter, rgb: tuple, tolerance: int = 3) -> int:
    return sum(n for c, n in colors.items() if max(abs(a - b) for a, b in zip(c, rgb)) <= tolerance)


def over_white(rgb: tuple, alpha: float) -> tuple:
    return tuple(round(alpha * c + (1 - alpha) * 255) for c in rgb)


def assert_fits(layout: dict) -> None:
    width, _ = layout["viewport"]
    assert layout["scroll_width"] <= width, "the page scrolls sideways"
    for t in layout["tables"]:
        assert t["right"] <= width, f"table {t['id']} runs off the window ({t['right']:.0f} > {width})"


def assert_not_blank(shot, size) -> None:
    from PIL import Image

    image = Image.open(shot).convert("RGB")
    assert image.size == size
    colors = image.getcolors(maxcolors=1 << 20)
    assert len(colors) > 50 and max(n for n, _ in colors) < 0.97 * size[0] * size[1]


@pytest.mark.slow
def test_summary_opens_with_its_verdict_and_charts_and_fits(browser, hopper_summary, shots, tmp_path):
    shot = headless.screenshot(browser, hopper_summary, shots / "hopper-summary.png", *WINDOW)
    assert_not_blank(shot, WINDOW)
    layout = headless.layout(browser, hopper_summary, tmp_path, *WINDOW)
    screen = layout["viewport"][1]
    tables = {t["id"]: t for t in layout["tables"]}
    assert list(tables) == ["scenarios"]  # the gap, triage and declined-pairs tables are folded away
    details = {d["id"]: d for d in layout["details"]}
    assert list(details) == ["gap-details", "triage-details", "declined"]
    assert not any(d["open"] for d in details.values()) and details["gap-details"]["top"] > tables["scenarios"]["bottom"]
    images = layout["images"]
    assert [i["id"] for i in images] == ["chart-roofline", "chart-sol"]
    assert images[0]["top"] < screen / 2, "the first chart is not on the first screen"
    assert all(i["natural_width"] > 0 and i["bottom"] < tables["scenarios"]["top"] for i in images)
    assert_fits(layout)
    narrow = headless.layout(browser, hopper_summary, tmp_path, 1024, 768)
    assert narrow["scroll_width"] <= 1024  # a narrower window: still no sideways scroll of the page


def test_summary_counts_the_declined_pairs_by_reason(hopper_summary):
    page = hopper_summary.read_text()
    assert "skipped: not supported" not in page
    declined = re.search(r'<details id="declined"><summary>(.*?)</summary>(.*?)</details>', page, re.S)
    assert declined.group(1) == "Not supported by a comparator: 720 (scenario, comparator) pairs, counted by reason"
    counts = [int(n) for n in re.findall(r'<td data-v="(\d+)\.0">', declined.group(2))]
    assert sum(counts) == 720 and len(counts) == 26


def test_summary_tables_sort_by_a_header_click(browser, hopper_summary, tmp_path):
    for key, desc in (("time_us", False), ("time_us", True), ("scenario", False)):
        order = headless.sorted_column(browser, hopper_summary, tmp_path, "scenarios", key, desc)
        assert len(order) == 182
        values = [float(v) if key != "scenario" else v.lower() for v in order]
        assert values == sorted(values, reverse=desc)


def test_summary_colours_match_its_charts(browser, hopper_summary, tmp_path):
    layout = headless.layout(browser, hopper_summary, tmp_path, *WINDOW)
    impls = [s["impl"] for s in layout["swatches"]]
    assert impls == ["candidate", "fa3", "fa4", "cudnn", "torch-cudnn", "sdpa-flash", "sdpa-efficient"]
    for s in layout["swatches"]:
        assert s["color"] == headless.css_rgb(impl_style(s["impl"]).color), s["impl"]
    assert len({s["color"] for s in layout["swatches"]}) == len(impls)  # the old colour cycle repeated one
    bars = embedded_colors(hopper_summary.read_text(), "chart-sol")
    drawn, _, value, _ = sol_percent_table(timed_points(load_result(HOPPER_RUN)), limit=SOL_CHART_LIMIT)
    with_bars = {impl for sid, impl in value if sid in drawn}
    assert len(with_bars) >= 5
    for impl in impls:  # opaque bars: the legend's exact colour, and only where the chart has bars of it
        assert (pixels_near(bars, headless.rgb(impl_style(impl).color), 1) > 100) == (impl in with_bars), impl


@pytest.mark.slow
def test_leaderboard_fits_and_draws_each_library_alike_on_every_board(browser, leaderboard, shots, tmp_path):
    shot = headless.screenshot(browser, leaderboard, shots / "leaderboard.png", *WINDOW)
    assert_not_blank(shot, WINDOW)
    layout = headless.layout(browser, leaderboard, tmp_path, *WINDOW)
    assert_fits(layout)
    first = next(t for t in layout["tables"] if t["id"] == "ranking-0")
    assert first["top"] < layout["viewport"][1] / 2
    page = leaderboard.read_text()
    boards = recorded_boards()
    for b, board in enumerate(boards):
        swatches = {s["impl"]: s["color"] for s in layout["swatches"] if s["board"] == f"board-{b}"}
        assert swatches == {style_key(s.entry): headless.css_rgb(impl_style(style_key(s.entry)).color)
                            for s in board.ranked + board.narrow}
        # by today's names: a run recorded before vllm-fa3 calls fa3-fwd 'fa3', one recorded since 'fa3-fwd'
        drawn = {current_name(style_key(s.entry)) for s in board.standings if s.own is not None and not s.wrong}
        colors = embedded_colors(page, f"roofline-{b}")
        for impl in ("fa3-fwd", "vllm-fa3", "fa4", "cudnn", "seed", "flex", "sdpa-efficient"):
            found = pixels_near(colors, over_white(headless.rgb(impl_style(impl).color), ROOFLINE_ALPHA))
            assert (found > 20) == (impl in drawn), (board.suite, impl, found)
    # Different libraries lead the two boards (flashinfer-fa2 on hopper-d128, vllm-fa3 on real), so colours dealt
    # by place instead of by library would fail the swatch check above.
    assert len({style_key(board.ranked[0].entry) for board in boards}) == len(boards)


def test_a_run_whose_first_scenario_failed_still_writes_its_reports(tmp_path):
    """On the H200 a run whose first scenario failed (no time, so no % of SOL) and whose later ones passed died
    writing summary.html and results.csv (KeyError 'sol_pct'): every row has the same columns."""
    from dataclasses import replace

    import numpy as np

    import synthetic_runs as syn
    from solbench.report.tables import scenario_rows

    rng = np.random.default_rng(0)
    ids = syn.scenario_ids(3)
    bound = load_result(HOPPER_RUN).outcomes[0].bound  # a real one, every field
    result = syn.run([syn.outcome(ids[0], rng, status="mismatch"),
                      *(replace(syn.outcome(s, rng), bound=bound) for s in ids[1:])])
    rows = scenario_rows(result)
    assert all(list(r) == list(rows[0]) for r in rows) and rows[0]["sol_pct"] is None and rows[1]["sol_pct"] > 0
    written = write_reports(result, tmp_path)
    assert {p.name for p in written} >= {"summary.html", "results.csv"}
    assert "sol_pct" not in scenario_rows(syn.run([syn.outcome(s, rng) for s in ids]))[0]  # no bound, no column


@pytest.mark.slow
def test_a_report_that_cannot_be_drawn_does_not_hide_the_finished_run(tmp_path, capsys, monkeypatch):
    """The run's record is on disk before its reports are drawn: a failure drawing them is one line on stderr,
    and `run --json` still prints its summary and exits by the results."""
    import json

    import solbench.report.tables as tables
    from solbench.front import cli

    def broken(result, folder):
        raise KeyError("sol_pct")

    monkeypatch.setattr(tables, "write_reports", broken)
    code = cli.main(["run", "reference_kernels/torch_attention.py", "--suite", "smoke", "--device", "cpu", "--quick",
                     "--max-scenarios", "1", "--baselines", "none", "--out", str(tmp_path / "r"), "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and json.loads(out)["ok"] and (tmp_path / "r" / "results.json").exists()
    assert "could not be written" in err and "results.json" in err
