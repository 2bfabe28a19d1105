"""`solbench run CANDIDATE [--suite S] [--arch A] [--device D] ...`: build, check, time, report.

Exit 0 only when every scenario passed; 1 when any did not; 5 when the candidate cannot be loaded (found
before any scenario runs); 7 when the target arch is not the GPU present (the candidate is still built,
checked for its entry point and forbidden libraries, and its bounds printed). With --json, stdout is one
JSON object in every case (solbench/schemas/summary.schema.json).
"""

from __future__ import annotations

import sys
from pathlib import Path

from solbench import schemas
from solbench.core.options import POLICY, QUICK, RUN_OPTIONS, WIDE, add_to_parser, baselines_value, policy_value, seed_value

JSON_SCHEMA = schemas.SUMMARY
"""What --json (report: --format json) prints, an error included: solbench/schemas/summary.schema.json."""
HELP = "evaluate a candidate (.cu or .py) on a suite: correctness, timing, ratios, roofline"
EXAMPLES = """\
solbench run kernel.cu --suite hopper                   # on an H200: build, check, time, report
solbench run reference_kernels/torch_attention.py --suite smoke --device cpu --quick   # no GPU needed
solbench run kernel.cu --arch b200 --suite blackwell    # elsewhere: build and bound only, exit 7
solbench run kernel.cu --baselines fa3,flashinfer --filter decode --json   # one JSON object on stdout
solbench run kernel.cu --resume reports/RUN --retry-errors   # finish an interrupted run
solbench run kernel.cu --suite hopper --gpus all          # every GPU here, one scenario per GPU at a time
solbench run kernel.cu --executor ray --ray-address auto   # a Ray cluster, one GPU per scenario
solbench run kernel.cu --suite hopper --sanitize         # then compute-sanitizer over the 3 smallest scenarios
solbench run kernel.cu --suite hopper --server http://gpu-node:8765 --token-file token.txt   # on a solbench serve node
"""


def add_arguments(parser) -> None:
    parser.add_argument("candidate", help="kernel .cu file, a Python module file defining forward(inputs), "
                        "or baseline:NAME to evaluate a baseline library itself")
    add_to_parser(parser, RUN_OPTIONS + (QUICK, POLICY, WIDE))
    parser.add_argument("--resume", type=Path, help="finish an interrupted run (its folder or results.json)")
    parser.add_argument("--retry-errors", action="store_true", help="with --resume: evaluate again the scenarios "
                        "where a comparator failed (its adapter may have been fixed since), the supervisor ran out "
                        "of device memory or its agent died; the candidate's own failures are final")
    parser.add_argument("--out", type=Path, help="run folder (default reports/<run-id>/)")
    parser.add_argument("--flag", action="append", default=[], help="extra nvcc flag for the candidate (repeatable)")
    parser.add_argument("--allow-lib", action="append", default=[], help="allow a forbidden library (cublas, cudnn, cutlass, cute)")
    parser.add_argument("--runner", choices=("auto", "native", "python"), default="auto",
                        help="the process .cu implementations are timed in: native (solbench's runner, no Python "
                        "in it), python (the Python host); auto = native (default)")
    parser.add_argument("--seed-runner", choices=("auto", "native", "python"),
                        help="the seed's runner when it differs from --runner (a native-vs-Python A/A)")
    from solbench.supervisor.sanitize import DEFAULT_SCENARIOS

    parser.add_argument("--sanitize", type=int, nargs="?", const=DEFAULT_SCENARIOS, default=0, metavar="N",
                        help="after timing, run compute-sanitizer (memcheck, racecheck, initcheck, synccheck) on the "
                        "candidate's call in the N smallest scenarios that passed (default %(const)s), on the inputs "
                        "of one of its scored calls, whose outputs it must give again; a finding is sanitizer_error")
    parser.add_argument("--json", action="store_true", help="print one JSON object (scores, failures, per-scenario "
                        "rows, results path) instead of tables; progress goes to stderr")
    parser.add_argument("--server", metavar="URL", help="submit to a `solbench serve` node instead of running here; "
                        "same output, results.json fetched into --out")
    parser.add_argument("--token-file", type=Path, help="with --server: a file holding the bearer token "
                        "(default: $SOLBENCH_TOKEN)")


