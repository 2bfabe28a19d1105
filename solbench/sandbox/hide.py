"""A command run with the server's hidden folders unreadable (solbench.sandbox.confine.HIDDEN_VARIABLE): a
candidate's build (nvcc reads what its `#include` lines name, and a compiler error quotes it back) and its
native runner. `command(argv, keep)` is argv itself where nothing is hidden; otherwise this module's main, which
applies the read layer and execs argv: Landlock layers stay across exec and bind everything argv starts.
"""

from __future__ import annotations

import json
import os
import sys

_MAIN = ("import sys, json; sys.path[:] = json.loads(sys.argv[1]); from solbench.sandbox.hide import main; "
         "main(sys.argv[2:])")
EXIT_NOT_HIDDEN = 126


def command(argv: list[str], keep) -> list[str]:
    """`argv`, run with nothing hidden readable but `keep` (files or folders), where something is hidden."""
    from solbench.sandbox.confine import hidden

    if not hidden():
        return list(argv)
    return [sys.executable, "-c", _MAIN, json.dumps(sys.path), *map(str, keep), "--", *argv]


def main(args: list[str]) -> None:
    from solbench.sandbox.confine import NotHidden, hide_reads

    split = args.index("--")
    keep, argv = args[:split], args[split + 1:]
    try:
        hide_reads(keep)
    except NotHidden as exc:
        print(f"solbench: {exc}", file=sys.stderr)
        sys.exit(EXIT_NOT_HIDDEN)
    os.execvp(argv[0], argv)
