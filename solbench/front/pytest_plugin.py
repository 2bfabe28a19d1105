"""pytest plugin (entry point `pytest11: solbench`): one test per scenario, failing on a wrong result
or a confident regression.

    pytest --solbench-kernel kernel.cu --solbench-suite smoke --solbench-against base.json

Options are the CLI's (solbench.core.options) with a `--solbench-` prefix. Without --solbench-kernel the
plugin only offers the `solbench` fixture and otherwise does nothing. The suite runs once, through the
same runner as `solbench run`, when the first scenario item runs; each item then reads its Outcome.
Against BASE each scenario is judged by solbench.report.check.compare_to_base; an ambiguous comparison is
re-measured (that scenario alone, through the runner) and judged on the pooled samples.
With pytest-benchmark installed, `--benchmark-autosave`, `--benchmark-save NAME` or `--benchmark-json
PATH` also store the run in pytest-benchmark's format, and that file can serve as BASE.
"""

from __future__ import annotations

import importlib
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest

from solbench.front import pytest_xdist_guard
from solbench.core.options import PLUGIN_OPTIONS, baselines_value, policy_value, seed_value

PREFIX = "--solbench-"
SESSION = pytest.StashKey["SolbenchSession"]()


def _dest(name: str) -> str:
    return "solbench_" + name.replace("-", "_")


def pytest_addoption(parser):
    group = parser.getgroup("solbench", "solbench: attention kernels judged per scenario")
    for opt in PLUGIN_OPTIONS:
        kwargs = opt.kwargs()
        if opt.action is None:
            kwargs["metavar"] = opt.name.upper().replace("-", "_")
        group.addoption(PREFIX + opt.name, dest=_dest(opt.name), **kwargs)


def pytest_configure(config):
    if not config.getoption(_dest("kernel")):
        return
    from solbench.core.errors import SolbenchError

    pytest_xdist_guard.refuse_shared_devices(config)
    try:
        config.stash[SESSION] = SolbenchSession(config)
    except SolbenchError as exc:
        raise pytest.UsageError(f"solbench: {exc}") from None


def pytest_unconfigure(config):
    pytest_xdist_guard.release(config)


def run_config(config, candidate: str, **overrides):
    """A RunConfig from the session's --solbench-* options, with keyword overrides (RunConfig fields)."""
    from solbench.supervisor.runner import RunConfig

    opt = lambda name: config.getoption(_dest(name))  # noqa: E731
    fields = dict(candidate=str(candidate), suite=opt("suite"), arch=opt("arch"), device=opt("device"),
                  baselines=baselines_value(opt("baselines")), seed=seed_value(opt("seed")),
                  policy=policy_value(opt("quick"), opt("policy")), timeout_s=opt("timeout"),
                  filter=opt("filter"), max_scenarios=opt("max-scenarios"))
    fields.update(overrides)
    return RunConfig(**fields)


def run_candidate(config):
    """runner.run(config), refusing to time for an arch that is not the GPU present (as `solbench run` does)."""
    from solbench.core.errors import ConfigError

    runner = importlib.import_module("solbench.supervisor.runner")
    device = runner.resolve_device(config.device)
    present = runner.gpu_arch() if device == "cuda" else None
    if config.arch and config.arch != (present or "cpu"):
        raise ConfigError(f"timing for {config.arch} needs a {config.arch.upper()} GPU; this machine has {present or 'no GPU'}")
    return runner.run(replace(config, device=device))


class ScenarioFailure(Exception):
    """A scenario judged wrong or regressed; shown as its one-line message, without a traceback."""


