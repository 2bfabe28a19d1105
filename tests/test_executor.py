"""The executor layer on a CPU: dealing order, keys and seals, artefacts, a GPU agent that dies mid-run,
and a local Ray cluster with fake GPUs giving the plain run's verdicts."""

from __future__ import annotations

import importlib.util
import json

import pytest

from solbench.core.errors import ConfigError
from solbench.core.policy import QUICK
from solbench.core.suites import load_suite
from solbench.executor import plan, unit_order
from solbench.executor.artefacts import ArtefactError, pack, unpack
from solbench.executor.keys import SealError, seal, unit_key, unseal
from solbench.executor.units import UnitContext
from solbench.core.paths import KERNELS_DIR
from solbench.sandbox.impls import ImplSpec

GOOD = str(KERNELS_DIR / "torch_attention.py")


def _ctx(tmp_path, arch="h200"):
    specs = {"candidate": ImplSpec("candidate", "python", GOOD, "torch_attention.py"),
             "seed": ImplSpec("seed", "python", GOOD, "torch_attention.py")}
    return UnitContext(specs, "cpu", QUICK, 60.0, arch, "run", str(tmp_path))


def test_longest_first_is_deterministic_and_ordered_by_estimate(tmp_path):
    scenarios = list(load_suite("hopper").scenarios)
    first = unit_order(scenarios, _ctx(tmp_path), parallel=True)
    assert sorted(s.id for s in first) == sorted(s.id for s in scenarios) and first != scenarios
    assert [s.id for s in first] == [s.id for s in unit_order(scenarios, _ctx(tmp_path), parallel=True)]
    assert unit_order(scenarios, _ctx(tmp_path), parallel=False) == scenarios  # the plain run keeps suite order
    costs = {s.id: i for i, s in enumerate(scenarios)}
    order = plan.longest_first(scenarios, costs)
    assert [costs[s.id] for s in order] == sorted(costs.values(), reverse=True)


def test_equal_costs_keep_suite_order():
    scenarios = list(load_suite("smoke").scenarios)
    assert plan.longest_first(scenarios, {s.id: 1.0 for s in scenarios}) == scenarios


def test_dealing_longest_first_balances_the_gpus():
    scenarios = list(load_suite("smoke").scenarios)
    costs = {s.id: float(c) for s, c in zip(scenarios, (9, 1, 1, 1, 1, 1, 1, 1, 1, 1))}
    shares = plan.deal(scenarios, costs, 2)
    assert shares[0] == [scenarios[0].id] and len(shares[1]) == 9  # the long one alone, the rest beside it
    ordered = [costs[s.id] for s in plan.longest_first(scenarios, costs)]
    assert plan.makespan_s(ordered, 2) == 9.0 and plan.makespan_s(ordered, 1) == 18.0
    assert plan.makespan_s(list(reversed(ordered)), 2) > 9.0  # dealing the long one last leaves a tail


@pytest.mark.parametrize("raw, visible, expected", [(None, 2, None), ("all", 3, (0, 1, 2)), ("0,2", 3, (0, 2))])
def test_gpus_option(raw, visible, expected):
    assert plan.parse_gpus(raw, visible) == expected


@pytest.mark.parametrize("raw, visible, words", [("all", 0, "no CUDA GPU"), ("0,0", 2, "twice"), ("3", 2, "no GPU 3"),
                                                 ("a,b", 2, "expected 'all'")])
def test_bad_gpus_option_is_one_line(raw, visible, words):
    with pytest.raises(ConfigError, match=words):
        plan.parse_gpus(raw, visible)


def test_unit_keys_differ_per_scenario_and_attempt():
    keys = {unit_key(b"s" * 16, "run", sid, attempt) for sid in ("a", "b") for attempt in (1, 2)}
    assert len(keys) == 4 and unit_key(b"s" * 16, "run", "a", 1) == unit_key(b"s" * 16, "run", "a", 1)


def test_an_outcome_altered_after_its_seal_is_refused():
    key = unit_key(b"k" * 16, "run", "a", 1)
    doc = {"status": "mismatch", "reason": "wrong"}
    assert unseal(doc, seal(doc, key), key, "a") == doc
    with pytest.raises(SealError, match="altered"):
        unseal({**doc, "status": "passed"}, seal(doc, key), key, "a")  # a forger without the key
    with pytest.raises(SealError):
        unseal(doc, seal(doc, b"x" * 16), key, "a")


