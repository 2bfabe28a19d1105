"""`solbench triage RUN [RUN...] [--scenario ID]`: classify each scenario's gap as host, routing, kernel or at-bound."""

from __future__ import annotations

from pathlib import Path

from solbench import schemas
from solbench.core.options import WIDE, add_to_parser

HELP = "classify each scenario's gap (host / routing / kernel / at-bound) with its evidence (works without a GPU)"
EXAMPLES = """\
solbench triage baselines/h200/hopper-d128.json baselines/h200/hopper-d128+flashinfer.json baselines/h200/hopper-d128+flex.json
solbench triage baselines/h200/real.json --scenario decode-n64-tq64-tkv297044-L35c06b-hq32-hkv8-d128-bf16-page16-causal-wl4095-mistral_7b --json
solbench triage reports/RUN --markdown --thresholds at_bound_pct=90,host_share_pct=10
"""


def add_arguments(parser) -> None:
    parser.add_argument("runs", type=Path, nargs="+", metavar="RUN",
                        help="a results.json or run folder; more runs of the same suite and GPU (the seed's "
                             "+flashinfer and +flex runs) add their implementations to compare against")
    parser.add_argument("--scenario", metavar="ID", help="only this scenario id")
    parser.add_argument("--impl", metavar="NAME", help="only this implementation (candidate, fa3, flashinfer-fa2, ...)")
    parser.add_argument("--json", action="store_true", help=f"print one JSON object ({schemas.TRIAGE}: policy, counts, rows)")
    parser.add_argument("--markdown", action="store_true", help="print the Markdown table (as in summary.md)")
    add_to_parser(parser, (WIDE,))
    parser.add_argument("--thresholds", metavar="KEY=NUMBER,...",
                        help="override the triage thresholds (host_share_pct, at_bound_pct, routing_speedup)")


def run(args) -> int:
    from solbench.report.kernel_names import short_kernel_names
    from solbench.report.terminal import fit_lines
    from solbench.report.triage import policy_with, triage, triage_dict, triage_markdown, triage_text
    from solbench.supervisor.run_files import load_run

    policy = policy_with(args.thresholds)
    rows = triage([load_run(p) for p in args.runs], args.scenario, policy)
    if args.impl:
        rows = [r for r in rows if r.impl == args.impl]
    if args.json:
        print(schemas.dumps({"schema": schemas.TRIAGE, "ok": True, "command": "triage", **triage_dict(rows, policy)}))
    elif args.markdown:
        print(triage_markdown(rows, policy))
    elif args.wide:
        print(triage_text(rows, policy))
    else:  # kernel names of hundreds of characters, shortened, and every line fitted to the terminal
        print(fit_lines(short_kernel_names(triage_text(rows, policy))))
    return 0