class SolbenchSession:
    """The candidate's run on the suite (made lazily, once), BASE, and each scenario's verdict."""

    def __init__(self, config):
        from solbench.report.check import Criteria
        from solbench.core.errors import ConfigError
        from solbench.supervisor.run_files import load_run
        from solbench.core.suites import load_suite

        self.config = config
        self.kernel = config.getoption(_dest("kernel"))
        if not Path(self.kernel).is_file():
            raise ConfigError(f"--solbench-kernel {self.kernel}: no such file")
        self.suite = load_suite(config.getoption(_dest("suite")))
        self.scenarios = self.suite.select(config.getoption(_dest("filter")),
                                           config.getoption(_dest("max-scenarios"))).scenarios
        self.criteria = Criteria(epsilon=config.getoption(_dest("epsilon")), strict=config.getoption(_dest("strict")))
        against = config.getoption(_dest("against"))
        self.base = load_run(against) if against else None
        if self.base is not None and (self.base.suite, self.base.suite_hash) != (self.suite.name, self.suite.hash):
            raise pytest.UsageError(f"solbench: BASE {against} ran suite {self.base.suite!r} (hash "
                                    f"{self.base.suite_hash[:12]}); this session runs {self.suite.name!r} (hash "
                                    f"{self.suite.hash[:12]}): not comparable")
        self.result = None
        self.error: str | None = None
        self.verdicts = {}
        """scenario id -> solbench.report.check.Item from the BASE comparison."""

    def collect(self, session) -> list[pytest.Item]:
        """The suite's items, collected through pytest's hooks (so they are counted, reported and -k selectable)."""
        name = f"solbench[{self.suite.name}]"
        return list(session.genitems(SuiteCollector.from_parent(session, name=name, nodeid=name)))

    def run(self, **overrides):
        return run_candidate(run_config(self.config, self.kernel, **overrides))

    def outcome(self, scenario_id: str):
        from solbench.report.check import ensure_comparable
        from solbench.core.errors import SolbenchError

        if self.result is None and self.error is None:
            try:
                self.result = self.run()
            except SolbenchError as exc:
                self.error = f"solbench run failed: {exc}"
            except Exception as exc:  # a bug: this item shows the traceback, the others one line
                self.error = f"solbench run failed: {type(exc).__name__}: {exc} (traceback in the first item)"
                raise
            if self.base is not None and self.result is not None:
                try:
                    ensure_comparable(self.result, self.base)
                except SolbenchError as exc:
                    self.error = f"cannot judge against BASE: {exc}"
        if self.error:
            raise ScenarioFailure(self.error)
        return next((o for o in self.result.outcomes if o.scenario_id == scenario_id), None)

    def judge(self, outcome):
        """The BASE comparison of one scenario; an ambiguous one is re-measured and judged again."""
        from solbench.report.check import Verdict, compare_to_base
        from solbench.core.errors import SolbenchError

        base = next((o for o in self.base.outcomes if o.scenario_id == outcome.scenario_id), None)
        item = compare_to_base(outcome, base, self.criteria)
        if item.verdict is Verdict.AMBIGUOUS:
            try:
                again = self.run(filter=outcome.scenario_id, max_scenarios=None,
                                 out_dir=Path("reports", f"{self.result.run_id}-remeasure", outcome.scenario_id))
            except SolbenchError as exc:
                raise ScenarioFailure(f"re-measuring an ambiguous comparison failed: {exc}") from None
            redo = next((o for o in again.outcomes if o.scenario_id == outcome.scenario_id), None)
            if redo is None or redo.status.is_failure:
                why = "no outcome" if redo is None else f"{redo.status.value}: {redo.reason}"
                raise ScenarioFailure(f"re-measurement: {why}")
            first, second = outcome.measurements["candidate"], redo.measurements["candidate"]
            pooled = replace(first, samples_ms=first.samples_ms + second.samples_ms)
            outcome = replace(outcome, measurements={**outcome.measurements, "candidate": pooled})
            item = compare_to_base(outcome, base, self.criteria)
            item = replace(item, message=f"{item.message} (re-measured: {len(first.samples_ms)} + "
                                         f"{len(second.samples_ms)} samples)")
        self.verdicts[outcome.scenario_id] = item
        return item


