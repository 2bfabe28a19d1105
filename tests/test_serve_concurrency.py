"""20 jobs from 4 clients at once on one device: every one finishes with the verdicts of a plain run of the
reference candidate (every scenario passed), the device is never leased to two scenarios at once, and the
clients' scenarios interleave."""

import sqlite3
from concurrent.futures import ThreadPoolExecutor

import pytest

from solbench.serve.scheduler import START
from tests.serve_server import TOKENS, Server, verdicts

pytestmark = pytest.mark.slow
httpx = pytest.importorskip("httpx", reason="needs the serve extra: pip install 'solbench[serve]'")

SCENARIOS = 2
"""Per job: 20 jobs of the full smoke suite would take long on 2 cores; the leases are what is tested."""


def test_twenty_jobs_from_four_clients(tmp_path):
    from solbench.core.suites import load_suite

    plain = {sc.id: "passed" for sc in load_suite("smoke").scenarios[:SCENARIOS]}
    server = Server(tmp_path, "--max-running", "3", "--max-queue", "5").start()
    try:
        clients = [c for c in TOKENS for _ in range(5)]
        with ThreadPoolExecutor(20) as pool:
            jobs = list(pool.map(lambda c: (c, server.submit(c, max_scenarios=SCENARIOS)["id"]), clients))
        for client, job_id in jobs:
            status = server.wait(job_id, client, timeout_s=900)
            assert status["state"] == "done" and status["passed"] is True, status
            summary = httpx.get(f"{server.url}/v1/jobs/{job_id}/summary", headers=server.headers(client)).json()
            assert verdicts(summary) == plain
        for client in TOKENS:  # a client lists its own jobs, all of them, and no other's
            listed = httpx.get(server.url + "/v1/jobs", headers=server.headers(client)).json()
            assert sorted(j["id"] for j in listed) == sorted(j for c, j in jobs if c == client)
    finally:
        server.stop()
    db = sqlite3.connect(server.state / "queue.sqlite3")
    leases = db.execute("SELECT job, device, scenario, start_s, end_s FROM leases ORDER BY start_s").fetchall()
    # Each job holds the device for its start (loading its workers) and for each scenario, never beside another.
    assert len(leases) == 20 * (1 + SCENARIOS) and all(end is not None for *_, end in leases)
    for (_, _, _, _, end), (_, _, _, start, _) in zip(leases, leases[1:]):
        assert start >= end, "two jobs held the device at once"
    per_job = {}
    for job, _, scenario, *_ in leases:
        per_job.setdefault(job, []).append(scenario)
    assert sorted(map(tuple, per_job.values())) == [(START, *plain)] * 20  # nothing ran twice
    owner = dict(db.execute("SELECT id, client FROM jobs").fetchall())
    first_ten = {owner[job] for job, *_ in leases[:10]}
    assert len(first_ten) >= 3, f"the first leases went to {first_ten}: clients did not interleave"
