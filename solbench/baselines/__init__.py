"""Baseline adapters (FA3 as vLLM runs it and the fa3-fwd build, FA4, cuDNN, FlashInfer, torch SDPA, FlexAttention): an explicit registry.

`resolve_baselines(None)` = every available one; an explicitly requested baseline that is missing is an
error naming the extra to install, never a silent fallback. Nothing here imports a library: adapter
modules import theirs inside `bind`.
"""

from __future__ import annotations

import importlib

from solbench.core.errors import ConfigError, MissingDependencyError

REGISTRY: dict[str, str] = {
    "vllm-fa3": "solbench.baselines.vllm_fa3:Adapter",
    "fa4": "solbench.baselines.fa4:Adapter",
    "cudnn": "solbench.baselines.cudnn:Adapter",
    "torch-cudnn": "solbench.baselines.torch_cudnn:Adapter",
    "flashinfer-fa2": "solbench.baselines.flashinfer:FA2Adapter",
    "flashinfer-fa3": "solbench.baselines.flashinfer:FA3Adapter",
    "sdpa-flash": "solbench.baselines.torch_sdpa:FlashAdapter",
    "sdpa-efficient": "solbench.baselines.torch_sdpa:EfficientAdapter",
    "flex": "solbench.baselines.flex:Adapter",
    "fa3-fwd": "solbench.baselines.fa3:Adapter",
}
"""name -> 'module:class' of the adapter, in report order."""

RENAMED: dict[str, str] = {"fa3": "fa3-fwd"}
"""Names that runs recorded before vllm-fa3 existed use -> the registry name of the same adapter today.
Reports and leaderboards read old runs through `current_name`; a new run never writes these names."""


def current_name(name: str) -> str:
    """The registry name of a baseline named `name` in a run, old or new ('fa3' -> 'fa3-fwd')."""
    return RENAMED.get(name, name)


def _unknown(names) -> str:
    renamed = [f"{n!r} is now {RENAMED[n]!r}" for n in names if n in RENAMED]
    hint = f" ({'; '.join(renamed)}; vLLM's FA3 is 'vllm-fa3')" if renamed else ""
    return f"unknown baseline(s) {', '.join(names)}{hint}; known: {', '.join(REGISTRY)}"


def known() -> tuple[str, ...]:
    return tuple(REGISTRY)


def get_adapter_class(name: str):
    if name not in REGISTRY:
        raise ConfigError(_unknown([name]))
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
"""Names that stand for every backend of one library (`--baselines vllm-fa3,flashinfer`)."""


def resolve_baselines(requested: tuple[str, ...] | None) -> tuple[str, ...]:
    """None -> every available baseline of the default set; explicit names (or GROUPS) must be known and
    installed."""
    if requested is None:
        return tuple(name for name in REGISTRY
                     if get_adapter_class(name).in_default_set and get_adapter_class(name).is_available())
    requested = tuple(member for n in requested for member in GROUPS.get(n, (n,)))
    unknown = [n for n in requested if n not in REGISTRY]
    if unknown:
        raise ConfigError(f"{_unknown(unknown)} (and {', '.join(GROUPS)} for all of a library's backends)")
    missing = [n for n in requested if not get_adapter_class(n).is_available()]
    if missing:
        lines = "; ".join(f"{n}: {get_adapter_class(n).unavailable_reason()}" for n in missing)
        raise MissingDependencyError(f"requested baseline(s) not available: {lines}")
    return tuple(dict.fromkeys(requested))
