"""Leaderboard coverage rules (solbench/leaderboard/rank.py): a library is ranked on what it claims, and only
when it supports at least half of the board's scored scenarios (narrower ones are listed apart as too narrow
to rank); the headline is over the scenarios every ranked entry supports; the coverage-weighted view counts a
scenario an entry does not support at the fastest *other* library's time, the seed's only where none ran it. Synthetic
recorded runs (the seed as candidate, libraries as comparators) with chosen times; no GPU needed.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from solbench import __version__
from solbench.core.model import Measurement, Outcome, RunResult, Status
from solbench.core.stats import geomean
from solbench.leaderboard import rank
from solbench.leaderboard.entry import Entry
from solbench.leaderboard.rank import build_boards
from synthetic_runs import ERROR, run, scenario_ids

HASH = "a" * 64
DECLINED = {"status": "skipped", "reason": "not supported: sinks"}


def samples(ms: float) -> tuple[float, ...]:
    """Six samples within +-0.1 % of `ms`: intervals narrow enough to separate different speeds."""
    return tuple(ms * (1 + d) for d in (-0.001, -0.0005, 0.0, 0.0, 0.0005, 0.001))


def recorded(seed_ms: list[float], libraries: dict[str, list], run_id: str = "rec",
             wrong: dict | None = None) -> RunResult:
    """A recorded run: the seed as candidate at `seed_ms`, each library at its times (None: declines the
    scenario); `wrong` = {library: scenario index} marks one check failed."""
    outcomes = []
    for i, sid in enumerate(scenario_ids(len(seed_ms))):
        ms = {"candidate": Measurement("candidate", samples(seed_ms[i]), "cuda_events")}
        comparators = {}
        for name, times in libraries.items():
            if times[i] is None:
                comparators[name] = DECLINED
            elif (wrong or {}).get(name) == i:
                comparators[name] = {"status": "mismatch", "reason": "planted"}
            else:
                ms[name] = Measurement(name, samples(times[i]), "cuda_events")
                comparators[name] = {"status": "passed", "reason": ""}
        outcomes.append(Outcome(sid, {}, Status.PASSED, error=ERROR, measurements=ms, comparators=comparators))
    result = run(outcomes, run_id=run_id, suite_hash=HASH)
    return replace(result, candidate={"name": "seed_attention.cu", "implementations": {"candidate": "seed", **{
        n: n for n in libraries}}}, environment={**result.environment, "solbench_version": __version__})


def board(*runs: RunResult, entries: list[tuple[RunResult, str]] | None = None):
    """The board of every library of `runs` and the seed of the first (or just `entries`)."""
    entries = entries or [(runs[0], "candidate")] + [(r, n) for r in runs for n in r.candidate["implementations"]
                                                    if n != "candidate"]
    [b] = build_boards([Entry.from_result(r, impl, "seed" if impl == "candidate" else impl) for r, impl in entries],
                       list(runs), {"smoke": HASH}, __version__)
    return b, {s.entry.name: s for s in b.standings}


def test_a_library_covering_nearly_everything_never_ranks_behind_one_ten_times_slower():
    # wide runs 8 of 10 scenarios at 1 ms; slow runs all 10 at 10 ms; on wide's two gaps the seed takes 1e7 ms.
    seed = [100.0] * 8 + [1e7] * 2
    b, st = board(recorded(seed, {"wide": [1.0] * 8 + [None] * 2, "slow": [10.0] * 10}))
    wide, slow = st["wide"], st["slow"]
    # the old rule (gaps at the seed's time) put wide behind slow: that is the ranking this rule replaces
    old = geomean([r.speedup or r.denominator_ms / seed[i] for i, r in enumerate(wide.scenarios)])
    assert old < slow.weighted.score
    assert [s.entry.name for s in b.ranked] == ["wide", "slow", "seed"] and (wide.rank, slow.rank) == (1, 2)
    assert wide.score == pytest.approx(1.0, rel=1e-3) and slow.score == pytest.approx(0.1, rel=1e-3)
    assert (wide.weighted_rank, slow.weighted_rank) == (1, 2)
    assert wide.weighted.score == pytest.approx(1.0, rel=1e-3)  # its gaps at slow's time, the denominator there
    assert (wide.claims, wide.scored, slow.claims) == (8, 10, 10) and len(b.common) == 8


def test_the_headline_is_over_the_common_set_and_says_how_many():
    # a covers 0-5, b covers 2-9: the common set is 2-5; a is faster there, b elsewhere
    a = [1.0] * 6 + [None] * 4
    bb = [None] * 2 + [2.0] * 4 + [0.5] * 4
    brd, st = board(recorded([50.0] * 10, {"a": a, "b": bb}))
    assert brd.common == tuple(scenario_ids(10)[2:6]) and brd.to_dict()["common_scenarios"] == 4
    assert st["a"].score == pytest.approx(1.0, rel=1e-3)  # the denominator is a there: the faster one
    assert st["b"].score == pytest.approx(0.5, rel=1e-3)
    assert [s.entry.name for s in brd.ranked] == ["a", "b", "seed"]
    assert st["a"].own.scenarios == 6 and st["b"].own.scenarios == 8 and st["seed"].own.scenarios == 10


def test_no_common_scenario_leaves_the_headline_empty_and_the_weighted_view_ranks():
    brd, st = board(recorded([50.0] * 4, {"left": [1.0, 1.0, None, None], "right": [None, None, 2.0, 2.0]}))
    assert brd.common == () and all(s.rank is None and s.score is None for s in brd.ranked)
    assert [(s.entry.name, s.weighted_rank) for s in brd.ranked] == [("left", 1), ("right", 1), ("seed", 3)]
    assert st["left"].weighted.score == pytest.approx(1.0, rel=1e-3)  # right is the denominator on its own two
    assert st["left"].weighted_tied and st["right"].weighted_tied


def test_the_fallback_is_the_fastest_other_library_then_the_seed():
    # scenario 0: x declines in its own run, though the recorded run timed x there: x never falls back on itself
    main = recorded([100.0] * 3, {"x": [1.0, 1.0, 1.0], "y": [4.0, 2.0, None], "z": [8.0, 8.0, None]})
    own_x = recorded([100.0] * 3, {"x": [None, 1.0, 1.0]}, run_id="rec+x")
    brd, st = board(main, own_x, entries=[(main, "candidate"), (own_x, "x"), (main, "y"), (main, "z")])
    x = {r.scenario_id: r for r in st["x"].scenarios}
    y = {r.scenario_id: r for r in st["y"].scenarios}
    z = {r.scenario_id: r for r in st["z"].scenarios}
    ids = scenario_ids(3)
    assert (x[ids[0]].fallback_impl, x[ids[0]].fallback_ms) == ("y", pytest.approx(4.0, rel=1e-3))
    assert (y[ids[2]].fallback_impl, z[ids[2]].fallback_impl) == ("x", "x")
    assert st["z"].fallback == (ids[2],)
    # where no other library ran a scenario, the seed's time stands in
    alone = recorded([100.0] * 2, {"only": [1.0, None]})
    _, st = board(alone)
    row = st["only"].scenarios[1]
    assert (row.fallback_impl, row.fallback_ms) == ("seed", pytest.approx(100.0, rel=1e-3))


def test_equal_libraries_share_both_ranks():
    _, st = board(recorded([50.0] * 4, {"p": [1.0] * 4, "q": [1.0] * 4, "r": [3.0] * 4}))
    assert (st["p"].rank, st["p"].tied, st["q"].rank, st["q"].tied) == (1, True, 1, True)
    assert (st["p"].weighted_rank, st["q"].weighted_rank, st["r"].weighted_rank) == (1, 1, 3)
    assert st["r"].rank == 3 and not st["r"].tied


def test_wrong_entries_stay_unranked_and_do_not_shrink_the_common_set():
    # cheat is fastest and covers two scenarios only, but fails one check: it neither ranks nor sets the common set
    brd, st = board(recorded([50.0] * 4, {"cheat": [0.1, None, None, 0.1], "fair": [1.0] * 4, "idle": [None] * 4},
                             wrong={"cheat": 3}))
    assert st["cheat"].rank is None and st["cheat"].weighted is None and st["cheat"].score is None
    assert "wrong on 1 scenario(s)" in st["cheat"].reason and st["cheat"] in brd.apart
    assert st["idle"].narrow
    assert st["idle"].reason == "covers 0 of 4 scored scenarios; declines every one: not supported: sinks"
    assert brd.common == tuple(scenario_ids(4)) and [s.entry.name for s in brd.ranked] == ["fair", "seed"]


NARROW_BOARD = {"broad": [1.0] * 7 + [8.0, None, None], "narrow": [None] * 7 + [5.0, None, None],
                "helper": [None] * 7 + [1.0] * 3}
"""broad runs 8 of 10 scenarios, fast on 7 (the denominator there) and slow on 7; narrow runs 7 alone, five
times slower than helper (the denominator there and on 8, 9, which only helper runs)."""


def test_an_entry_supporting_less_than_half_is_listed_apart_not_ranked_above_a_broad_fast_one(monkeypatch):
    runs = recorded([100.0] * 10, NARROW_BOARD)
    monkeypatch.setattr(rank, "MIN_RANKED_COVERAGE", 0.0)  # every entry ranked: the rule this replaces
    before, old = board(runs)
    assert before.common == (scenario_ids(10)[7],)  # the one scenario narrow runs
    assert old["narrow"].rank < old["broad"].rank  # 0.2x vs broad's 0.125x there
    assert old["narrow"].weighted_rank < old["broad"].weighted_rank  # its nine gaps at the best library's time
    monkeypatch.undo()
    b, st = board(runs)
    narrow, broad = st["narrow"], st["broad"]
    assert [s.entry.name for s in b.ranked] == ["broad", "seed"] and (broad.rank, broad.weighted_rank) == (1, 1)
    assert [s.entry.name for s in b.narrow] == ["helper", "narrow"] and not b.apart
    assert narrow.reason == "covers 1 of 10 scored scenarios; ranking needs at least half"
    assert (narrow.rank, narrow.score, narrow.weighted, narrow.weighted_rank) == (None, None, None, None)
    assert narrow.own.score == pytest.approx(0.2, rel=1e-3) and (narrow.claims, narrow.scored) == (1, 10)
    assert b.common == tuple(scenario_ids(10)[:8])
    # a library too narrow to rank still stands in for the gaps of the ranked ones
    assert {r.fallback_impl for r in broad.scenarios if r.fallback} == {"helper"}
    assert broad.weighted.score == pytest.approx(0.125 ** 0.1, rel=1e-3)
    d = b.to_dict()
    assert [s["entry"]["name"] for s in d["narrow"]] == ["helper", "narrow"] and d["min_ranked_coverage"] == 0.5
    assert [s["entry"]["name"] for s in d["ranked"]] == ["broad", "seed"] and d["apart"] == []


@pytest.mark.parametrize("count, needed", [(4, 2), (5, 3)])
def test_exactly_half_ranks_one_fewer_is_too_narrow(count, needed):
    half = [1.0] * needed + [None] * (count - needed)
    fewer = [None] * (count - needed + 1) + [1.0] * (needed - 1)
    b, st = board(recorded([50.0] * count, {"half": half, "fewer": fewer}))
    assert st["half"].rank == 1 and not st["half"].reason and (st["half"].claims, st["half"].scored) == (needed, count)
    assert st["fewer"].narrow and st["fewer"].rank is None and b.narrow == [st["fewer"]]
    assert st["fewer"].reason == f"covers {needed - 1} of {count} scored scenarios; ranking needs at least half"


def test_the_common_set_is_over_the_ranked_entries_only():
    # a runs 0-3, b 2-5: the common set is 2-3; tiny runs 0 alone and would empty it
    ids = scenario_ids(6)
    brd, st = board(recorded([50.0] * 6, {"a": [1.0] * 4 + [None] * 2, "b": [None] * 2 + [1.0] * 4,
                                          "tiny": [2.0] + [None] * 5}))
    assert brd.common == tuple(ids[2:4]) and [s.entry.name for s in brd.narrow] == ["tiny"]
    assert [s.entry.name for s in brd.ranked] == ["a", "b", "seed"] and st["a"].score == pytest.approx(1.0, rel=1e-3)


def test_a_recorded_library_that_declines_every_scenario_is_on_the_board_with_why(capsys):
    """Every library a recorded run timed is on its board, even one that claims none of it: on `rtx3080-mask`
    (custom bitmasks) vllm-fa3 is listed apart with its adapter's reason, not left out."""
    from solbench.front import cli

    argv = ["leaderboard", "show", "--recorded", "--arch", "h200", "--suite", "rtx3080-mask", "--markdown"]
    assert cli.main(argv) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| vllm-fa3 |"))
    assert "covers 0 of 15 scored scenarios; declines every one: not supported: no custom bitmask" in row


def test_entries_judged_under_another_error_budget_are_not_ranked(capsys):
    """A looser budget passes what a tighter one fails, so a board ranks only runs judged under its baseline
    run's budget (as `solbench check` refuses two runs of different budgets), and that run is one judged under
    this solbench's budget where there is one: on the recorded `fa3-h2h`, the libraries of the run recorded
    before budget ids are listed apart, vllm-fa3's own run (today's budget) gives the denominators."""
    from solbench.front import cli

    import json

    assert cli.main(["leaderboard", "show", "--recorded", "--arch", "h200", "--suite", "fa3-h2h", "--json"]) == 0
    (board,) = json.loads(capsys.readouterr().out)["boards"]
    assert board["baseline_run_id"] == "rec-fa3-h2h+vllm"
    assert [(s["entry"]["name"], s["rank"]) for s in board["ranked"]][0] == ("vllm-fa3", 1)
    apart = {s["entry"]["name"]: s["reason"] for s in board["apart"]}
    assert "judged under error budget 'seed-x8+atol/1', the board's baselines under 'seed-emulated/2'" in apart["fa4"]
