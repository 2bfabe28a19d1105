"""Baseline adapters (FA3, FA4, cuDNN, FlashInfer, torch SDPA, FlexAttention): an explicit registry.

`resolve_baselines(None)` = every available one; an explicitly requested baseline that is missing is an
error naming the extra to install, never a silent fallback. Nothing here imports a library: adapter
modules import theirs inside `bind`.
"""

from __future__ import annotations

import importlib

from solbench.core.errors import ConfigError, MissingDependencyError

REGISTRY: dict[str, str] = {
    "fa3": "solbench.baselines.fa3:Adapter",
    "fa4": "solbench.baselines.fa4:Adapter",
    "cudnn": "solbench.baselines.cudnn:Adapter",
    "torch-cudnn": "solbench.baselines.torch_cudnn:Adapter",
    "flashinfer-fa2": "solbench.baselines.flashinfer:FA2Adapter",
    "flashinfer-fa3": "solbench.baselines.flashinfer:FA3Adapter",
    "sdpa-flash": "solbench.baselines.torch_sdpa:FlashAdapter",
    "sdpa-efficient": "solbench.baselines.torch_sdpa:EfficientAdapter",
    "flex": "solbench.baselines.flex:Adapter",
}
"""name -> 'module:class' of the adapter, in report order."""


def known() -> tuple[str, ...]:
    return tuple(REGISTRY)


def get_adapter_class(name: str):
    if name not in REGISTRY:
        raise ConfigError(f"unknown baseline {name!r}; known: {', '.join(REGISTRY)}")
    module, cls = REGISTRY[name].split(":")
    return getattr(importlib.import_module(module), cls)


def claims(name: str, scenario, arch: str):
    """Support(ok, reason) of baseline `name` for a scenario on an arch: what a runner asks before
    sending the pair to a worker (an unclaimed pair is 'skipped, reason', never run)."""
    return get_adapter_class(name).supports(scenario, arch)


def get_adapter(name: str, device: str):
    """An adapter instance for a worker; a missing library is a MissingDependencyError."""
    cls = get_adapter_class(name)
    if not cls.is_available():
        raise MissingDependencyError(f"baseline {name!r}: {cls.unavailable_reason()}")
    return cls(device=device)


GROUPS = {"flashinfer": ("flashinfer-fa2", "flashinfer-fa3"), "sdpa": ("sdpa-flash", "sdpa-efficient")}
"""Names that stand for every backend of one library (`--baselines fa3,flashinfer`)."""


def resolve_baselines(requested: tuple[str, ...] | None) -> tuple[str, ...]:
    """None -> every available baseline of the default set; explicit names (or GROUPS) must be known and
    installed."""
    if requested is None:
        return tuple(name for name in REGISTRY
                     if get_adapter_class(name).in_default_set and get_adapter_class(name).is_available())
    requested = tuple(member for n in requested for member in GROUPS.get(n, (n,)))
    unknown = [n for n in requested if n not in REGISTRY]
    if unknown:
        raise ConfigError(f"unknown baseline(s) {', '.join(unknown)}; known: {', '.join(REGISTRY)} "
                          f"(and {', '.join(GROUPS)} for all of a library's backends)")
    missing = [n for n in requested if not get_adapter_class(n).is_available()]
    if missing:
        lines = "; ".join(f"{n}: {get_adapter_class(n).unavailable_reason()}" for n in missing)
        raise MissingDependencyError(f"requested baseline(s) not available: {lines}")
    return tuple(dict.fromkeys(requested))
