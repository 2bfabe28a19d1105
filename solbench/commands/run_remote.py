"""`solbench run --server URL ...`: the same run, submitted to a `solbench serve` node (solbench.client) instead
of evaluated here; it prints what the local run prints (the tables and the verdict, or with --json the same
`solbench.summary/1` object), keeps the run's results.json in --out (default reports/<run-id>/), and exits with
the same code."""

from __future__ import annotations

import sys
from pathlib import Path

LOCAL_ONLY = ("resume", "arch", "device", "gpus", "executor", "ray_address", "workers", "sanitize", "seed_runner")
"""Options that choose this machine's devices or folders: the server chooses those."""


def run_remote(args) -> int:
    from solbench import schemas
    from solbench.core.errors import ConfigError

    for name in LOCAL_ONLY:
        if getattr(args, name, None) not in (None, False, 0, "local"):
            raise ConfigError(f"--{name.replace('_', '-')} is chosen by the server; leave it out with --server")
    if args.seed not in (None, "none"):
        raise ConfigError("--seed with --server: only the shipped seed (default) or 'none'")
    token = _token(args.token_file)
    from solbench.client import Client, ClientError

    options = {"suite": args.suite, "quick": args.quick, "policy": args.policy, "baselines": args.baselines,
               "seed": args.seed, "filter": args.filter, "max_scenarios": args.max_scenarios,
               "timeout_s": args.timeout, "flags": list(args.flag), "allow_libs": list(args.allow_lib),
               "runner": None if args.runner == "auto" else args.runner}
    try:
        with Client(args.server, token) as client:
            job = client.submit(args.candidate, **options)
            print(f"solbench run: job {job['id']} queued on {args.server}", file=sys.stderr)
            summary = client.wait(job["id"], on_status=_Progress())
            if summary.get("schema") != schemas.SUMMARY or "run_id" not in summary:
                return _failed(args, summary)
            folder = Path(args.out or Path("reports") / summary["run_id"])
            folder.mkdir(parents=True, exist_ok=True)
            client.results(job["id"], folder / "results.json")
    except ClientError as exc:
        raise _as_error(exc) from None
    if args.json:
        print(schemas.dumps({**summary, "results": str(folder / "results.json")}))
        return int(summary["exit_code"])
    from solbench.report.tables import render_summary, write_reports
    from solbench.report.terminal import fit_lines, scenario_table
    from solbench.supervisor.run_files import load_run
    from solbench.supervisor.runner import record_digest

    result = load_run(folder / "results.json")
    write_reports(result, folder)
    print(scenario_table(result, args.wide))
    print()
    print(fit_lines(render_summary(result), wide=args.wide))
    print(f"\nresults: {folder / 'results.json'} (sha256 {record_digest(folder)})")
    return int(summary["exit_code"])


def _token(path: Path | None) -> str | None:
    if path is None:
        return None
    from solbench.core.errors import ConfigError

    try:
        return Path(path).read_text().strip()
    except OSError as exc:
        raise ConfigError(f"--token-file {path}: {exc.strerror or exc}") from None


def _as_error(exc):
    from solbench.core.errors import SolbenchError

    error = SolbenchError(f"the server refused: {exc} (HTTP {exc.status})")
    error.exit_code = exc.exit_code
    return error


def _failed(args, summary: dict) -> int:
    """The job's run ended without a summary (its error object): said as the local run says it."""
    from solbench import schemas

    if args.json:
        print(schemas.dumps(summary))
    else:
        print(f"solbench run: error: {summary.get('error', 'the job failed')}", file=sys.stderr)
    return int(summary.get("exit_code", 2))


class _Progress:
    """One stderr line each time the job's progress changes."""

    def __init__(self):
        self.last = None

    def __call__(self, status: dict) -> None:
        now = (status["state"], status["done"], status["total"])
        if now != self.last:
            self.last = now
            eta = f"  ETA {status['eta_s']:.0f} s" if status.get("eta_s") is not None else ""
            print(f"[{status['done']}/{status['total'] or '?'}] {status['state']}{eta}  {status.get('running') or ''}",
                  file=sys.stderr, flush=True)
