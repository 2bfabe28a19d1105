"""The `solbench` command: parses argv, calls one command module, maps typed errors to exit codes.

Each command lives in `solbench.commands.<name>` with `HELP`, `EXAMPLES` (shown by --help, and
tested to parse), `add_arguments(parser)` and `run(args) -> int`; command modules import heavy
libraries only inside `run`. With `--json`, stdout always carries exactly one JSON object: the
command's own, or, when it fails (bad arguments included), an error object tagged with the command's
`JSON_SCHEMA` (default `solbench.error/1`).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import sys
import textwrap

from solbench import __version__, schemas
from solbench.core.errors import EXIT_CODES, SolbenchError, code_of

COMMANDS = ("run", "scenarios", "report", "build", "roofline", "lint", "calibrate", "baselines", "check", "leaderboard",
            "info", "triage", "profile", "serve", "mcp")


def _available_commands():
    for name in COMMANDS:
        try:
            yield name, importlib.import_module(f"solbench.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"solbench.commands.{name}":
                raise


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Epilogs keep their lines (examples, exit codes); an option's default is shown unless its help
    already says it or there is nothing to show (None, a flag's False, empty)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or action.default in (None, False, [], ""):
            return text
        return super()._get_help_string(action)


EXAMPLES = """\
solbench scenarios --suite hopper
solbench run reference_kernels/torch_attention.py --suite smoke --device cpu --quick
solbench report baselines/h200/hopper.json
"""

CHECKOUT_PATHS = ("paths such as baselines/h200/... and reference_kernels/... are those of a checkout; an installed "
                  "solbench\ncarries them where `solbench info --paths` shows")
"""Said under the examples: the files they name ship with solbench (tests/test_cli_help.py checks), elsewhere."""


def exit_codes_text() -> str:
    """The exit codes as `solbench --help` lists them, from the one table (solbench.core.errors.EXIT_CODES)."""
    return "\n".join(textwrap.fill(e.meaning, 110, initial_indent=f"  {e.code:>3}  {e.name:<17}",
                                   subsequent_indent=" " * 24) for e in EXIT_CODES)


def exit_codes_markdown() -> str:
    """The same table in Markdown, as the README and docs/agents.md carry it (tests/test_exit_codes_doc.py)."""
    rows = [f"| {e.code} | `{e.name}` | {e.meaning} |" for e in EXIT_CODES]
    return "\n".join(["| code | name | meaning |", "| ---: | --- | --- |", *rows]) + "\n"


def _epilog(examples: str, *more: str) -> str:
    return "\n\n".join(("examples:\n" + textwrap.indent(examples, "  "), *more))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="solbench",
        description="Speed-of-light evaluation harness for GPU attention-forward kernels.",
        formatter_class=HelpFormatter,
        epilog=_epilog(EXAMPLES, CHECKOUT_PATHS, "`solbench COMMAND --help` shows a command's options and examples.",
                       "exit codes:\n" + exit_codes_text()),
    )
    parser.add_argument("--version", action="version", version=f"solbench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in _available_commands():
        p = sub.add_parser(name, help=module.HELP, description=module.HELP, formatter_class=HelpFormatter,
                           epilog=_epilog(module.EXAMPLES, "exit codes: see solbench --help"))
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def json_error(command: str | None, exit_code: int, message: str) -> dict:
    """The one object `--json` prints when the command failed: which command, its exit code, and the line."""
    module = importlib.import_module(f"solbench.commands.{command}") if command else None
    return {"schema": getattr(module, "JSON_SCHEMA", schemas.ERROR), "ok": False, "command": command,
            "exit_code": exit_code, "error": message, **getattr(module, "JSON_ERROR_FIELDS", {})}


def _parse(parser: argparse.ArgumentParser, argv: list[str]):
    """parse_args, but a usage error (printed to stderr as argparse does) comes back as (None, its message
    line), so that main returns 2 and, with --json, prints the error object."""
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            return parser.parse_args(argv), None
    except SystemExit as exc:
        sys.stderr.write(captured.getvalue())
        if exc.code in (0, None):  # --help, --version
            raise
        lines = captured.getvalue().strip().splitlines()
        return None, (lines[-1].partition(": error: ")[2] or lines[-1]) if lines else "bad command line"


def _json_requested(argv: list[str]) -> bool:
    """--json, or report's --format json, in a command line argparse refused."""
    pairs = zip(argv, argv[1:])
    return "--json" in argv or "--format=json" in argv or ("--format", "json") in pairs


def _json_output(args) -> bool:
    return bool(getattr(args, "json", False)) or getattr(args, "format", None) == "json"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    args, usage_error = _parse(parser, argv)
    if usage_error is not None:
        if _json_requested(argv):
            command = next((a for a in argv if a in COMMANDS), None)
            print(schemas.dumps(json_error(command, code_of("bad_input"), usage_error)))
        return code_of("bad_input")
    if not getattr(args, "_run", None):
        parser.print_help()
        return code_of("bad_input")
    return dispatch(args)


def dispatch(args) -> int:
    """Run the parsed command `args._run(args)`, mapping typed errors to exit codes (and, with --json, to the
    error object)."""
    try:
        return int(args._run(args) or 0)
    except SolbenchError as exc:
        print(f"solbench {args.command}: error: {exc}", file=sys.stderr)
        if _json_output(args):
            print(schemas.dumps(json_error(args.command, exc.exit_code, str(exc))))
        return exc.exit_code
    except BrokenPipeError:  # `solbench ... | head`: the reader left; not an error of ours
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt as exc:  # a command may say what is kept and how to go on (run: its folder)
        message = f"interrupted; {exc}" if str(exc) else "interrupted"
        print(f"solbench {args.command}: {message}", file=sys.stderr)
        if _json_output(args):
            print(schemas.dumps(json_error(args.command, code_of("interrupted"), message)))
        return code_of("interrupted")


if __name__ == "__main__":
    sys.exit(main())
