"""Typed errors raised at the boundary, and the exit codes of the `solbench` command.

EXIT_CODES is the one table of exit codes: `solbench --help`, the README and the docs render it, and each
error class takes its code from it by name. A kernel being wrong is an Outcome, never one of these.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExitCode:
    """One exit code; the same for every command."""

    code: int
    """The process's exit status."""
    name: str
    """A short stable name for scripts and docs."""
    meaning: str
    """When it is returned, in one line."""


EXIT_CODES = (
    ExitCode(0, "ok", "every scenario passed (run, report); every clause held (check); every lint flag is excused"),
    ExitCode(1, "not_passed", "a scenario did not pass or the run is incomplete (run, report); a clause failed "
                              "(check); a lint flag is not excused (lint)"),
    ExitCode(2, "bad_input", "bad input: a usage error, a bad option, an unknown arch, a missing or unreadable "
                             "file; check: the runs cannot be compared"),
    ExitCode(3, "bad_suite", "a scenario or suite definition that breaks an invariant"),
    ExitCode(4, "build_error", "a candidate that does not compile, or links a forbidden library"),
    ExitCode(5, "load_error", "a candidate that cannot be loaded: no entry point, ABI mismatch, a .py that does "
                              "not import"),
    ExitCode(6, "missing_library", "an explicitly requested optional library that is not installed"),
    ExitCode(7, "wrong_gpu", "the requested arch is not the GPU present: built and bounded, not timed"),
    ExitCode(8, "unknown_gpu", "the GPU present has no spec file (roofline/ARCH.toml): it cannot be bounded"),
    ExitCode(9, "no_gpu_left", "--gpus: no agent started on any of the GPUs"),
    ExitCode(130, "interrupted", "interrupted (Ctrl-C); a run's finished scenarios are on disk, --resume goes on"),
)


def code_of(name: str) -> int:
    """The code of the EXIT_CODES entry called `name`."""
    return next(e.code for e in EXIT_CODES if e.name == name)


class SolbenchError(Exception):
    """Base of every error solbench reports as one line."""

    exit_code = code_of("bad_input")


class ConfigError(SolbenchError):
    """A bad option, an unknown arch, a missing or unreadable file."""

    exit_code = code_of("bad_input")


class ScenarioError(SolbenchError):
    """A scenario or suite definition that breaks an invariant."""

    exit_code = code_of("bad_suite")


class BuildError(SolbenchError):
    """A candidate that does not compile, or links a forbidden library."""

    exit_code = code_of("build_error")


class LoadError(SolbenchError):
    """A built candidate that cannot be loaded: missing entry point, ABI mismatch."""

    exit_code = code_of("load_error")


class MissingDependencyError(SolbenchError):
    """An explicitly requested optional library that is not installed."""

    exit_code = code_of("missing_library")


class DeviceMismatchError(SolbenchError):
    """The requested arch is not the GPU present: built and bounded, but not timed."""

    exit_code = code_of("wrong_gpu")


class UnknownGPUError(SolbenchError):
    """The GPU present has no spec file (roofline/<arch>.toml): its scenarios cannot be bounded."""

    exit_code = code_of("unknown_gpu")


class NoGpuLeftError(SolbenchError):
    """No GPU of the run could take work: no agent (--gpus) started on any of them."""

    exit_code = code_of("no_gpu_left")
