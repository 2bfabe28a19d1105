"""Every refusal of `solbench serve` is a 4xx whose body is a solbench.error/1 object with one line."""

from pathlib import Path

import pytest

from tests.serve_server import Server

pytestmark = pytest.mark.slow
httpx = pytest.importorskip("httpx", reason="needs the serve extra: pip install 'solbench[serve]'")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("serve"), "--max-upload-mb", "1").start()
    yield s
    s.stop()


def refused(response, status: int, words: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["schema"] == "solbench.error/1" and body["ok"] is False and body["status"] == status
    assert "\n" not in body["error"] and body["error"].strip(), body
    assert words in body["error"], body["error"]
    return body["error"]


def test_no_token(server):
    refused(httpx.get(server.url + "/v1/jobs"), 401, "no token")
    refused(httpx.get(server.url + "/v1/jobs", headers={"Authorization": "Bearer nobody-knows-this"}), 401,
            "unknown token")


def test_another_clients_job_is_not_found(server):
    job = server.submit("alice", max_scenarios=1)
    for path in ("", "/summary", "/results.json", "/report"):
        refused(httpx.get(f"{server.url}/v1/jobs/{job['id']}{path}", headers=server.headers("bob")), 404,
                "no job")
    refused(httpx.post(f"{server.url}/v1/jobs/{job['id']}/cancel", headers=server.headers("bob")), 404, "no job")
    assert [j["id"] for j in httpx.get(server.url + "/v1/jobs", headers=server.headers("bob")).json()] == []
    assert server.wait(job["id"])["state"] == "done"


def test_a_100_mb_upload(server):
    body = b'{"candidate_name": "big.py", "candidate_base64": "' + b"A" * (100 << 20) + b'"}'
    try:
        response = httpx.post(server.url + "/v1/jobs", content=body, timeout=60,
                              headers={**server.headers(), "Content-Type": "application/json"})
    except httpx.WriteError:  # the server answered and closed before the body was sent: ask what it said
        pytest.fail("the server closed the connection without its 413")
    refused(response, 413, "at most")


def test_a_candidate_over_the_limit_in_a_small_request(server):
    import base64

    payload = base64.b64encode(b"#" * ((1 << 20) + 1)).decode()
    refused(httpx.post(server.url + "/v1/jobs", headers=server.headers(), timeout=60,
                       json={"candidate_name": "big.py", "candidate_base64": payload}), 413, "at most")


def test_malformed_json(server):
    refused(httpx.post(server.url + "/v1/jobs", content=b'{"candidate_name": ', headers={
        **server.headers(), "Content-Type": "application/json"}), 422, "not valid JSON")
    refused(httpx.post(server.url + "/v1/jobs", json={"suite": "smoke"}, headers=server.headers()), 422,
            "candidate_name")


def test_unknown_suite(server, tmp_path):
    import base64

    body = {"candidate_name": "k.py", "candidate_base64": base64.b64encode(b"def forward(inputs): pass\n").decode(),
            "suite": "no-such-suite"}
    refused(httpx.post(server.url + "/v1/jobs", json=body, headers=server.headers()), 422, "unknown suite")


def test_a_cu_that_does_not_build(server, tmp_path):
    import base64
    import shutil

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed: a .cu cannot be built here")
    source = b'#include "solbench_attention.h"\n__global__ void k() { undefined_name = 1; }\n'
    body = {"candidate_name": "broken.cu", "candidate_base64": base64.b64encode(source).decode()}
    response = httpx.post(server.url + "/v1/jobs", json=body, headers=server.headers(), timeout=300)
    line = refused(response, 422, "undefined_name")
    assert response.json()["exit_code"] == 4 and "broken.cu" in line


def test_a_python_candidate_without_forward(server):
    import base64

    body = {"candidate_name": "empty.py", "candidate_base64": base64.b64encode(b"x = 1\n").decode()}
    response = httpx.post(server.url + "/v1/jobs", json=body, headers=server.headers())
    refused(response, 422, "forward")
    assert response.json()["exit_code"] == 5


def test_too_many_jobs_of_one_client(tmp_path):
    s = Server(tmp_path, "--max-queue", "1").start()
    try:
        s.submit("carol", max_scenarios=1)
        import base64

        body = {"candidate_name": "k.py", "candidate_base64": base64.b64encode(b"def forward(i): pass\n").decode()}
        refused(httpx.post(s.url + "/v1/jobs", json=body, headers=s.headers("carol")), 429, "queued or running")
    finally:
        s.stop()


def test_mcp_over_http_without_a_token(server):
    response = httpx.post(server.url + "/mcp/", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
                          headers={"Accept": "application/json, text/event-stream"})
    refused(response, 401, "no valid token")


def test_cancel_keeps_what_finished(server):
    job = server.submit("dave")
    server.wait(job["id"], "dave", until=lambda s: s["done"] >= 1, timeout_s=300)
    cancelled = httpx.post(f"{server.url}/v1/jobs/{job['id']}/cancel", headers=server.headers("dave")).json()
    assert cancelled["cancel"] == 1
    status = server.wait(job["id"], "dave")
    assert status["state"] == "cancelled" and status["done"] < 10
    record = httpx.get(f"{server.url}/v1/jobs/{job['id']}/results.json", headers=server.headers("dave")).json()
    assert 1 <= len(record["outcomes"]) < 10 and all(o["status"] == "passed" for o in record["outcomes"])
    refused(httpx.post(f"{server.url}/v1/jobs/{job['id']}/cancel", headers=server.headers("dave")), 409, "has ended")


def test_a_job_past_the_time_limit_fails_with_one_line(tmp_path):
    s = Server(tmp_path, "--max-job-s", "4").start()
    try:
        job = s.submit("alice")
        status = s.wait(job["id"])
        assert status["state"] == "failed" and status["error"] == "the job time limit (4 s) was reached"
    finally:
        s.stop()


def test_a_candidate_reads_no_other_clients_files(server, tmp_path):
    """tests/data/reads_server_files.py, appended to the reference, fails to load if it reads anything of the
    server's state folder or build cache but its own folder: served after another client's job, it passes."""
    from solbench.sandbox.confine import abi_version

    if abi_version() < 1:
        pytest.skip("this kernel has no Landlock: a server cannot hide its state (its docs say so)")
    other = server.submit("bob", max_scenarios=1)
    server.wait(other["id"], "bob")
    reader = tmp_path / "reader.py"
    root = Path(__file__).resolve().parents[1]
    reader.write_text((root / "reference_kernels/torch_attention.py").read_text()
                      + (root / "tests/data/reads_server_files.py").read_text())
    job = server.submit("alice", path=reader, max_scenarios=1)
    status = server.wait(job["id"])
    assert status["state"] == "done" and status["passed"] is True, (status.get("error"), status)
