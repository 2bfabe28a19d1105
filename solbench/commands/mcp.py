"""`solbench mcp [--device cpu] --state-dir DIR`: the MCP tools over stdio, for a coding agent on this
machine (its own queue and devices, as `solbench serve` has). Needs `solbench[serve]`."""

from __future__ import annotations

from pathlib import Path

HELP = "the MCP tools (submit, status, result, check, triage, roofline, baselines, list_suites) over stdio"
EXAMPLES = """\
solbench mcp --state-dir ~/.solbench-mcp                  # what an agent's MCP config starts
solbench mcp --device cpu --state-dir state               # Python candidates, no GPU
"""


def add_arguments(parser) -> None:
    parser.add_argument("--state-dir", type=Path, required=True, help="the queue (SQLite) and every job's folder")
    parser.add_argument("--device", choices=("cuda", "cpu"), help="cuda or cpu (default: cuda if present)")
    parser.add_argument("--gpus", help="with cuda: 'all' or ordinals such as 0,1 (default all)")
    parser.add_argument("--max-running", type=int, default=None, help="job processes alive at once (default: 2 per device)")
    parser.add_argument("--max-upload-mb", type=float, default=1.0, help="largest candidate file, in MB")
    parser.add_argument("--max-queue", type=int, default=8, help="jobs queued or running at once")
    parser.add_argument("--max-job-s", type=float, default=3600.0, help="wall time of one job, in seconds")


def run(args) -> int:
    from solbench.commands.serve import service_from

    service = service_from(args)  # says first which package of the serve extra is missing
    from solbench.serve.mcp_server import build_mcp

    service.start()
    try:
        build_mcp(service, tokens=None).run("stdio")
    finally:
        service.stop()
    return 0
