"""The test suite leaves no process behind: every process it starts carries MARK in its
environment, and once the tests have run, any such process still alive but this process's own helpers (its
lifeline watchdog and multiprocessing resource tracker, which end with it) fails the run with its pid, state
(T: stopped), parent and command line. Stopped or orphaned, alive after the tests means nothing would have
ended it: orphans of an in-process run are re-parented to pytest itself (a subreaper then), so a parent check
alone would miss them. Processes of other test runs carry another mark."""

import os
import secrets
import time

MARK = "SOLBENCH_TEST_RUN"
GRACE_S = 10.0
"""How long processes ending at the end of the tests (a supervisor just killed, its workers with it) may take."""


def pytest_configure(config):
    os.environ.setdefault(MARK, f"{os.getpid()}-{secrets.token_hex(8)}")


def _ours() -> dict[int, tuple[str, int, str]]:
    """pid -> (state, parent pid, command line) of every other process that carries this run's mark."""
    wanted = f"{MARK}={os.environ[MARK]}".encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if wanted not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ").decode(errors="replace")[:200]
        except OSError:  # gone meanwhile, or not ours to read
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        found[int(entry)] = (fields[0], int(fields[1]), command)
    return found


def _left_behind() -> dict[int, tuple[str, int, str]]:
    import multiprocessing.resource_tracker

    from solbench.supervisor.lifeline import watchdog_pid

    helpers = {watchdog_pid(), getattr(multiprocessing.resource_tracker._resource_tracker, "_pid", None)}
    return {pid: seen for pid, seen in _ours().items() if pid not in helpers}


def pytest_sessionfinish(session, exitstatus):
    if not os.path.isdir("/proc") or os.environ.get(MARK, "").split("-")[0] != str(os.getpid()):
        return  # no /proc, or a pytest started by a test (its parent run checks)
    deadline = time.monotonic() + GRACE_S
    while (left := _left_behind()) and time.monotonic() < deadline:
        time.sleep(0.1)
    if left:
        lines = [f"  pid {pid} state {state} parent {ppid}: {command}" for pid, (state, ppid, command) in left.items()]
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        text = "processes the tests left behind (state T: stopped), which nothing would have ended:\n" + "\n".join(lines)
        if reporter is not None:
            reporter.write_sep("=", "LEFT BEHIND", red=True)
            reporter.write_line(text)
        else:
            print(text)
        session.exitstatus = 1
