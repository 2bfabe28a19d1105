"""The job queue and the lease record, in one SQLite file under the state folder.

A job row says what was asked (its request, the candidate's file name), where it runs (its folder), how far
it is and how it ended. A lease row says which job held which device for which scenario, from when to when,
under which server start (`boot`): the record that no two jobs shared a device, and that a restarted server
ran no finished scenario again. Every write is one transaction, so a server killed at any moment leaves a
queue that the next start reads back whole (`requeue_interrupted`).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

STATES = ("queued", "running", "done", "failed", "cancelled")
"""done: the run finished (its verdict is in the summary); failed: it could not run or finish (the error says
why); cancelled: a client asked."""
FINAL = ("done", "failed", "cancelled")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, client TEXT NOT NULL, state TEXT NOT NULL, candidate TEXT NOT NULL,
    request TEXT NOT NULL, folder TEXT NOT NULL, created_s REAL NOT NULL, started_s REAL, finished_s REAL,
    done INTEGER NOT NULL DEFAULT 0, total INTEGER NOT NULL DEFAULT 0, current TEXT NOT NULL DEFAULT '',
    device TEXT NOT NULL DEFAULT '', exit_code INTEGER, error TEXT NOT NULL DEFAULT '',
    starts INTEGER NOT NULL DEFAULT 0, cancel INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS leases (
    id INTEGER PRIMARY KEY AUTOINCREMENT, job TEXT NOT NULL, device TEXT NOT NULL, scenario TEXT NOT NULL,
    boot INTEGER NOT NULL, start_s REAL NOT NULL, end_s REAL);
CREATE TABLE IF NOT EXISTS boots (id INTEGER PRIMARY KEY AUTOINCREMENT, started_s REAL NOT NULL);
"""


@dataclass(frozen=True)
class Job:
    """One job as the queue holds it."""

    id: str
    client: str
    """The client (token owner) that submitted it; only it sees the job."""
    state: str
    """One of STATES."""
    candidate: str
    """The candidate's file name."""
    request: dict
    """The `solbench run` options asked for (solbench.serve.service.JobRequest, as a dict)."""
    folder: str
    """The job's folder: candidate/ and run/ (the run folder) beneath it."""
    created_s: float
    started_s: float | None
    """First start (epoch seconds)."""
    finished_s: float | None
    done: int
    """Scenarios finished, of `total` (0 until the run has said)."""
    total: int
    current: str
    """The scenario being evaluated, '' between scenarios."""
    device: str
    """The device it runs on: 'cpu' or a GPU ordinal."""
    exit_code: int | None
    """`solbench run`'s exit code once it ended (0 every scenario passed, 1 not all, 2.. bad input ...)."""
    error: str
    """One line when it failed or was cancelled."""
    starts: int
    """How often a process was started for it (a server restart mid-job makes it 2)."""
    cancel: int
    """1 once a client asked to cancel it."""

    def to_dict(self) -> dict:
        return asdict(self)


