"""Issue 39, class 1 on a CPU: a worker has no way into its supervisor's code. A real Python worker holds only the
fds solbench.sandbox.channels lists, its supervisor holds no socket it could connect to, its environment is its
supervisor's, and it has no multiprocessing key of the supervisor's; the cheat that used torch's fd sharer
(calls_the_supervisors_listener.py) gets a failing status and writes nothing through the supervisor, and the one
that shrank the memory behind its tensors (shrinks_the_supervisors_memory.py) no longer ends the run."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

from solbench.sandbox.channels import PYTHON_WORKER_FDS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "reference_kernels" / "adversarial" / "python"

PROBE = textwrap.dedent("""\
    import multiprocessing
    print("authkey", multiprocessing.current_process().authkey.hex(), flush=True)


    def forward(inp):
        inp.out.zero_()
        inp.lse.zero_()
    """)

SUPERVISOR = textwrap.dedent("""\
    import json, multiprocessing, os, sys
    from pathlib import Path
    from solbench.core.policy import QUICK
    from solbench.core.suites import load_suite
    from solbench.sandbox import channels
    from solbench.sandbox.impls import ImplSpec
    from solbench.supervisor.inputs import make_inputs, with_outputs
    from solbench.supervisor.python_worker import Worker

    probe, log = sys.argv[1], sys.argv[2]
    worker = Worker(ImplSpec("candidate", "python", probe), "cpu", QUICK, Path(log))
    inp = make_inputs(load_suite("smoke").scenarios[0], 0)
    worker.request("prepare", {"check": with_outputs(inp), "rotation": [with_outputs(inp)]}, 120)
    worker.request("check", None, 120)  # it holds the scenario's tensors now, and is held (stopped)
    print(json.dumps({"worker": worker.pid, "fds": channels.observe(worker.pid, log),
                      "listening": channels.listening(os.getpid()), "environ": dict(os.environ),
                      "worker_environ": open(f"/proc/{worker.pid}/environ", "rb").read().hex(),
                      "authkey": multiprocessing.current_process().authkey.hex()}), flush=True)
    worker.stop()
    """)


@pytest.fixture(scope="module")
def seen(tmp_path_factory):
    """What a supervisor saw of its held worker, which holds a scenario's tensors; and the worker's log."""
    tmp = tmp_path_factory.mktemp("channels")
    probe, log, script = tmp / "probe.py", tmp / "worker.log", tmp / "supervisor.py"
    probe.write_text(PROBE)
    script.write_text(SUPERVISOR)
    proc = subprocess.run([sys.executable, str(script), str(probe), str(log)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "SOLBENCH_PROBE": "x"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1]), log.read_text()


def test_a_python_worker_holds_only_the_fds_in_the_inventory(seen):
    fds = seen[0]["fds"]
    unlisted = [fd for fd in fds if fd[1] not in PYTHON_WORKER_FDS]
    assert not unlisted, unlisted
    kinds = [kind for _, kind, _ in fds]
    sockets = {target for _, kind, target in fds if kind == "unix socket"}  # two fds while it waits to read
    assert kinds[:3] == ["null", "log", "log"] and len(sockets) == 1, fds
    assert kinds.count("sealed shared memory") >= 2, fds  # the scenario's tensors it was sent, mapped


def test_its_supervisor_holds_no_socket_a_worker_could_connect_or_send_to(seen):
    """torch's fd sharer (multiprocessing.resource_sharer) never started: tensors go as fds over the socket."""
    assert seen[0]["listening"] == [], seen[0]["listening"]


def test_a_python_worker_has_no_key_of_its_supervisors(seen):
    theirs = [line.split()[1] for line in seen[1].splitlines() if line.startswith("authkey ")]
    assert len(theirs) == 1 and theirs[0] != seen[0]["authkey"], theirs


def test_a_python_workers_environment_is_its_supervisors(seen):
    """Read from /proc/<worker>/environ while it was held: exactly what its supervisor had, nothing added."""
    raw = bytes.fromhex(seen[0]["worker_environ"]).decode()
    assert dict(entry.split("=", 1) for entry in raw.split("\0") if entry) == seen[0]["environ"]


def test_a_candidate_cannot_run_code_in_the_supervisor_through_the_tensor_sharer(tmp_path):
    """Before: the canary written by the supervisor, 9 of 10 smoke scenarios passed at 21-80x the seed."""
    canary = tmp_path / "canary"
    proc = subprocess.run([sys.executable, "-m", "solbench", "run", str(CORPUS / "calls_the_supervisors_listener.py"),
                           "--suite", "smoke", "--device", "cpu", "--quick", "--max-scenarios", "2", "--out",
                           str(tmp_path / "run")], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "SOLBENCH_ADVERSARY_LISTENER": "1",
                               "SOLBENCH_ADVERSARY_CANARY": str(canary)})
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    assert [o["status"] for o in doc["outcomes"]] == ["mismatch", "mismatch"], proc.stderr[-2000:]
    assert not canary.exists()
    said = (tmp_path / "run" / "worker-candidate.log").read_text()
    assert "calls_the_supervisors_listener: no listener named by the tensors it was sent" in said, said[-2000:]


def test_a_candidate_cannot_end_the_run_by_shrinking_the_memory_it_was_sent(tmp_path):
    """Before: the /dev/shm files behind its tensors truncated, `solbench run` killed by SIGBUS (exit 135) as it
    read the outputs, and its held worker left stopped and orphaned. Now the memory is a sealed memfd."""
    proc = subprocess.run([sys.executable, "-m", "solbench", "run", str(CORPUS / "shrinks_the_supervisors_memory.py"),
                           "--suite", "smoke", "--device", "cpu", "--quick", "--max-scenarios", "2", "--out",
                           str(tmp_path / "run")], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "SOLBENCH_ADVERSARY_SHRINK": "1"})
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])  # some scenario failed; the run ended well
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    assert [o["status"] for o in doc["outcomes"]] == ["mismatch", "mismatch"], proc.stderr[-2000:]
    said = (tmp_path / "run" / "worker-candidate.log").read_text()
    assert "shrinks_the_supervisors_memory: /memfd:solbench-tensor (deleted): Operation not permitted" in said
    assert "truncated" not in said, said[-2000:]
