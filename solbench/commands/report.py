"""`solbench report RESULTS`: re-render a run's tables and files without running anything."""

from __future__ import annotations

from pathlib import Path

HELP = "re-render the reports of a results.json (works without a GPU)"


def add_arguments(parser) -> None:
    parser.add_argument("results", type=Path, help="a results.json, or a run folder holding one")
    parser.add_argument("--out", type=Path, help="folder to write summary.md / results.csv into (default: beside the results)")
    parser.add_argument("--format", choices=("table", "markdown", "csv"), default="table", help="what to print")


def run(args) -> int:
    from solbench.report import render_summary, render_table, write_reports
    from solbench.runner import load_result

    result = load_result(args.results)
    folder = args.out or (args.results if args.results.is_dir() else args.results.parent)
    written = write_reports(result, folder)
    if args.format == "markdown":
        print(written[0].read_text())
    elif args.format == "csv":
        print(written[1].read_text())
    else:
        print(render_table(result))
        print()
        print(render_summary(result))
    return 1 if result.failures() else 0
