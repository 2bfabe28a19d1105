"""`solbench scenarios --suite NAME [--json]`: list a suite's scenarios and their count."""

from __future__ import annotations

import json

from solbench.core.options import SUITE, add_to_parser

HELP = "list the scenarios of a suite (table, or --json)"


def add_arguments(parser) -> None:
    add_to_parser(parser, (SUITE,))
    parser.add_argument("--json", action="store_true", help="print a JSON list of objects, each with an 'id'")
    parser.add_argument("--list-suites", action="store_true", help="print the available suite names and exit")


def run(args) -> int:
    from tabulate import tabulate

    from solbench.core.suites import available_suites, load_suite

    if args.list_suites:
        for name in available_suites():
            print(name)
        return 0
    suite = load_suite(args.suite)
    if args.json:
        print(json.dumps([{"id": s.id, **s.to_dict()} for s in suite.scenarios], indent=1))
        return 0
    print(tabulate([s.summary() for s in suite.scenarios], headers="keys", tablefmt="simple"))
    print(f"\n{len(suite.scenarios)} scenarios in suite {suite.name!r} ({suite.path}); hash {suite.hash[:12]}")
    return 0