class JobQueue:
    """The SQLite file; safe to share between the server's threads."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None, timeout=30)
        self._db.row_factory = sqlite3.Row
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")  # a finished job's row survives a power cut too
            self._db.executescript(_SCHEMA)
            self.boot = self._db.execute("INSERT INTO boots (started_s) VALUES (?)", (time.time(),)).lastrowid

    def _run(self, sql: str, args: tuple = ()):
        with self._lock:
            return self._db.execute(sql, args)

    def _rows(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def add(self, client: str, candidate: str, request: dict, folder_of, place=None) -> Job:
        """A new queued job; `folder_of(job_id)` says its folder, and `place(folder)` fills it before the job is
        queued (the scheduler may start a queued job at once)."""
        job_id = uuid.uuid4().hex[:16]
        if place is not None:
            place(folder_of(job_id))
        self._run("INSERT INTO jobs (id, client, state, candidate, request, folder, created_s) VALUES (?,?,?,?,?,?,?)",
                  (job_id, client, "queued", candidate, json.dumps(request), str(folder_of(job_id)), time.time()))
        return self.get(job_id)

    def get(self, job_id: str) -> Job | None:
        rows = self._rows("SELECT * FROM jobs WHERE id = ?", (job_id,))
        return _job(rows[0]) if rows else None

    def jobs(self, client: str | None = None, states: tuple[str, ...] = STATES) -> list[Job]:
        """Jobs in submission order, of one client or of all."""
        marks = ",".join("?" * len(states))
        if client is None:
            rows = self._rows(f"SELECT * FROM jobs WHERE state IN ({marks}) ORDER BY created_s", states)
        else:
            rows = self._rows(f"SELECT * FROM jobs WHERE client = ? AND state IN ({marks}) ORDER BY created_s",
                              (client, *states))
        return [_job(r) for r in rows]

    def pending(self, client: str) -> int:
        """The client's jobs not yet ended (what the queue-length limit counts)."""
        return self._rows("SELECT COUNT(*) FROM jobs WHERE client = ? AND state IN ('queued','running')",
                          (client,))[0][0]

    def next_fair(self) -> Job | None:
        """The queued job to start next: of the client with the fewest running jobs, then the one served
        longest ago, its oldest job first (so no client's many jobs hold back another's one)."""
        rows = self._rows("""
            SELECT q.*, (SELECT COUNT(*) FROM jobs r WHERE r.client = q.client AND r.state = 'running') AS running,
                   (SELECT COALESCE(MAX(s.started_s), 0) FROM jobs s WHERE s.client = q.client) AS served
            FROM jobs q WHERE q.state = 'queued' AND q.cancel = 0 ORDER BY running, served, q.created_s LIMIT 1""")
        return _job(rows[0]) if rows else None

    def mark_started(self, job_id: str, device: str) -> None:
        self._run("UPDATE jobs SET state='running', device=?, starts=starts+1, started_s=COALESCE(started_s, ?), "
                  "current='' WHERE id=?", (device, time.time(), job_id))

    def progress(self, job_id: str, done: int, total: int, current: str) -> None:
        self._run("UPDATE jobs SET done=?, total=?, current=? WHERE id=?", (done, total, current, job_id))

    def finish(self, job_id: str, state: str, exit_code: int | None, error: str = "") -> None:
        assert state in FINAL
        self._run("UPDATE jobs SET state=?, exit_code=?, error=?, current='', finished_s=? WHERE id=?",
                  (state, exit_code, error, time.time(), job_id))

    def ask_cancel(self, job_id: str) -> None:
        self._run("UPDATE jobs SET cancel=1 WHERE id=?", (job_id,))

    def requeue_interrupted(self) -> list[str]:
        """At start: the jobs a previous server left running go back to the queue; they resume from their
        run folder (what finished there is kept, not run again)."""
        ids = [r[0] for r in self._rows("SELECT id FROM jobs WHERE state='running'")]
        self._run("UPDATE jobs SET state='queued', current='' WHERE state='running'")
        return ids

    def lease_start(self, job_id: str, device: str, scenario: str) -> int:
        return self._run("INSERT INTO leases (job, device, scenario, boot, start_s) VALUES (?,?,?,?,?)",
                         (job_id, device, scenario, self.boot, time.time())).lastrowid

    def lease_end(self, lease_id: int) -> None:
        self._run("UPDATE leases SET end_s=? WHERE id=?", (time.time(), lease_id))

    def leases(self, job_id: str | None = None) -> list[dict]:
        """Every lease (of one job, or all), in the order granted."""
        sql, args = ("SELECT * FROM leases WHERE job=? ORDER BY id", (job_id,)) if job_id else ("SELECT * FROM leases ORDER BY id", ())
        return [dict(r) for r in self._rows(sql, args)]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _job(row: sqlite3.Row) -> Job:
    fields = {k: row[k] for k in Job.__dataclass_fields__}
    fields["request"] = json.loads(fields["request"])
    return Job(**fields)