def test_artefacts_travel_by_content_and_are_checked(tmp_path):
    packed = pack(_ctx(tmp_path).specs | {"fa3": ImplSpec("fa3", "baseline", "fa3", "fa3")})
    specs = unpack(packed, str(tmp_path / "there"))
    assert specs["fa3"].path == "fa3" and specs["candidate"].path.startswith(str(tmp_path / "there"))
    assert open(specs["candidate"].path, "rb").read() == open(GOOD, "rb").read()
    from dataclasses import replace

    packed["candidate"] = replace(packed["candidate"], data=packed["candidate"].data + b"\nimport os")
    with pytest.raises(ArtefactError, match="candidate"):
        unpack(packed, str(tmp_path / "again"))


@pytest.mark.slow
def test_an_agent_that_dies_costs_its_gpu_and_its_unit_is_dealt_again(tmp_path, monkeypatch):
    """Two 'GPUs' (labels 0 and 1, on the CPU); the agent of 1 dies on the first scenario it is sent: that
    scenario is evaluated on 0 under a new key, and every scenario ends with an outcome."""
    from executor_fakes import DIE_ON, dying_agent
    from solbench.executor.local import LocalExecutor

    scenarios = list(load_suite("smoke").scenarios)[:3]
    monkeypatch.setenv(DIE_ON, f"1:{scenarios[1].id}")
    executor = LocalExecutor(_ctx(tmp_path, arch="cpu"), b"s" * 16, ["0", "1"], target=dying_agent)
    try:
        executor.start()
        outcomes = {o.scenario_id: o for o in executor.outcomes(scenarios)}
    finally:
        executor.close()
    assert set(outcomes) == {s.id for s in scenarios} and not executor.unfinished
    # (hidden_work: the supervisor's clock check on a loaded shared CPU; what matters is that each was evaluated)
    assert all(o.status.value in ("passed", "hidden_work") for o in outcomes.values())
    redone = outcomes[scenarios[1].id].placement
    assert redone["attempt"] == 2 and redone["gpu_ordinal"] == "0" and redone["executor"] == "local"
    assert any("GPU 1: agent died" in e for e in executor.events)
    assert all(not s.proc.is_alive() for s in executor.slots)


@pytest.mark.slow
def test_a_unit_lost_twice_is_a_machine_error_and_no_gpu_left_ends_the_run(tmp_path, monkeypatch):
    from executor_fakes import DIE_ON, dying_agent
    from solbench.executor.local import LocalExecutor

    scenarios = list(load_suite("smoke").scenarios)[:2]
    monkeypatch.setenv(DIE_ON, f"0:{scenarios[0].id}")
    executor = LocalExecutor(_ctx(tmp_path, arch="cpu"), b"s" * 16, ["0"], target=dying_agent)
    try:
        executor.start()
        outcomes = list(executor.outcomes(scenarios))
    finally:
        executor.close()
    assert outcomes == [] and executor.unfinished == [s.id for s in scenarios]  # the one GPU died: nothing to deal to


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed (pip install 'solbench[ray]')")
def test_ray_with_fake_gpus_gives_the_plain_runs_verdicts(tmp_path):
    """`solbench run reference_kernels/torch_attention.py --suite smoke --device cpu --executor ray --workers 2`
    against the plain run: same scenarios, same verdicts, each outcome placed by a Ray task."""
    from solbench.front.cli import main

    plain, spread = tmp_path / "plain", tmp_path / "ray"
    common = [GOOD, "--suite", "smoke", "--device", "cpu", "--quick", "--json"]
    assert main(["run", *common, "--out", str(plain)]) in (0, 1)
    assert main(["run", *common, "--out", str(spread), "--executor", "ray", "--workers", "2"]) in (0, 1)
    verdicts = [{o["scenario_id"]: o["status"] for o in json.loads((d / "results.json").read_text())["outcomes"]}
                for d in (plain, spread)]
    # hidden_work on a loaded CPU is the supervisor clock check's noise, not the executor's: leave those out
    assert verdicts[0].keys() == verdicts[1].keys() and len(verdicts[0]) == 10
    noisy = {k for v in verdicts for k, status in v.items() if status == "hidden_work"}
    assert len(noisy) <= 2  # the clock check on a loaded shared CPU, not the executor
    assert {k: s for k, s in verdicts[0].items() if k not in noisy} == {k: s for k, s in verdicts[1].items() if k not in noisy}
    doc = json.loads((spread / "results.json").read_text())
    assert doc["complete"] and {o["placement"]["executor"] for o in doc["outcomes"]} == {"ray"}
    assert doc["environment"]["executor"]["kind"] == "ray"


