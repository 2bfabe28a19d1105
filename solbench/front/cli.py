"""The `solbench` command: parses argv, calls one command module, maps typed errors to exit codes.

Each command lives in `solbench.commands.<name>` with `HELP`, `EXAMPLES` (shown by --help, and
tested to parse), `add_arguments(parser)` and `run(args) -> int`; command modules import heavy
libraries only inside `run`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import textwrap

from solbench import __version__
from solbench.core.errors import SolbenchError

COMMANDS = ("run", "scenarios", "report", "build", "roofline", "calibrate", "baselines", "check", "leaderboard")


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
solbench report reports/reference/h200-seed/hopper.json
"""

OUTCOME_EXIT_CODES = {0: "success (run, report: every scenario passed; check: every clause held)",
                      1: "a scenario did not pass (run, report), a clause failed (check)",
                      130: "interrupted (Ctrl-C); a run's finished scenarios are on disk, --resume goes on"}


def exit_codes_text() -> str:
    """Every exit code: the outcomes above and one per typed error (solbench.core.errors), with its
    docstring, so the list cannot drift from the code."""
    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    lines = {code: [text] for code, text in OUTCOME_EXIT_CODES.items()}
    for cls in subclasses(SolbenchError):
        doc = (cls.__doc__ or cls.__name__).strip().splitlines()[0].rstrip(".")
        lines.setdefault(cls.exit_code, []).append(doc[0].lower() + doc[1:])
    lines[2].append("a usage error (unknown option, missing argument)")
    return "\n".join(f"  {code:>3}  " + "\n       ".join(texts) for code, texts in sorted(lines.items()))


def _epilog(examples: str, *more: str) -> str:
    return "\n\n".join(("examples:\n" + textwrap.indent(examples, "  "), *more))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="solbench",
        description="Speed-of-light evaluation harness for GPU attention-forward kernels.",
        formatter_class=HelpFormatter,
        epilog=_epilog(EXAMPLES, "`solbench COMMAND --help` shows a command's options and examples.",
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
