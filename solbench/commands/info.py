"""`solbench info [--paths] [--json]`: the version, where the shipped data lies, and what this machine has
(EXAMPLES).

The paths are those an installed wheel reads (solbench.core.paths), so they hold in a checkout and in
site-packages alike. Without --paths the environment (Python, torch, nvcc, GPU) follows.
"""

from __future__ import annotations

import sys
from pathlib import Path

from solbench import schemas

EXAMPLES = """\
solbench info --paths                      # the ABI header to #include, suites, seeds, arch specs, ...
nvcc -I "$(solbench info --paths --json | jq -r .paths.include_dir)" -c my_kernel.cu
solbench info --json                       # also Python, torch, nvcc and the GPU
"""

HELP = "print solbench's version and where its shipped data lies (ABI header, suites, seeds, arch specs, baselines)"


def add_arguments(parser) -> None:
    parser.add_argument("--paths", action="store_true", help="only the version and the paths (no probing of torch, nvcc or the GPU)")
    parser.add_argument("--json", action="store_true", help=f"print one JSON object ({schemas.INFO})")


def run(args) -> int:
    doc = describe(with_environment=not args.paths)
    if args.json:
        print(schemas.dumps({"schema": schemas.INFO, "ok": True, **doc}))
        return 0
    from tabulate import tabulate

    print(f"solbench {doc['version']} at {doc['package_dir']}")
    print(tabulate([(name.replace("_", " "), path, _contents(name, doc)) for name, path in doc["paths"].items()],
                   tablefmt="plain"))
    if "environment" in doc:
        print()
        print(tabulate(list(doc["environment"].items()), tablefmt="plain"))
    return 0


def describe(with_environment: bool = True) -> dict:
    """The version, the shipped paths and what each holds; the environment too when asked."""
    import solbench
    from solbench import abi
    from solbench.core import archspec, paths
    from solbench.core.suites import available_suites
    from solbench.supervisor.runner import DEFAULT_SEED

    shown = {
        "abi_header": abi.HEADER_PATH, "include_dir": abi.INCLUDE_DIR, "suites": paths.SUITES_DIR,
        "seed_kernel": paths.KERNELS_DIR / DEFAULT_SEED["cuda"], "python_candidate": paths.KERNELS_DIR / DEFAULT_SEED["cpu"],
        "arch_specs": paths.ROOFLINE_DIR, "profiles": archspec.measured_dir(), "baselines": paths.BASELINES_DIR,
    }
    baselines = paths.BASELINES_DIR
    doc = {
        "version": solbench.__version__,
        "package_dir": str(Path(solbench.__file__).resolve().parent),
        "paths": {name: str(Path(p).resolve()) for name, p in shown.items()},
        "suites": available_suites(),
        "arch_specs": list(archspec.known_arches()),
        "profiles": sorted(p.stem for p in archspec.measured_dir().glob("*.toml")),
        "recorded_runs": {d.name: sorted(p.name for p in d.glob("*.json"))
                          for d in sorted(baselines.iterdir()) if d.is_dir()} if baselines.is_dir() else {},
    }
    if with_environment:
        doc["environment"] = _environment()
    return doc


def _contents(name: str, doc: dict) -> str:
    if name == "abi_header":
        return '#include "solbench_attention.h" (nvcc -I include_dir)'
    if name == "baselines":
        return "; ".join(f"{arch}: {len(files)} recorded runs" for arch, files in doc["recorded_runs"].items()) or "none"
    if name in ("suites", "arch_specs", "profiles"):
        return ", ".join(doc[name]) or "none"
    return {"seed_kernel": "the CUDA seed every candidate is compared with",
            "python_candidate": "the Python reference candidate (runs on --device cpu)"}.get(name, "")


def _environment() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    from solbench.core.errors import BuildError
    from solbench.build.nvcc import find_nvcc
    from solbench.supervisor.runner import gpu_arch

    try:
        torch = version("torch")
    except PackageNotFoundError:
        torch = "not installed (pip install torch)"
    try:
        nvcc = find_nvcc()
    except BuildError:
        nvcc = "not found"
    return {"python": f"{sys.version.split()[0]} ({sys.executable})", "torch": torch, "nvcc": nvcc,
            "gpu": gpu_arch() or "none visible"}
