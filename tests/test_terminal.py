"""Terminal output fits the terminal (120 columns without one) on the real suites and the committed results, at
80 columns too; --wide prints it whole."""

from __future__ import annotations

import pytest

from recorded import HOPPER_RUN, ROOT, recorded_boards
from solbench.core.suites import available_suites
from solbench.front.cli import main
from solbench.report.terminal import WIDTH, break_text, fit_lines, fit_table, terminal_width

REFERENCE_RUNS = sorted((ROOT / "reports" / "reference" / "h200-seed").glob("*.json"))


@pytest.fixture(autouse=True)
def repo_cwd(monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", str(WIDTH))  # the width these tests assume, whatever runs them


def widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def printed(capsys, *argv: str) -> str:
    main(list(argv))
    return capsys.readouterr().out


def test_ids_break_after_a_dash_and_text_at_spaces():
    sid = "chunkedprefill-n4-tq4352-tkv34304-Leb413d-hq32-hkv8-d128-fp8-dspt-page64-causal-wl127-sink"
    lines = break_text(sid, 40)
    assert "".join(lines) == sid and all(len(line) <= 40 and line.endswith("-") for line in lines[:-1])
    assert break_text("no attention sinks (s_aux exists only in vLLM)", 20) == [
        "no attention sinks", "(s_aux exists only", "in vLLM)"]
    assert break_text("x_sdpa-efficient", 9, joints="_-") == ["x_sdpa-", "efficient"]
    assert break_text("a" * 25, 10) == ["a" * 10, "a" * 10, "a" * 5]  # no joint: cut


def test_fit_table_leaves_out_optional_columns_in_order_and_says_so():
    rows = [{"id": "prefill-b2-sq8192-skv8192-hq32-hkv32-d128-bf16-causal-" + str(i), "a": "x" * 30, "b": "y" * 30,
             "c": "z" * 30} for i in range(3)]
    text = fit_table(rows, width=100, wrap={"id": 30}, optional=("b", "c"))
    assert widest(text) <= 100 and "y" * 30 not in text and "z" * 30 in text
    assert text.splitlines()[-1] == "(b left out to fit 100 columns; --wide shows every column)"
    assert widest(fit_table(rows, width=100, wrap={"id": 30}, optional=("b", "c"), wide=True)) > 100


def test_a_table_that_fits_is_left_as_it_is():
    rows = [{"id": "prefill-b1-sq1-skv1", "launch-bound": "yes"}]
    assert fit_table(rows) == fit_table(rows, wide=True) and "launch-bound" in fit_table(rows)


def test_fit_lines_indents_continuations():
    line = "timed on fewer input copies: 6 scenario(s), e.g. decode-n128-tq128-tkv147527-L0c667d-hq32-hkv32-d128-bf16"
    out = fit_lines(line, width=60).splitlines()
    assert len(out) == 2 and out[1].startswith("    ") and widest("\n".join(out)) <= 60
    assert "".join(out[0] + out[1][4:]).replace(" ", "") == line.replace(" ", "")


@pytest.mark.parametrize("suite", available_suites())
def test_scenarios_of_every_suite_fit(capsys, suite):
    assert widest(printed(capsys, "scenarios", "--suite", suite)) <= WIDTH


def test_wide_prints_one_line_per_scenario(capsys):
    narrow = printed(capsys, "scenarios", "--suite", "hopper")
    wide = printed(capsys, "scenarios", "--suite", "hopper", "--wide")
    assert widest(wide) > WIDTH and "head_dim" in wide and "head_dim" in narrow.splitlines()[-3]  # named as left out
    assert len(wide.splitlines()) == 182 + 4  # header, rule, rows, blank, count


@pytest.mark.slow
@pytest.mark.parametrize("path", [HOPPER_RUN, *REFERENCE_RUNS], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_report_of_committed_results_fits(capsys, path):
    assert widest(printed(capsys, "report", str(path))) <= WIDTH


@pytest.mark.slow
def test_report_of_the_hopper_run_counts_declines_instead_of_listing_them(capsys):
    out = printed(capsys, "report", str(HOPPER_RUN))
    assert "skipped: not supported" not in out  # 720 such pairs: counted on one line, not listed
    assert "720 (scenario, comparator) pairs: sdpa-efficient 161, fa3 154" in " ".join(out.split())
    header = out.splitlines()[0].split()
    # the recorded run's fa3 (fa3-fwd) is Hopper's upstream library; the fastest library is named per scenario
    assert header[:4] == ["scenario", "status", "time_us", "x_FA3"] and "fastest" in header
    assert "vs FA3 (fa3-fwd) on 28 of 182" in " ".join(out.split())
    wide = printed(capsys, "report", str(HOPPER_RUN), "--wide")
    assert "x_sdpa-efficient" in wide and widest(wide) > WIDTH


@pytest.mark.parametrize("measured", [(), ("--measured",)])
def test_roofline_fits(capsys, measured):
    assert widest(printed(capsys, "roofline", "--arch", "h200", "--suite", "hopper", *measured)) <= WIDTH


def test_baselines_fit(capsys):
    assert widest(printed(capsys, "baselines", "--suite", "hopper", "--arch", "h200")) <= WIDTH


def test_leaderboard_boards_fit():
    from solbench.leaderboard.text import render

    boards = recorded_boards()
    text = render(boards)
    assert widest(text) <= WIDTH and "not ranked:" in text  # reasons of 100-200 characters, wrapped
    assert widest(render(boards, wide=True)) > WIDTH  # --wide: every row whole, one line


def test_the_width_is_the_terminals_else_120(monkeypatch):
    import os

    monkeypatch.setenv("COLUMNS", "80")
    assert terminal_width() == 80
    monkeypatch.delenv("COLUMNS")

    def no_terminal(fd=None):
        raise OSError("not a terminal")

    monkeypatch.setattr(os, "get_terminal_size", no_terminal)  # a pipe, a file, CI
    assert terminal_width() == WIDTH


@pytest.mark.parametrize("argv", [
    ["report", str(HOPPER_RUN)], ["report", str(ROOT / "baselines" / "h200" / "real.json")],
    ["scenarios", "--suite", "hopper"], ["roofline", "--arch", "h200", "--suite", "hopper", "--measured"],
    ["baselines", "--suite", "hopper", "--arch", "h200"], ["lint", "--suite", "smoke", "--arch", "h200"],
    ["triage", str(ROOT / "baselines" / "h200" / "real.json")],
], ids=lambda argv: argv[0])
@pytest.mark.slow
def test_at_80_columns_no_line_wraps(capsys, monkeypatch, argv):
    """At 80 columns every row used to wrap over 2-3 lines: tables were fitted to 120 whatever the terminal."""
    monkeypatch.setenv("COLUMNS", "80")
    main(argv)
    out = capsys.readouterr().out
    assert widest(out) <= 80 and len(out.splitlines()) > 3


def test_at_80_columns_the_leaderboard_fits(monkeypatch):
    from solbench.leaderboard.text import render

    monkeypatch.setenv("COLUMNS", "80")
    assert widest(render(recorded_boards())) <= 80


def test_triage_text_shortens_kernel_names_unless_wide(capsys):
    real = str(ROOT / "baselines" / "h200" / "real.json")
    short = printed(capsys, "triage", real)
    whole = printed(capsys, "triage", real, "--wide")
    assert "cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<…>>>" in short
    assert "cute::tuple<cute::C<1>" in whole and "cute::tuple<cute::C<1>" not in short
    assert widest(short) <= WIDTH < widest(whole)


def test_the_leaderboard_says_what_its_drift_column_is(monkeypatch):
    """The `drift` column was explained nowhere: it is `baseline drift`, and a legend under each table says what."""
    from solbench.leaderboard import html
    from solbench.leaderboard.text import DRIFT_LEGEND, render

    boards = recorded_boards()
    text = render(boards, wide=True)
    assert "baseline drift" in text.splitlines()[2 + bool(boards[0].note)]
    assert text.count(DRIFT_LEGEND) == len([b for b in boards if b.ranked])
    assert " ".join(DRIFT_LEGEND.split()) in " ".join(render(boards).split())  # fitted, it wraps
    monkeypatch.setattr(html, "_chart", lambda b, board: "")
    assert "Baseline drift: how far this entry" in html.render_board(0, boards[0])
