"""Every `--json` output is one object tagged with its schema and `ok`, parses with a strict parser (no NaN,
no Infinity) and validates against the schema shipped for it; a test below runs each command that has a
--json flag on real data (run, report and check in test_schemas.py, lint in test_lint.py)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import jsonschema
import pytest

from solbench import schemas
from solbench.front import cli

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "baselines" / "h200"
SEED = ROOT / "reference_kernels" / "seed_attention.cu"

COMMANDS = {
    "info": [["info", "--paths", "--json"], ["info", "--json"]],
    "baselines": [["baselines", "--suite", "smoke", "--arch", "h200", "--json"]],
    "triage": [["triage", str(H200 / "real.json"), "--json"]],
    "scenarios": [["scenarios", "--suite", "smoke", "--json"], ["scenarios", "--suite", "hopper", "--json"]],
    "roofline": [["roofline", "--arch", "h200", "--suite", "hopper", "--json"],
                 ["roofline", "--arch", "h200", "--suite", "hopper", "--measured", "--json"],
                 ["roofline", "--arch", "rtx3080", "--suite", "smoke", "--json"]],
    "leaderboard": [["leaderboard", "show", "--recorded", "--arch", "h200", "--suite", "fa3-h2h", "--json"]],
}
"""Each command with its own schema here, and the command lines whose output must validate."""
ELSEWHERE = {"run": "test_schemas.py", "report": "test_schemas.py", "check": "test_schemas.py", "lint": "test_lint.py",
             "build": "below, where nvcc is"}


def strict_loads(text: str):
    """json.loads that rejects NaN and Infinity, as strict parsers (JavaScript's JSON.parse, Go, serde) do."""
    def reject(constant):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=reject)


def assert_valid(doc: dict, name: str) -> None:
    errors = sorted(jsonschema.Draft202012Validator(schemas.load(name)).iter_errors(doc), key=lambda e: e.path)
    assert not errors, [f"{list(e.absolute_path)}: {e.message[:200]}" for e in errors[:5]]


def printed_json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    assert cli.main(argv) == 0, capsys.readouterr().err
    return strict_loads(capsys.readouterr().out)  # exactly one object: anything after it fails here


@pytest.mark.parametrize("name, argv", [(n, a) for n, runs in COMMANDS.items() for a in runs],
                         ids=lambda x: x if isinstance(x, str) else " ".join(x[1:]))
def test_each_json_output_is_one_strict_object_that_validates(capsys, monkeypatch, name, argv):
    monkeypatch.chdir(ROOT)
    doc = printed_json(capsys, argv)
    assert doc["schema"] == getattr(schemas, name.upper()) == schemas.tag(name) and doc["ok"] is True
    assert_valid(doc, name)


def test_every_command_with_json_output_is_checked_somewhere():
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    with_json = set()
    for name, sub in commands.items():
        nested = [a for a in sub._actions if a.dest == "action"]
        parsers = nested[0].choices.values() if nested else [sub]
        if any("--json" in a.option_strings or "json" in (a.choices or ()) for p in parsers for a in p._actions):
            with_json.add(name)  # --json, or report's --format json
    assert with_json == set(COMMANDS) | set(ELSEWHERE)


def test_lists_come_wrapped_with_what_they_list(capsys, monkeypatch):
    """scenarios, roofline and leaderboard printed bare lists: each is now an object naming what it lists."""
    monkeypatch.chdir(ROOT)
    doc = printed_json(capsys, ["scenarios", "--suite", "smoke", "--json"])
    assert doc["suite"] == "smoke" and doc["count"] == len(doc["scenarios"]) == 10 and doc["scenarios"][0]["id"]
    doc = printed_json(capsys, ["roofline", "--arch", "rtx3080", "--suite", "blackwell", "--json"])
    assert doc["arch"] == "rtx3080" and doc["not_bounded"] and doc["measured_profile"] is None
    assert len(doc["scenarios"]) + len(doc["not_bounded"]) == doc_count(capsys, "blackwell")
    doc = printed_json(capsys, ["leaderboard", "show", "--recorded", "--arch", "h200", "--suite", "fa3-h2h", "--json"])
    assert [b["suite"] for b in doc["boards"]] == ["fa3-h2h"]


def doc_count(capsys, suite: str) -> int:
    return printed_json(capsys, ["scenarios", "--suite", suite, "--json"])["count"]


def test_the_copied_definitions_match_the_run_schema():
    """scenarios and roofline describe a scenario and a bound as results.json does (run.schema.json)."""
    run = schemas.load("run")["$defs"]
    scenario = schemas.load("scenarios")["$defs"]["scenario"]
    bounded = schemas.load("roofline")["$defs"]["bounded"]
    assert {k: v for k, v in scenario["properties"].items() if k != "id"} == run["scenario"]["properties"]
    assert {k: v for k, v in bounded["properties"].items() if k != "id"} == run["bound"]["properties"]
    assert bounded["required"] == ["id", *run["bound"]["required"]]


def test_a_value_that_is_not_a_number_fails_where_json_is_written():
    with pytest.raises(ValueError):
        schemas.dumps({"schema": schemas.ROOFLINE, "ok": True, "x": math.inf})
    with pytest.raises(ValueError):
        schemas.dumps({"schema": schemas.ROOFLINE, "ok": True, "x": [math.nan]})
    with pytest.raises(TypeError, match="an object with 'schema' and 'ok'"):
        schemas.dumps([{"id": "a"}])
    assert strict_loads(schemas.dumps({"schema": schemas.INFO, "ok": True, "x": None})) == {
        "schema": schemas.INFO, "ok": True, "x": None}


def test_an_exported_leaderboard_json_is_the_document_show_prints(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    argv = ["leaderboard", "show", "--recorded", "--arch", "h200", "--suite", "fa3-h2h"]
    shown = printed_json(capsys, [*argv, "--json"])
    assert cli.main(["leaderboard", "export", *argv[2:], "--html", str(tmp_path)]) == 0
    written = strict_loads((tmp_path / "leaderboard.json").read_text())
    assert_valid(written, "leaderboard")

    def undated(doc):
        for board in doc["boards"]:
            for s in board["ranked"] + board["narrow"] + board["apart"]:
                s["entry"].pop("added_utc")
        return doc

    assert undated(written) == undated(shown)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc here")
def test_build_json_validates(capsys):
    doc = printed_json(capsys, ["build", str(SEED), "--arch", "rtx3080", "--json"])
    assert doc["schema"] == schemas.BUILD and doc["kernels"] and doc["libraries"]["ok"]
    assert_valid(doc, "build")
