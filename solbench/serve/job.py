"""One job's process: `python -m solbench.serve.job --control-fd FD -- RUN-ARGS...` is `solbench run RUN-ARGS`
(the same parser, checks, confined workers, run folder and `--json` object on stdout), except that before each
scenario it asks the server for its device over the control socket and waits, and after it gives the device
back. The server is gone when the socket closes: the job ends at once (SIGKILL; its workers die with it,
solbench.supervisor.lifeline), so a restarted server is the only one to resume its run folder.

Lines on the socket are JSON objects. From the job: {"want": scenario, "done": k, "total": n} and
{"finished": scenario, "status": status, "more": whether scenarios are left}. From the server: {"go": scenario}.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading


class LeaseGate:
    """The run's `gate` (solbench.commands.run): waits for the device before each scenario."""

    def __init__(self, sock: socket.socket, already_done: int = 0):
        self._sock = sock
        self._file = sock.makefile("r", encoding="utf-8")
        self._go = threading.Event()
        self._lock = threading.Lock()
        self.already_done = already_done
        """Scenarios finished by an earlier start of this job (its run folder's record)."""
        self._total = 0
        threading.Thread(target=self._read, name="solbench-job-control", daemon=True).start()

    def _send(self, message: dict) -> None:
        with self._lock:
            self._sock.sendall((json.dumps(message) + "\n").encode())

    def _read(self) -> None:
        for line in self._file:
            if json.loads(line).get("go"):
                self._go.set()
        os.kill(os.getpid(), signal.SIGKILL)  # the server is gone: so is this job

    def started(self, scenario_id: str, index: int, total: int) -> None:
        self._total = self.already_done + total
        self._done = self.already_done + index
        self._go.clear()
        self._send({"want": scenario_id, "done": self._done, "total": self._total})
        self._go.wait()

    def finished(self, outcome) -> None:
        self._send({"finished": outcome.scenario_id, "status": outcome.status.value,
                    "more": self._done + 1 < self._total})


def _finished_before(argv: list[str]) -> int:
    """Scenarios already in the record of the run folder that `--resume FOLDER` names."""
    if "--resume" not in argv:
        return 0
    from pathlib import Path

    record = Path(argv[argv.index("--resume") + 1]) / "results.json"
    try:
        return len(json.loads(record.read_text()).get("outcomes", []))
    except (OSError, ValueError):
        return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] != ["--control-fd"] or argv[2:3] != ["--"]:
        print("usage: python -m solbench.serve.job --control-fd FD -- RUN-ARGS...", file=sys.stderr)
        return 2
    fd, run_args = int(argv[1]), argv[3:]
    os.set_inheritable(fd, False)  # the run's workers get no way to the server
    sock = socket.socket(fileno=fd)
    from functools import partial

    from solbench.commands import run as run_command
    from solbench.front.cli import build_parser, dispatch

    args = build_parser().parse_args(["run", *run_args])
    args._run = partial(run_command.run, gate=LeaseGate(sock, _finished_before(run_args)))
    return dispatch(args)


if __name__ == "__main__":
    sys.exit(main())
