"""`solbench lint --suite NAME [--arch ARCH] [--json]`: what each scenario fails to measure (no GPU needed).

Exit 0 when every flag is excused by the suite's [[lint_exception]] entries (clean), 1 when one is not.
"""

from __future__ import annotations

from dataclasses import replace

from solbench import schemas
from solbench.core.options import ARCH, FILTER, MAX_SCENARIOS, SUITE, WIDE, add_to_parser

HELP = "flag scenarios that do not measure what they claim: features that do not bite, tiny or constant calls"
EXAMPLES = """\
solbench lint --suite hopper                    # on the suite's arch (h200); exit 0 clean, 1 not
solbench lint --suite blackwell --json
solbench lint --suite real --arch b200 --filter gemma
"""


def add_arguments(parser) -> None:
    from solbench.core.archspec import known_arches

    arch = replace(ARCH, help=f"arch whose L2 and roofline the size checks use ({', '.join(known_arches())}); "
                              "default: the suite's")
    add_to_parser(parser, (SUITE, arch, FILTER, MAX_SCENARIOS, WIDE))
    parser.add_argument("--json", action="store_true", help=f"print one JSON object ({schemas.LINT})")


def run(args) -> int:
    from solbench.core.errors import ConfigError
    from solbench.core.roofline import known_arches, load_arch
    from solbench.front.progress import StepProgress
    from solbench.front.selection import selected
    from solbench.report.terminal import fit_lines, fit_table
    from solbench.supervisor import lint

    suite = selected(args.suite, args.filter, args.max_scenarios)
    arch = args.arch or suite.arch
    if not arch:
        raise ConfigError(f"suite {suite.name!r} names no arch: pass --arch ({', '.join(known_arches())})")
    spec = load_arch(arch)
    with StepProgress(f"lint {suite.name} on {spec.name}") as progress:  # a CPU reference per scenario
        flags = lint.lint_suite(suite, spec, progress)
    open_flags = [f for f in flags if not f.excepted]
    if args.json:
        doc = {"schema": schemas.LINT, "ok": True, "suite": suite.name, "arch": spec.name,
               "scenarios": len(suite.scenarios), "clean": not open_flags, "probe": lint.PROBE,
               "flags": [{"scenario": f.scenario, "check": f.check, "detail": f.detail, "excepted": f.excepted or None}
                         for f in flags]}
        print(schemas.dumps(doc))
        return 1 if open_flags else 0
    reasons = list(dict.fromkeys(f.excepted for f in flags if f.excepted))  # numbered once each, in order
    if flags:
        rows = [{"scenario": f.scenario, "check": f.check, "detail": f.detail,
                 "excused": f"[{reasons.index(f.excepted) + 1}]" if f.excepted else "no"} for f in flags]
        print(fit_table(rows, wrap={"scenario": 40, "detail": 24}, wide=args.wide))
    for n, reason in enumerate(reasons, 1):
        print(fit_lines(f"[{n}] {reason}", wide=args.wide))
    verdict = "clean" if not open_flags else f"{len(open_flags)} flag(s) the suite does not excuse"
    print(fit_lines(f"\n{len(suite.scenarios)} scenarios of suite {suite.name!r} linted on {spec.name}: {len(flags)} "
                    f"flag(s), {len(flags) - len(open_flags)} excused by the suite file; {verdict}", wide=args.wide))
    return 1 if open_flags else 0
