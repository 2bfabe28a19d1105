"""The reference candidate on smoke, through REST, the Python client, `solbench run --server` and MCP over
stdio and HTTP: each gives the verdicts a plain `solbench run` gives."""

import asyncio
import json
import subprocess
import sys

import pytest

from tests.serve_server import REFERENCE, TOKENS, Server, local_verdicts, verdicts

pytestmark = pytest.mark.slow
httpx = pytest.importorskip("httpx", reason="needs the serve extra: pip install 'solbench[serve]'")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("serve")).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return local_verdicts(tmp_path_factory.mktemp("plain"))


def test_rest(server, plain):
    job = server.submit("alice")
    seen = []
    status = server.wait(job["id"], until=lambda s: seen.append((s["done"], s["total"])) or s["state"] == "done")
    assert status["passed"] is True and status["done"] == status["total"] == 10
    from solbench import schemas

    schemas.validate(status, "job", "status")
    schemas.validate(httpx.get(server.url + "/v1/suites", headers=server.headers()).json(), "suites", "suites")
    assert any(0 < done < 10 and total == 10 for done, total in seen), "progress k/N was never seen mid-run"
    summary = httpx.get(f"{server.url}/v1/jobs/{job['id']}/summary", headers=server.headers()).json()
    assert summary["schema"] == "solbench.summary/1" and verdicts(summary) == plain
    record = httpx.get(f"{server.url}/v1/jobs/{job['id']}/results.json", headers=server.headers()).json()
    assert record["schema"] == "solbench.run/1" and len(record["outcomes"]) == 10
    report = httpx.get(f"{server.url}/v1/jobs/{job['id']}/report", headers=server.headers())
    assert report.status_code == 200 and "<html" in report.text.lower()
    check = httpx.post(f"{server.url}/v1/jobs/{job['id']}/check", json={"against_job": job["id"]},
                       headers=server.headers(), timeout=120).json()
    assert check["schema"] == "solbench.check/1" and check["passed"] is True
    triage = httpx.post(f"{server.url}/v1/triage", json={"jobs": [job["id"]]}, headers=server.headers(),
                        timeout=120).json()
    assert triage["schema"] == "solbench.triage/1"
    events = httpx.get(f"{server.url}/v1/jobs/{job['id']}/events", headers=server.headers(), timeout=30).text
    assert "event: status" in events and '"state": "done"' in events


def test_openapi_names_every_route(server):
    paths = httpx.get(server.url + "/openapi.json").json()["paths"]
    for path in ("/v1/jobs", "/v1/jobs/{job_id}", "/v1/jobs/{job_id}/summary", "/v1/jobs/{job_id}/cancel",
                 "/v1/jobs/{job_id}/check", "/v1/triage", "/v1/suites", "/v1/roofline", "/v1/baselines"):
        assert path in paths


def test_client_and_run_server(server, plain, tmp_path):
    from solbench.client import Client

    with Client(server.url, TOKENS["bob"]) as client:
        job = client.submit(REFERENCE, suite="smoke", quick=True)
        summary = client.wait(job["id"], poll_s=0.3)
        assert verdicts(summary) == plain
        assert [j["id"] for j in client.jobs()] == [job["id"]]
    token = tmp_path / "token"
    token.write_text(TOKENS["bob"])
    proc = subprocess.run([sys.executable, "-m", "solbench", "run", str(REFERENCE), "--suite", "smoke", "--quick",
                           "--json", "--server", server.url, "--token-file", str(token), "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    remote = json.loads(proc.stdout)
    assert remote["schema"] == "solbench.summary/1" and verdicts(remote) == plain
    assert (tmp_path / "run" / "results.json").is_file()
    tables = subprocess.run([sys.executable, "-m", "solbench", "run", str(REFERENCE), "--suite", "smoke", "--quick",
                             "--max-scenarios", "2", "--server", server.url, "--token-file", str(token),
                             "--out", str(tmp_path / "run2")], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert tables.returncode == 0, tables.stderr
    assert "suite smoke on cpu: 2/2 scenarios; passed 2" in tables.stdout and "results: " in tables.stdout


async def _mcp_session(session, source_kwargs):
    tools = {t.name for t in (await session.list_tools()).tools}
    assert tools >= {"list_suites", "submit", "status", "result", "check", "triage", "roofline", "baselines"}
    suites = (await session.call_tool("list_suites", {})).structured_content
    assert "smoke" in [s["name"] for s in suites["suites"]]
    job = (await session.call_tool("submit", {"candidate_name": "torch_attention.py", "quick": True,
                                              **source_kwargs})).structured_content
    summary = (await session.call_tool("result", {"job_id": job["id"], "wait_s": 600})).structured_content
    check = (await session.call_tool("check", {"job_id": job["id"]})).structured_content
    roofline = (await session.call_tool("roofline", {"arch": "h200"})).structured_content
    refused = await session.call_tool("status", {"job_id": "no-such-job"})
    return summary, check, roofline, refused


def test_mcp_over_stdio(tmp_path, plain):
    pytest.importorskip("mcp")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, cwd=str(tmp_path),
                                   args=["-m", "solbench", "mcp", "--device", "cpu", "--state-dir", str(tmp_path / "state")])

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await _mcp_session(session, {"path": str(REFERENCE)})

    summary, check, roofline, refused = asyncio.run(asyncio.wait_for(main(), 600))
    assert summary["schema"] == "solbench.summary/1" and verdicts(summary) == plain
    assert check["schema"] == "solbench.check/1" and check["passed"] is True
    assert roofline["schema"] == "solbench.roofline/1"
    assert refused.is_error and "no job" in refused.content[0].text


def test_mcp_over_http(server, plain):
    pytest.importorskip("mcp")
    import httpx2  # the HTTP client the mcp SDK's transport takes
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def main():
        async with httpx2.AsyncClient(headers=server.headers("carol"), timeout=600) as http:
            async with streamable_http_client(server.url + "/mcp/", http_client=http) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    return await _mcp_session(session, {"source": REFERENCE.read_text()})

    summary, check, _, refused = asyncio.run(asyncio.wait_for(main(), 600))
    assert verdicts(summary) == plain and check["passed"] is True
    assert refused.is_error
