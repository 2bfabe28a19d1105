"""Candidate builds travel as artefacts: the submitting machine builds each .cu once (and checks its
exports and libraries there), and every remote unit receives the same bytes, checked against their
sha256 on arrival, never a source to build again or a path to trust."""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from solbench.sandbox.impls import ImplSpec


@dataclass(frozen=True)
class Artefact:
    """One implementation's file, as it travels to a remote unit."""

    spec: ImplSpec
    """The spec on the submitting machine (its path is replaced on arrival)."""
    data: bytes
    """The built .so, or the Python module's source."""
    sha256: str
    """Of data, taken on the submitting machine."""


def pack(specs: dict[str, ImplSpec]) -> dict[str, Artefact | ImplSpec]:
    """Files become Artefacts; a baseline (a library installed on every GPU host) stays its name."""
    out: dict[str, Artefact | ImplSpec] = {}
    for name, spec in specs.items():
        if spec.kind == "baseline":
            out[name] = spec
            continue
        data = Path(spec.path).read_bytes()
        out[name] = Artefact(spec, data, hashlib.sha256(data).hexdigest())
    return out


class ArtefactError(Exception):
    """An artefact whose bytes do not match the sha256 it was sent with."""


def unpack(packed: dict[str, Artefact | ImplSpec], folder: str | None = None) -> dict[str, ImplSpec]:
    """Write each artefact under `folder` (a new temporary folder by default) and return specs that point
    there; ArtefactError when one arrived altered."""
    where = Path(folder or tempfile.mkdtemp(prefix="solbench-unit-"))
    specs = {}
    for name, item in packed.items():
        if isinstance(item, ImplSpec):
            specs[name] = item
            continue
        if hashlib.sha256(item.data).hexdigest() != item.sha256:
            raise ArtefactError(f"{name}: the artefact's bytes do not match its sha256 {item.sha256[:12]}")
        path = where / name / Path(item.spec.path).name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(item.data)
        specs[name] = replace(item.spec, path=str(path))
    return specs
