"""`solbench roofline --arch ARCH --suite NAME [--json] [--measured [PATH]]`: bounds, no GPU needed."""

from __future__ import annotations

import sys
from dataclasses import replace

from solbench import schemas
from solbench.core.options import ARCH, FILTER, MAX_SCENARIOS, SUITE, WIDE, add_to_parser

HELP = "print each scenario's FLOPs, minimal bytes and speed-of-light bound on an arch (no GPU needed)"
EXAMPLES = """\
solbench roofline --arch h200 --suite hopper
solbench roofline --arch b200 --suite blackwell --json
solbench roofline --arch h200 --suite hopper --measured    # also against roofline/measured/h200.toml
"""


def add_arguments(parser) -> None:
    from solbench.core.archspec import known_arches

    arch = replace(ARCH, help=f"arch whose peaks bound the scenarios ({', '.join(known_arches())}); required")
    add_to_parser(parser, (SUITE, arch, FILTER, MAX_SCENARIOS, WIDE))
    parser.add_argument(
        "--measured", nargs="?", const="auto", default=None, metavar="PATH",
        help="also bound against measured ceilings: roofline/measured/<arch>.toml, or the profile at PATH",
    )
    parser.add_argument("--json", action="store_true",
                        help=f"print one JSON object ({schemas.ROOFLINE}): per scenario its id, flops, bytes, bound_ms, "
                        "limit, ...")


def run(args) -> int:
    from solbench.core.errors import ConfigError
    from solbench.core.roofline import bound, find_profile, known_arches, load_arch, load_profile
    from solbench.front.selection import selected
    from solbench.report.terminal import fit_lines

    if not args.arch:
        raise ConfigError(f"roofline needs --arch; known arches: {', '.join(known_arches())}")
    spec = load_arch(args.arch)
    profile = None
    if args.measured == "auto":
        profile = find_profile(spec.name)
        if profile is None:
            raise ConfigError(f"no measured profile for {spec.name}; run `solbench calibrate` on that GPU ({spec.gpu})")
    elif args.measured:
        profile = load_profile(args.measured)
    suite = selected(args.suite, args.filter, args.max_scenarios)

    bounded, unsupported = [], []
    for sc in suite.scenarios:
        if spec.supports(sc.dtype):
            bounded.append((sc, bound(sc, spec, profile)))
        else:
            unsupported.append(sc.id)
    if unsupported:
        dtypes = sorted({sc.dtype for sc in suite.scenarios if not spec.supports(sc.dtype)})
        print(f"solbench roofline: {len(unsupported)} scenario(s) not bounded: {spec.name} has no "
              f"{'/'.join(dtypes)} tensor cores (first: {unsupported[0]})", file=sys.stderr)

    if args.json:
        print(schemas.dumps({
            "schema": schemas.ROOFLINE, "ok": True, "suite": suite.name, "arch": spec.name, "gpu": spec.gpu,
            "measured_profile": {"gpu": profile.gpu, "date": profile.date} if profile else None,
            "not_bounded": unsupported, "scenarios": [{"id": sc.id, **b.to_dict()} for sc, b in bounded]}))
        return 0
    print(_table(bounded, profile is not None, args.wide))
    ceilings = f"{spec.bf16_tflops:g} TFLOP/s bf16, {spec.memory_tbps:g} TB/s"
    if profile is not None:
        ceilings += (f"; measured {profile.bf16_tflops:g} TFLOP/s bf16, {profile.memory_tbps:g} TB/s, "
                     f"launch {profile.launch_us:g} us ({profile.gpu}, {profile.date})")
    print(fit_lines(f"\n{len(bounded)} scenarios of suite {suite.name!r} bounded on {spec.name} "
                    f"({spec.gpu}: {ceilings})", wide=args.wide))
    if profile is None:
        print("launch-bound needs a measured launch latency: pass --measured after `solbench calibrate`")
    return 0


def _table(bounded, measured: bool, wide: bool) -> str:
    from solbench.report.terminal import fit_table

    rows = []
    for sc, b in bounded:
        row = {
            "id": sc.id,
            "GFLOP": f"{b.flops / 1e9:.4g}",
            "MB": f"{b.bytes / 1e6:.4g}",
            "FLOP/B": f"{b.intensity_flop_per_byte:.1f}",
            "bound us": f"{b.bound_ms * 1e3:.4g}",
            "limit": b.limit,
        }
        if measured:
            row["measured us"] = f"{b.measured_bound_ms * 1e3:.4g}"
            row["measured limit"] = b.measured_limit
        row["launch-bound"] = {True: "yes", False: "", None: "-"}[b.launch_bound]
        rows.append(row)
    return fit_table(rows, wrap={"id": 46}, optional=("FLOP/B", "MB"), wide=wide)