class SuiteCollector(pytest.Collector):
    """The suite under test: one ScenarioItem per scenario, named by scenario id."""

    def collect(self):
        session = self.config.stash[SESSION]
        return [ScenarioItem.from_parent(self, name=sc.id) for sc in session.scenarios]


class ScenarioItem(pytest.Item):
    """Passes when the candidate is correct on this scenario and not confidently slower than BASE."""

    def runtest(self):
        try:
            self._judge()
            return
        except ScenarioFailure as exc:
            message = f"{self.name}: {exc}"
        pytest.fail(message, pytrace=False)  # one line, no traceback (outside the except: no chained context)

    def _judge(self):
        from solbench.report.check import Verdict
        from solbench.core.model import Status

        session = self.config.stash[SESSION]
        outcome = session.outcome(self.name)
        if outcome is None:
            raise ScenarioFailure("no outcome: the run ended before this scenario")
        if outcome.status is not Status.PASSED:  # declining a scenario (skipped) is no way around the gate
            raise ScenarioFailure(f"{outcome.status.value}: {outcome.reason}")
        if session.base is None:
            return
        item = session.judge(outcome)
        self.user_properties.append(("solbench_vs_base", item.verdict.value))
        if item.verdict is Verdict.FAIL or (item.verdict is Verdict.AMBIGUOUS and session.criteria.strict):
            raise ScenarioFailure(f"{'regression' if item.verdict is Verdict.FAIL else 'ambiguous'}: {item.message}")

    def reportinfo(self):
        return self.path, None, self.nodeid


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    solbench = config.stash.get(SESSION, None)
    if solbench is not None:
        items.extend(solbench.collect(session))


@pytest.fixture
def solbench(request, tmp_path_factory):
    """Evaluate candidates from your own tests; defaults come from the session's --solbench-* options."""
    from solbench.front.pytest_fixture import SolbenchFixture

    return SolbenchFixture(request.config, tmp_path_factory, run_config, run_candidate)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from solbench.front.pytest_summary import summary_lines

    session = config.stash.get(SESSION, None)
    if session is None or (session.result is None and session.error is None):
        return
    terminalreporter.section("solbench")
    for line in summary_lines(session):
        terminalreporter.write_line(line)


@pytest.hookimpl(wrapper=True, tryfirst=True)  # before pytest-benchmark's own wrapper saves (or warns)
def pytest_sessionfinish(session):
    _save_to_benchmark_storage(session)
    return (yield)


def _save_to_benchmark_storage(session) -> None:
    solbench = session.config.stash.get(SESSION, None)
    bench = getattr(session.config, "_benchmarksession", None)
    if solbench is None or solbench.result is None or bench is None or bench.benchmarks:
        return  # with benchmarks of its own, pytest-benchmark saves and pytest_benchmark_update_json adds ours
    save = bench.save or bench.autosave
    if not (save or bench.json):
        return
    import pytest_benchmark

    from solbench.supervisor.run_files import add_to_benchmark_doc

    config = session.config
    doc = {"machine_info": bench.get_machine_info(),
           "commit_info": config.hook.pytest_benchmark_generate_commit_info(config=config),
           "benchmarks": [], "datetime": datetime.now(timezone.utc).isoformat(), "version": pytest_benchmark.__version__}
    add_to_benchmark_doc(doc, solbench.result)
    if bench.json:
        import json

        with bench.json as fh:
            fh.write(json.dumps(doc, indent=4).encode())
    if save:
        bench.storage.save(doc, save)
    bench.save = bench.autosave = bench.json = None  # saved here; spare pytest-benchmark's "nothing to save"


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_json(config, benchmarks, output_json):
    solbench = config.stash.get(SESSION, None)
    if solbench is not None and solbench.result is not None:
        from solbench.supervisor.run_files import add_to_benchmark_doc

        add_to_benchmark_doc(output_json, solbench.result)
