"""The shipped JSON Schemas: valid Draft 2020-12, in step with the records they describe, and satisfied by real
outputs: the committed H200 runs, and a CPU run of the shipped Python candidate made here (results.json,
`run --json`, `report --format json`, `check --json`, and the error objects of failing commands)."""

import contextlib
import dataclasses
import io
import json
from pathlib import Path

import jsonschema
import pytest

from solbench import schemas
from solbench.core import model
from solbench.core.policy import TimingPolicy
from solbench.core.roofline import Bound
from solbench.core.scenario import Scenario
from solbench.front.cli import main

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
CANDIDATE = str(ROOT / "reference_kernels" / "torch_attention.py")
WRONG = str(ROOT / "reference_kernels" / "torch_attention_wrong_window.py")
COMMITTED = sorted([*ROOT.glob("reports/reference/*/*.json"), *ROOT.glob("baselines/h200/*.json")])


ADDED_WITHIN_VERSION_1 = {"input_copies", "seed_mean_abs", "row_max_mean_abs", "seed_row_max_mean_abs", "budget",
                          "error_budget", "placement", "sanitize"}
"""Fields solbench.run/1 files written before them lack: optional in the schema, every other field required."""


def validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schemas.load(name))


def assert_valid(doc, name: str) -> None:
    errors = sorted(validator(name).iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, [f"{list(e.absolute_path)}: {e.message[:200]}" for e in errors[:5]]


@pytest.mark.parametrize("name", schemas.NAMES)
def test_every_schema_is_draft_2020_12_and_tagged(name):
    schema = schemas.load(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schemas.tag(name) == f"solbench.{name}/1"


def test_tags_are_the_ones_the_code_writes():
    assert schemas.tag("run") == model.SCHEMA
    assert (schemas.tag("summary"), schemas.tag("check"), schemas.tag("error")) == (schemas.SUMMARY, schemas.CHECK,
                                                                                    schemas.ERROR)


def _fields(cls) -> tuple[set, set]:
    """(every field, the fields without a default) of a dataclass."""
    fields = dataclasses.fields(cls)
    return ({f.name for f in fields},
            {f.name for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING})


@pytest.mark.parametrize("definition, cls", [
    (None, model.RunResult), ("outcome", model.Outcome), ("measurement", model.Measurement),
    ("error_stats", model.ErrorStats), ("bound", Bound),
])
def test_run_schema_describes_and_requires_every_field(definition, cls):
    schema = schemas.load("run")
    node = schema["$defs"][definition] if definition else schema
    every, without_default = _fields(cls)
    assert set(node["properties"]) == every
    assert without_default <= set(node["required"]) == every - ADDED_WITHIN_VERSION_1  # to_dict writes every field


@pytest.mark.parametrize("definition, cls", [("scenario", Scenario), ("policy", TimingPolicy)])
def test_run_schema_types_every_field_of_the_scenario_and_the_policy(definition, cls):
    assert set(schemas.load("run")["$defs"][definition]["properties"]) == _fields(cls)[0]


def test_both_schemas_list_every_status():
    values = [s.value for s in model.Status]
    assert schemas.load("run")["$defs"]["status"]["enum"] == values
    assert schemas.load("summary")["$defs"]["status"]["enum"] == values


def _shape(properties: dict) -> dict:
    """Properties without their descriptions and without the tag (each schema has its own)."""
    return {k: {kk: vv for kk, vv in v.items() if kk != "description"} for k, v in properties.items() if k != "schema"}


def test_the_error_object_is_the_same_in_every_schema():
    error = schemas.load("error")
    for name in ("summary", "check"):
        variant = schemas.load(name)["$defs"]["error"]
        assert set(error["required"]) <= set(variant["required"])
        assert {k: v for k, v in _shape(variant["properties"]).items() if k in error["properties"]} == \
            _shape(error["properties"])


def test_schemas_ship_as_package_data():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["solbench"]
    assert "schemas/*.json" in data
    shipped = {p.name for p in (ROOT / "solbench" / "schemas").glob("*.json")}
    assert shipped == {f"{n}.schema.json" for n in schemas.NAMES}
    assert all(schemas.path(n).is_file() for n in schemas.NAMES)


@pytest.mark.slow
@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(ROOT)))
def test_committed_results_validate(path):
    assert_valid(json.loads(path.read_text()), "run")


def test_committed_results_were_found():
    assert len(COMMITTED) >= 12


@pytest.fixture(scope="module")
def cpu_runs(tmp_path_factory):
    """A passing run of the shipped Python candidate on the smoke suite, and a failing one (wrong windows)."""
    out = {}
    for name, candidate, extra in (("good", CANDIDATE, []), ("wrong", WRONG, ["--max-scenarios", "5"])):
        folder = tmp_path_factory.mktemp(name)
        stdout = folder / "stdout.json"
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            code = main(["run", candidate, "--suite", "smoke", "--device", "cpu", "--quick", "--json", "--out",
                         str(folder), *extra])
        stdout.write_text(buffer.getvalue())
        out[name] = (code, folder)
    return out


