"""Baseline adapters (FA3, FA4, cuDNN, FlashInfer, torch SDPA, FlexAttention): an explicit registry.

`resolve_baselines(None)` = every available one; an explicitly requested baseline that is missing is an
error naming the package to install, never a silent fallback.
"""

from __future__ import annotations

from solbench.errors import ConfigError

REGISTRY: dict[str, str] = {}
"""name -> module path of the adapter (filled as adapters land)."""


def resolve_baselines(requested: tuple[str, ...] | None) -> tuple[str, ...]:
    if requested is None:
        return tuple(name for name in REGISTRY if get_adapter_class(name).is_available())
    unknown = [n for n in requested if n not in REGISTRY]
    if unknown:
        known = ", ".join(REGISTRY) or "none yet"
        raise ConfigError(f"unknown baseline(s) {unknown}; known: {known}")
    return tuple(requested)


def get_adapter_class(name: str):
    import importlib

    return importlib.import_module(REGISTRY[name]).Adapter


def get_adapter(name: str, device: str):
    return get_adapter_class(name)(device=device)
