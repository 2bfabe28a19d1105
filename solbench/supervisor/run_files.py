"""Run files on disk: read a RunResult from a results.json, a run folder, or a pytest-benchmark storage
file written by the solbench pytest plugin; and build that pytest-benchmark document.

The pytest-benchmark document keeps pytest-benchmark's own layout (one entry per timed scenario, its
stats in seconds with the raw data), so `pytest-benchmark compare` can read it, and carries the
full solbench record besides: each entry's `extra_info.solbench_outcome` is the Outcome, and
`machine_info.solbench` holds the run's header and the outcomes that have no candidate timing. The
conversion back is therefore exact, and such a file serves as BASE for `solbench check`.
"""

from __future__ import annotations

import json
from pathlib import Path

from solbench import schemas
from solbench.core.errors import ConfigError, SolbenchError
from solbench.core.model import SCHEMA, RunResult

MACHINE_KEY = "solbench"
"""Key under pytest-benchmark's machine_info holding the run header."""
OUTCOME_KEY = "solbench_outcome"
"""Key under each benchmark's extra_info holding its Outcome."""


def load_run(path: str | Path) -> RunResult:
    """Read a RunResult from results.json, a run folder holding one, or a plugin-written pytest-benchmark file.

    Raises ConfigError (one line naming the file) when it is missing, not JSON, or not a solbench run: the
    run is validated against the shipped schema (solbench.schemas, run.schema.json) first, so a file of the
    wrong shape is reported with the place that is wrong, never as a traceback later.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    try:
        doc = json.loads(path.read_text())
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read results: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: not a solbench results file (top level is not an object)")
    try:
        run = benchmark_run_doc(doc, str(path)) if is_benchmark_doc(doc) else doc
    except (TypeError, KeyError, ValueError, AttributeError) as exc:
        raise ConfigError(f"{path}: a pytest-benchmark file whose solbench data is malformed ({exc!r})") from None
    if run.get("schema") != SCHEMA:
        raise ConfigError(f"{path}: unsupported results schema {run.get('schema')!r}; this solbench reads {SCHEMA!r} "
                          "(a results.json written by `solbench run`)")
    schemas.validate(run, "run", str(path))
    try:
        return RunResult.from_dict(run)
    except (SolbenchError, TypeError, KeyError, ValueError, AttributeError) as exc:  # an invariant the schema cannot say
        raise ConfigError(f"{path}: not a valid solbench results file: {exc}") from None


def is_benchmark_doc(doc: dict) -> bool:
    """True for a pytest-benchmark storage document (saved run or --benchmark-json output)."""
    return isinstance(doc.get("benchmarks"), list) and "machine_info" in doc


def benchmark_run_doc(doc: dict, source: str = "pytest-benchmark file") -> dict:
    """The results.json document the solbench plugin stored in a pytest-benchmark document."""
    header = (doc.get("machine_info") or {}).get(MACHINE_KEY)
    if not isinstance(header, dict):
        raise ConfigError(f"{source}: a pytest-benchmark file without solbench data "
                          "(only runs saved by `pytest --solbench-kernel ... --benchmark-autosave` can serve as BASE)")
    by_id = {}
    for entry in doc["benchmarks"]:
        outcome = (entry.get("extra_info") or {}).get(OUTCOME_KEY)
        if outcome is not None:
            by_id[outcome["scenario_id"]] = outcome
    for outcome in header.get("untimed", ()):
        by_id[outcome["scenario_id"]] = outcome
    order = header.get("order") or list(by_id)
    run = dict(header.get("run") or {})
    run["outcomes"] = [by_id[sid] for sid in order if sid in by_id]
    return run


def _stats_seconds(samples_ms: tuple[float, ...]) -> dict:
    """pytest-benchmark's per-benchmark stats block (seconds), raw data included."""
    from pytest_benchmark.stats import Stats

    stats = Stats()
    for x in samples_ms:
        stats.update(x / 1e3)
    out = stats.as_dict()
    out["data"] = list(stats.data)
    out["iterations"] = 1
    return out


def benchmark_entries(result: RunResult) -> list[dict]:
    """One pytest-benchmark entry per scenario with a candidate timing (needs pytest-benchmark)."""
    entries = []
    for o in result.outcomes:
        m = o.measurements.get("candidate")
        if m is None:
            continue
        entries.append({
            "group": f"solbench {result.suite}",
            "name": o.scenario_id,
            "fullname": f"solbench[{result.suite}]::{o.scenario_id}",
            "params": None,
            "param": None,
            "extra_info": {OUTCOME_KEY: o.to_dict(), "status": o.status.value},
            "options": {"timer": m.method, "disable_gc": False, "warmup": True},
            "stats": _stats_seconds(m.samples_ms),
        })
    return entries


def machine_info_entry(result: RunResult) -> dict:
    """What goes under machine_info['solbench']: the run header, suite order, untimed outcomes."""
    run = result.to_dict()
    run.pop("outcomes")
    return {
        "run": run,
        "order": [o.scenario_id for o in result.outcomes],
        "untimed": [o.to_dict() for o in result.outcomes if "candidate" not in o.measurements],
    }


def add_to_benchmark_doc(doc: dict, result: RunResult) -> dict:
    """Add `result` to a pytest-benchmark document in place (and return it)."""
    doc.setdefault("machine_info", {})[MACHINE_KEY] = machine_info_entry(result)
    doc.setdefault("benchmarks", []).extend(benchmark_entries(result))
    return doc
