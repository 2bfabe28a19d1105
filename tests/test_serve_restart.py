"""A server killed (SIGKILL) or stopped (SIGTERM) mid-job and started again finishes the job from its run
folder: every scenario finished before is kept as it was, none of them is evaluated again, and the job ends
passed."""

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from solbench.serve.scheduler import START
from tests.serve_server import Server

pytestmark = pytest.mark.slow
pytest.importorskip("httpx", reason="needs the serve extra: pip install 'solbench[serve]'")


def _processes_naming(text: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if text.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            pass
    return found


@pytest.mark.parametrize("how", ["kill", "stop"])
def test_killed_mid_job_and_restarted(tmp_path, how):
    server = Server(tmp_path).start()
    job = server.submit("alice")
    try:
        server.wait(job["id"], until=lambda s: s["done"] >= 3, timeout_s=300)
    finally:
        server.kill() if how == "kill" else server.stop()
    deadline = time.monotonic() + 30
    while _processes_naming(job["id"]) and time.monotonic() < deadline:  # the job dies with its server
        time.sleep(0.2)
    assert not _processes_naming(job["id"]), "the job's process outlived its server"
    record = server.state / "jobs" / job["id"] / "run" / "results.json"
    before = {o["scenario_id"]: o for o in json.loads(record.read_text())["outcomes"]}
    assert 3 <= len(before) < 10

    server.start()
    try:
        status = server.wait(job["id"], timeout_s=300)
    finally:
        server.stop()
    assert status["state"] == "done" and status["passed"] is True and status["starts"] == 2
    after = {o["scenario_id"]: o for o in json.loads(record.read_text())["outcomes"]}
    assert len(after) == 10
    assert all(after[sid] == outcome for sid, outcome in before.items()), "a finished scenario changed"
    db = sqlite3.connect(server.state / "queue.sqlite3")
    second = [s for (s,) in db.execute("SELECT scenario FROM leases WHERE boot = (SELECT MAX(id) FROM boots)")
              if s != START]
    assert not set(second) & set(before), "a scenario finished before the kill was evaluated again"
    assert sorted(second) == sorted(set(after) - set(before))
