"""solbench profile on CPU: fake ncu / nsys / compute-sanitizer binaries on PATH record their argv and
write the report files a real tool would; the summary is parsed from what they print."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from solbench.core.suites import load_suite
from solbench.front import cli

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = "decode-n64-tq64-tkv297044-L35c06b-hq32-hkv8-d128-bf16-page16-causal-wl4095-mistral_7b"

FAKE = r'''#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps([os.path.basename(sys.argv[0]), os.environ.get("SOLBENCH_PROFILE_CHECK")] + args) + "\n")
name = os.path.basename(sys.argv[0])
if name == "ncu" and "--import" in args:
    print('"ID","Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"')
    print('"0","attn_fwd","GPU Speed Of Light Throughput","Memory Throughput","%","91.5"')
    print('"0","attn_fwd","Occupancy","Achieved Occupancy","%","48.2"')
    print('"0","attn_fwd","Warp State Statistics","Stall Long Scoreboard","cycle","12.5"')
    print('"0","attn_fwd","Warp State Statistics","Stall Barrier","cycle","3.0"')
elif name == "nsys" and args[0] == "stats":
    print('"Time (%)","Total Time (ns)","Instances","Name"')
    print('"97.0","1000","3","attn_fwd"')
elif name == "compute-sanitizer":
    open(args[args.index("--log-file") + 1], "w").write("========= ERROR SUMMARY: 0 errors\n")
else:
    out = args[args.index("-o") + 1]
    open(out + (".ncu-rep" if name == "ncu" else ".nsys-rep"), "w").write("report")
'''


@pytest.fixture
def fake_tools(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("ncu", "nsys", "compute-sanitizer"):
        path = bin_dir / name
        path.write_text(FAKE)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "argv.jsonl"))
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(ROOT / "baselines/h200/real.json", run / "results.json")
    return run, tmp_path / "argv.jsonl"


def test_ncu_runs_the_one_scenario_with_clock_control_none_and_summarises(fake_tools, capsys):
    run, log = fake_tools
    assert cli.main(["profile", str(run), "--scenario", SCENARIO, "--tool", "ncu"]) == 0
    out = capsys.readouterr().out
    assert "Memory Throughput: 91.5 %" in out and "Achieved Occupancy: 48.2" in out
    assert "top stall reasons: Stall Long Scoreboard 12.5, Stall Barrier 3" in out
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    profiled = calls[0]
    assert profiled[:4] == ["ncu", "1", "--clock-control", "none"]  # the workers profile one checked call
    assert profiled[profiled.index("--profile-from-start") + 1] == "off"
    inner = profiled[profiled.index("-m"):]
    assert inner[:4] == ["-m", "solbench", "run", "reference_kernels/seed_attention.cu"]
    suite = load_suite(inner[inner.index("--suite") + 1])
    assert [sc.id for sc in suite.scenarios] == [SCENARIO]  # exactly the one scenario, as recorded
    folder = run / "profile" / f"{SCENARIO}-candidate"
    assert (folder / "ncu.ncu-rep").exists() and f"report: {folder / 'ncu.ncu-rep'}" in out


def test_nsys_and_sanitizer(fake_tools, capsys):
    run, log = fake_tools
    assert cli.main(["profile", str(run), "--scenario", SCENARIO, "--tool", "nsys", "--impl", "fa3"]) == 0
    assert "97.0 %  3 x  attn_fwd" in capsys.readouterr().out
    nsys = json.loads(log.read_text().splitlines()[0])
    assert nsys[1] == "1" and nsys[nsys.index("--capture-range") + 1] == "cudaProfilerApi"
    assert cli.main(["profile", str(run), "--scenario", SCENARIO, "--tool", "sanitizer"]) == 0
    assert "ERROR SUMMARY: 0 errors" in capsys.readouterr().out


def test_missing_tool_and_unknown_scenario(fake_tools, capsys, monkeypatch):
    run, _ = fake_tools
    assert cli.main(["profile", str(run), "--scenario", "nope", "--tool", "ncu"]) == 2
    monkeypatch.setenv("PATH", "/nonexistent")
    assert cli.main(["profile", str(run), "--scenario", SCENARIO, "--tool", "ncu"]) == 6
    assert "ncu is not on PATH" in capsys.readouterr().err
