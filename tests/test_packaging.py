"""What `pip install` gives: declared dependencies, pinned baseline builds, and a wheel that works on its own.

The wheel test builds an sdist from a copy of the source tree (its links into solbench/data/ kept as
links), then a wheel from that sdist, so both steps must carry the shipped data as real files; then it
runs solbench from the unpacked wheel in an empty folder.
"""

import json
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from solbench.baselines import REGISTRY, get_adapter_class

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
NOT_IN_SDIST = {".git", ".ci", "reports", "tests", "benchmarks", "build", "dist"}
"""Top-level entries left out of the copy the sdist is built from (none of them is package data)."""


def shipped_files() -> set[str]:
    """Paths inside the package that must be in the wheel: what solbench.core.paths points at."""
    data = {f"solbench/data/scenarios/{p.name}" for p in (ROOT / "scenarios").glob("*.toml")}
    data |= {f"solbench/data/baselines/h200/{p.name}" for p in (ROOT / "baselines" / "h200").glob("*.json")}
    data |= {f"solbench/data/roofline/{p.relative_to(ROOT / 'roofline')}" for p in (ROOT / "roofline").rglob("*.toml")}
    return data | {"solbench/abi/solbench_attention.h", "solbench/data/reference_kernels/seed_attention.cu",
                   "solbench/data/reference_kernels/torch_attention.py"}


def test_every_declared_dependency_is_imported():
    sources = "\n".join(p.read_text() for p in (ROOT / "solbench").rglob("*.py"))
    for requirement in PYPROJECT["project"]["dependencies"]:
        module = re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].replace("-", "_")
        assert re.search(rf"^\s*(import|from) {module}\b", sources, re.M), f"{requirement}: declared, never imported"


NOT_YET_RECORDED: set[str] = set()
"""Pinned distributions no recorded run has timed yet (vllm left it with the hopper recording of 2026-12-03).
Once a recorded run names one, it must leave this set (the test below fails until it does)."""


def test_baseline_extras_pin_the_builds_the_recorded_runs_timed():
    extras = PYPROJECT["project"]["optional-dependencies"]
    recorded: dict[str, set[str]] = {}
    for path in (ROOT / "baselines" / "h200").glob("*.json"):
        for dist, version in json.loads(path.read_text())["environment"]["libraries"].items():
            if version:
                recorded.setdefault(dist, set()).add(version)
    pinned = {}
    for name in REGISTRY:
        cls = get_adapter_class(name)
        if cls.package in ("torch", "gpu"):
            continue  # torch's own backends: whatever torch is installed
        (requirement,) = extras[cls.package]
        dist, _, version = requirement.partition("==")
        assert version and dist in cls.distributions, f"extra {cls.package}: {requirement} is not a pin of {name}'s library"
        if dist in NOT_YET_RECORDED:
            assert dist not in recorded, f"{dist} is recorded now: take it out of NOT_YET_RECORDED"
        else:
            assert recorded.get(dist) == {version}, f"{dist}: pinned {version}, the recorded runs timed {recorded.get(dist)}"
        pinned[cls.package] = requirement
    assert sorted(pinned) == ["cudnn", "fa3", "fa4", "flashinfer", "vllm"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"

    def skipped(folder, names):
        top = Path(folder) == ROOT
        return [n for n in names if (top and n in NOT_IN_SDIST) or n == "__pycache__" or n.endswith(".egg-info")]

    shutil.copytree(ROOT, src, symlinks=True, ignore=skipped)
    assert (src / "solbench" / "data" / "scenarios").is_symlink()  # the copy keeps the one-copy layout
    build = "import sys; from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[1]))"
    sdist = subprocess.run([sys.executable, "-c", build, str(tmp)], cwd=src, check=True, capture_output=True,
                           text=True).stdout.split()[-1]
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp),
                    str(tmp / sdist)], check=True, capture_output=True, text=True)
    (built,) = tmp.glob("solbench-*.whl")
    return built


@pytest.mark.slow
def test_sdist_and_wheel_carry_the_shipped_data_as_files(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    assert shipped_files() <= names, f"missing from the wheel: {sorted(shipped_files() - names)}"
    assert not [n for n in names if "/adversarial/" in n or "/examples/" in n]  # test kernels stay in the repo
    (sdist,) = wheel.parent.glob("solbench-*.tar.gz")
    with tarfile.open(sdist) as tar:
        files = {m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile()}
    assert shipped_files() <= files, f"missing from the sdist (or links, not files): {sorted(shipped_files() - files)}"


def test_the_unpacked_wheel_runs_from_an_empty_folder(wheel, tmp_path):
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    empty = tmp_path / "empty"
    empty.mkdir()

    def solbench(*args):
        return subprocess.run([sys.executable, "-m", "solbench", *args], cwd=empty, capture_output=True, text=True,
                              env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})

    info = solbench("info", "--paths", "--json")
    assert info.returncode == 0, info.stderr
    doc = json.loads(info.stdout)
    assert Path(doc["package_dir"]) == site / "solbench"
    for name, path in doc["paths"].items():
        assert Path(path).exists() and site in Path(path).parents, (name, path)
    assert "hopper" in doc["suites"] and doc["recorded_runs"]["h200"]
    listed = solbench("scenarios", "--suite", "hopper")
    assert listed.returncode == 0 and "182 scenarios in suite 'hopper'" in listed.stdout, listed.stderr
    assert list(empty.iterdir()) == []  # nothing written into the user's folder
