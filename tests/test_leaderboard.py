"""Leaderboard: store with provenance, fair ranking against a fixed denominator, ties, entries refused a
rank with the reason, boards per GPU, and the CLI round trip. Synthetic runs of the real `smoke` suite
(its shipped hash is the reference) with h200 bounds; no GPU needed.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from solbench import __version__
from solbench.front import cli
from solbench.core.errors import ConfigError
from solbench.leaderboard.entry import Entry
from solbench.leaderboard.denominators import choose_baseline_run, denominators
from solbench.leaderboard.rank import build_boards
from solbench.leaderboard.recorded import recorded_entries
from solbench.leaderboard.store import Store
from solbench.core.model import ErrorStats, Measurement, Outcome, RunResult, Status
from solbench.core.roofline import bound, load_arch
from solbench.core.suites import load_suite

ROOT = Path(__file__).resolve().parents[1]
SUITE = load_suite("smoke")
IDS = [sc.id for sc in SUITE.scenarios]
BOUNDS = {sc.id: bound(sc, load_arch("h200")).to_dict() for sc in SUITE.scenarios}
H200 = "NVIDIA H200"
ERROR = ErrorStats(max_abs=1e-3, mean_abs=1e-4, frac_outside_tol=0.0, atol=1e-2, rtol=1e-2)
BASE = {"fa3": 1.0, "fa4": 1.1, "sdpa": 2.0, "seed": 10.0}
"""The recorded baseline run: time factors over 4x the bound (fa3 fastest)."""


def make_run(run_id: str, factors: dict[str, float], seed: int = 0, suite_hash: str = SUITE.hash, gpu: str = H200,
             version: str = __version__, arch: str = "h200", wrong: dict | None = None, unsupported: dict | None = None,
             noise: float = 0.01, n: int = 30, ids=IDS, policy: dict | None = None) -> RunResult:
    """A run: per impl a time factor; wrong = {scenario index: status} for the candidate;
    unsupported = {impl: scenario indices it skips}."""
    rng = np.random.default_rng(seed)
    outcomes = []
    for i, sc in enumerate(SUITE.scenarios[: len(ids)]):
        t0 = BOUNDS[sc.id]["bound_ms"] * 4
        skipped = {name for name, idx in (unsupported or {}).items() if i in idx}
        timed = {k: f for k, f in factors.items() if k not in skipped}
        ms = {k: Measurement(k, tuple(t0 * f * rng.lognormal(0, noise, n)), "cuda_events") for k, f in timed.items()}
        comparators = {k: {"status": "passed", "reason": ""} for k in timed if k != "candidate"}
        comparators.update({k: {"status": "skipped", "reason": "unsupported"} for k in skipped})
        status = Status((wrong or {}).get(i, "passed"))
        if "candidate" not in factors:
            status = Status.SKIPPED
        reason = "" if status is Status.PASSED else f"planted {status.value}"
        outcomes.append(Outcome(sc.id, sc.to_dict(), status, reason, ERROR if status is Status.PASSED else None,
                                ms, {}, comparators, BOUNDS[sc.id]))
    env = {"device": "cuda", "gpu": {"name": gpu}, "solbench_version": version, "versions": {"fa3-fwd": "0.0.3", "torch": "2.13.0"}}
    cand = {"name": f"{run_id}.cu", "kind": "cu", "sha256": f"{seed:02d}" * 32, "build_flags": ["-O3"],
            "implementations": {k: k for k in factors}}
    policy = {"cold_l2": True, "rotate_inputs": 4, "method": "cuda_events"} if policy is None else policy
    return RunResult(run_id, "smoke", suite_hash, cand, arch, env, policy, tuple(outcomes), True, len(SUITE.scenarios))


def baseline_run(**kw) -> RunResult:
    """fa3 cannot run scenario 2; no library runs scenario 3 (the seed is its denominator)."""
    kw.setdefault("unsupported", {"fa3": {2, 3}, "fa4": {3}, "sdpa": {3}})
    return make_run("20260101-000000-baselines-smoke", BASE, seed=99, **kw)


def entry(name, factor, seed, seed_factor=10.0, **kw) -> Entry:
    return Entry.from_result(make_run(name, {"candidate": factor, "seed": seed_factor}, seed=seed, **kw), name=name)


def boards(entries, runs=None):
    runs = [baseline_run()] if runs is None else runs
    return build_boards(entries, runs, {"smoke": SUITE.hash}, __version__)


def by_name(board):
    return {s.entry.name: s for s in board.standings}


def test_denominator_is_best_passing_baseline_else_seed():
    d = denominators(baseline_run())
    assert [d[i].impl for i in IDS[:4]] == ["fa3", "fa3", "fa4", "seed"]
    assert set(d) == set(IDS)
    assert d[IDS[0]].time_ms == pytest.approx(BOUNDS[IDS[0]]["bound_ms"] * 4, rel=0.02)


def test_baseline_run_choice_matches_hash_gpu_major_then_newest_complete():
    old, new = baseline_run(), make_run("20260201-000000-b", BASE)
    other_gpu = make_run("20260301-000000-b", BASE, gpu="NVIDIA H100")
    edited = make_run("20260401-000000-b", BASE, suite_hash="e" * 64)
    runs = [old, new, other_gpu, edited]
    assert choose_baseline_run(runs, SUITE.hash, H200, "0") is new
    assert choose_baseline_run(runs, SUITE.hash, "NVIDIA B200", "0") is None
    # A newer run of one more library beside the seed adds entries; the run of every library stays the denominator.
    extra = make_run("20260501-000000-flashinfer", {"candidate": 10.0, "flashinfer-fa3": 0.9})
    extra = replace(extra, candidate={**extra.candidate, "name": "seed_attention.cu"})
    assert choose_baseline_run(runs + [extra], SUITE.hash, H200, "0") is new
    incomplete = replace(make_run("20260601-000000-b", BASE), complete=False)
    assert choose_baseline_run(runs + [extra, incomplete], SUITE.hash, H200, "0") is new
    assert choose_baseline_run([extra, incomplete], SUITE.hash, H200, "0") is incomplete


def test_ranking_order_scores_and_sol():
    [b] = boards([entry("slow", 1.5, 1), entry("fast", 0.8, 2), entry("mid", 0.9, 3)])
    assert [s.entry.name for s in b.ranked] == ["fast", "mid", "slow"]
    assert [s.rank for s in b.ranked] == [1, 2, 3] and not any(s.tied for s in b.ranked)
    fast = b.ranked[0]
    assert fast.lo < fast.score < fast.hi
    # the seed is scenario 3's denominator (10x), fa4 scenario 2's (1.1x): geomean over the ten scenarios
    expected = (1 / 0.8) ** 8 * (1.1 / 0.8) * (10 / 0.8)
    assert fast.score == pytest.approx(expected ** 0.1, rel=0.02)
    assert fast.sol_pct == pytest.approx(100 / (4 * 0.8), rel=0.02)
    assert abs(fast.drift_pct) < 5  # the entry's run timed the seed, the denominator of scenario 3 only
    assert b.baseline_run_id.startswith("20260101")


def test_drift_falls_back_to_the_seed_where_the_run_did_not_time_the_denominator_library():
    # The entry's run timed no baseline library, and the seed 3 % slower than the recorded run did.
    # Every denominator is a library (none declines a scenario), so only the seed can anchor the drift.
    [b] = boards([entry("drifting", 0.8, 5, seed_factor=10.3), entry("steady", 0.8, 6)],
                 [baseline_run(unsupported={})])
    assert {d.impl for d in b.denominators.values()} == {"fa3"}
    assert by_name(b)["drifting"].drift_pct == pytest.approx(3.0, abs=0.6)
    assert abs(by_name(b)["steady"].drift_pct) < 0.6


def test_overlapping_intervals_share_a_rank():
    [b] = boards([entry("a", 0.9, 1), entry("b", 0.9002, 2), entry("c", 0.7, 3), entry("d", 1.2, 4)])
    ranks = {s.entry.name: (s.rank, s.tied) for s in b.ranked}
    assert ranks["c"] == (1, False)
    assert {ranks["a"], ranks["b"]} == {(2, True)}
    assert ranks["d"] == (4, False)


def test_edited_suite_is_refused_a_rank_with_the_reason():
    [b] = boards([entry("honest", 0.9, 1), entry("edited", 0.5, 2, suite_hash="f" * 64)])
    assert [s.entry.name for s in b.ranked] == ["honest"]
    edited = by_name(b)["edited"]
    assert edited.rank is None and edited.score is None
    assert "suite hash differs" in edited.reason and "edited suite" in edited.reason


def test_entry_timed_with_a_warm_l2_is_refused_a_rank():
    quick = {"cold_l2": False, "rotate_inputs": 1, "method": "cuda_events", "min_rounds": 2}
    [b] = boards([entry("full", 0.9, 1), entry("quick", 0.5, 2, policy=quick)])
    assert [s.entry.name for s in b.ranked] == ["full"]
    reason = by_name(b)["quick"].reason
    assert "timed differently" in reason and "cold_l2 True vs False" in reason


def test_other_major_version_is_listed_apart():
    [b] = boards([entry("old", 0.9, 1, version="9.0.0")])
    assert by_name(b)["old"].rank is None and "solbench 9.0.0" in by_name(b)["old"].reason


def test_wrong_entry_unranked_with_its_scenarios():
    cheat = entry("cheat", 0.2, 5, wrong={1: "mismatch", 6: "faster_than_light"})
    [b] = boards([entry("honest", 0.9, 1), cheat])
    s = by_name(b)["cheat"]
    assert s.rank is None and s.score is None and s.sol_pct is None
    assert s.wrong == (IDS[1], IDS[6])
    assert "wrong on 2 scenario(s)" in s.reason and IDS[1] in s.reason and "faster_than_light" in s.reason


def test_different_gpu_is_its_own_board():
    h100 = entry("h100-run", 0.5, 6, gpu="NVIDIA H100 80GB HBM3", arch="h100")
    out = boards([entry("honest", 0.9, 1), h100])
    assert [(b.gpu_model, [s.entry.name for s in b.standings]) for b in out] == [
        ("NVIDIA H100 80GB HBM3", ["h100-run"]), (H200, ["honest"])]
    assert "no recorded baseline run under baselines/h100/" in out[0].standings[0].reason


def test_baselines_and_seed_are_entries_ranked_on_what_they_claim():
    run = baseline_run()
    es = [Entry.from_result(run, impl) for impl in ("fa3", "fa4", "sdpa", "seed")]
    [b] = boards(es)
    st = by_name(b)
    # fa3 does not support scenarios 2 and 3, fa4 and sdpa not 3: the headline is over the other eight
    assert b.common == (*IDS[:2], *IDS[4:]) and b.to_dict()["common_scenarios"] == 8
    assert [s.entry.name for s in b.ranked] == ["fa3", "fa4", "sdpa", "seed"] and not st["fa3"].reason
    fa3 = st["fa3"]
    assert fa3.score == pytest.approx(1.0, rel=0.02) and st["seed"].score == pytest.approx(0.1, rel=0.02)
    assert (fa3.claims, fa3.scored, fa3.own.scenarios) == (8, 10, 8) and fa3.fallback == (IDS[2], IDS[3])
    # weighted: fa3's scenario 2 at fa4's time (the fastest other library), 3 at the seed's (no library ran it)
    rows = {r.scenario_id: r for r in fa3.scenarios}
    assert (rows[IDS[2]].fallback_impl, rows[IDS[3]].fallback_impl) == ("fa4", "seed")
    assert rows[IDS[2]].speedup is None and rows[IDS[2]].time_ms is None and not rows[IDS[0]].fallback
    assert fa3.weighted.score == pytest.approx(1.0, rel=0.02) and fa3.weighted.scenarios == 10
    assert (fa3.weighted_rank, st["fa4"].weighted_rank) == (1, 2) and st["fa4"].fallback == (IDS[3],)
    assert fa3.to_dict()["fallback"] == [IDS[2], IDS[3]] and fa3.to_dict()["weighted"]["scenarios"] == 10
    assert st["fa3"].entry.library_versions["fa3-fwd"] == "0.0.3" and st["fa3"].entry.source_sha256 == ""
    with pytest.raises(ConfigError, match="never measured"):
        Entry.from_result(run, "flashinfer")


def test_scenarios_not_run_leave_the_entry_unranked_with_its_partial_score():
    [b] = boards([entry("filtered", 1.0, 6, ids=IDS[:8])])
    s = b.standings[0]
    assert s.rank is None and "covers 8 of 10" in s.reason and s.own.scenarios == 8 and s.fallback == ()


def test_a_recorded_run_with_the_seed_as_candidate_gives_the_seed_denominator_and_fallback():
    run = make_run("rec", {"candidate": 10.0, "fa3": 1.0}, unsupported={"fa3": {1}})
    run = type(run)(**{**run.__dict__, "candidate": {**run.candidate, "name": "seed_attention.cu"}})
    d = denominators(run)
    assert d[IDS[0]].impl == "fa3" and d[IDS[1]].impl == "seed"
    assert d[IDS[0]].seed_ms == pytest.approx(10 * d[IDS[0]].time_ms, rel=0.05)


def test_no_baseline_run_means_nothing_ranks():
    [b] = boards([entry("honest", 0.9, 1)], runs=[])
    assert not b.ranked and "no recorded baseline run" in b.standings[0].reason


def test_store_keeps_runs_whole_with_provenance(tmp_path):
    db = tmp_path / "lb.sqlite"
    run = baseline_run()
    with Store(db) as store:
        store.add(Entry.from_result(make_run("k", {"candidate": 0.9}, seed=3), name="k", author="ann"))
        for impl in ("fa3", "seed"):
            store.add(Entry.from_result(run, impl))
        with pytest.raises(ConfigError, match="already exists"):
            store.add(Entry.from_result(run, "seed"))
    with Store(db) as store:
        got = store.entries()
        assert [e.name for e in got] == ["k", "fa3", "seed"]
        k = got[0]
        assert (k.author, k.impl, k.source_sha256, k.build_flags, k.gpu_model, k.solbench_version) == (
            "ann", "candidate", "03" * 32, ("-O3",), H200, __version__)
        assert k.result.outcomes[0].measurements["candidate"].samples_ms == \
            make_run("k", {"candidate": 0.9}, seed=3).outcomes[0].measurements["candidate"].samples_ms
        assert store.entries(arch="b200") == [] and len(store.entries(suite="smoke", arch="h200")) == 3
        assert store.remove("fa3") == 1
        with pytest.raises(ConfigError, match="no entry named"):
            store.remove("fa3")
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA user_version").fetchone()[0] == 1
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 2  # the two baseline entries share one run


def test_store_refuses_foreign_and_newer_files(tmp_path):
    foreign = tmp_path / "other.sqlite"
    sqlite3.connect(foreign).execute("CREATE TABLE t (x)")
    with pytest.raises(ConfigError, match="not a solbench leaderboard"):
        Store(foreign)
    newer = tmp_path / "newer.sqlite"
    sqlite3.connect(newer).execute("PRAGMA user_version = 99")
    with pytest.raises(ConfigError, match="newer"):
        Store(newer)
    with pytest.raises(ConfigError, match="no leaderboard here"):
        Store(tmp_path / "absent.sqlite", create=False)


def write_run(folder, run: RunResult):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps(run.to_dict()))
    return str(folder / "results.json")


@pytest.fixture
def workspace(tmp_path):
    """A db path, a baselines dir with one recorded h200 run, and a results file per entry."""
    bdir = tmp_path / "baselines"
    base = write_run(bdir / "h200" / "smoke", baseline_run())
    files = {"base": base,
             "fast": write_run(tmp_path / "r" / "fast", make_run("fast", {"candidate": 0.8, "seed": 10}, 1)),
             "slow": write_run(tmp_path / "r" / "slow", make_run("slow", {"candidate": 1.3, "seed": 10}, 2)),
             "edited": write_run(tmp_path / "r" / "edited", make_run("edited", {"candidate": 0.5}, 3, suite_hash="d" * 64)),
             "cheat": write_run(tmp_path / "r" / "cheat", make_run("cheat", {"candidate": 0.1}, 4, wrong={4: "unwritten"}))}
    common = ["--db", str(tmp_path / "lb.sqlite"), "--baselines-dir", str(bdir)]
    return files, common, tmp_path


def test_cli_round_trip(workspace, capsys):
    files, common, tmp = workspace
    lb = lambda *a: cli.main(["leaderboard", *a])  # noqa: E731
    assert lb("add", files["fast"], "--name", "fast", "--author", "ann", *common) == 0
    assert "rank 1 of 1 on the 10 common scenarios, rank 1 coverage-weighted" in capsys.readouterr().out
    assert lb("add", files["slow"], *common) == 0  # default name: the candidate's file stem
    assert lb("add", files["base"], "--impl", "seed", *common) == 0
    assert lb("add", files["edited"], "--name", "edited", *common) == 0
    out = capsys.readouterr().out
    assert "not ranked: suite hash differs" in out and "edited suite" in out
    assert lb("add", files["cheat"], "--name", "cheat", *common) == 0
    assert f"wrong on 1 scenario(s): {IDS[4]} (unwritten" in capsys.readouterr().out

    assert lb("show", "--suite", "smoke", "--arch", "h200", "--json", *common) == 0
    [board] = json.loads(capsys.readouterr().out)["boards"]
    assert [(s["entry"]["name"], s["rank"]) for s in board["ranked"]] == [("fast", 1), ("slow", 2), ("seed", 3)]
    assert board["ranked"][0]["entry"]["author"] == "ann" and board["ranked"][0]["lo"] < board["ranked"][0]["hi"]
    assert {s["entry"]["name"] for s in board["apart"]} == {"edited", "cheat"}

    assert lb("show", *common) == 0
    text = capsys.readouterr().out
    assert "suite smoke on NVIDIA H200" in text and "not ranked:" in text and "edited suite" in text

    assert lb("export", "--html", str(tmp / "site"), *common) == 0
    page = (tmp / "site" / "index.html").read_text()
    assert 'id="ranking-0"' in page and 'id="roofline-0"' in page and "data:image/png;base64," in page
    assert "http://" not in page and "https://" not in page  # self-contained: nothing fetched

    assert lb("remove", "slow", "--db", common[1]) == 0
    assert "removed 1 entry named slow" in capsys.readouterr().out
    assert lb("show", "--json", *common) == 0
    assert [s["entry"]["name"] for s in json.loads(capsys.readouterr().out)["boards"][0]["ranked"]] == ["fast", "seed"]


@pytest.mark.parametrize("argv, message", [
    (["add", "missing.json"], "cannot read results"),
    (["add", "{fast}", "--impl", "flashinfer"], "never measured it"),
    (["add", "{fast}", "--name", "fast"], "already exists"),
    (["remove", "nobody"], "no entry named 'nobody'"),
])
def test_cli_bad_input_is_one_line_and_nonzero(workspace, capsys, argv, message):
    files, common, tmp = workspace
    assert cli.main(["leaderboard", "add", files["fast"], "--name", "fast", *common]) == 0
    capsys.readouterr()
    argv = [a.format(**files) for a in argv]
    db = common[:2]
    assert cli.main(["leaderboard", *argv, *db]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err and err.startswith("solbench leaderboard: error:")


def test_cli_show_of_a_named_store_that_is_not_there_is_an_error(tmp_path, capsys):
    assert cli.main(["leaderboard", "show", "--db", str(tmp_path / "none.sqlite")]) == 2
    assert "no leaderboard here" in capsys.readouterr().err


def as_seed_run(run: RunResult) -> RunResult:
    """A recorded run: its candidate is the shipped seed kernel."""
    return replace(run, candidate={**run.candidate, "name": "seed_attention.cu"})


def test_recorded_entries_take_each_library_once_from_the_run_timing_most():
    # a recorded run's 'fa3' is the fa3-fwd adapter (solbench.baselines.RENAMED): the entry is named so
    most = as_seed_run(make_run("rec-smoke", {"candidate": 10.0, "fa3": 1.0, "fa4": 1.1}, 1))
    more = as_seed_run(make_run("rec-smoke+more", {"candidate": 10.0, "fa3": 0.5, "flex": 2.0}, 2))
    entries = recorded_entries([more, most])
    assert [(e.name, e.impl, e.run_id) for e in entries] == [
        ("seed", "candidate", "rec-smoke"), ("fa3-fwd", "fa3", "rec-smoke"), ("fa4", "fa4", "rec-smoke"),
        ("flex", "flex", "rec-smoke+more")]
    assert {e.author for e in entries} == {"solbench recorded run"}


def without_dates(boards: list[dict]) -> list[dict]:
    for board in boards:
        for standing in board["ranked"] + board["narrow"] + board["apart"]:
            standing["entry"].pop("added_utc")
    return boards


@pytest.mark.slow
def test_fresh_clone_shows_the_committed_h200_boards(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # no reports/leaderboard.sqlite here
    assert cli.main(["leaderboard", "show", "--json"]) == 0
    out, err = capsys.readouterr()
    assert "no leaderboard at reports/leaderboard.sqlite: ranking the recorded baseline runs" in err
    committed = json.loads((ROOT / "reports" / "leaderboard-h200" / "leaderboard.json").read_text())
    committed = committed["boards"] if isinstance(committed, dict) else committed  # recorded before the schema tag
    assert without_dates(json.loads(out)["boards"]) == without_dates(committed)
    assert cli.main(["leaderboard", "export", "--suite", "real", "--html", "site"]) == 0
    page = (tmp_path / "site" / "index.html").read_text()
    assert "suite real on NVIDIA H200" in page and "flashinfer-fa3" in page
    assert not (tmp_path / "reports").exists()


def test_help_and_docstring_examples_parse(capsys):
    import shlex

    import solbench.commands.leaderboard as command

    with pytest.raises(SystemExit) as exit_info:
        cli.main(["leaderboard", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert all(f"    {action} " in out for action in ("add", "show", "export", "remove"))
    parser = cli.build_parser()
    examples = [line.split("#")[0].strip() for line in command.EXAMPLES.splitlines() if line.strip().startswith("solbench ")]
    assert len(examples) == 7
    for line in examples:
        args = parser.parse_args(shlex.split(line)[1:])
        assert args.command == "leaderboard" and args.action in ("add", "show", "export", "remove")


def test_the_supervisor_running_out_of_memory_is_not_the_entry_being_wrong():
    """A scenario the supervisor could not evaluate (its inputs did not fit beside the workers) leaves the
    entry's row untimed: unranked where that scenario is scored, as any scenario not run; an implementation's
    own runtime error stays `wrong`."""
    from solbench.core.model import SUPERVISOR_OUT_OF_MEMORY

    def failed_on_1(reason):
        run = make_run("oom", {"candidate": 0.9, "seed": 10.0}, seed=3, wrong={1: "runtime_error"})
        o = run.outcomes[1]
        o = replace(o, reason=reason, measurements={})
        return Entry.from_result(replace(run, outcomes=(run.outcomes[0], o, *run.outcomes[2:])), name="oom")

    [b] = boards([failed_on_1(f"{SUPERVISOR_OUT_OF_MEMORY}: OutOfMemoryError: CUDA out of memory")])
    s = b.standings[0]
    assert s.rank is None and s.wrong == () and "covers 9 of 10" in s.reason and IDS[1] in s.reason
    [b] = boards([failed_on_1("worker died (exit code -11)")])
    assert b.standings[0].wrong == (IDS[1],) and "wrong on 1 scenario(s)" in b.standings[0].reason
