"""What a server hides (solbench.sandbox.confine.HIDDEN_VARIABLE: its state folder and build cache) a candidate
reads through nothing it runs: not its Python worker, not its build's `#include`, not a command started through
solbench.sandbox.hide (the native runner's way); its own folder and everything outside stay readable."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from solbench.sandbox import hide
from solbench.sandbox.confine import HIDDEN_VARIABLE, abi_version, hidden_reads

ROOT = Path(__file__).resolve().parents[1]
needs_landlock = pytest.mark.skipif(abi_version() < 1, reason="this kernel has no Landlock")

PROBE = """
import json, os, sys
seen = {}
for path in sys.argv[1:]:
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            open(path, "rb").read()
        seen[path] = "read"
    except OSError:
        seen[path] = "denied"
print(json.dumps(seen))
"""


def _state(tmp_path):
    """A server's state folder: this job's candidate folder, another client's candidate, the queue."""
    state = tmp_path / "state"
    own = state / "jobs" / "a" / "candidate"
    other = state / "other" / "candidate"
    own.mkdir(parents=True)
    other.mkdir(parents=True)
    (own / "mine.py").write_text("MINE = 1\n")
    (other / "secret.py").write_text("SECRET = 1\n")
    (other / "secret.cuh").write_text("#define SECRET 1\n")
    (state / "queue.sqlite3").write_text("queue")
    return state, own, other


def test_nothing_hidden_leaves_the_command_as_it_is(monkeypatch):
    monkeypatch.delenv(HIDDEN_VARIABLE, raising=False)
    assert hide.command(["nvcc", "x.cu"], keep=["/tmp"]) == ["nvcc", "x.cu"]


def test_the_rules_name_every_entry_beside_the_hidden_folder_and_no_link(tmp_path):
    state, own, _ = _state(tmp_path)
    (tmp_path / "beside.txt").write_text("x")
    (tmp_path / "link").symlink_to(state)
    paths = {path for path, _ in hidden_reads([str(state)], [str(own)])}
    assert str(tmp_path / "beside.txt") in paths and str(own) in paths
    assert not any(p == str(state) or p.startswith(str(state) + "/") for p in paths - {str(own)})
    assert str(tmp_path / "link") not in paths and str(tmp_path) not in paths and "/" not in paths
    with pytest.raises(OSError, match="nothing would be readable"):
        hidden_reads(["/"], [])


@needs_landlock
def test_a_command_reads_everything_but_what_is_hidden_and_its_own(tmp_path, monkeypatch):
    state, own, other = _state(tmp_path)
    (tmp_path / "beside.txt").write_text("beside")
    (tmp_path / "link").symlink_to(other)  # a link beside the state folder, into it
    monkeypatch.setenv(HIDDEN_VARIABLE, str(state))
    probes = {"own": own / "mine.py", "other": other / "secret.py", "queue": state / "queue.sqlite3",
              "through a link": tmp_path / "link" / "secret.py", "the state's listing": state,
              "beside": tmp_path / "beside.txt", "the interpreter": Path(sys.executable).resolve()}
    out = subprocess.run(hide.command([sys.executable, "-c", PROBE, *map(str, probes.values())], keep=[own]),
                         capture_output=True, text=True, check=True).stdout
    seen = {name: json.loads(out)[str(path)] for name, path in probes.items()}
    assert seen == {"own": "read", "other": "denied", "queue": "denied", "through a link": "denied",
                    "the state's listing": "denied", "beside": "read", "the interpreter": "read"}


@needs_landlock
@pytest.mark.slow
def test_a_python_candidate_reads_nothing_hidden_but_its_own_folder(tmp_path, monkeypatch):
    """tests/data/reads_server_files.py fails to load when it reads anything of the state folder but its own: it
    does without the hiding (so it does look), and passes with it."""
    from solbench.core.model import Status
    from solbench.core.policy import QUICK
    from solbench.supervisor.runner import RunConfig, run

    state, own, _ = _state(tmp_path)
    candidate = own / "reads.py"
    candidate.write_text((ROOT / "reference_kernels/torch_attention.py").read_text()
                         + (ROOT / "tests/data/reads_server_files.py").read_text())
    config = dict(candidate=str(candidate), suite="smoke", device="cpu", policy=QUICK, max_scenarios=1, seed=None)
    monkeypatch.delenv(HIDDEN_VARIABLE, raising=False)
    from solbench.core.errors import SolbenchError

    with pytest.raises(SolbenchError, match="files it should not"):
        run(RunConfig(**config, out_dir=tmp_path / "open"))
    monkeypatch.setenv(HIDDEN_VARIABLE, str(state))
    result = run(RunConfig(**config, out_dir=tmp_path / "hidden"))
    assert result.outcomes[0].status is Status.PASSED, result.outcomes[0].reason


@needs_landlock
@pytest.mark.slow
def test_a_build_includes_nothing_hidden(tmp_path, monkeypatch):
    """An `#include` of another client's file by its absolute path builds without the hiding and fails with it,
    the error naming the include, not quoting the file."""
    from solbench.build.nvcc import build, find_nvcc
    from solbench.core.errors import BuildError, ConfigError

    try:
        find_nvcc()
    except ConfigError:
        pytest.skip("no nvcc")
    state, own, other = _state(tmp_path)
    source = own / "includes.cu"
    source.write_text(f'#include "{other / "secret.cuh"}"\nextern "C" int secret() {{ return SECRET; }}\n')
    monkeypatch.delenv(HIDDEN_VARIABLE, raising=False)
    assert build(source, "h100", cache_dir=tmp_path / "open").so_path.is_file()
    monkeypatch.setenv(HIDDEN_VARIABLE, str(state))
    with pytest.raises(BuildError, match="secret.cuh"):
        build(source, "h100", cache_dir=tmp_path / "hidden")
    shutil.rmtree(tmp_path / "open")


def _cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


@needs_landlock
@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(not _cuda(), reason="no CUDA GPU")
def test_a_native_candidate_reads_nothing_hidden_but_its_own_folder(tmp_path, monkeypatch):
    """The seed with a constructor that aborts the native runner when another client's file is readable: it
    fails to load without the hiding (so it does look), and passes through the runner with it."""
    from solbench.core.model import Status
    from solbench.core.policy import QUICK
    from solbench.supervisor.runner import RunConfig, run

    state, own, other = _state(tmp_path)
    candidate = own / "reads.cu"
    candidate.write_text((ROOT / "reference_kernels/seed_attention.cu").read_text() + f"""
#include <cstdio>
#include <cstdlib>
__attribute__((constructor)) static void reads_server_files() {{
    if (FILE* f = fopen("{other / 'secret.py'}", "rb")) abort();
}}
""")
    config = dict(candidate=str(candidate), suite="smoke", device="cuda", policy=QUICK, max_scenarios=1, seed=None,
                  runner="native")
    from solbench.core.errors import SolbenchError

    monkeypatch.delenv(HIDDEN_VARIABLE, raising=False)
    try:  # a runner that dies loading the candidate: a load failure, or a failed scenario
        opened = run(RunConfig(**config, out_dir=tmp_path / "open")).outcomes[0].status
    except SolbenchError as exc:
        opened = exc
    assert opened is not Status.PASSED, "the probe read nothing even without the hiding: it proves nothing"
    monkeypatch.setenv(HIDDEN_VARIABLE, str(state))
    hidden = run(RunConfig(**config, out_dir=tmp_path / "hidden"))
    assert hidden.outcomes[0].status is Status.PASSED, hidden.outcomes[0].reason
