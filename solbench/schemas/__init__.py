"""JSON Schemas (Draft 2020-12) of what solbench writes for programs, shipped with the package:

- `run.schema.json`: results.json (`"schema": "solbench.run/1"`);
- `summary.schema.json`: what `solbench run --json` and `solbench report --format json` print
  (`solbench.summary/1`), a summary or, when the command failed, an error object;
- `check.schema.json`: what `solbench check --json` prints (`solbench.check/1`);
- `lint.schema.json`: what `solbench lint --json` prints (`solbench.lint/1`);
- `error.schema.json`: the error object any other command prints with --json (`solbench.error/1`);
- `job`, `suites`: what `solbench serve` and its MCP tools answer for a job's status and the suite list;
- `info`, `build`, `baselines`, `triage`, `scenarios`, `roofline`, `leaderboard`: what `solbench <that
  command> --json` prints (`solbench.<command>/1`; `leaderboard show --json`, and leaderboard.json beside
  an exported page).

Every document is written by `dumps`: strict JSON (no NaN or Infinity, which strict parsers reject: a value
that is not a number is null, and the schema says why), always one object with `schema` and `ok`.

A front-end in another language validates with `path(name)`; solbench itself validates every results
file it reads (`validate`), so a file of the wrong shape is one line naming where, not a traceback.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from pathlib import Path

from solbench.core.errors import ConfigError

SUMMARY = "solbench.summary/1"
"""Tag of `solbench run --json` / `solbench report --format json` output (summary.schema.json)."""
CHECK = "solbench.check/1"
"""Tag of `solbench check --json` output (check.schema.json)."""
LINT = "solbench.lint/1"
"""Tag of `solbench lint --json` output (lint.schema.json)."""
ERROR = "solbench.error/1"
"""Tag of the error object of a --json command that has no schema of its own (error.schema.json)."""
INFO = "solbench.info/1"
"""Tag of `solbench info --json` output (info.schema.json)."""
BUILD = "solbench.build/1"
"""Tag of `solbench build --json` output (build.schema.json)."""
BASELINES = "solbench.baselines/1"
"""Tag of `solbench baselines --json` output (baselines.schema.json)."""
TRIAGE = "solbench.triage/1"
"""Tag of `solbench triage --json` output (triage.schema.json)."""
SCENARIOS = "solbench.scenarios/1"
"""Tag of `solbench scenarios --json` output (scenarios.schema.json)."""
ROOFLINE = "solbench.roofline/1"
"""Tag of `solbench roofline --json` output (roofline.schema.json)."""
LEADERBOARD = "solbench.leaderboard/1"
"""Tag of `solbench leaderboard show --json` output and of an exported leaderboard.json (leaderboard.schema.json)."""

JOB = "solbench.job/1"
"""Tag of a `solbench serve` job's status (job.schema.json)."""
SUITES = "solbench.suites/1"
"""Tag of `solbench serve`'s suite list (suites.schema.json)."""

NAMES = ("run", "summary", "check", "lint", "error", "info", "build", "baselines", "triage", "scenarios", "roofline",
         "leaderboard", "job", "suites")

MAX_MESSAGE = 160
"""Characters of jsonschema's message kept: it quotes the offending value, which may be a whole run."""


def dumps(doc: dict) -> str:
    """`doc` as the strict JSON every solbench output is: a NaN or an infinity raises ValueError here, in
    the tests, instead of reaching a reader whose parser rejects it; so does a document that is not an object
    tagged with its schema and `ok`."""
    if not isinstance(doc, dict) or not {"schema", "ok"} <= doc.keys():
        raise TypeError(f"a solbench JSON document is an object with 'schema' and 'ok', got {type(doc).__name__}")
    return json.dumps(doc, indent=1, allow_nan=False)


def path(name: str) -> Path:
    """Where the schema file lies (inside the installed package)."""
    if name not in NAMES:
        raise ConfigError(f"unknown schema {name!r}; known: {', '.join(NAMES)}")
    return Path(str(resources.files(__name__) / f"{name}.schema.json"))


@functools.lru_cache(maxsize=None)
def load(name: str) -> dict:
    return json.loads(path(name).read_text())


@functools.lru_cache(maxsize=None)
def _validator(name: str):
    import jsonschema

    return jsonschema.Draft202012Validator(load(name))


def validate(doc, name: str, source: str) -> None:
    """Raise ConfigError naming `source`, the JSON location and what is wrong there, unless `doc` is valid."""
    from jsonschema.exceptions import best_match

    error = best_match(_validator(name).iter_errors(doc))
    if error is None:
        return
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path) or "the top level"
    message = error.message if len(error.message) <= MAX_MESSAGE else error.message[:MAX_MESSAGE - 1] + "…"
    schema = load(name)
    raise ConfigError(f"{source}: not a valid {schema['title']} ({tag(name)}): at {where.lstrip('.')}: {message} "
                      f"(the shape is in solbench/schemas/{name}.schema.json)")


def tag(name: str) -> str:
    """The `"schema"` value a document of this kind carries, e.g. 'solbench.run/1'."""
    return load(name)["properties"]["schema"]["const"]
