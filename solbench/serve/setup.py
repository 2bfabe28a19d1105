"""What `solbench serve` and `solbench mcp` share: the devices from --device/--gpus, and the state folder's
checks (it must lie outside every place a confined worker may write)."""

from __future__ import annotations

from pathlib import Path

from solbench.core.errors import ConfigError, MissingDependencyError


def require_serve_extra() -> None:
    try:
        import fastapi, mcp, uvicorn  # noqa: E401, F401
    except ImportError as exc:
        raise MissingDependencyError(f"solbench serve needs {exc.name}: pip install \"solbench[serve]\"") from None


def devices(device: str | None, gpus: str | None) -> tuple[str, list[str], str]:
    """(device, leased units, arch): ('cpu', ['cpu'], 'cpu') or ('cuda', ['0', '1'], 'h200')."""
    from solbench.supervisor.runner import gpu_arch, resolve_device

    device = resolve_device(device)
    if device == "cpu":
        if gpus:
            raise ConfigError("--gpus needs --device cuda")
        return "cpu", ["cpu"], "cpu"
    import torch

    from solbench.executor.plan import parse_gpus

    ordinals = parse_gpus(gpus or "all", torch.cuda.device_count())
    return "cuda", [str(i) for i in ordinals], gpu_arch() or "cpu"


def state_dir(path: Path) -> Path:
    """The state folder, made; refused beneath /dev/shm or the temporary folder's root, where workers write."""
    import tempfile

    from solbench.sandbox.confine import shared_memory_dirs

    path = Path(path).resolve()
    for writable in [*shared_memory_dirs()]:
        if path == Path(writable).resolve() or Path(writable).resolve() in path.parents:
            raise ConfigError(f"--state-dir {path}: beneath {writable}, which confined workers may write; "
                              "pick a folder elsewhere")
    if path == Path(tempfile.gettempdir()).resolve():
        raise ConfigError(f"--state-dir {path}: give a folder of its own")
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    return path
