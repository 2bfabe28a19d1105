"""`solbench profile RUN --scenario ID --tool ncu|nsys|sanitizer`: one scenario's call under a profiler."""

from __future__ import annotations

from pathlib import Path

HELP = "run one scenario of a run under ncu, nsys or compute-sanitizer; keep the report in the run folder"
EXAMPLES = """\
solbench profile reports/RUN --scenario decode-n64-tq64-tkv297044-L35c06b-hq32-hkv8-d128-bf16-page16-causal-wl4095-mistral_7b --tool ncu
solbench profile reports/RUN --scenario SCENARIO_ID --tool nsys
solbench profile reports/RUN --scenario SCENARIO_ID --tool sanitizer --impl candidate
"""


def add_arguments(parser) -> None:
    parser.add_argument("run", type=Path, metavar="RUN", help="a run folder or its results.json")
    parser.add_argument("--scenario", required=True, metavar="ID", help="the scenario id to profile")
    parser.add_argument("--tool", required=True, choices=("ncu", "nsys", "sanitizer"),
                        help="ncu (with --clock-control none), nsys, or compute-sanitizer (memcheck)")
    parser.add_argument("--impl", default="candidate", help="which implementation: candidate or a baseline name")


def run(args) -> int:
    from solbench.report.profiling import profile_scenario

    report, summary = profile_scenario(args.run, args.scenario, args.tool, args.impl)
    print(summary)
    print(f"report: {report}")
    return 0
