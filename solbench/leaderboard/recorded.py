"""The boards of the recorded baseline runs: what `solbench leaderboard show` ranks where no store exists.

Each recorded run (`baselines/<arch>/<suite>[+TAG].json`, shipped with solbench) timed the seed as its
candidate beside baseline libraries. The seed and every library it timed become entries, as
`solbench leaderboard add RUN --impl NAME` would make them; nothing is stored, so a fresh clone or a
wheel shows the same boards as the committed `reports/leaderboard-h200/`. A library timed in several
runs of one suite enters once, from the run judged under this solbench's error budget and timing the most
libraries (the one the denominators come from, see rank.choose_baseline_run); a library a run timed enters
even where it declined every scenario (the board says why). A library is named as its adapter is today: a
run recorded before vllm-fa3 existed calls fa3-fwd 'fa3' (solbench.baselines.RENAMED); its entry is 'fa3-fwd'.
"""

from __future__ import annotations

from itertools import groupby

from solbench.baselines import current_name
from solbench.core.model import ERROR_BUDGET, RunResult
from solbench.leaderboard.entry import CANDIDATE, Entry, gpu_model
from solbench.leaderboard.denominators import NOT_BASELINES, baseline_names, seed_impl

AUTHOR = "solbench recorded run"
SEED_ENTRY = "seed"
"""Name of the entry made from a recorded run's candidate, the shipped seed kernel."""


def recorded_entries(runs: list[RunResult]) -> list[Entry]:
    """The seed and each library of the recorded runs as entries, per board in a fixed order."""
    def board(run: RunResult) -> tuple[str, str, str]:
        return run.suite, run.arch, gpu_model(run.environment, run.arch)

    ordered = sorted(runs, key=lambda r: (board(r), r.error_budget != ERROR_BUDGET, -len(baseline_names(r)),
                                          r.run_id))
    entries = []
    for _, group in groupby(ordered, key=board):
        taken: set[str] = set()
        for i, run in enumerate(group):
            when = str(run.environment.get("collected_at", ""))
            if i == 0 and seed_impl(run) == CANDIDATE:
                entries.append(Entry.from_result(run, CANDIDATE, SEED_ENTRY, AUTHOR, when))
            named = {n for o in run.outcomes for n in (*o.measurements, *o.comparators)}  # declined ones too
            for impl in sorted(named - set(NOT_BASELINES) - taken):
                entries.append(Entry.from_result(run, impl, current_name(impl), AUTHOR, when))
                taken.add(impl)
    return entries
