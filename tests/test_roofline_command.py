"""`solbench roofline`: works with no GPU; table, JSON, --measured, errors as one line."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from solbench.front import cli
from solbench.core.roofline import MeasuredProfile, bound, load_arch
from solbench.core.scenario import Scenario

SCENARIOS = (
    Scenario(q_lens=(4096,), kv_lens=(4096,), heads_q=16, heads_kv=16),
    Scenario(q_lens=(1,) * 4, kv_lens=(2048,) * 4, heads_q=32, heads_kv=8, regime="decode"),
    Scenario(q_lens=(256,), kv_lens=(256,), heads_q=8, heads_kv=8, dtype="fp8_e4m3", descale="per_tensor"),
)


@dataclass(frozen=True)
class FakeSuite:
    name: str
    scenarios: tuple

    def select(self, substring=None, limit=None):
        chosen = [s for s in self.scenarios if not substring or substring in s.id]
        return FakeSuite(self.name, tuple(chosen[:limit] if limit else chosen))


@pytest.fixture
def fake_suite(monkeypatch):
    import solbench.core.suites

    seen = []

    def load_suite(name):
        seen.append(name)
        return FakeSuite(name, SCENARIOS)

    monkeypatch.setattr(solbench.core.suites, "load_suite", load_suite)
    return seen


def test_table(fake_suite, capsys):
    assert cli.main(["roofline", "--arch", "b200", "--suite", "blackwell"]) == 0
    out = capsys.readouterr().out
    assert fake_suite == ["blackwell"]
    for sc in SCENARIOS:
        assert sc.id in out
    assert "compute" in out and "memory" in out
    assert "3 scenarios of suite 'blackwell' bounded on b200" in out
    header = out.splitlines()[0].split()
    assert header[:7] == ["id", "GFLOP", "MB", "FLOP/B", "bound", "us", "limit"] and header[-1] == "launch-bound"


def test_json(fake_suite, capsys):
    assert cli.main(["roofline", "--arch", "h200", "--suite", "x", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["scenarios"]
    assert [r["id"] for r in rows] == [s.id for s in SCENARIOS]
    spec = load_arch("h200")
    for row, sc in zip(rows, SCENARIOS):
        b = bound(sc, spec)
        assert (row["flops"], row["bytes"], row["limit"]) == (b.flops, b.bytes, b.limit)
        assert row["bound_ms"] == pytest.approx(b.bound_ms)
    assert rows[1]["limit"] == "memory"


def test_fp8_on_rtx3080_is_skipped_with_a_note(fake_suite, capsys):
    assert cli.main(["roofline", "--arch", "rtx3080", "--suite", "x", "--json"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert len(doc["scenarios"]) == 2 and doc["not_bounded"] == [SCENARIOS[2].id]
    assert "1 scenario(s) not bounded: rtx3080 has no fp8_e4m3 tensor cores" in captured.err


def test_unknown_arch_is_one_line(fake_suite, capsys):
    assert cli.main(["roofline", "--arch", "a100", "--suite", "x"]) == 2
    err = capsys.readouterr().err
    assert err == "solbench roofline: error: unknown arch 'a100'; known arches: b200, h100, h100_pcie, h200, rtx3080, rtx3080_12gb, rtx3080ti\n"
    assert cli.main(["roofline", "--suite", "x"]) == 2
    assert "needs --arch" in capsys.readouterr().err


def test_measured(fake_suite, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("SOLBENCH_ROOFLINE_DIR", str(tmp_path))
    assert cli.main(["roofline", "--arch", "h200", "--suite", "x", "--measured"]) == 2
    assert "no measured profile for h200" in capsys.readouterr().err
    prof = MeasuredProfile(arch="h200", gpu="NVIDIA H200", date="2026-01-01", bf16_tflops=790.0,
                           fp16_tflops=785.0, copy_tbps=4.3, launch_us=30.0)
    (tmp_path / "measured").mkdir()
    (tmp_path / "measured" / "h200.toml").write_text(prof.to_toml())
    assert cli.main(["roofline", "--arch", "h200", "--suite", "x", "--measured"]) == 0
    out = capsys.readouterr().out
    header = " ".join(out.splitlines()[:2]).split()  # wrapped to fit 120 columns
    assert header.count("measured") == 2 and "yes" in out  # the decode bound (~8 us) is under a 30 us floor
    assert cli.main(["roofline", "--arch", "h200", "--suite", "x", "--measured", "--wide"]) == 0
    assert "measured us" in capsys.readouterr().out  # headers whole
    assert cli.main(["roofline", "--arch", "h200", "--suite", "x", "--json", "--measured",
                     str(tmp_path / "measured" / "h200.toml")]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = doc["scenarios"]
    assert doc["measured_profile"] == {"gpu": "NVIDIA H200", "date": "2026-01-01"}
    assert rows[1]["launch_bound"] is True and rows[0]["launch_bound"] is False


def test_real_blackwell_suite(capsys):
    suites = pytest.importorskip("solbench.core.suites")
    if "blackwell" not in suites.available_suites():
        pytest.skip("no blackwell suite")
    assert cli.main(["roofline", "--arch", "b200", "--suite", "blackwell", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["scenarios"]
    assert len(rows) == len(suites.load_suite("blackwell").scenarios)
    assert all(r["bound_ms"] > 0 and r["limit"] in ("compute", "memory") for r in rows)
