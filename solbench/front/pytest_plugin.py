"""pytest plugin (entry point `pytest11: solbench`): one test per scenario, failing on a wrong result
or a confident regression.

    pytest --solbench-kernel kernel.cu --solbench-suite smoke --solbench-against base.json

Options are the CLI's (solbench.core.options) with a `--solbench-` prefix. Without --solbench-kernel the
plugin only offers the `solbench` fixture and otherwise does nothing. The suite runs once, through the
same runner as `solbench run`, when the first scenario item runs; each item then reads its Outcome.
Against BASE each scenario is judged by solbench.report.check.compare_to_base; an ambiguous comparison is
re-measured (that scenario alone, through the runner) and judged on the pooled samples.
The run folder is `--solbench-out DIR`, else `<basetemp>/solbench/<run-id>/` under pytest's own
temporary folder (`--basetemp`); never the working folder.
With pytest-benchmark installed, `--benchmark-autosave`, `--benchmark-save NAME` or `--benchmark-json
PATH` also store the run in pytest-benchmark's format (solbench.front.pytest_benchmark_files), and that
file can serve as BASE.
"""

from __future__ import annotations

import importlib
import warnings
from dataclasses import replace
from pathlib import Path

import pytest

from solbench.front import pytest_benchmark_files, pytest_xdist_guard
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
        session = config.stash[SESSION] = SolbenchSession(config)
    except SolbenchError as exc:
        raise pytest.UsageError(f"solbench: {exc}") from None
    if pytest_benchmark_files.requested(config):
        session.benchmark_files = pytest_benchmark_files.BenchmarkFiles(session)
        config.pluginmanager.register(session.benchmark_files, "solbench-benchmark-files")


def pytest_unconfigure(config):
    pytest_xdist_guard.release(config)


def run_config(config, candidate: str, **overrides):
    """A RunConfig from the session's --solbench-* options, with keyword overrides (RunConfig fields)."""
    from solbench.supervisor.runner import RunConfig

    opt = lambda name: config.getoption(_dest(name))  # noqa: E731
    fields = dict(candidate=str(candidate), suite=opt("suite"), arch=opt("arch"), device=opt("device"),
                  baselines=baselines_value(opt("baselines")), seed=seed_value(opt("seed")),
                  policy=policy_value(opt("quick"), opt("policy")), timeout_s=opt("timeout"),
                  filter=opt("filter"), max_scenarios=opt("max-scenarios"), gpus=opt("gpus"),
                  executor=opt("executor"), ray_address=opt("ray-address"), workers=opt("workers"))
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
                                    f"{self.base.suite_hash[:12]}); this run times {self.suite.name!r} (hash "
                                    f"{self.suite.hash[:12]}): not comparable")
        self.out = config.getoption(_dest("out"))
        self.folder: Path | None = None
        """The run folder, once the run has started."""
        self.result = None
        self.error: str | None = None
        self.verdicts = {}
        """scenario id -> solbench.report.check.Item from the BASE comparison."""
        self.benchmark_files = None
        """A pytest_benchmark_files.BenchmarkFiles when pytest-benchmark files were asked for."""

    def collect(self, session) -> list[pytest.Item]:
        """The suite's items, collected through pytest's hooks (so they are counted, reported and -k selectable)."""
        name = f"solbench[{self.suite.name}]"
        return list(session.genitems(SuiteCollector.from_parent(session, name=name, nodeid=name)))

    def run(self, **overrides):
        return run_candidate(run_config(self.config, self.kernel, **overrides))

    def run_folder(self) -> Path:
        """--solbench-out, else <basetemp>/solbench/<run-id>: pytest's temporary folder, not the user's."""
        if self.out:
            return Path(self.out)
        from solbench.supervisor.runner import new_run_id

        # pytest attaches this factory in its own pytest_configure for plugins that need it before
        # fixtures exist (_pytest/tmpdir.py); the tmp_path_factory fixture is the same object.
        factory = self.config._tmp_path_factory
        return factory.getbasetemp() / "solbench" / new_run_id(self.kernel, self.suite.name)

    def outcome(self, scenario_id: str):
        from solbench.report.check import ensure_comparable
        from solbench.core.errors import SolbenchError

        if self.result is None and self.error is None:
            try:
                self.folder = self.run_folder()
                self.result = self.run(out_dir=self.folder)
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
                                 out_dir=Path(f"{self.folder}-remeasure", outcome.scenario_id))
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

    ran = config.stash.get(SESSION, None)
    if ran is None or (ran.result is None and ran.error is None):
        return
    terminalreporter.section("solbench")
    for line in summary_lines(ran):
        terminalreporter.write_line(line)


@pytest.hookimpl(wrapper=True, tryfirst=True)  # around pytest-benchmark's own saving
def pytest_sessionfinish(session):
    solbench = session.config.stash.get(SESSION, None)
    with warnings.catch_warnings():
        if solbench is not None and solbench.result is not None and solbench.benchmark_files is not None:
            # its "Not saving anything" is false here: BenchmarkFiles.pytest_sessionfinish writes the run
            warnings.filterwarnings("ignore", pytest_benchmark_files.NOTHING_SAVED)
        return (yield)
