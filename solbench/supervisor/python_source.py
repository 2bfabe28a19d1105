"""Check a Python candidate's source before any worker starts, without importing or running it.

The supervisor never executes candidate code (that happens only in the candidate's worker), so this
reads the file and parses it with `ast`: a syntax error, or a module that defines no top-level
`forward`, is a LoadError (exit 5) naming the file and line, before any scenario runs. What only an
import can show (a missing package, an exception at module level) is reported by the worker's load
step, also as a LoadError (solbench.sandbox.worker).
"""

from __future__ import annotations

import ast
from pathlib import Path

from solbench.core.errors import LoadError

ENTRY = "forward"
"""The function a Python candidate defines: forward(inputs) writes inputs.out and inputs.lse."""

_BLOCKS = (ast.If, ast.Try, ast.With, ast.For, ast.While) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())
"""Statements whose bodies still run at module level (a `forward` defined under `if` or `try` counts)."""


def check_python_candidate(path: str | Path) -> ast.Module:
    """Raise LoadError unless `path` parses and binds `forward` at module level; else its syntax tree."""
    path = Path(path)
    try:
        source = path.read_bytes()
    except OSError as exc:
        raise LoadError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        where = f"{path}:{exc.lineno}" + (f":{exc.offset}" if exc.offset else "")
        raise LoadError(f"{where}: syntax error: {exc.msg}; fix it and run again") from None
    except ValueError as exc:  # null bytes in the source
        raise LoadError(f"{path}: not Python source: {exc}") from None
    if not _binds(tree.body, ENTRY):
        raise LoadError(f"{path}: defines no top-level `{ENTRY}`; add `def {ENTRY}(inputs):` that writes "
                        "inputs.out and inputs.lse in place")
    return tree


def declares_nondeterministic(tree: ast.Module) -> bool:
    """Whether the module (its syntax tree, check_python_candidate's) sets `NONDETERMINISTIC = True` at top
    level: two calls on the same inputs may then differ in their bits."""
    return any(isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value is True
               and any(isinstance(t, ast.Name) and t.id == "NONDETERMINISTIC" for t in node.targets)
               for node in tree.body)


def _binds(body: list[ast.stmt], name: str) -> bool:
    """Whether module-level statements bind `name`: def, class, assignment, import, or `import *`
    (which may bring it; the worker's import then decides)."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
                return True
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(a.name == "*" or (a.asname or a.name.split(".")[0]) == name for a in node.names):
                return True
        if isinstance(node, _BLOCKS):
            blocks = [node.body, getattr(node, "orelse", []), getattr(node, "finalbody", [])]
            blocks += [h.body for h in getattr(node, "handlers", [])]
            if any(_binds(b, name) for b in blocks):
                return True
    return False
