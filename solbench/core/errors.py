"""Typed errors raised at the boundary; the CLI maps each to its own exit code.

A kernel being wrong is an Outcome, never one of these.
"""


class SolbenchError(Exception):
    """Base of every error solbench reports as one line."""

    exit_code = 2


class ConfigError(SolbenchError):
    """A bad option, an unknown arch, a missing or unreadable file."""

    exit_code = 2


class ScenarioError(SolbenchError):
    """A scenario or suite definition that breaks an invariant."""

    exit_code = 3


class BuildError(SolbenchError):
    """A candidate that does not compile, or links a forbidden library."""

    exit_code = 4


class LoadError(SolbenchError):
    """A built candidate that cannot be loaded: missing entry point, ABI mismatch."""

    exit_code = 5


class MissingDependencyError(SolbenchError):
    """An explicitly requested optional library that is not installed."""

    exit_code = 6


class DeviceMismatchError(SolbenchError):
    """The requested arch is not the GPU present: built and bounded, but not timed."""

    exit_code = 7


class UnknownGPUError(SolbenchError):
    """The GPU present has no spec file (roofline/<arch>.toml): its scenarios cannot be bounded."""

    exit_code = 8


class NoGpuLeftError(DeviceMismatchError):
    """No GPU of the run could take work: every agent (--gpus, --executor ray) died or none started."""

    exit_code = 7
