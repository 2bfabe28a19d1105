"""Gap report and HTML summary, rendered from a committed H200 result (no GPU needed)."""

from pathlib import Path

from solbench.front.cli import main
from solbench.report.gap_report import gap_rows, timed_points
from solbench.supervisor.run_files import load_run

REFERENCE = Path(__file__).resolve().parent.parent / "reports" / "reference" / "h200-seed" / "real.json"


def test_gap_rows_sorted_by_remaining_gap():
    result = load_run(REFERENCE)
    rows = gap_rows(result)
    assert len(rows) == 24
    pct = [r["sol_measured_pct"] for r in rows]
    assert pct == sorted(pct) and all(0 < p < 100 for p in pct)
    assert all(r["measured_bound_us"] >= r["bound_us"] for r in rows)  # measured ceilings are lower
    assert {r["limit"] for r in rows} <= {"compute", "memory"}


def test_points_carry_both_sol_fractions():
    points = timed_points(load_run(REFERENCE))
    # The measured ceilings are lower than the datasheet, so the same time is a larger fraction of them.
    assert points and all(p["sol_fraction"] >= p["sol_datasheet"] > 0 for p in points)
    assert all(p["flops"] > 0 and p["bytes"] > 0 and p["time_ms"] > 0 for p in points)


def test_report_writes_markdown_html_and_charts(tmp_path, capsys):
    assert main(["report", str(REFERENCE), "--out", str(tmp_path)]) == 0
    names = {p.name for p in tmp_path.iterdir()}
    assert {"summary.md", "summary.html", "results.csv", "roofline.png", "sol.png"} <= names
    md = (tmp_path / "summary.md").read_text()
    assert "## Gap to the speed of light" in md and "![roofline](roofline.png)" in md
    page = (tmp_path / "summary.html").read_text()
    assert page.count("data:image/png;base64,") == 2 and '<table id="scenarios"' in page
    assert (tmp_path / "roofline.png").stat().st_size > 10_000


def test_coverage_section_counts_comparators():
    from solbench.core.model import Outcome, RunResult
    from solbench.report.tables import render_coverage

    result = load_run(REFERENCE)
    o = result.outcomes[0]
    with_comparators = Outcome.from_dict({**o.to_dict(), "comparators": {
        "fa3": {"status": "skipped", "reason": "no sinks", "error": None},
        "seed": {"status": "mismatch", "reason": "bad", "error": None}}})
    text = render_coverage(RunResult.from_dict({**result.to_dict(), "outcomes": [with_comparators.to_dict()]}))
    assert "| fa3          |        0 |               1 |        0 |" in text
    assert "1 scenario(s) without a comparator:" in text and "fa3: no sinks" in text
