"""The leaderboard store: one SQLite file (stdlib sqlite3, nothing to start), schema-versioned with
`PRAGMA user_version`.

Each added run is kept whole as JSON in `runs`, keyed by the sha256 of that JSON, so the seed and six
baselines added from one run share one copy. `entries` holds one row per ranked implementation with
its provenance in plain columns, so `sqlite3 leaderboard.sqlite 'select name, gpu_model from entries'`
answers questions without solbench.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

from solbench.core.errors import ConfigError, SolbenchError
from solbench.leaderboard.entry import Entry
from solbench.core.model import RunResult, current_suite_name
from solbench.core.paths import BASELINES_DIR
from solbench.supervisor.run_files import load_run

DEFAULT_DB = Path("reports") / "leaderboard.sqlite"
SCHEMA_VERSION = 1
"""Bump with a migration in `_migrate` whenever the tables change."""

_SCHEMA = """
CREATE TABLE runs (
    sha256 TEXT PRIMARY KEY,          -- of result_json
    run_id TEXT NOT NULL,
    result_json TEXT NOT NULL         -- the whole RunResult, raw samples included
);
CREATE TABLE entries (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    author TEXT NOT NULL,
    impl TEXT NOT NULL,               -- 'candidate', 'seed' or a baseline name
    source_sha256 TEXT NOT NULL,
    build_flags TEXT NOT NULL,        -- JSON list
    solbench_version TEXT NOT NULL,
    suite TEXT NOT NULL,
    suite_hash TEXT NOT NULL,
    gpu_model TEXT NOT NULL,
    arch TEXT NOT NULL,
    library_versions TEXT NOT NULL,   -- JSON {package: version}
    run_id TEXT NOT NULL,
    run_sha256 TEXT NOT NULL REFERENCES runs(sha256),
    added_utc TEXT NOT NULL,
    UNIQUE (name, suite, gpu_model)
);
CREATE INDEX entries_by_board ON entries (suite, arch, gpu_model);
"""

_COLUMNS = ("name", "author", "impl", "source_sha256", "build_flags", "solbench_version", "suite", "suite_hash",
            "gpu_model", "arch", "library_versions", "run_id", "added_utc")


class Store:
    """A leaderboard file. Use as a context manager, or call close()."""

    def __init__(self, path: str | Path = DEFAULT_DB, create: bool = True):
        self.path = Path(path)
        if not self.path.exists() and not create:
            raise ConfigError(f"{self.path}: no leaderboard here (add an entry first, or pass --db)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(self.path)
            self._db.execute("PRAGMA foreign_keys = ON")
            self._open()
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"{self.path}: not a leaderboard database: {exc}") from None

    def _open(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version == 0:
            tables = self._db.execute("SELECT count(*) FROM sqlite_master WHERE type='table'").fetchone()[0]
            if tables:
                raise ConfigError(f"{self.path}: an SQLite file that is not a solbench leaderboard")
            with self._db:
                self._db.executescript(_SCHEMA)
                self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        elif version > SCHEMA_VERSION:
            raise ConfigError(f"{self.path}: leaderboard schema {version} is newer than this solbench's "
                              f"({SCHEMA_VERSION}); upgrade solbench")
        elif version < SCHEMA_VERSION:
            self._migrate(version)

    def _migrate(self, version: int) -> None:
        raise ConfigError(f"{self.path}: leaderboard schema {version} has no migration to {SCHEMA_VERSION}")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def add(self, entry: Entry) -> Entry:
        """Store `entry` (and its run, once); ConfigError if the name is taken for that suite and GPU."""
        if entry.result is None:
            raise ConfigError(f"entry {entry.name!r} has no run to store")
        blob = json.dumps(entry.result.to_dict(), sort_keys=True)
        digest = hashlib.sha256(blob.encode()).hexdigest()
        row = _row(entry)
        try:
            with self._db:
                self._db.execute("INSERT OR IGNORE INTO runs (sha256, run_id, result_json) VALUES (?, ?, ?)",
                                 (digest, entry.run_id, blob))
                self._db.execute(f"INSERT INTO entries ({', '.join(_COLUMNS)}, run_sha256) "
                                 f"VALUES ({', '.join('?' * len(_COLUMNS))}, ?)", (*row, digest))
        except sqlite3.IntegrityError:
            raise ConfigError(f"an entry named {entry.name!r} already exists for suite {entry.suite!r} on "
                              f"{entry.gpu_model}; pass --name, or remove it first") from None
        return entry

    def add_result(self, path: str | Path, impl: str = "candidate", name: str | None = None,
                   author: str = "") -> Entry:
        return self.add(Entry.from_result(load_run(Path(path)), impl, name, author))

    def remove(self, name: str, suite: str | None = None) -> int:
        """Remove the entries called `name` (in `suite` only, if given); returns how many. ConfigError if none."""
        query, args = "DELETE FROM entries WHERE name = ?", [name]
        if suite:
            query, args = query + " AND suite = ?", args + [suite]
        with self._db:
            removed = self._db.execute(query, args).rowcount
            self._db.execute("DELETE FROM runs WHERE sha256 NOT IN (SELECT run_sha256 FROM entries)")
        if not removed:
            raise ConfigError(f"no entry named {name!r}" + (f" in suite {suite!r}" if suite else "")
                              + f" in {self.path}")
        return removed

    def entries(self, suite: str | None = None, arch: str | None = None) -> list[Entry]:
        """Entries in the order they were added, with their runs, optionally of one suite and/or arch."""
        where, args = [], []
        if arch:
            where.append("e.arch = ?")
            args.append(arch)
        sql = (f"SELECT {', '.join('e.' + c for c in _COLUMNS)}, r.sha256, r.result_json FROM entries e "
               f"JOIN runs r ON r.sha256 = e.run_sha256 {'WHERE ' + ' AND '.join(where) if where else ''} ORDER BY e.id")
        runs: dict[str, RunResult] = {}
        out = []
        for *values, digest, blob in self._db.execute(sql, args):
            d = dict(zip(_COLUMNS, values))
            d["suite"] = current_suite_name(d["suite"], d["suite_hash"])  # entries stored before a rename
            if suite and d["suite"] != suite:
                continue
            if digest not in runs:
                runs[digest] = RunResult.from_dict(json.loads(blob))
            result = runs[digest]
            out.append(Entry(**{**d, "build_flags": tuple(json.loads(d["build_flags"])),
                                "library_versions": json.loads(d["library_versions"])}, result=result))
        return out


def _row(entry: Entry) -> tuple:
    values = {c: getattr(entry, c) for c in _COLUMNS}
    values["build_flags"] = json.dumps(list(entry.build_flags))
    values["library_versions"] = json.dumps(entry.library_versions, sort_keys=True)
    return tuple(values[c] for c in _COLUMNS)


def default_baselines_dir() -> Path:
    """The recorded baseline runs shipped with solbench (solbench.core.paths.BASELINES_DIR)."""
    return BASELINES_DIR


def load_baseline_runs(root: str | Path, arches: set[str] | None = None) -> list[RunResult]:
    """Every recorded run under root/<arch>/ (any depth, *.json of the results schema) for these arches
    (None: every arch folder under root).

    Other JSON files (version manifests, notes) are skipped; a results file that does not parse is an
    error naming it, since a silently dropped baseline would change every score.
    """
    from solbench.core.model import SCHEMA

    if arches is None:
        arches = {p.name for p in Path(root).iterdir() if p.is_dir()} if Path(root).is_dir() else set()
    runs = []
    for arch in sorted(arches):
        for path in sorted((Path(root) / arch).rglob("*.json")):
            try:
                data = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError) as exc:
                raise ConfigError(f"{path}: cannot read baseline run: {exc}") from None
            if isinstance(data, dict) and data.get("schema") == SCHEMA:
                try:
                    runs.append(RunResult.from_dict(data))
                except (SolbenchError, TypeError, KeyError, ValueError, AttributeError) as exc:
                    raise ConfigError(f"{path}: malformed baseline run: {exc}") from None
    return runs
