"""`solbench baselines [--suite S] [--arch A] [--json | --markdown SUITES]`: every baseline library, whether it is installed,
and how much of a suite it covers on an arch. Works with none installed (nothing is imported)."""

from __future__ import annotations

from dataclasses import replace

from solbench import schemas

from solbench.core.options import ARCH, SUITE, WIDE, add_to_parser
from solbench.core.paths import BASELINES_DIR

HELP = "list the baseline libraries: installed version, available or why not, scenarios of a suite covered"
DEFAULT_ARCH = "h200"
EXAMPLES = """\
solbench baselines --suite hopper --arch h200
solbench baselines --suite real --json
solbench baselines --arch h200 --markdown hopper,fa3-h2h,rtx3080-mask,real   # the README's table
"""


def add_arguments(parser) -> None:
    from solbench.core.archspec import known_arches

    arch = replace(ARCH, help=f"arch whose support to count ({', '.join(known_arches())}); default: the GPU present, "
                   f"else the suite's own arch, else {DEFAULT_ARCH}")
    add_to_parser(parser, (SUITE, arch, WIDE))
    parser.add_argument("--json", action="store_true", help=f"print one JSON object ({schemas.BASELINES}: libraries and "
                        "per-scenario coverage)")
    parser.add_argument("--markdown", metavar="SUITES", help="print the coverage table of these comma-separated suites "
                        "as Markdown (the README's), with every scenario group no baseline covers and why")


def _arch(args, suite, present: str | None) -> tuple[str, str]:
    """The arch the support answers are for, and how it was chosen (said in the output: the answers are
    each adapter's rules, about this machine's GPU only when it has one and no other was asked for)."""
    if args.arch:
        return args.arch, f"for {args.arch} (--arch)"
    if present:
        return present, f"on this machine's GPU ({present})"
    if suite.arch:
        return suite.arch, f"for {suite.arch} (the suite's arch; no GPU here)"
    return DEFAULT_ARCH, f"for {DEFAULT_ARCH} (no GPU here)"


def run(args) -> int:
    from solbench.baselines import REGISTRY, get_adapter_class
    from solbench.baselines.coverage import coverage
    from solbench.core.suites import load_suite
    from solbench.report.terminal import fit_lines, fit_table
    from solbench.supervisor.runner import gpu_arch

    suite = load_suite(args.suite)
    present = gpu_arch()
    arch, where = _arch(args, suite, present)
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
        print(schemas.dumps({"schema": schemas.BASELINES, "ok": True, "suite": suite.name, "arch": arch,
                             "arch_chosen": where, "libraries": libraries,
                             "uncovered": [{"id": r.scenario_id, "reasons": dict(r.reasons)} for r in table.uncovered()],
                             "scenarios": table.to_dict()["scenarios"]}))
        return 0
    rows = []
    for lib in libraries:
        why = "; ".join(f"{t['reason']} ({t['count']})" for t in lib["top_reasons"][:2])
        available = ("yes" if lib["available"] else "no") + ("" if lib["in_default_set"] else " (when named)")
        rows.append({"baseline": lib["name"], "extra": f"solbench[{lib['package']}]", "version": lib["version"] or "-",
                     "available": available, "supports": f"{lib['supported']}/{lib['total']}",
                     "top reasons (count)": why})
    print(fit_table(rows, wrap={"top reasons (count)": 30}, optional=("version", "extra"), wide=args.wide))
    missing = [lib for lib in libraries if not lib["available"]]
    if missing:
        extras = sorted({lib["package"] for lib in missing})
        print(fit_lines(f"\nnot installed: {', '.join(lib['name'] for lib in missing)} "
                        f"(pip install \"solbench[{','.join(extras)}]\")", wide=args.wide))
    uncovered = table.uncovered()
    lines = [f"\nsuite {suite.name!r} {where}: {len(suite.scenarios) - len(uncovered)}/{len(suite.scenarios)} "
             f"scenarios claimed by at least one baseline's rules ({len(REGISTRY)} registered, counted whether "
             "installed or not)"]
    recorded = BASELINES_DIR / arch
    if arch != present and recorded.is_dir():
        lines.append(f"  measured on {arch}: the recorded runs in {recorded.resolve()} "
                     "(`solbench leaderboard show` ranks them)")
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