def strict_loads(text: str):
    """json.loads rejecting NaN and Infinity, as strict parsers (JavaScript's JSON.parse, Go, serde) do."""
    def reject(constant):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=reject)


@pytest.mark.slow
def test_a_cpu_run_validates_results_and_summary(cpu_runs):
    for name, expected in (("good", 0), ("wrong", 1)):
        code, folder = cpu_runs[name]
        assert code == expected
        assert_valid(strict_loads((folder / "results.json").read_text()), "run")
        summary = strict_loads((folder / "stdout.json").read_text())
        assert_valid(summary, "summary")
        assert summary["ok"] is True and summary["exit_code"] == expected


def test_quick_noise_is_null_not_infinity(cpu_runs):
    """--quick takes fewer samples than a 95 % CI of the median needs (6): its noise is null, never Infinity
    (which `run --json` printed, and a strict parser rejects), and "-" in results.csv."""
    from solbench.core.stats import min_samples_for_ci

    folder = cpu_runs["good"][1]
    samples = {o["scenario_id"]: len(o["measurements"]["candidate"]["samples_ms"])
               for o in json.loads((folder / "results.json").read_text())["outcomes"]}
    rows = strict_loads((folder / "stdout.json").read_text())["per_scenario"]
    assert any(n < min_samples_for_ci() for n in samples.values())
    for row in rows:
        few = samples[row["scenario"]] < min_samples_for_ci()
        assert (row["noise_pct"] is None) if few else (row["noise_pct"] >= 0), row
    assert "inf" not in (folder / "results.csv").read_text()


def test_report_and_check_json_validate(cpu_runs, capsys):
    for name, (code, folder) in cpu_runs.items():
        capsys.readouterr()
        assert main(["report", str(folder), "--format", "json"]) == code
        assert_valid(json.loads(capsys.readouterr().out), "summary")
        results = str(folder / "results.json")
        for extra, expected in (([], code), (["--min-sol", "50"], 1 if code else 2)):
            assert main(["check", results, "--against", results, "--json", *extra]) == expected
            doc = json.loads(capsys.readouterr().out)
            assert_valid(doc, "check")
            assert doc["exit_code"] == expected


def test_a_failing_run_reports_every_scenario_with_the_same_keys(cpu_runs):
    summary = json.loads((cpu_runs["wrong"][1] / "stdout.json").read_text())
    rows = summary["per_scenario"]
    assert {r["status"] for r in rows} == {"passed", "mismatch"}
    assert len({tuple(r) for r in rows}) == 1 and len({tuple(r["comparators"]) for r in rows}) == 1
    assert list(rows[0]["comparators"]) == summary["comparators"] == ["seed"]
    failed = next(r for r in rows if r["status"] == "mismatch")
    assert failed["time_us"] is None and failed["comparators"]["seed"]["speedup"] is None
    assert failed["comparators"]["seed"]["status"] == "passed"


@pytest.mark.parametrize("argv, schema, code", [
    (["run", CANDIDATE, "--arch", "b200", "--suite", "smoke", "--json"], "summary", 7),
    (["run", CANDIDATE, "--max-scenarios", "0", "--json"], "summary", 2),
    (["report", "missing.json", "--format", "json"], "summary", 2),
    (["check", "missing.json", "--json"], "check", 2),
    (["check", "missing.json", "--min-sol", "-3", "--json"], "check", 2),
    (["roofline", "--arch", "a100", "--json"], "error", 2),
])
def test_a_failing_command_still_prints_one_valid_object(argv, schema, code, capsys):
    assert main(argv) == code
    captured = capsys.readouterr()
    doc = json.loads(captured.out)  # exactly one object: json.loads rejects anything after it
    assert_valid(doc, schema)
    assert doc["schema"] == schemas.tag(schema) and doc["ok"] is False and doc["exit_code"] == code
    assert doc["error"] and doc["error"] in captured.err


def test_a_wrong_shape_is_named_with_its_place(tmp_path):
    good = json.loads(COMMITTED[0].read_text())
    good["outcomes"][0]["measurements"]["candidate"]["samples_ms"] = []
    with pytest.raises(schemas.ConfigError, match=r"run.json: not a valid solbench results.json \(solbench.run/1\): at "
                                                  r"outcomes\[0\].measurements.candidate.samples_ms: \[\] should be non-empty"):
        schemas.validate(good, "run", "run.json")


def test_the_docs_document_every_schema_and_summary_key():
    section = (ROOT / "docs" / "agents.md").read_text()
    for name in schemas.NAMES:
        assert f"| `{schemas.tag(name)}` | `{name}.schema.json` |" in section
    summary = schemas.load("summary")["$defs"]
    keys = [*summary["summary"]["required"], *summary["row"]["required"], *summary["cell"]["required"]]
    assert [k for k in keys if f"`{k}`" not in section and f'`"{k}"`' not in section] == []
