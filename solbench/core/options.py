"""One option vocabulary shared by the CLI (`--arch`) and the pytest plugin (`--solbench-arch`).

Each option is declared once here; `add_to_parser` and the plugin's `pytest_addoption` both read it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable

from solbench.core import policy

ARCHES = ("h100", "h200", "b200", "rtx3080")


@dataclass(frozen=True)
class Option:
    """One option: its CLI flag (without '--'), and argparse keyword arguments."""

    name: str
    help: str
    default: object = None
    choices: tuple | None = None
    type: Callable[[str], object] | None = None
    action: str | None = None

    def kwargs(self) -> dict:
        kw = {"help": self.help, "default": self.default}
        for key in ("choices", "type", "action"):
            if getattr(self, key) is not None:
                kw[key] = getattr(self, key)
        return kw


def positive_int(raw: str) -> int:
    """An argparse type: a count of at least 1 (argparse names the option in its one-line error)."""
    value = int(raw)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_float(raw: str) -> float:
    """An argparse type: a finite quantity above 0, such as a time in seconds."""
    value = float(raw)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number above 0, got {raw}")
    return value


SUITE = Option("suite", "suite name (scenarios/<name>.toml) or path to a suite .toml", default="smoke")
ARCH = Option("arch", "target arch (h100, h200, b200, rtx3080, cpu); default: the GPU present, else cpu")
DEVICE = Option("device", "where to run: cuda or cpu (cpu runs Python candidates only); default cuda if present")
BASELINES = Option("baselines", "comma-separated baselines to time against, 'flashinfer' and 'sdpa' meaning all "
                   "their backends (default: every available one except flex, which compiles for minutes; 'none' for none)")
SEED = Option("seed", "path to the seed kernel used as the first comparator ('none' to skip; default: the shipped "
              "reference_kernels/seed_attention.cu, torch_attention.py on cpu)")
AGAINST = Option("against", "a results.json (or run folder, or pytest-benchmark file saved by the plugin) to compare against")
TIMEOUT = Option("timeout", "per-scenario timeout in seconds", default=120.0, type=positive_float)
MAX_SCENARIOS = Option("max-scenarios", "evaluate only the first N scenarios of the suite (N >= 1)", type=positive_int)
FILTER = Option("filter", "only scenarios whose id contains this substring")

GPUS = Option("gpus", "spread the run over this machine's GPUs: 'all' or ordinals such as 0,1,3, one worker set "
              "per GPU, each scenario whole on one GPU (default: one GPU, the plain run)")
EXECUTOR = Option("executor", "where units run: local (this machine) or ray (a Ray cluster; pip install "
                  "\"solbench[ray]\")", default="local", choices=("local", "ray"))
RAY_ADDRESS = Option("ray-address", "with --executor ray: an existing cluster's address (default: start a local one)")
WORKERS = Option("workers", "with --executor ray: scenarios in flight at once (default: the cluster's GPUs; a local "
                 "cluster on a CPU gets that many fake GPUs)", type=positive_int)
SCALE_OPTIONS = (GPUS, EXECUTOR, RAY_ADDRESS, WORKERS)

RUN_OPTIONS = (SUITE, ARCH, DEVICE, BASELINES, SEED, TIMEOUT, MAX_SCENARIOS, FILTER) + SCALE_OPTIONS
WIDE = Option("wide", "print tables whole, one line per row (default: fit the terminal's width, 120 columns when "
              "not a terminal: ids wrapped, some columns left out)", default=False, action="store_true")

# Gates (`solbench check`, the pytest plugin); see solbench.report.check for what each clause means.
KERNEL = Option("kernel", "candidate to evaluate: a kernel .cu or a Python module file")
DEFAULT_EPSILON = 0.02
"""Run-to-run drift (clocks, thermals, driver state) that one run's own samples cannot show; see solbench.report.check."""
EPSILON = Option("epsilon", "regression margin: a scenario regresses only when its speedup's CI lies wholly "
                 f"below 1 - EPSILON (default {DEFAULT_EPSILON})", default=DEFAULT_EPSILON, type=float)
STRICT = Option("strict", "also fail on ambiguous comparisons (CI straddling 1 - EPSILON)", default=False,
                action="store_true")
MIN_RATIO = Option("min-ratio", "every scenario's median speedup vs its best comparator must be >= R", type=float)
MIN_GEOMEAN = Option("min-geomean", "geomean speedup vs COMPARATOR must be >= G", type=float)
COMPARATOR = Option("comparator", "comparator for --min-geomean: seed (default), a baseline, best, upstream (the arch's "
                    "FA3 / FA4) or fastest (per scenario, the fastest library)", default="seed")
MIN_SOL = Option("min-sol", "every scenario must reach >= F percent of the speed of light (e.g. 50)", type=float)
PLUGIN_OUT = Option("out", "run folder (default: <basetemp>/solbench/<run-id>/, under pytest's temporary folder)")
QUICK = Option("quick", "few samples, no L2 flush: for smoke tests, not for numbers", default=False,
               action="store_true")

POLICY = Option("policy", "override TimingPolicy fields, e.g. 'warmup_ms=30,launcher_budget_ms=50' "
                "(recorded in the results)")

CHECK_OPTIONS = (AGAINST, EPSILON, STRICT, MIN_RATIO, MIN_GEOMEAN, COMPARATOR, MIN_SOL)
PLUGIN_OPTIONS = (KERNEL,) + RUN_OPTIONS + (QUICK, POLICY, AGAINST, EPSILON, STRICT, PLUGIN_OUT)


def add_to_parser(parser, options, prefix: str = "--") -> None:
    for opt in options:
        parser.add_argument(prefix + opt.name, dest=opt.name.replace("-", "_"), **opt.kwargs())


def seed_value(raw: str | None) -> str | None:
    """--seed as RunConfig.seed: None (flag absent) = the shipped seed ('default'); 'none' = no seed."""
    return None if raw == "none" else (raw or "default")


def baselines_value(raw: str | None) -> tuple[str, ...] | None:
    """--baselines as RunConfig.baselines: None (flag absent) = every available one; 'none' = ()."""
    return None if raw is None else tuple(b for b in raw.split(",") if b and b != "none")


def policy_value(quick: bool, overrides: str | None) -> policy.TimingPolicy:
    """--quick and --policy as one TimingPolicy."""
    return policy.with_overrides(policy.QUICK if quick else policy.TimingPolicy(), overrides)
