"""The exported leaderboard page renders in headless Chromium: ranking rows, sorting script, drill-downs
and the embedded roofline chart. Skips where no Chromium is installed (`.ci/run` installs Debian's).
"""

from __future__ import annotations

import re

import pytest

import headless
from headless import browser  # noqa: F401 (a fixture)
from solbench import __version__
from solbench.leaderboard.entry import Entry
from solbench.leaderboard.html import write_site
from solbench.leaderboard.rank import build_boards
from test_leaderboard import IDS, SUITE, baseline_run, entry, make_run


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    run = baseline_run()
    entries = [entry("fast-kernel", 0.8, 1), entry("steady", 1.2, 2), entry("twin", 1.2002, 3),
               entry("cheater", 0.1, 4, wrong={3: "mismatch"}), entry("edited", 0.5, 5, suite_hash="c" * 64),
               Entry.from_result(run, "seed"), Entry.from_result(run, "fa3"), entry("filtered", 1.0, 6, ids=IDS[:8]),
               Entry.from_result(make_run("narrow", {"seed": 10.0, "sdpa": 2.0}, seed=7,
                                          unsupported={"sdpa": set(range(2, 10))}), "sdpa", "narrow-sdpa")]
    boards = build_boards(entries, [run], {"smoke": SUITE.hash}, __version__)
    return write_site(boards, tmp_path_factory.mktemp("site"))


def _run(browser, tmp_path, *args):
    return headless.run(browser, tmp_path / "profile", *args)


def test_page_renders_table_drilldown_and_chart(browser, site, tmp_path):
    done = _run(browser, tmp_path, "--dump-dom", site.as_uri() + "#sort=name")
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    body = re.search(r"<body[^>]*>", dom).group(0)
    assert 'data-ready="1"' in body  # the inline script ran to the end without an error
    assert 'data-charts="1"' in body  # the embedded roofline PNG decoded
    ranking = re.search(r'<table id="ranking-0".*?</table>', dom, re.S).group(0)
    names = re.findall(r'<tr id="row-0-\d+" class="entry ranked[^"]*" data-name="([^"]+)"', ranking)
    assert names == sorted(names) == ["fa3", "fast-kernel", "seed", "steady", "twin"]  # sorted by name by the script
    assert 'class="entry ranked tied"' in ranking and re.search(r'<th data-key="name"[^>]*class="l asc"', ranking)
    apart = re.search(r'<table id="apart-0".*?</table>', dom, re.S).group(0)
    assert "edited suite" in apart and "wrong on 1 scenario(s)" in apart and "covers 8 of 10" in apart
    narrow = re.search(r'<table id="narrow-0".*?</table>', dom, re.S).group(0)
    assert re.findall(r'<tr id="narrow-0-\d+" class="entry narrow" data-name="([^"]+)"', narrow) == ["narrow-sdpa"]
    assert "covers 2 of 10 scored scenarios; ranking needs at least half" in narrow and "narrow-sdpa" not in apart
    assert len(re.findall(r'<details id="detail-0-\d+"', dom)) == 9
    assert dom.count('<table id="scenarios-0-') == 9


def test_screenshot_is_not_blank(browser, site, tmp_path):
    from PIL import Image

    shot = tmp_path / "leaderboard.png"
    done = _run(browser, tmp_path, f"--screenshot={shot}", "--window-size=1400,1700", site.as_uri())
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    image = Image.open(shot).convert("RGB")
    assert image.size == (1400, 1700)
    colors = image.getcolors(maxcolors=1 << 20)
    assert len(colors) > 50  # text, table rules and the chart's markers, not one flat colour
    assert max(count for count, _ in colors) < 0.97 * image.size[0] * image.size[1]
