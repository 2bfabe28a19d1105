"""The committed H200 records as test inputs: the hopper run of the seed with six libraries
(baselines/h200/hopper-d128.json) and leaderboard boards built from the recorded runs the way
benchmarks/build_leaderboard.sh builds the shipped page (the seed and every library as entries)."""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINES = ROOT / "baselines"
HOPPER_RUN = BASELINES / "h200" / "hopper-d128.json"


@functools.lru_cache(maxsize=None)
def recorded_boards(suites: tuple[str, ...] = ("hopper-d128", "real")):
    """Boards of the suites recorded in baselines/h200/<suite>.json on the H200 (built once per session: ~4 s a
    suite). hopper-d128.json was recorded as `hopper`, the grid's name before the new grids (solbench.core.model.RENAMED_SUITES)."""
    from solbench import __version__
    from solbench.core.suites import load_suite
    from solbench.leaderboard.rank import build_boards
    from solbench.leaderboard.store import Store, load_baseline_runs

    with tempfile.TemporaryDirectory() as scratch, Store(Path(scratch) / "board.sqlite") as store:
        for suite in suites:
            run = BASELINES / "h200" / f"{suite}.json"
            store.add_result(run, "candidate", "seed", "solbench recorded run")
            added = set()
            for path in [run, *sorted(run.parent.glob(f"{suite}+*.json"))]:
                data = json.loads(path.read_text())
                for impl in sorted({k for o in data["outcomes"] for k in o["measurements"]} - {"candidate"} - added):
                    store.add_result(path, impl, impl, "solbench recorded run")
                    added.add(impl)
        entries = store.entries(None, None)
    runs = load_baseline_runs(BASELINES, {"h200"})
    return build_boards(entries, runs, {e.suite: load_suite(e.suite).hash for e in entries}, __version__)
