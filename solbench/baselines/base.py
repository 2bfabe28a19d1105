"""What a baseline adapter is: a small Protocol, the Support answer, and the shared class behaviour.

An adapter class answers, without a GPU and without importing its library:
    name, package               registry name and the pip extra that installs the library
    version()                   installed version (importlib.metadata), or None
    is_available()              installed (cheap: importlib.util.find_spec, nothing imported)
    unavailable_reason()        '' when available, else what to install
    supports(sc, arch)          Support(ok, reason): feature, dtype, head dim, arch or build limits
An instance (`Adapter(device="cuda")`) is what a worker uses:
    bind(inputs) -> call        refuses a scenario supports() declines for the device's arch
                                (UnsupportedScenario: its answer would be wrong, not slow); then all
                                per-configuration set-up (plans, graphs, compiles, layout conversion
                                of the inputs) happens in bind; `call()` does only the per-call work and
                                writes inputs.out (and inputs.lse when writes_lse)
    writes_lse                  read after bind: it may depend on the scenario (an LSE that includes the
                                attention sink cannot be converted back exactly, so those adapters do not
                                claim to write it for sink scenarios)
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

from solbench.core.scenario import Scenario

LN2 = math.log(2.0)

ARCH_SM = {"h100": 90, "h200": 90, "b200": 100, "rtx3080": 86, "cpu": 0}
"""solbench arch names -> SM version (major * 10 + minor)."""


@dataclass(frozen=True)
class Support:
    """Whether an adapter runs a scenario on an arch, and if not, why (one short phrase)."""

    ok: bool
    """True when the adapter claims the scenario; its output is then checked like a candidate's."""
    reason: str = ""
    """Empty when ok; otherwise what rules it out: a feature, dtype, head dim, arch or build flag."""

    def __bool__(self) -> bool:
        return self.ok


YES = Support(True)


def no(reason: str) -> Support:
    return Support(False, reason)


def sm_of(arch: str) -> int:
    """SM version of an arch name ('h200' -> 90, 'sm_90a' -> 90, 'sm_100' -> 100, 'cpu' -> 0)."""
    arch = (arch or "").lower()
    if arch in ARCH_SM:
        return ARCH_SM[arch]
    m = re.fullmatch(r"sm_?(\d+)[a-z]?", arch)
    if m:
        return int(m.group(1))
    return -1


def has_empty_rows(sc: Scenario) -> bool:
    """Some query row sees no key: kv_len 0, more queries than keys under causal, or an
    'iid_empty_rows' bitmask. Libraries differ on what they write there (NaN, +inf LSE), so adapters
    that are not known to write 0 / -inf decline these scenarios."""
    from solbench.core import masks

    if sc.mask is not None and sc.mask.pattern == "iid_empty_rows":
        return True
    for b in range(sc.batch):
        if sc.q_lens[b] == 0:
            continue
        lo, hi = masks.row_intervals(sc, b)
        if (hi <= lo).any():
            return True
    return False


def common_limits(sc: Scenario, arch: str) -> Support:
    """Limits every adapter shares: a GPU arch, and fp8 only on SM89+."""
    sm = sm_of(arch)
    if sm == 0:
        return no("needs a GPU (arch cpu)")
    if sm < 0:
        return no(f"unknown arch {arch!r}")
    if sc.dtype == "fp8_e4m3" and sm < 89:
        return no(f"fp8 needs SM89 or newer (sm_{sm})")
    return YES


class UnsupportedScenario(RuntimeError):
    """bind() was asked for a scenario supports() declines (the runner should not ask)."""


def device_arch(device: str) -> str | None:
    """'sm_XY' of a CUDA device (e.g. 'sm_90'), None for CPU."""
    if not str(device).startswith("cuda"):
        return None
    import torch

    major, minor = torch.cuda.get_device_capability(device)
    return f"sm_{major}{minor}"


@runtime_checkable
class BaselineAdapter(Protocol):
    """The instance side: built in a worker, bound once per input set."""

    writes_lse: bool

    def bind(self, inputs) -> Callable[[], None]: ...


class AdapterBase:
    """Class-level answers shared by every adapter; subclasses set the ClassVars and `_supports`."""

    name: ClassVar[str] = ""
    """Registry name, e.g. 'fa3', 'flashinfer-fa2'."""
    package: ClassVar[str] = ""
    """pip extra that installs the library: pip install "solbench[<package>]"."""
    distributions: ClassVar[tuple[str, ...]] = ()
    """Distribution names whose installed version is reported (first one found)."""
    modules: ClassVar[tuple[str, ...]] = ()
    """Top-level modules of which at least one must be importable."""
    label: ClassVar[str] = ""
    """One line: what is called."""
    setup_s: ClassVar[float] = 0.0
    """Seconds its first set-up of a new configuration may take beyond the per-scenario timeout (JIT
    compiles), so a compile is not mistaken for a hang."""
    in_default_set: ClassVar[bool] = True
    """Timed when --baselines is not given. False for libraries whose per-shape set-up takes minutes
    (FlexAttention's torch.compile), which run only when named."""

    def __init__(self, device: str = "cuda", arch: str | None = None):
        self.device = device
        self.arch = arch or device_arch(device)
        """Arch whose support claims bind enforces; None (a CPU stand-in in tests) checks nothing."""
        self.writes_lse = True

    # --- class-level answers (no import of the library) -----------------------------------------

    @classmethod
    def version(cls) -> str | None:
        for dist in cls.distributions:
            try:
                return importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                continue
        return None

    @classmethod
    def found_module(cls) -> str | None:
        """The first of `modules` that can be imported, found without importing it."""
        for module in cls.modules:
            try:
                if importlib.util.find_spec(module) is not None:
                    return module
            except (ImportError, ValueError):
                continue
        return None

    @classmethod
    def is_available(cls) -> bool:
        return cls.found_module() is not None

    @classmethod
    def unavailable_reason(cls) -> str:
        if cls.is_available():
            return ""
        return f"not installed: pip install \"solbench[{cls.package}]\" (needs one of {', '.join(cls.modules)})"

    @classmethod
    def supports(cls, sc: Scenario, arch: str) -> Support:
        base = common_limits(sc, arch)
        return base if not base.ok else cls._supports(sc, arch)

    @classmethod
    def _supports(cls, sc: Scenario, arch: str) -> Support:
        raise NotImplementedError

    # --- instance side ---------------------------------------------------------------------------

    def bind(self, inputs) -> Callable[[], None]:
        """Refuse a scenario the adapter does not claim (its output would be wrong, not slow), then
        do the library's set-up (`_bind`) and return the per-call callable."""
        if self.arch is not None:
            support = self.supports(inputs.scenario, self.arch)
            if not support.ok:
                raise UnsupportedScenario(f"{self.name} does not claim {inputs.scenario.id} on {self.arch}: "
                                          f"{support.reason}")
        return self._bind(inputs)

    def _bind(self, inputs) -> Callable[[], None]:
        raise NotImplementedError
