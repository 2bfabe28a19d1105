"""`solbench serve [--device cpu] [--gpus all|0,1] [--host H] [--port P] --state-dir DIR --tokens FILE`:
evaluate candidates for many clients over HTTP (REST, a web page, MCP at /mcp). Needs `solbench[serve]`."""

from __future__ import annotations

from pathlib import Path

HELP = "serve evaluations over HTTP (REST API, web page, MCP): a queue that survives restarts, one job per device at a time"
EXAMPLES = """\
solbench serve --state-dir /var/lib/solbench --tokens tokens.txt --gpus all      # every GPU of this node
solbench serve --device cpu --state-dir state --tokens tokens.txt --port 8765    # Python candidates, no GPU
"""


def add_arguments(parser) -> None:
    parser.add_argument("--state-dir", type=Path, required=True, help="the queue (SQLite) and every job's folder; "
                        "not beneath /dev/shm, where confined workers may write")
    parser.add_argument("--tokens", type=Path, required=True, help="file of 'CLIENT sha256:HEX' lines, each the digest of a client's bearer token "
                        "(`python3 -m solbench.serve.tokens CLIENT` makes one)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8765, help="port to listen on")
    parser.add_argument("--device", choices=("cuda", "cpu"), help="cuda or cpu (default: cuda if present)")
    parser.add_argument("--gpus", help="with cuda: 'all' or ordinals such as 0,1 (default all); each is leased to "
                        "one job's scenario at a time")
    parser.add_argument("--max-running", type=int, default=None, help="job processes alive at once "
                        "(default: 2 per device)")
    parser.add_argument("--max-upload-mb", type=float, default=1.0, help="largest candidate file, in MB")
    parser.add_argument("--max-queue", type=int, default=8, help="jobs of one client queued or running at once")
    parser.add_argument("--max-job-s", type=float, default=3600.0, help="wall time of one job, in seconds")
    parser.add_argument("--no-mcp", action="store_true", help="serve no MCP endpoint at /mcp")


def service_from(args):
    """The Service that `serve` and `mcp` build from their common options."""
    from solbench.serve import setup

    setup.require_serve_extra()
    from solbench.serve.requests import Limits
    from solbench.serve.service import Service

    device, devices, arch = setup.devices(args.device, args.gpus)
    limits = Limits(upload_bytes=int(args.max_upload_mb * (1 << 20)), queue_per_client=args.max_queue,
                    job_time_s=args.max_job_s)
    return Service(setup.state_dir(args.state_dir), device, devices, limits,
                   max_running=args.max_running or 2 * len(devices), arch=arch,
                   hidden_too=tuple(filter(None, [getattr(args, "tokens", None)])))  # `solbench mcp` has none


def run(args) -> int:
    from solbench.serve.setup import require_serve_extra

    require_serve_extra()  # one line naming the extra, not an ImportError's traceback
    from solbench.serve.tokens import read_tokens

    service = service_from(args)
    tokens = read_tokens(args.tokens)
    import uvicorn

    from solbench.serve.app import create_app

    app = create_app(service, tokens, mcp_http=not args.no_mcp)
    print(f"solbench serve: http://{args.host}:{args.port}/ ({service.device}: {', '.join(service.devices)}; "
          f"state {service.state_dir}; {len(tokens.clients())} client(s); candidates "
          + ("read none of it" if service.hidden_env else "can read it: this kernel has no Landlock") + ")",
          flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
