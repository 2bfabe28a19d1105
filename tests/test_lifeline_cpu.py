"""Issue 39, class 7 on a CPU: a worker, held (stopped) between requests or not, dies with its supervisor however
the supervisor dies, and so does every process the candidate started in its group (solbench.supervisor.lifeline).
A supervisor script starts a real worker (a Python worker; the native runner's handle on a fake runner: the real
one needs a GPU to load anything), whose candidate forks a child; the worker is held as between requests; then
the supervisor is SIGKILLed, or just returns without stopping its worker."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]

CANDIDATE = textwrap.dedent("""\
    import ctypes, os, time
    libc = ctypes.CDLL(None, use_errno=True)
    death = ctypes.c_int(-1)
    libc.prctl(2, ctypes.byref(death))  # PR_GET_PDEATHSIG
    cleared = libc.prctl(1, 0, 0, 0, 0), ctypes.get_errno()  # PR_SET_PDEATHSIG 0: refused
    print("deathsig", death.value, *cleared, flush=True)
    if os.fork() == 0:  # a child in the worker's group, which the hold stops too
        while True:
            time.sleep(1)


    def forward(inp):
        inp.out.zero_()
        inp.lse.zero_()
    """)

FAKE_RUNNER = textwrap.dedent("""\
    #!{python}
    import json, os, sys, time
    print("ready " + json.dumps({{"cupti": True, "launch_count": True}}), flush=True)
    if os.fork() == 0:
        while True:
            time.sleep(1)
    print("ok " + json.dumps({{"device": "cuda:0", "runner": "native", "host_floor_ms": 0.01,
                               "host_gap_slack_ms": 0.02, "cupti": True}}), flush=True)
    for line in sys.stdin:
        print("ok null", flush=True)
    """)

SUPERVISOR = textwrap.dedent("""\
    import json, sys
    from pathlib import Path
    from solbench.core.policy import QUICK
    from solbench.sandbox.impls import ImplSpec
    from solbench.supervisor import lifeline
    from solbench.supervisor.native_worker import NativeWorker
    from solbench.supervisor.python_worker import Worker

    kind, path, log, ending = sys.argv[1:5]
    if kind == "python":
        worker = Worker(ImplSpec("candidate", "python", path), "cpu", QUICK, Path(log))
    else:
        worker = NativeWorker(ImplSpec("candidate", "cu", "lib.so", runner="native"), "cpu", QUICK, Path(log),
                              runner=Path(path))
    worker.start(120)  # loaded, then held as between requests
    print(json.dumps({"worker": worker.pid, "watchdog": lifeline.watchdog_pid()}), flush=True)
    sys.stdin.readline()  # until the test has seen it held; then killed, or it returns without stopping it
    """)


def _group(pgid: int) -> dict[int, str]:
    """pid -> state of every live process in group `pgid` (a zombie is dead: re-parented to a subreaper, pytest
    itself after an in-process run, it waits there to be reaped)."""
    found = {}
    for entry in os.listdir("/proc"):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except (OSError, ValueError):
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if entry.isdigit() and fields[2] == str(pgid) and fields[0] not in "ZX":
            found[int(entry)] = fields[0]
    return found


def _gone_within(pgid: int, seconds: float) -> dict[int, str]:
    deadline = time.monotonic() + seconds
    while (left := _group(pgid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@pytest.mark.parametrize("ending", ["kill", "return"])
@pytest.mark.parametrize("kind", ["python", "native"])
def test_a_held_worker_and_its_children_die_with_their_supervisor(tmp_path, kind, ending):
    if kind == "python":
        path = tmp_path / "candidate.py"
        path.write_text(CANDIDATE)
    else:
        path = tmp_path / "fake-runner"
        path.write_text(FAKE_RUNNER.format(python=sys.executable))
        path.chmod(0o755)
    script, log = tmp_path / "supervisor.py", tmp_path / "worker.log"
    script.write_text(SUPERVISOR)
    supervisor = subprocess.Popen([sys.executable, str(script), kind, str(path), str(log), ending], cwd=ROOT,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)})
    pgid = None
    try:
        seen = json.loads(supervisor.stdout.readline())
        pgid = seen["worker"]
        held = _group(pgid)
        assert len(held) == 2 and set(held.values()) == {"T"}, held  # the worker and its child, stopped
        if ending == "kill":
            supervisor.kill()
        else:
            supervisor.stdin.write("return\n")
            supervisor.stdin.flush()
        supervisor.wait(60)
        left = _gone_within(pgid, 5.0)
        assert not left, f"left behind, stopped and orphaned: {left}"
        assert _gone_within(seen["watchdog"], 5.0) == {}  # its watchdog went too, its work done
    finally:
        supervisor.kill()
        supervisor.wait()
        if pgid is not None and _group(pgid):
            os.killpg(pgid, signal.SIGKILL)  # never leave a failed test's processes behind
    if kind == "python":  # its death signal is SIGKILL, which the candidate cannot clear (EPERM)
        assert "deathsig 9 -1 1" in log.read_text(), log.read_text()[-2000:]


def test_the_tests_fail_when_they_leave_a_process_behind(tmp_path):
    """tests/conftest.py: a run whose test leaves a stopped process fails, naming it; one that leaves none passes."""
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (tmp_path / "test_leaves.py").write_text(textwrap.dedent("""\
        import os, signal, subprocess


        def test_leaves_a_stopped_process():
            child = subprocess.Popen(["sleep", "60"], start_new_session=True, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)  # not holding pytest's captured output open
            os.kill(child.pid, signal.SIGSTOP)
            print("left", child.pid)


        def test_leaves_nothing():
            subprocess.run(["true"], check=True)
        """))
    env = {k: v for k, v in os.environ.items() if k != "SOLBENCH_TEST_RUN"}  # a run of its own, with its own mark
    env["PYTHONPATH"] = str(ROOT)
    clean = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-k", "nothing",
                            str(tmp_path)], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert clean.returncode == 0 and "LEFT BEHIND" not in clean.stdout, clean.stdout[-2000:]
    dirty = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", str(tmp_path)],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    left = [int(line.split()[-1]) for line in dirty.stdout.splitlines() if line.strip().startswith("left ")]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert len(left) == 1 and dirty.returncode == 1, dirty.stdout[-2000:]
    assert "LEFT BEHIND" in dirty.stdout and f"pid {left[0]} state T" in dirty.stdout, dirty.stdout[-2000:]
