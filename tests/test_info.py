"""`solbench info`: the version and where the shipped data lies (tests/test_packaging.py runs it from a wheel)."""

import json
import subprocess
import sys
from pathlib import Path

from solbench import __version__, abi
from solbench.front import cli

ROOT = Path(__file__).resolve().parents[1]


def test_paths_name_every_shipped_location_and_the_version(capsys):
    assert cli.main(["info", "--paths"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"solbench {__version__} at ")
    assert f"abi header        {abi.HEADER_PATH.resolve()}" in out and '#include "solbench_attention.h"' in out
    for line in ("suites ", "seed kernel ", "python candidate ", "arch specs ", "profiles ", "baselines "):
        assert any(row.startswith(line) for row in out.splitlines()), line
    recorded = len(list((Path(__file__).resolve().parents[1] / "baselines" / "h200").glob("*.json")))
    assert recorded >= 12 and "hopper" in out and f"h200: {recorded} recorded runs" in out
    assert "/nvcc" not in out and "none visible" not in out  # --paths probes no nvcc and no GPU


def test_json_paths_exist_and_are_the_checkouts_files(capsys):
    assert cli.main(["info", "--paths", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["version"] == __version__ and "environment" not in doc
    paths = {name: Path(p) for name, p in doc["paths"].items()}
    assert all(p.exists() for p in paths.values()), paths
    # in a checkout the links in solbench/data/ resolve to the one copy at the top level
    assert paths["seed_kernel"] == ROOT / "reference_kernels" / "seed_attention.cu"
    assert paths["python_candidate"] == ROOT / "reference_kernels" / "torch_attention.py"
    assert paths["suites"] == ROOT / "scenarios" and paths["baselines"] == ROOT / "baselines"
    assert paths["include_dir"] / "solbench_attention.h" == paths["abi_header"]
    assert doc["suites"] == sorted(p.stem for p in (ROOT / "scenarios").glob("[!_]*.toml"))
    assert doc["profiles"] == ["h200"]
    assert doc["recorded_runs"]["h200"] == sorted(p.name for p in (ROOT / "baselines" / "h200").glob("*.json"))


def test_without_paths_the_environment_follows(capsys):
    assert cli.main(["info", "--json"]) == 0
    env = json.loads(capsys.readouterr().out)["environment"]
    assert set(env) == {"python", "torch", "nvcc", "gpu"} and env["python"].startswith(sys.version.split()[0])


def test_paths_alone_import_no_torch():
    code = ("import sys; from solbench.front import cli; cli.main(['info', '--paths']); "
            "assert 'torch' not in sys.modules, 'info --paths imported torch'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
