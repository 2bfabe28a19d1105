"""The job queue: fair order by client, requeue after a restart, the lease record (no server needed)."""

import pytest

from solbench.serve.queue import JobQueue


@pytest.fixture
def queue(tmp_path):
    q = JobQueue(tmp_path / "queue.sqlite3")
    yield q
    q.close()


def test_a_client_with_many_jobs_does_not_hold_back_another(queue, tmp_path):
    many = [queue.add("alice", "a.py", {}, lambda i: tmp_path / i) for _ in range(5)]
    queue.mark_started(many[0].id, "cpu")
    bob = queue.add("bob", "b.py", {}, lambda i: tmp_path / i)
    assert queue.next_fair().id == bob.id  # alice has one running, bob none
    queue.mark_started(bob.id, "cpu")
    assert queue.next_fair().id == many[1].id  # both have one running: alice was served longer ago
    assert queue.pending("alice") == 5 and queue.pending("bob") == 1


def test_a_restart_requeues_running_jobs_and_keeps_ended_ones(queue, tmp_path):
    running = queue.add("alice", "a.py", {"suite": "smoke"}, lambda i: tmp_path / i)
    ended = queue.add("alice", "b.py", {}, lambda i: tmp_path / i)
    queue.mark_started(running.id, "cpu")
    queue.mark_started(ended.id, "cpu")
    queue.finish(ended.id, "done", 0)
    queue.close()
    again = JobQueue(tmp_path / "queue.sqlite3")
    assert again.requeue_interrupted() == [running.id]
    assert again.get(running.id).state == "queued" and again.get(running.id).request == {"suite": "smoke"}
    assert again.get(ended.id).state == "done" and again.get(ended.id).exit_code == 0
    assert again.boot == queue.boot + 1
    again.close()


def test_leases_are_recorded_with_their_server_start(queue, tmp_path):
    job = queue.add("alice", "a.py", {}, lambda i: tmp_path / i)
    lease = queue.lease_start(job.id, "cpu", "scenario-1")
    queue.lease_end(lease)
    (row,) = queue.leases(job.id)
    assert row["scenario"] == "scenario-1" and row["boot"] == queue.boot and row["end_s"] >= row["start_s"]


def test_jobs_are_listed_per_client(queue, tmp_path):
    queue.add("alice", "a.py", {}, lambda i: tmp_path / i)
    queue.add("bob", "b.py", {}, lambda i: tmp_path / i)
    assert [j.client for j in queue.jobs("bob")] == ["bob"]
    assert len(queue.jobs()) == 2
