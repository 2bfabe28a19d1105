"""`solbench check RESULTS [--against BASE] [--min-ratio R] [--min-geomean G] [--min-sol F] [--json]`.

A stop predicate for optimisation agents and CI. Exit 0 when every clause passes, 1 when any fails,
2 when the check could not be made (unreadable or invalid file, mismatched suites, arch or GPU, or an
asked-for clause nothing could be evaluated for). With --json, stdout is one JSON object in every case.
"""

from __future__ import annotations

from solbench import schemas
from solbench.core.options import CHECK_OPTIONS, add_to_parser

JSON_SCHEMA = schemas.CHECK
"""What --json prints, an error included: solbench/schemas/check.schema.json."""
JSON_ERROR_FIELDS = {"result": "error", "passed": None}
"""An error object also answers the report's two headline keys."""
HELP = "judge a results.json: every scenario correct, no confident regression vs BASE, optional targets"
EXAMPLES = """\
solbench check reports/RUN/results.json --against base.json   # exit 0 pass, 1 fail, 2 cannot compare
solbench check new.json --against base.json --min-geomean 1.05 --json
solbench check new.json --min-sol 50
"""


def add_arguments(parser) -> None:
    parser.add_argument("results", help="results.json, its run folder, or a pytest-benchmark file saved by the plugin")
    add_to_parser(parser, CHECK_OPTIONS)
    parser.add_argument("--json", action="store_true", help="print one machine-readable JSON object (for agents)")


def run(args) -> int:
    from solbench.report.check import Criteria, evaluate, render_lines
    from solbench.supervisor.run_files import load_run

    criteria = Criteria(epsilon=args.epsilon, strict=args.strict, min_ratio=args.min_ratio,
                        min_geomean=args.min_geomean, comparator=args.comparator, min_sol_pct=args.min_sol)
    results = load_run(args.results)
    base = load_run(args.against) if args.against else None
    report = evaluate(results, base, criteria)
    if args.json:
        print(schemas.dumps(report.to_dict()))
    else:
        print("\n".join(render_lines(report)))
    return report.exit_code
