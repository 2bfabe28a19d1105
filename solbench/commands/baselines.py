"""`solbench baselines [--suite S] [--arch A] [--json | --markdown SUITES]`: every baseline library, whether it is installed,
and how much of a suite it covers on an arch. Works with none installed (nothing is imported)."""

from __future__ import annotations

import json
from dataclasses import replace

from solbench.core.options import ARCH, ARCHES, SUITE, WIDE, add_to_parser

HELP = "list the baseline libraries: installed version, available or why not, scenarios of a suite covered"
DEFAULT_ARCH = "h200"
EXAMPLES = """\
solbench baselines --suite hopper --arch h200
solbench baselines --suite real --json
solbench baselines --arch h200 --markdown hopper,fa3-h2h,rtx3080-mask,real   # the README's table
"""


def add_arguments(parser) -> None:
    arch = replace(ARCH, help=f"arch whose support to count ({', '.join(ARCHES)}); default: the GPU present, "
                   f"else the suite's own arch, else {DEFAULT_ARCH}")
    add_to_parser(parser, (SUITE, arch, WIDE))
    parser.add_argument("--json", action="store_true", help="print one JSON object (libraries and per-scenario coverage)")
    parser.add_argument("--markdown", metavar="SUITES", help="print the coverage table of these comma-separated suites "
                        "as Markdown (the README's), with every scenario group no baseline covers and why")


def _arch(args, suite) -> str:
    if args.arch:
        return args.arch
    from solbench.supervisor.runner import gpu_arch

    return gpu_arch() or suite.arch or DEFAULT_ARCH


def run(args) -> int:
    from solbench.baselines import REGISTRY, get_adapter_class
    from solbench.baselines.coverage import coverage
    from solbench.core.suites import load_suite
    from solbench.report.terminal import fit_lines, fit_table

    suite = load_suite(args.suite)
    arch = _arch(args, suite)
    if args.markdown:
        from solbench.baselines.coverage import markdown_summary

        print(markdown_summary([coverage(name.strip(), arch) for name in args.markdown.split(",") if name.strip()]), end="")
        return 0
    table = coverage(suite, arch)
    libraries = []
    for cov in table.per_baseline():
        cls = get_adapter_class(cov.name)
        libraries.append({
            "name": cov.name, "package": cls.package, "version": cls.version(), "available": cls.is_available(),
            "unavailable_reason": cls.unavailable_reason(), "calls": cls.label, "in_default_set": cls.in_default_set,
            "supported": cov.supported, "total": cov.total,
            "top_reasons": [{"reason": r, "count": c} for r, c in cov.top_reasons],
        })
    if args.json:
        print(json.dumps({"suite": suite.name, "arch": arch, "libraries": libraries,
                          "uncovered": [{"id": r.scenario_id, "reasons": dict(r.reasons)} for r in table.uncovered()],
                          "scenarios": table.to_dict()["scenarios"]}, indent=1))
        return 0
    rows = []
    for lib in libraries:
        why = "; ".join(f"{t['reason']} ({t['count']})" for t in lib["top_reasons"][:2])
        available = ("yes" if lib["available"] else "no") + ("" if lib["in_default_set"] else " (when named)")
        rows.append({"baseline": lib["name"], "extra": f"solbench[{lib['package']}]", "version": lib["version"] or "-",
                     "available": available, "supports": f"{lib['supported']}/{lib['total']}",
                     "top reasons (count)": why})
    print(fit_table(rows, wrap={"top reasons (count)": 30}, wide=args.wide))
    missing = [lib for lib in libraries if not lib["available"]]
    if missing:
        extras = sorted({lib["package"] for lib in missing})
        print(f"\nnot installed: {', '.join(lib['name'] for lib in missing)} "
              f"(pip install \"solbench[{','.join(extras)}]\")")
    uncovered = table.uncovered()
    lines = [f"\nsuite {suite.name!r} on {arch}: {len(suite.scenarios) - len(uncovered)}/{len(suite.scenarios)} "
             f"scenarios have at least one baseline ({len(REGISTRY)} registered, counted whether installed or not)"]
    for row in uncovered[:10]:
        reasons = dict(row.reasons)
        why = _clip("; ".join(f"{n}: {r}" for n, r in reasons.items()), 200)
        lines.append(f"  no baseline: {row.scenario_id}: {why}")
    print(fit_lines("\n".join(lines), wide=args.wide))
    if len(uncovered) > 10:
        print(f"  ... and {len(uncovered) - 10} more (--json lists all)")
    return 0


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
