"""Implementations under test: a candidate .cu (built .so), a Python module, or a baseline adapter.

An ImplSpec is a small picklable value the runner sends to a worker; `load_impl` turns it into an
object with `bind(inputs) -> zero-argument callable` (all per-configuration set-up done in bind,
outside any timed region) and `writes_lse`.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from solbench.core.errors import LoadError

KINDS = ("cu", "python", "baseline")


@dataclass(frozen=True)
class ImplSpec:
    """What to load in a worker."""

    name: str
    """Name in results: 'candidate', 'seed', or the baseline's name."""
    kind: str
    """'cu' (path is a built .so), 'python' (path is a module file) or 'baseline' (path is its name)."""
    path: str
    """Shared library, module file, or baseline name."""
    label: str = ""
    """What a person calls it (file name, library and version)."""
    runner: str = "python"
    """Which process times a 'cu' implementation: 'native' (solbench's runner, no Python in it) or 'python'
    (the Python host, as Python candidates and baselines always are)."""
    deterministic: bool = True
    """False when the implementation declared that two calls on the same inputs may differ in their bits
    (a .cu exporting `solbench_nondeterministic`, a module setting NONDETERMINISTIC = True)."""
    allow: tuple[str, ...] = ()
    """Forbidden libraries (cublas, cudnn, cutlass) this implementation may use anyway (--allow-lib)."""


class PythonImpl:
    """A module exposing `forward(inputs)` that writes inputs.out and inputs.lse in place."""

    def __init__(self, path: str):
        spec = importlib.util.spec_from_file_location(f"solbench_candidate_{Path(path).stem}", path)
        if spec is None or spec.loader is None:
            raise LoadError(f"{path}: not a Python module file")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # the candidate's own import failure is its problem, reported in one line
            raise LoadError(f"{_where(path, exc)}: import failed: {type(exc).__name__}: {exc}; fix the module "
                            "(or install what it imports) and run again") from None
        if not callable(getattr(module, "forward", None)):
            raise LoadError(f"{path}: no function `forward(inputs)`; define one that writes inputs.out and inputs.lse")
        self.module = module

    def bind(self, inputs):
        forward = self.module.forward
        return lambda: forward(inputs)


def _where(path: str, exc: Exception) -> str:
    """path:line of the candidate's own line the exception came from (its deepest frame in that file)."""
    import traceback

    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == Path(path)]
    return f"{path}:{lines[-1]}" if lines else path


def load_impl(spec: ImplSpec, device: str):
    if spec.kind == "python":
        return PythonImpl(spec.path)
    if spec.kind == "cu":
        from solbench.sandbox.loader import load

        return load(spec.path)
    if spec.kind == "baseline":
        from solbench.baselines import get_adapter

        return get_adapter(spec.path, device=device)
    raise LoadError(f"unknown implementation kind {spec.kind!r}; expected one of {KINDS}")


def candidate_kind(path: str) -> str:
    suffix = Path(path).suffix
    if suffix in (".cu", ".so"):
        return "cu"
    if suffix == ".py":
        return "python"
    raise LoadError(f"{path}: a candidate is a .cu file or a Python module (.py), got {suffix or 'no suffix'!r}")
