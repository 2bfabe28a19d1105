"""The tables docs/baselines.md pins are what solbench prints today: the baseline coverage of
`solbench baselines --markdown` and the recorded board of `solbench leaderboard show --markdown`."""

import re
from pathlib import Path

import pytest

from solbench.baselines.coverage import coverage, markdown_summary

PAGE = Path(__file__).resolve().parents[1] / "docs" / "baselines.md"


@pytest.fixture(autouse=True)
def _assume_pinned_fa3(monkeypatch):
    from solbench.baselines import fa3

    monkeypatch.setattr(fa3, "build_flags", lambda: dict(fa3.ASSUMED_FLAGS))


def test_the_coverage_table_is_current():
    text = PAGE.read_text()
    block = re.search(r"<!-- coverage:begin -->\n(.*?)<!-- coverage:end -->", text, re.S)
    assert block, "docs/baselines.md lost its coverage markers"
    suites = ("hopper", "fa3-h2h", "rtx3080-mask", "real")
    expected = markdown_summary([coverage(s, "h200") for s in suites])
    assert block.group(1) == expected, ("docs/baselines.md coverage table is stale: regenerate it with "
                                        "solbench baselines --arch h200 --markdown " + ",".join(suites))


def test_the_leaderboard_table_is_current(capsys):
    from solbench.front import cli

    block = re.search(r"<!-- leaderboard:begin -->\n(.*?)<!-- leaderboard:end -->", PAGE.read_text(), re.S)
    assert block, "docs/baselines.md lost its leaderboard markers"
    suite = block.group(1).split(" ", 1)[0]  # the table names its board first
    argv = ["leaderboard", "show", "--recorded", "--arch", "h200", "--suite", suite, "--markdown"]
    assert cli.main(argv) == 0
    stale = "docs/baselines.md leaderboard table is stale: regenerate it with solbench " + " ".join(argv)
    assert capsys.readouterr().out == block.group(1), stale
