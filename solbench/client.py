"""A Python client of `solbench serve` (needs httpx: `pip install "solbench[serve]"`).

    from solbench.client import Client
    with Client("http://gpu-node:8765", token="...") as c:
        job = c.submit("kernel.cu", suite="hopper")
        summary = c.wait(job["id"])          # the `solbench run --json` object
        c.results(job["id"], "results.json")  # the run's record, saved

Every refusal raises ClientError with the server's one line and its HTTP status.
"""

from __future__ import annotations

import base64
import os
import time
from pathlib import Path

FINAL = ("done", "failed", "cancelled")


class ClientError(Exception):
    """The server refused: `status` (HTTP), its one-line reason, and the exit code `solbench run` gives it."""

    def __init__(self, status: int, message: str, exit_code: int = 2):
        super().__init__(message)
        self.status = status
        self.exit_code = exit_code


class Client:
    """One client of one server; the token comes from `token` or $SOLBENCH_TOKEN."""

    def __init__(self, url: str, token: str | None = None, timeout_s: float = 600.0):
        import httpx

        token = token or os.environ.get("SOLBENCH_TOKEN")
        if not token:
            raise ClientError(401, "no token: pass token= or set SOLBENCH_TOKEN")
        self._http = httpx.Client(base_url=url.rstrip("/"), timeout=timeout_s,
                                  headers={"Authorization": f"Bearer {token}"})

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, **kwargs):
        response = self._http.request(method, path, **kwargs)
        if response.status_code >= 400:
            try:
                doc = response.json()
                message, code = doc.get("error", response.text), int(doc.get("exit_code", 2))
            except (ValueError, AttributeError):
                text = response.text.strip()
                message, code = (text.splitlines()[0] if text else response.reason_phrase), 2
            raise ClientError(response.status_code, message, code)
        return response

    def submit(self, candidate: str | Path, **options) -> dict:
        """Queue `solbench run CANDIDATE` with `options` (the server's JobRequest fields: suite, quick, policy,
        baselines, seed, filter, max_scenarios, timeout_s, flags, allow_libs, runner); the job's status."""
        path = Path(candidate)
        body = {"candidate_name": path.name, "candidate_base64": base64.b64encode(path.read_bytes()).decode(),
                **{k: v for k, v in options.items() if v is not None}}
        return self._call("POST", "/v1/jobs", json=body).json()

    def status(self, job_id: str) -> dict:
        return self._call("GET", f"/v1/jobs/{job_id}").json()

    def jobs(self) -> list[dict]:
        return self._call("GET", "/v1/jobs").json()

    def cancel(self, job_id: str) -> dict:
        return self._call("POST", f"/v1/jobs/{job_id}/cancel").json()

    def wait(self, job_id: str, poll_s: float = 1.0, on_status=None) -> dict:
        """Poll until the job ends (`on_status(status)` after each poll); its summary object."""
        while True:
            status = self.status(job_id)
            if on_status:
                on_status(status)
            if status["state"] in FINAL:
                return self.summary(job_id)
            time.sleep(poll_s)

    def summary(self, job_id: str) -> dict:
        """The `solbench run --json` object of an ended job (solbench.summary/1, or its error object)."""
        return self._call("GET", f"/v1/jobs/{job_id}/summary").json()

    def results(self, job_id: str, to: str | Path) -> Path:
        """Save the job's results.json to `to`."""
        Path(to).write_bytes(self._call("GET", f"/v1/jobs/{job_id}/results.json").content)
        return Path(to)

    def report(self, job_id: str) -> str:
        """The job's summary.html."""
        return self._call("GET", f"/v1/jobs/{job_id}/report").text

    def check(self, job_id: str, against_job: str | None = None, against_baseline: str | None = None,
              **criteria) -> dict:
        """`solbench check` of the job; `criteria`: epsilon, strict, min_ratio, min_geomean, comparator, min_sol."""
        return self._call("POST", f"/v1/jobs/{job_id}/check", json={
            "against_job": against_job, "against_baseline": against_baseline, **criteria}).json()

    def triage(self, jobs: list[str] = (), recorded: list[str] = (), scenario: str | None = None) -> dict:
        return self._call("POST", "/v1/triage", json={"jobs": list(jobs), "recorded": list(recorded),
                                                      "scenario": scenario}).json()

    def suites(self) -> dict:
        return self._call("GET", "/v1/suites").json()

    def roofline(self, arch: str, suite: str = "smoke") -> dict:
        return self._call("GET", "/v1/roofline", params={"arch": arch, "suite": suite}).json()

    def baselines(self, suite: str = "smoke", arch: str | None = None) -> dict:
        return self._call("GET", "/v1/baselines", params={"suite": suite, **({"arch": arch} if arch else {})}).json()