def _placed(run, gpus):
    from dataclasses import replace

    return replace(run, outcomes=tuple(replace(o, placement={"executor": "local", "host": h, "device": "cuda",
                                                             "gpu_uuid": u, "gpu_name": n, "sm_clock_max_mhz": c,
                                                             "mem_clock_max_mhz": 3201})
                                       for o, (h, u, n, c) in zip(run.outcomes, gpus)))


def test_the_report_says_how_a_run_was_spread_and_flags_different_gpus():
    from solbench.report.spread import spread_lines
    from synthetic_runs import pair

    run = pair(2)[0]
    same = _placed(run, [("a", "GPU-1", "H200", 1980), ("a", "GPU-2", "H200", 1980)])
    assert spread_lines(same)[0].startswith("spread over 2 GPUs on 1 host(s)") and len(spread_lines(same)) == 1
    assert spread_lines(_placed(run, [("a", "GPU-1", "H200", 1980)] * 2)) == []
    mixed = spread_lines(_placed(run, [("a", "GPU-1", "H200", 1980), ("b", "GPU-2", "H100", 1980)]))
    assert "2 host(s)" in mixed[0] and "differ in model" in mixed[1]
    assert "differ in clocks" in spread_lines(_placed(run, [("a", "GPU-1", "H200", 1980), ("a", "GPU-2", "H200", 1755)]))[1]


@pytest.mark.slow
def test_only_the_candidate_gets_a_launcher_split(tmp_path):
    """The cut benchmarks/trace_summary.py proposes: the comparators' launcher A/B, never read, is not taken."""
    from dataclasses import replace

    from solbench.supervisor.runner import RunConfig, run

    result = run(RunConfig(candidate=GOOD, suite="smoke", device="cpu", policy=replace(QUICK, launcher_ab=True),
                           out_dir=tmp_path, max_scenarios=1))
    (outcome,) = result.outcomes
    assert "launcher" in outcome.measurements["candidate"].telemetry
    assert "launcher" not in outcome.measurements["seed"].telemetry
    assert outcome.placement["executor"] == "inline" and outcome.placement["wall_s"] > 0


class OutOfMemoryError(RuntimeError):
    """torch.OutOfMemoryError as the supervisor sees it (by its class name)."""


@pytest.mark.slow
def test_the_supervisor_running_out_of_memory_costs_the_scenario_not_the_run(tmp_path, monkeypatch):
    """On the H200 a run died whole when the supervisor's own allocation (a scenario's inputs) failed: the
    scenario is recorded as a machine error (--retry-errors takes it again) and the next one runs."""
    import solbench.supervisor.evaluate as evaluate_module
    from solbench.core.model import Status
    from solbench.executor.units import Agent
    from solbench.supervisor.runner import errored

    real = evaluate_module.evaluate
    calls = []

    def first_fails(sc, *args, **kwargs):
        calls.append(sc.id)
        if calls.count(calls[0]) <= 2 and sc.id == calls[0]:  # the first scenario, and its retry
            raise OutOfMemoryError("CUDA out of memory. Tried to allocate 2.36 GiB.")
        return real(sc, *args, **kwargs)

    monkeypatch.setattr(evaluate_module, "evaluate", first_fails)
    agent = Agent(_ctx(tmp_path, arch="cpu"))
    try:
        agent.load()
        first, second = (agent.evaluate(sc, b"k" * 32) for sc in load_suite("smoke").scenarios[:2])
    finally:
        agent.close()
    assert first.status is Status.RUNTIME_ERROR and "ran out of device memory" in first.reason and errored(first)
    assert "again with every worker started afresh" in first.reason
    assert second.status is Status.PASSED, second.reason
    assert len(calls) == 3


@pytest.mark.slow
def test_out_of_memory_is_tried_again_with_fresh_workers(tmp_path, monkeypatch):
    """Device memory a worker keeps (its caching allocator, or a candidate that answered `release` but kept
    its mappings of earlier scenarios) comes back only when its process ends: on the supervisor's
    OutOfMemoryError every worker is stopped and the scenario evaluated once more, so such a worker costs
    no scenario of the run; with new contents, so that a candidate that forced the retry replays nothing."""
    import solbench.supervisor.evaluate as evaluate_module
    from solbench.core.model import Status
    from solbench.executor.units import Agent

    real = evaluate_module.evaluate
    pids = []

    keys = []

    def fails_once(sc, workers, *args, **kwargs):
        pids.append(workers["candidate"].pid)
        keys.append(args[-1])
        if len(pids) == 1:
            raise OutOfMemoryError("CUDA out of memory. Tried to allocate 12.00 GiB.")
        return real(sc, workers, *args, **kwargs)

    monkeypatch.setattr(evaluate_module, "evaluate", fails_once)
    agent = Agent(_ctx(tmp_path, arch="cpu"))
    try:
        agent.load()
        outcome = agent.evaluate(load_suite("smoke").scenarios[0], b"k" * 32)
        after = agent.workers["candidate"].pid
    finally:
        agent.close()
    assert outcome.status is Status.PASSED, outcome.reason
    assert pids[0] and pids[1] is None and after and after != pids[0]  # stopped, then started by the retry
    assert keys[0] == b"k" * 32 and keys[1] != keys[0]  # new contents: nothing of the first try to replay
    assert "ran out of device memory" in outcome.placement["retried"]  # the record says it took two tries
    assert agent.workers["candidate"].prepares >= 1  # the real evaluation gave it contents, and it was counted


