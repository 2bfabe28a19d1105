"""`solbench scenarios --suite NAME [--json]`: list a suite's scenarios and their count."""

from __future__ import annotations

from solbench import schemas
from solbench.core.options import SUITE, WIDE, add_to_parser

HELP = "list the scenarios of a suite (table, or --json)"
EXAMPLES = """\
solbench scenarios --suite hopper          # fits the terminal: ids wrapped, columns the id repeats left out
solbench scenarios --suite hopper --wide   # every column, one line per scenario
solbench scenarios --list-suites
solbench scenarios --suite scenarios/smoke.toml --json
"""


def add_arguments(parser) -> None:
    add_to_parser(parser, (SUITE, WIDE))
    parser.add_argument("--json", action="store_true", help=f"print one JSON object ({schemas.SCENARIOS}): the suite and "
                        "its scenarios, each with its 'id'")
    parser.add_argument("--list-suites", action="store_true", help="print the available suite names and exit")


def run(args) -> int:
    from solbench.core.suites import available_suites
    from solbench.front.selection import selected
    from solbench.report.terminal import fit_lines, fit_table

    if args.list_suites:
        for name in available_suites():
            print(name)
        return 0
    suite = selected(args.suite)
    if args.json:
        print(schemas.dumps({"schema": schemas.SCENARIOS, "ok": True, "suite": suite.name, "path": str(suite.path),
                             "hash": suite.hash, "count": len(suite.scenarios),
                             "scenarios": [{"id": s.id, **s.to_dict()} for s in suite.scenarios]}))
        return 0
    # Left out first: what the id already says (head dim, heads, dtype, layout, batch).
    print(fit_table([s.summary() for s in suite.scenarios], wrap={"id": 46, "mask": 16},
                    optional=("head_dim", "heads", "dtype", "kv_layout", "batch"), wide=args.wide))
    print(fit_lines(f"\n{len(suite.scenarios)} scenarios in suite {suite.name!r} ({suite.path}); hash {suite.hash[:12]}",
                    wide=args.wide))
    return 0
