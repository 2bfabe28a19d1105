"""The `solbench` pytest fixture: evaluate a candidate on a suite and judge it, inside your own tests.

    def test_my_kernel(solbench):
        result = solbench.run("kernels/mine.py", suite="smoke", device="cpu")
        solbench.assert_ok(result, against="reports/base/results.json", min_geomean=1.0)

`run` takes RunConfig fields as keywords; anything not given comes from the session's --solbench-*
options. `check` and `assert_ok` take solbench.report.check.Criteria fields as keywords.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest


class SolbenchFixture:
    """Small API over the runner and the gate for people writing their own tests."""

    def __init__(self, config, tmp_path_factory, make_config, run_candidate):
        self._config = config
        self._tmp = tmp_path_factory
        self._make_config = make_config
        self._run_candidate = run_candidate

    def run(self, candidate: str | Path, **overrides):
        """Evaluate `candidate`; returns the RunResult (written under a pytest temporary folder unless out_dir)."""
        config = self._make_config(self._config, str(candidate), **overrides)
        if config.out_dir is None:
            config = replace(config, out_dir=self._tmp.mktemp("solbench-run"))
        return self._run_candidate(config)

    def check(self, result, against=None, **criteria):
        """solbench.report.check.evaluate on `result`; `against` is a RunResult or a path `solbench check` accepts."""
        from solbench.report.check import Criteria, evaluate
        from solbench.core.model import RunResult
        from solbench.supervisor.run_files import load_run

        base = against if (against is None or isinstance(against, RunResult)) else load_run(against)
        return evaluate(result, base, Criteria(**criteria))

    def assert_ok(self, result, against=None, **criteria):
        """Fail the test (one line per failing clause item) unless the check passes; returns the report."""
        from solbench.report.check import render_lines

        report = self.check(result, against, **criteria)
        if report.passed is not True:
            pytest.fail("\n".join(render_lines(report)), pytrace=False)
        return report