def test_out_of_memory_after_the_candidate_had_the_contents_is_not_tried_again(tmp_path, monkeypatch):
    """A candidate that knows it fails a scenario (it can compute the reference itself) could fill the
    device and let the supervisor run out of memory, for a new draw. Once it was given the scenario's contents,
    running out of memory ends the scenario as a machine error that neither the run nor --retry-errors
    evaluates again (never passed, never counted as wrong)."""
    import solbench.supervisor.evaluate as evaluate_module
    from solbench.core.model import AFTER_CONTENTS, Status
    from solbench.executor.units import Agent
    from solbench.supervisor.runner import errored

    calls = []

    def fills_after_prepare(sc, workers, *args, **kwargs):
        calls.append(sc.id)
        workers["candidate"].prepares += 1  # as a 'prepare' request does: the candidate now holds the contents
        raise OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB.")

    monkeypatch.setattr(evaluate_module, "evaluate", fills_after_prepare)
    agent = Agent(_ctx(tmp_path, arch="cpu"))
    try:
        agent.load()
        outcome = agent.evaluate(load_suite("smoke").scenarios[0], b"k" * 32)
    finally:
        agent.close()
    assert len(calls) == 1 and outcome.status is Status.RUNTIME_ERROR and AFTER_CONTENTS in outcome.reason
    assert not errored(outcome) and outcome.placement["retried"] == ""


def test_gpus_on_a_one_gpu_machine_runs_inline(tmp_path, monkeypatch):
    """`--gpus all` (or `--gpus 0`) where this process sees one GPU: no agent process (its start-up cost 8 %
    of fa3-h2h's wall on the H200, and there is no other GPU to retry on); with two GPUs, one agent each."""
    torch = pytest.importorskip("torch")
    from dataclasses import replace as dc_replace

    from solbench.executor import inline, make_executor
    from solbench.executor.local import LocalExecutor

    ctx = dc_replace(_ctx(tmp_path), device="cuda")
    monkeypatch.setattr(inline, "InlineExecutor", lambda ctx, secret: "inline")  # its agent asks the GPU
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert make_executor(ctx, b"k", gpus="all") == "inline"
    assert make_executor(ctx, b"k", gpus="0") == "inline"
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    two = make_executor(ctx, b"k", gpus="all")
    assert isinstance(two, LocalExecutor) and two.labels == ["0", "1"]
    one_of_two = make_executor(ctx, b"k", gpus="1")
    assert isinstance(one_of_two, LocalExecutor) and one_of_two.labels == ["1"]


@pytest.mark.slow
def test_out_of_memory_retries_are_capped_per_agent(tmp_path, monkeypatch):
    """Each second try restarts every worker (the comparators lose their warm kernels), so a candidate that pins
    memory to force one in every scenario gets at most MAX_OOM_RETRIES of them; later ones are machine errors
    that --retry-errors takes again."""
    import solbench.supervisor.evaluate as evaluate_module
    from solbench.core.model import Status
    from solbench.executor.units import MAX_OOM_RETRIES, Agent
    from solbench.supervisor.runner import errored

    calls = []

    def always_out(sc, workers, *args, **kwargs):
        calls.append(sc.id)
        raise OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB.")

    monkeypatch.setattr(evaluate_module, "evaluate", always_out)
    agent = Agent(_ctx(tmp_path, arch="cpu"))
    scenarios = list(load_suite("smoke").scenarios)[:MAX_OOM_RETRIES + 2]
    try:
        agent.load()
        outcomes = [agent.evaluate(sc, b"k" * 32) for sc in scenarios]
    finally:
        agent.close()
    assert len(calls) == 2 * MAX_OOM_RETRIES + (len(scenarios) - MAX_OOM_RETRIES)
    assert [bool(o.placement["retried"]) for o in outcomes] == [True] * MAX_OOM_RETRIES + [False] * 2
    assert all(o.status is Status.RUNTIME_ERROR and errored(o) for o in outcomes)
