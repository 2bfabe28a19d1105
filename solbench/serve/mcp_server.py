"""The MCP tools (the official `mcp` SDK): `solbench mcp` serves them over stdio to a local agent, and
`solbench serve` over HTTP at /mcp beside the REST API. Each returns the same JSON object as the CLI command
or REST route of its name (list_suites, submit, status, result, check, triage, roofline, baselines); a
refusal is a tool error carrying the one line the REST API would send.

Over HTTP the caller is the client its bearer token names; over stdio it is the local user ('local'), who
may also submit a candidate by its path.
"""

import time
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from solbench.serve.requests import CheckCriteria, JobRequest
from solbench.serve.service import ServeError, Service
from solbench.serve.tokens import Tokens

LOCAL_CLIENT = "local"


def build_mcp(service: Service, tokens: Tokens | None):
    """The MCP server over `service`; `tokens` None means stdio (the local user, paths allowed)."""
    mcp = MCPServer("solbench", instructions="Evaluate attention-forward kernels: submit a candidate, poll status, "
                    "fetch the result (solbench.summary/1), check it against an earlier job or a recorded run.")

    def client_of(ctx: Context) -> str:
        if tokens is None:
            return LOCAL_CLIENT
        header = (ctx.headers or {}).get("authorization", "")
        client = tokens.client(header.removeprefix("Bearer ").strip()) if header.startswith("Bearer ") else None
        if client is None:
            raise ToolError("no valid bearer token: send 'Authorization: Bearer TOKEN'")
        return client

    async def call(fn, *args):
        try:
            return await anyio.to_thread.run_sync(lambda: fn(*args))
        except ServeError as exc:
            raise ToolError(str(exc)) from None

    @mcp.tool()
    async def list_suites() -> dict[str, Any]:
        """The suites this server evaluates on, with their scenario counts."""
        return await call(service.suites)

    @mcp.tool()
    async def submit(ctx: Context, candidate_name: str, source: str | None = None, path: str | None = None,
                     suite: str = "smoke", quick: bool = False, filter: str | None = None,
                     max_scenarios: int | None = None, baselines: str | None = None, policy: str | None = None) -> dict[str, Any]:
        """Queue `solbench run` of a candidate (.py or .cu): its text as `source` (or, over stdio, its `path`).
        Returns the job's status object; its `id` is what status, result and check take."""
        client = client_of(ctx)
        if path is not None:
            if tokens is not None:
                raise ToolError("path: over HTTP send the candidate's text as source")
            data = await anyio.Path(path).read_bytes()
        elif source is not None:
            data = source.encode()
        else:
            raise ToolError("give the candidate's source (or, over stdio, its path)")
        request = JobRequest(suite=suite, quick=quick, filter=filter, max_scenarios=max_scenarios,
                             baselines=baselines, policy=policy)
        return await call(service.submit, client, candidate_name, data, request)

    @mcp.tool()
    async def status(ctx: Context, job_id: str) -> dict[str, Any]:
        """A job's state, progress (done of total, the scenario running, ETA) and, once done, its verdict."""
        return await call(service.status, client_of(ctx), job_id)

    @mcp.tool()
    async def result(ctx: Context, job_id: str, wait_s: float = 0.0) -> dict[str, Any]:
        """The `solbench run --json` object (solbench.summary/1) of an ended job, waiting up to wait_s for it."""
        client = client_of(ctx)
        deadline = time.monotonic() + max(0.0, min(wait_s, 3600.0))
        while time.monotonic() < deadline and (await call(service.status, client, job_id))["state"] in ("queued", "running"):
            await anyio.sleep(0.5)
        return await call(service.summary, client, job_id)

    @mcp.tool()
    async def check(ctx: Context, job_id: str, against_job: str | None = None, against_baseline: str | None = None,
                    min_geomean: float | None = None, min_ratio: float | None = None) -> dict[str, Any]:
        """`solbench check` (solbench.check/1) of a job, against another job or a recorded run ('h200/hopper')."""
        criteria = CheckCriteria(min_geomean=min_geomean, min_ratio=min_ratio)
        return await call(service.check, client_of(ctx), job_id, against_job, against_baseline, criteria)

    @mcp.tool()
    async def triage(ctx: Context, job_ids: list[str] | None = None, recorded: list[str] | None = None,
                     scenario: str | None = None) -> dict[str, Any]:
        """`solbench triage` (solbench.triage/1) of jobs and recorded runs: each scenario's gap, classified."""
        return await call(service.triage, client_of(ctx), job_ids or [], recorded or [], scenario)

    @mcp.tool()
    async def roofline(arch: str, suite: str = "smoke") -> dict[str, Any]:
        """`solbench roofline` (solbench.roofline/1): each scenario's speed-of-light bound on an arch."""
        return await call(service.roofline, arch, suite)

    @mcp.tool()
    async def baselines(suite: str = "smoke", arch: str | None = None) -> dict[str, Any]:
        """`solbench baselines` (solbench.baselines/1): the baseline libraries, installed or not, and coverage."""
        return await call(service.baselines, suite, arch)

    return mcp
