"""The `solbench` command: parses argv, calls one command module, maps typed errors to exit codes.

Each command lives in `solbench.commands.<name>` with `HELP`, `add_arguments(parser)` and
`run(args) -> int`; command modules import heavy libraries only inside `run`.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from solbench import __version__
from solbench.core.errors import SolbenchError

COMMANDS = ("run", "scenarios", "report", "build", "roofline", "calibrate", "baselines", "check", "leaderboard", "info")


def _available_commands():
    for name in COMMANDS:
        try:
            yield name, importlib.import_module(f"solbench.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"solbench.commands.{name}":
                raise


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="solbench",
        description="Speed-of-light evaluation harness for GPU attention-forward kernels.",
    )
    parser.add_argument("--version", action="version", version=f"solbench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in _available_commands():
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except SolbenchError as exc:
        print(f"solbench {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # `solbench ... | head`: the reader left; not an error of ours
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"solbench {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
