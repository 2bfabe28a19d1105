"""The trust boundary on the GPU: each CUDA cheat of reference_kernels/adversarial that names an
`expect:` status gets exactly that status on every smoke scenario, decided in the supervisor; each memory
bug that passes by luck (`expect with --sanitize:`) passes a plain run and is caught by `--sanitize`,
while the seed is clean under all four tools."""

import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from solbench.core.policy import QUICK  # noqa: E402
from solbench.supervisor.runner import RunConfig, run  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]
CORPUS = Path(__file__).resolve().parents[1] / "reference_kernels" / "adversarial"
EXPECTED = {p.name: set(m.group(1).split(" or ")) for p in sorted(CORPUS.glob("*.cu"))
            if (m := re.search(r"^// expect: (\w+(?: or \w+)*)$", p.read_text(), re.M))}
SANITIZED = {p.name: m.group(1) for p in sorted(CORPUS.glob("*.cu"))
             if (m := re.search(r"^// expect with --sanitize: sanitizer_error from (\w+)$", p.read_text(), re.M))}
"""Each memory bug of the corpus -> the compute-sanitizer tool that must report it."""
SEED = CORPUS.parent / "seed_attention.cu"
HONEST = sorted(p.name for p in (CORPUS.parent / "examples").glob("*.cu") if "// expect: passed" in p.read_text())
"""Honest kernels that use what a check might mistake for a cheat (a workspace, a graph, other tiles)."""


KNOWN_ESCAPES: dict[str, str] = {
    "forges_replies.cu": "its constructor owns the runner's reply pipe and reports 0.55 of its times; on smoke's "
                         "short calls that hides less than the supervisor's clock rule can see (README: what is not "
                         "guaranteed)",
    "forges_replies_past_busy.cu": "forges_replies.cu at 0.1, busy_ms left honest: since 2ba16ef the clock "
                                   "check explains a native round by the runner's busy_ms, so no forged factor is "
                                   "unexplained (tests/test_forgery_cpu.py)",
}
"""Cheats that still get past the checks, each with what was seen: the test fails once one is caught, so
the entry is removed then."""


def test_the_cuda_corpus_names_its_expected_statuses():
    assert set(EXPECTED) >= {"replays_by_pointer.cu", "zeros_when_timed.cu", "permutes_inputs.cu", "side_stream.cu",
                             "launches_after_return.cu", "dlopens_cublas.cu", "writes_past_end.cu"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=KNOWN_ESCAPES[n], strict=True))
                                  if n in KNOWN_ESCAPES else n for n in sorted(EXPECTED)])
def test_each_cuda_cheat_gets_its_status(name, tmp_path):
    result = run(RunConfig(candidate=str(CORPUS / name), suite="smoke", baselines=(), policy=QUICK,
                           out_dir=tmp_path, seed=None))
    wrong = [(o.scenario_id, o.status.value, o.reason[:160]) for o in result.outcomes
             if o.status.value not in EXPECTED[name]]
    assert not wrong, wrong


def test_a_runner_that_wakes_itself_while_the_seed_is_timed_is_tampered(tmp_path):
    """wakes_itself.cu: a SIGCONT timer undoes the stop between requests; held while the seed is
    timed, its threads are found awake at its next request, on every scenario."""
    result = run(RunConfig(candidate=str(CORPUS / "wakes_itself.cu"), suite="smoke", baselines=(), policy=QUICK,
                           out_dir=tmp_path, seed=str(SEED), max_scenarios=3))
    got = [(o.status.value, o.reason[:160]) for o in result.outcomes]
    assert all(status == "tampered" and "while they were stopped" in why for status, why in got), got


def test_a_runner_that_wakes_briefly_while_the_seed_is_timed_is_tampered(tmp_path):
    """wakes_briefly.cu: woken by its own timer while held, it launches GPU work and stops itself
    again within microseconds; the threads' run counts show it at its next request, on every scenario."""
    result = run(RunConfig(candidate=str(CORPUS / "wakes_briefly.cu"), suite="smoke", baselines=(), policy=QUICK,
                           out_dir=tmp_path, seed=str(SEED), max_scenarios=3))
    got = [(o.status.value, o.reason[:160]) for o in result.outcomes]
    assert all(status == "tampered" and "while they were stopped" in why for status, why in got), got


def test_the_sanitized_corpus_is_there():
    assert set(SANITIZED) >= {"races_in_shared.cu", "reads_uninitialised.cu", "reads_past_end.cu"}


@pytest.mark.parametrize("name", sorted(SANITIZED))
def test_each_memory_bug_passes_a_plain_run_and_is_caught_by_the_sanitizer(name, tmp_path):
    result = run(RunConfig(candidate=str(CORPUS / name), suite="smoke", baselines=(), policy=QUICK,
                           out_dir=tmp_path, seed=None, max_scenarios=3, sanitize=1))
    sanitized = {f["scenario_id"] for f in result.sanitize}
    assert len(sanitized) == 1 and len(result.sanitize) == 4, result.sanitize
    # caught by the tool made for it, which counted an error (an incomplete or unreadable log is not a catch)
    by_tool = {f["tool"]: f for f in result.sanitize}
    assert (by_tool[SANITIZED[name]]["errors"] or 0) >= 1, by_tool[SANITIZED[name]]
    got = {o.scenario_id: (o.status.value, o.reason[:200]) for o in result.outcomes}
    assert all(got[s][0] == "sanitizer_error" for s in sanitized), got
    assert all(status == "passed" for sid, (status, _) in got.items() if sid not in sanitized), got