def run(args, gate=None) -> int:
    """`gate`, when given, is told of each scenario too: `started(id, index, total)` before (it may wait there,
    as a server's job waits for its device: solbench.serve.job) and `finished(outcome)` after."""
    from solbench.supervisor import runner
    from solbench.core.errors import DeviceMismatchError
    from solbench.front.progress import RunProgress
    from solbench.report.summary import exit_code, summary_dict
    from solbench.report.tables import render_summary, write_reports
    from solbench.report.terminal import fit_lines, scenario_table

    from solbench.core.archspec import known_arches
    from solbench.core.errors import ConfigError
    from solbench.front.selection import selected

    if args.server:
        from solbench.commands.run_remote import run_remote

        return run_remote(args)

    # What is wrong with the command line first: its options, the candidate's file, the suite; the GPU last.
    if args.arch and args.arch not in known_arches() + ("cpu",):
        raise ConfigError(f"unknown arch {args.arch!r}; known: {', '.join(known_arches() + ('cpu',))}")
    policy = policy_value(args.quick, args.policy)
    if not args.candidate.startswith(runner.BASELINE_PREFIX) and not Path(args.candidate).exists():
        raise ConfigError(f"{args.candidate}: no such file (a kernel .cu, a Python module file, or baseline:NAME)")
    suite = selected(args.suite, args.filter, args.max_scenarios)
    device = runner.resolve_device(args.device)
    present = runner.gpu_arch() if device == "cuda" else None
    if args.arch and args.arch != (present or "cpu"):
        _build_and_bound_only(args, suite)
        raise DeviceMismatchError(f"timing {Path(args.candidate).name} for {args.arch} needs a {args.arch.upper()} GPU; "
                                  f"this machine has {present or 'no GPU'} (built and bounded only)")
    if Path(args.candidate).suffix == ".cu" and device == "cpu":
        raise ConfigError(f"{args.candidate}: a .cu candidate needs a GPU; pass --arch ARCH to build and bound it only")
    resume = args.resume
    if resume and _folder(resume).is_dir() and not _has_record(resume):  # interrupted before its first record
        print(f"solbench run: {_folder(resume)} holds no finished scenario: starting the run there", file=sys.stderr)
        resume, args.out, args.retry_errors = None, _folder(resume), False  # nothing to resume, nor to retry
    folder = _folder(resume or args.out or Path("reports") / runner.new_run_id(args.candidate, suite.name))
    config = runner.RunConfig(
        candidate=args.candidate, suite=args.suite, arch=args.arch, device=device,
        baselines=baselines_value(args.baselines), seed=seed_value(args.seed),
        policy=policy, out_dir=folder, timeout_s=args.timeout,
        resume=resume, retry_errors=args.retry_errors, filter=args.filter, max_scenarios=args.max_scenarios,
        build_flags=tuple(args.flag), allow_libs=tuple(args.allow_lib), runner=args.runner,
        seed_runner=args.seed_runner, gpus=args.gpus, executor=args.executor, ray_address=args.ray_address, workers=args.workers,
        sanitize=args.sanitize,
    )

    _warn_features(suite)
    try:
        with RunProgress() as progress:
            on_start, on_outcome = progress.started, progress.finished
            if gate is not None:
                on_start, on_outcome = _both(gate.started, on_start), _both(on_outcome, gate.finished)
            result = runner.run(config, on_outcome=on_outcome, on_start=on_start)
    except KeyboardInterrupt:
        raise KeyboardInterrupt(_interrupted(folder)) from None
    try:
        write_reports(result, folder)
    except Exception as exc:  # the record is on disk already: a report that cannot be drawn must not hide it
        print(f"solbench run: the reports (summary.md/.html, results.csv) could not be written: "
              f"{type(exc).__name__}: {exc}; the results are complete in {folder / 'results.json'} "
              f"(`solbench report` renders them again)", file=sys.stderr)
    if args.json:
        print(schemas.dumps(summary_dict(result, str(folder / "results.json"))))
        return exit_code(result)
    print(scenario_table(result, args.wide))
    print()
    print(fit_lines(render_summary(result), wide=args.wide))
    # Every process the workers started has ended: this digest is the record's, for anyone to verify.
    print(f"\nresults: {folder / 'results.json'} (sha256 {runner.record_digest(folder)})")
    return exit_code(result)


def _both(first, then):
    def call(*args):
        first(*args)
        then(*args)
    return call


def _folder(path: Path) -> Path:
    """A run folder, given it or its results.json."""
    path = Path(path)
    return path.parent if path.suffix == ".json" else path


def _has_record(path: Path) -> bool:
    return (_folder(path) / "results.json").is_file()


def _interrupted(folder: Path) -> str:
    """What an interrupted run left, and how to go on (the CLI prints it after 'interrupted; ', exit 130)."""
    if _has_record(folder):
        return (f"the finished scenarios are in {folder / 'results.json'}; the same command with --resume {folder} "
                "goes on")
    if folder.is_dir():
        return f"no scenario had finished; the same command with --resume {folder} starts the run there"
    return f"before the run folder {folder} was made: nothing to resume"


def _warn_features(suite) -> None:
    """One stderr line per feature that does not bite in some scenario of the suite (solbench.supervisor.bite)."""
    from solbench.supervisor.bite import warning_lines

    try:
        lines = warning_lines(suite)
    except Exception as exc:  # a warning never stops a run; `solbench lint` shows the failure in full
        lines = [f"solbench run: warning: could not tell whether the suite's features bite ({type(exc).__name__}: "
                 f"{str(exc)[:200]}); see `solbench lint --suite {suite.name}`"]
    for line in lines:
        print(line, file=sys.stderr)


def _build_and_bound_only(args, suite) -> None:
    """Build for the requested arch, check the binary and print the suite's bounds there."""
    from solbench.core.archspec import known_arches, load_arch
    from solbench.core.roofline import bound
    from solbench.report.terminal import fit_table

    out = sys.stderr if args.json else sys.stdout  # with --json, stdout carries JSON only
    if Path(args.candidate).suffix == ".cu":
        from solbench.build.binary_check import check_binary
        from solbench.build.exports import check_exports
        from solbench.build.nvcc import build

        result = build(args.candidate, args.arch, extra_flags=tuple(args.flag))
        check_exports(result.so_path, source=args.candidate)
        check_binary(result.so_path, allow=tuple(args.allow_lib))
        print(f"built {result.so_path} for {args.arch} ({'cached' if result.cache_hit else 'compiled'}); forbidden-library check passed",
              file=out)
    if args.arch in known_arches():
        spec = load_arch(args.arch)
        rows = []
        for sc in suite.scenarios:
            b = bound(sc, spec)
            rows.append({"scenario": sc.id, "flops": f"{b.flops:.3e}", "bytes": f"{b.bytes:.3e}",
                         "bound_us": f"{b.bound_ms * 1e3:.2f}", "limit": b.limit})
        print(fit_table(rows, wrap={"scenario": 46}, wide=args.wide), file=out)
