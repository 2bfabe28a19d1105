"""A `solbench serve --device cpu` process on the loopback address, for the serve tests."""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789ab", "carol": "carol-token-0123456789",
          "dave": "dave-token-0123456789a"}
REFERENCE = Path(__file__).resolve().parents[1] / "reference_kernels" / "torch_attention.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One server process; `start()` again after `kill()` reuses its state folder and port."""

    def __init__(self, root: Path, *extra: str):
        self.root = root
        self.state = root / "state"
        self.tokens = root / "tokens.txt"
        from solbench.serve.tokens import token_digest

        self.tokens.write_text("".join(f"{c} {token_digest(t)}\n" for c, t in TOKENS.items()))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.extra = extra
        self.proc = None

    def start(self) -> "Server":
        pytest.importorskip("fastapi", reason="needs the serve extra: pip install 'solbench[serve]'")
        log = open(self.root / "server.log", "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "solbench", "serve", "--device", "cpu", "--state-dir",
                                      str(self.state), "--tokens", str(self.tokens), "--port", str(self.port),
                                      *self.extra], stdout=log, stderr=log, cwd=self.root)
        import httpx

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/openapi.json", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            assert self.proc.poll() is None, (self.root / "server.log").read_text()[-2000:]
            time.sleep(0.3)
        raise AssertionError("the server did not answer within 60 s")

    def kill(self) -> None:
        """SIGKILL, as a power cut or an OOM killer would."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()

    def headers(self, client: str = "alice") -> dict:
        return {"Authorization": f"Bearer {TOKENS[client]}"}

    def submit(self, client: str = "alice", path: Path = REFERENCE, **options) -> dict:
        import httpx

        body = {"candidate_name": path.name, "candidate_base64": base64.b64encode(path.read_bytes()).decode(),
                "suite": "smoke", "quick": True, **options}
        response = httpx.post(self.url + "/v1/jobs", json=body, headers=self.headers(client), timeout=120)
        assert response.status_code == 201, response.text
        return response.json()

    def status(self, job_id: str, client: str = "alice") -> dict:
        import httpx

        return httpx.get(f"{self.url}/v1/jobs/{job_id}", headers=self.headers(client), timeout=30).json()

    def wait(self, job_id: str, client: str = "alice", timeout_s: float = 300, until=None) -> dict:
        """Poll until the job ends (or `until(status)` holds)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            status = self.status(job_id, client)
            if (until(status) if until else status["state"] in ("done", "failed", "cancelled")):
                return status
            time.sleep(0.3)
        raise AssertionError(f"job {job_id} still {status['state']} after {timeout_s} s")


def local_verdicts(tmp_path: Path, **run) -> dict:
    """scenario -> status of a plain `solbench run --json` of the reference candidate on smoke."""
    import json

    argv = [sys.executable, "-m", "solbench", "run", str(REFERENCE), "--suite", "smoke", "--device", "cpu", "--quick",
            "--json", "--out", str(tmp_path / "local")]
    for key, value in run.items():
        argv += [f"--{key.replace('_', '-')}", str(value)]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env={**os.environ})
    summary = json.loads(proc.stdout)
    return {row["scenario"]: row["status"] for row in summary["per_scenario"]}


def verdicts(summary: dict) -> dict:
    return {row["scenario"]: row["status"] for row in summary["per_scenario"]}
