"""Headless Chromium for the page tests: find it, screenshot a page, and measure its layout.

The layout is measured by a probe script added to a copy of the page (the shipped page carries no test
code): on load it writes the viewport, the page's scroll width, the boxes of tables, details and images
and the colours of the implementation swatches as JSON into a <pre>, read back with --dump-dom. Another
probe clicks a table header and reads the column back.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars")

PROBE = """
window.addEventListener("load", () => {
  const box = e => { const b = e.getBoundingClientRect();
    return {top: b.top + scrollY, bottom: b.bottom + scrollY, left: b.left, right: b.right}; };
  const shown = e => !e.parentElement.closest("details:not([open])");
  const all = sel => Array.from(document.querySelectorAll(sel)).filter(shown);
  const out = {viewport: [innerWidth, innerHeight], scroll_width: document.documentElement.scrollWidth,
    tables: all("table").map(t => ({id: t.id, ...box(t)})),
    details: all("details").map(d => ({id: d.id, open: d.open, ...box(d)})),
    images: all("img").map(i => ({id: i.id, natural_width: i.naturalWidth, ...box(i)})),
    swatches: all(".swatch").map(s => ({impl: s.title, color: getComputedStyle(s).backgroundColor,
                                        board: (s.closest("section") || {}).id || null}))};
  const pre = document.createElement("pre"); pre.id = "layout-probe"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
"""


def find_chromium() -> str | None:
    for name in BROWSERS:
        path = shutil.which(name)
        if path and subprocess.run([path, "--version"], capture_output=True, timeout=60).returncode == 0:
            return path
    return None


@pytest.fixture(scope="module")
def browser() -> str:
    """The Chromium to use; the test skips where there is none."""
    path = find_chromium()
    if path is None:
        pytest.skip("no Chromium found (apt-get install chromium)")
    return path


def run(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [browser, *FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=5000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


def screenshot(browser: str, page: Path, out: Path, width: int, height: int) -> Path:
    done = run(browser, out.parent / "profile", f"--screenshot={out}", f"--window-size={width},{height}", page.as_uri())
    assert done.returncode == 0 and out.exists(), done.stderr[-2000:]
    return out


def layout(browser: str, page: Path, scratch: Path, width: int, height: int) -> dict:
    """The probe's measurements of `page` in a window of width x height CSS pixels."""
    probed = scratch / f"probed-{page.name}"
    probed.write_text(page.read_text().replace("</body>", f"<script>{PROBE}</script></body>"))
    done = run(browser, scratch / "profile", f"--window-size={width},{height}", "--dump-dom", probed.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="layout-probe">(.*?)</pre>', done.stdout, re.S)
    assert found, "the layout probe did not run"
    return json.loads(html.unescape(found.group(1)))


SORT_PROBE = """
window.addEventListener("load", () => {
  const table = document.getElementById(%(table)s);
  const i = Array.from(table.tHead.rows[0].cells).findIndex(th => th.dataset.key === %(key)s);
  for (let n = 0; n < %(clicks)d; n++) table.tHead.rows[0].cells[i].click();
  const values = Array.from(table.tBodies[0].rows).map(r => r.cells[i].dataset.v ?? r.cells[i].textContent);
  const pre = document.createElement("pre"); pre.id = "sort-probe"; pre.textContent = JSON.stringify(values);
  document.body.appendChild(pre);
});
"""


def sorted_column(browser: str, page: Path, scratch: Path, table_id: str, key: str, desc: bool) -> list[str]:
    """A table's column (sort values) after clicking its header once (ascending) or twice (descending)."""
    probe = SORT_PROBE % {"table": json.dumps(table_id), "key": json.dumps(key), "clicks": 2 if desc else 1}
    probed = scratch / f"sorted-{page.name}"
    probed.write_text(page.read_text().replace("</body>", f"<script>{probe}</script></body>"))
    done = run(browser, scratch / "profile", "--dump-dom", probed.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="sort-probe">(.*?)</pre>', done.stdout, re.S)
    assert found, "the sort probe did not run"
    return json.loads(html.unescape(found.group(1)))


def rgb(hex_color: str) -> tuple[int, int, int]:
    return tuple(int(hex_color[i:i + 2], 16) for i in (1, 3, 5))


def css_rgb(hex_color: str) -> str:
    return "rgb({}, {}, {})".format(*rgb(hex_color))