def test_the_seed_is_clean_under_every_tool(tmp_path):
    result = run(RunConfig(candidate=str(SEED), suite="edge", baselines=(), policy=QUICK, out_dir=tmp_path,
                           seed=None, sanitize=3))
    assert len(result.sanitize) == 12
    dirty = [f for f in result.sanitize if f["errors"] != 0 or f["first"]]
    assert not dirty, dirty
    # each sanitized call gave the bits of a call of the scored run on the same inputs (issue 39, class 6)
    assert all(f["compared"] and not f["differs"] for f in result.sanitize), result.sanitize
    assert all(o.status.value == "passed" for o in result.outcomes), [(o.scenario_id, o.reason) for o in result.outcomes if o.status.value != "passed"]


def test_a_kernel_that_knows_the_sanitizer_is_held_to_a_scored_call(tmp_path):
    """knows_the_sanitizer.cu (issue 39, class 6): clean under every tool, one output bit off in every call of the
    scored run (within every tolerance, the same bits twice); the sanitized call, made on the inputs of a kept
    call of the scored run, does not give its bits: sanitizer_error, while the scenarios not sanitized pass."""
    result = run(RunConfig(candidate=str(CORPUS / "knows_the_sanitizer.cu"), suite="smoke", baselines=(),
                           policy=QUICK, out_dir=tmp_path, seed=None, max_scenarios=3, sanitize=1))
    assert len(result.sanitize) == 4 and all(f["errors"] == 0 and not f["first"] for f in result.sanitize), \
        result.sanitize
    assert all(f["compared"] and f["differs"].startswith("1 of ") for f in result.sanitize), result.sanitize
    got = {o.scenario_id: (o.status.value, o.reason[:200]) for o in result.outcomes}
    sanitized = {f["scenario_id"] for f in result.sanitize}
    assert all(got[s][0] == "sanitizer_error" and "not those of a scored call" in got[s][1] for s in sanitized), got
    assert all(status == "passed" for sid, (status, _) in got.items() if sid not in sanitized), got


def test_the_seeds_launches_are_counted_and_each_left_a_record(tmp_path):
    """The launch count behind toggles_cupti.cu's catch is not vacuous: the runner counted the seed's launches
    by callback (its own marks and flushes included) and matched every one to a CUPTI record."""
    result = run(RunConfig(candidate=str(SEED), suite="smoke", baselines=(), policy=QUICK, out_dir=tmp_path,
                           seed=None, max_scenarios=2))
    for o in result.outcomes:
        assert o.status.value == "passed", (o.scenario_id, o.reason)
        telemetry = o.measurements["candidate"].telemetry
        assert telemetry["runner"]["launch_count"] is True, telemetry["runner"]
        cupti = telemetry["cupti"]
        # a timed call is the seed's launch plus the runner's settle, spin, open and end marks (QUICK: no flush)
        assert cupti["launches"] >= 5 and cupti["unrecorded"] == 0, cupti
        assert cupti["foreign_launches"] == 0 and cupti["dropped_records"] == 0, cupti


def test_the_honest_examples_are_there():
    assert set(HONEST) >= {"retiled_seed.cu", "workspace_seed.cu", "graph_seed.cu"}


@pytest.mark.parametrize("name", HONEST)
def test_each_honest_example_passes_with_every_check_on(name, tmp_path):
    """QUICK leaves the L2 flush and the launcher split off; both run here (the split captures the call into a
    graph and replays it, which the launch count must take as it is)."""
    from dataclasses import replace

    policy = replace(QUICK, cold_l2=True, launcher_ab=True)
    result = run(RunConfig(candidate=str(CORPUS.parent / "examples" / name), suite="smoke", baselines=(),
                           policy=policy, out_dir=tmp_path, seed=None))
    wrong = [(o.scenario_id, o.status.value, o.reason[:160]) for o in result.outcomes if o.status.value != "passed"]
    assert not wrong, wrong


def test_a_python_candidates_cuda_host_function_writes_nothing_outside_its_scratch(tmp_path, monkeypatch):
    """A host function runs on one of the CUDA driver's threads: the Python host confines itself before CUDA
    starts them, so the write it tries outside the scratch folder is refused (and the host function did run)."""
    marker = tmp_path / "escaped"
    monkeypatch.setenv("SOLBENCH_ADVERSARY_MARKER", str(marker))
    result = run(RunConfig(candidate=str(CORPUS / "python" / "writes_from_host_function.py"), suite="smoke",
                           baselines=(), policy=QUICK, out_dir=tmp_path / "run", seed=None, max_scenarios=1))
    log = (tmp_path / "run" / "worker-candidate.log").read_text()
    assert "host function queued: CUresult 0" in log and "host function: refused" in log, log[-2000:]
    assert not marker.exists()
    assert all(o.status.value == "mismatch" for o in result.outcomes), [(o.scenario_id, o.reason) for o in result.outcomes]
