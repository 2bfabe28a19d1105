"""`solbench report RESULTS`: re-render a run's tables (and, with --out, its files) without running."""

from __future__ import annotations

from pathlib import Path

from solbench import schemas

JSON_SCHEMA = schemas.SUMMARY
"""What --json (report: --format json) prints, an error included: solbench/schemas/summary.schema.json."""

from solbench.core.options import WIDE, add_to_parser
HELP = "re-render the reports of a results.json (works without a GPU)"
EXAMPLES = """\
solbench report baselines/h200/hopper.json              # a shipped recorded run (`solbench info --paths`); no GPU
solbench report baselines/h200/hopper-d128.json --out /tmp/hopper       # also summary.md/.html, results.csv
solbench report reports/RUN --format json                           # one JSON object, as run --json
"""


def add_arguments(parser) -> None:
    parser.add_argument("results", type=Path, help="a results.json, or a run folder holding one")
    parser.add_argument("--out", type=Path, help="also write summary.md and results.csv into this folder")
    parser.add_argument("--format", choices=("table", "markdown", "csv", "json"), default="table",
                        help="what to print (json: one object for agents, as `solbench run --json` prints)")
    add_to_parser(parser, (WIDE,))


def run(args) -> int:
    import tempfile

    from solbench.report.summary import exit_code, summary_dict
    from solbench.report.tables import render_summary, write_reports
    from solbench.report.terminal import fit_lines, scenario_table
    from solbench.supervisor.run_files import load_run

    result = load_run(args.results)
    if args.format == "json":
        print(schemas.dumps(summary_dict(result, str(args.results))))
        return exit_code(result)
    if args.format == "table":
        print(scenario_table(result, args.wide))
        print()
        print(fit_lines(render_summary(result), wide=args.wide))
    if args.out or args.format != "table":
        with tempfile.TemporaryDirectory() as scratch:
            md, csv_path = write_reports(result, args.out or Path(scratch))[:2]
            if args.format != "table":
                print((md if args.format == "markdown" else csv_path).read_text())
    return exit_code(result)
