"""A run's progress on stderr: one plain line per scenario off a terminal (k/N, elapsed, ETA, id), one live
tqdm line on a terminal, failures repeated with their reason; stdout keeps only the tables (or JSON)."""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pytest

import synthetic_runs as syn
from solbench.core.model import Outcome, Status
from solbench.front.cli import main
from solbench.front.progress import RunProgress

GOOD = "reference_kernels/torch_attention.py"


@pytest.fixture(autouse=True)
def repo_cwd(monkeypatch, request):
    monkeypatch.chdir(request.config.rootpath)


def outcome(sid: str, status: Status = Status.PASSED, reason: str = "") -> Outcome:
    return syn.outcome(sid, np.random.default_rng(0), status=status.value, reason=reason)


def follow(progress: RunProgress, ids, statuses) -> None:
    for i, (sid, status) in enumerate(zip(ids, statuses)):
        progress.started(sid, i, len(ids))
        progress.finished(outcome(sid, status, "" if status is Status.PASSED else f"max err 0.5 on {sid}"))
    progress.close()


def test_plain_lines_off_a_terminal():
    stream = io.StringIO()
    follow(RunProgress(stream), ["a-1", "b-2", "c-3"], [Status.PASSED, Status.MISMATCH, Status.PASSED])
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3 and "\r" not in stream.getvalue()
    assert re.match(r"\[1/3\] passed +\d+\.\d s  elapsed 00:00  ETA 00:00  a-1$", lines[0])
    assert lines[1].startswith("[2/3] mismatch") and lines[1].endswith("b-2: max err 0.5 on b-2")


def test_one_live_line_on_a_terminal():
    stream = io.StringIO()
    follow(RunProgress(stream, live=True), ["a-1", "b-2", "c-3"], [Status.PASSED, Status.TIMEOUT, Status.PASSED])
    frames = stream.getvalue().split("\r")
    assert any(re.search(r"^3/3 .*\[\d\d:\d\d<\d\d:\d\d, .*\] c-3", f) for f in frames)  # k/N, elapsed<ETA, id
    assert any(re.search(r"^1/3 .* b-2", f) for f in frames)  # the scenario being evaluated
    assert "timeout: b-2: max err 0.5 on b-2\n" in stream.getvalue()  # a failure stays above the bar
    assert stream.getvalue().count("\n") <= 2  # the failure, the bar's last state: no line per scenario


def test_a_resumed_run_counts_from_where_it_was():
    stream = io.StringIO()
    progress = RunProgress(stream)
    progress.started("d-4", 3, 5)
    progress.finished(outcome("d-4"))
    assert stream.getvalue().startswith("[4/5] passed")


@pytest.mark.slow
def test_run_reports_progress_on_stderr_and_tables_on_stdout(tmp_path, capsys):
    assert main(["run", GOOD, "--suite", "smoke", "--device", "cpu", "--quick", "--max-scenarios", "2",
                 "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    assert [line[:6] for line in err] == ["[1/2] ", "[2/2] "] and all(" ETA " in line for line in err)
    assert "[1/2]" not in captured.out and captured.out.startswith("scenario")
    assert main(["run", GOOD, "--suite", "smoke", "--device", "cpu", "--quick", "--max-scenarios", "1",
                 "--out", str(tmp_path / "json"), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["scenarios_done"] == 1 and captured.err.startswith("[1/1] passed")
