"""The HTTP side of `solbench serve`: the REST API under /v1 (OpenAPI at /openapi.json), the web page at /,
and the MCP tools at /mcp. Every refusal is a 4xx whose body is a `solbench.error/1` object with one line.

A client authenticates with `Authorization: Bearer TOKEN` (the page keeps the token in an HttpOnly cookie);
the token file names the client. A request body larger than the upload limit allows is refused before it
is read.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from solbench import __version__
from solbench.serve.page import login_page, queue_page
from solbench.serve.requests import CheckCriteria, JobRequest
from solbench.serve.service import ServeError, Service
from solbench.serve.tokens import Tokens

COOKIE = "solbench_token"


class SubmitRequest(JobRequest):
    """A job: the candidate's file (name and base64 bytes) and the `solbench run` options."""

    candidate_name: str = Field(description="the file's name, ending in .py or .cu")
    candidate_base64: str = Field(description="the file's bytes, base64")


class CheckRequest(CheckCriteria):
    """What to compare the job against, and the clauses to add."""

    against_job: str | None = Field(None, description="compare against this earlier job of yours")
    against_baseline: str | None = Field(None, description="or against a recorded run, e.g. 'h200/hopper'")


class TriageRequest(BaseModel):
    jobs: list[str] = Field(default_factory=list, description="your jobs to triage")
    recorded: list[str] = Field(default_factory=list, description="recorded runs to add, e.g. 'h200/hopper-d128'")
    scenario: str | None = None


def error_body(status: int, message: str, exit_code: int = 2) -> dict:
    """The `solbench.error/1` object of a refusal: `status` the HTTP status, `exit_code` what `solbench run`
    returns for the same fault (2 bad input, 4 build error, 5 load error)."""
    return {"schema": "solbench.error/1", "ok": False, "command": "serve", "exit_code": exit_code,
            "error": message, "status": status}


def _refuse(status: int, message: str, exit_code: int = 2) -> JSONResponse:
    return JSONResponse(error_body(status, " ".join(str(message).split()), exit_code), status_code=status)


class BodyLimit:
    """Refuses (413) a request body over `limit` bytes, by its Content-Length or as it streams in."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            return await _refuse(413, f"request body of {int(length)} bytes; this server takes at most "
                                      f"{self.limit}")(scope, receive, send)
        seen = 0

        async def counted():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise _TooLarge()
            return message

        try:
            await self.app(scope, counted, send)
        except _TooLarge:
            await _refuse(413, f"request body over {self.limit} bytes, the most this server takes")(scope, receive, send)


class _TooLarge(Exception):
    pass


def create_app(service: Service, tokens: Tokens, mcp_http: bool = True) -> FastAPI:
    """The ASGI app over `service`; `tokens` name each request's client."""
    mcp = None
    if mcp_http:
        from solbench.serve.mcp_server import build_mcp

        mcp = build_mcp(service, tokens)
        mcp_app = mcp.streamable_http_app(streamable_http_path="/", host="127.0.0.1")

    @contextlib.asynccontextmanager
    async def lifespan(app):
        service.start()
        try:
            if mcp is not None:
                async with mcp.session_manager.run():
                    yield
            else:
                yield
        finally:
            service.stop()

    app = FastAPI(title="solbench serve", version=__version__, lifespan=lifespan,
                  description="Evaluate attention-forward kernels on this node's devices: submit, follow, fetch "
                              "results, check and triage; every refusal is a solbench.error/1 object.")
    app.add_middleware(BodyLimit, limit=service.limits.upload_bytes * 4 // 3 + 64 * 1024)

    @app.exception_handler(ServeError)
    async def serve_error(request, exc: ServeError):
        return _refuse(exc.status, str(exc), exc.exit_code)

    @app.exception_handler(RequestValidationError)
    async def invalid(request, exc: RequestValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        if first.get("type") == "json_invalid":
            return _refuse(422, f"the request body is not valid JSON: {first.get('ctx', {}).get('error', '')}")
        return _refuse(422, f"{where or 'body'}: {first.get('msg', 'invalid request')}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request, exc: StarletteHTTPException):
        return _refuse(exc.status_code, exc.detail if isinstance(exc.detail, str) else "refused")

    def client(request: Request) -> str:
        header = request.headers.get("authorization", "")
        token = header[7:].strip() if header.startswith("Bearer ") else request.cookies.get(COOKIE, "")
        if not token:
            raise ServeError(401, "no token: send 'Authorization: Bearer TOKEN'")
        who = tokens.client(token)
        if who is None:
            raise ServeError(401, "unknown token")
        return who

    @app.post("/v1/jobs", status_code=201, summary="submit a candidate; returns the job's status")
    def submit(body: SubmitRequest, who: str = Depends(client)) -> dict:
        try:
            data = base64.b64decode(body.candidate_base64, validate=True)
        except (binascii.Error, ValueError):
            raise ServeError(422, "candidate_base64: not base64") from None
        request = JobRequest(**body.model_dump(exclude={"candidate_name", "candidate_base64"}))
        return service.submit(who, body.candidate_name, data, request)

    @app.get("/v1/jobs", summary="your jobs, oldest first")
    def jobs(who: str = Depends(client)) -> list[dict]:
        return service.jobs(who)

    @app.get("/v1/jobs/{job_id}", summary="a job's state and progress (done/total, running scenario, ETA)")
    def status(job_id: str, who: str = Depends(client)) -> dict:
        return service.status(who, job_id)

    @app.get("/v1/jobs/{job_id}/events", summary="the job's status as server-sent events until it ends")
    async def events(job_id: str, who: str = Depends(client)):
        from sse_starlette.sse import EventSourceResponse

        service.status(who, job_id)  # 404 now, not inside the stream

        async def stream():
            last = None
            while True:
                doc = await asyncio.to_thread(service.status, who, job_id)
                if doc != last:
                    yield {"event": "status", "data": json.dumps(doc)}
                    last = doc
                if doc["state"] in ("done", "failed", "cancelled"):
                    return
                await asyncio.sleep(0.5)

        return EventSourceResponse(stream())

    @app.post("/v1/jobs/{job_id}/cancel", summary="cancel a queued or running job")
    def cancel(job_id: str, who: str = Depends(client)) -> dict:
        return service.cancel(who, job_id)

    @app.get("/v1/jobs/{job_id}/summary", summary="the `solbench run --json` object (solbench.summary/1)")
    def summary(job_id: str, who: str = Depends(client)) -> dict:
        return service.summary(who, job_id)

    @app.get("/v1/jobs/{job_id}/results.json", summary="the run's results.json (solbench.run/1)")
    def results(job_id: str, who: str = Depends(client)):
        return FileResponse(service.run_file(who, job_id, "results.json"), media_type="application/json")

    @app.get("/v1/jobs/{job_id}/report", summary="the run's HTML report (summary.html)")
    def report(job_id: str, who: str = Depends(client)):
        return FileResponse(service.run_file(who, job_id, "summary.html"), media_type="text/html")

    @app.post("/v1/jobs/{job_id}/check", summary="`solbench check` of the job (solbench.check/1)")
    def check(job_id: str, body: CheckRequest, who: str = Depends(client)) -> dict:
        criteria = CheckCriteria(**body.model_dump(exclude={"against_job", "against_baseline"}))
        return service.check(who, job_id, body.against_job, body.against_baseline, criteria)

    @app.post("/v1/triage", summary="`solbench triage` of jobs and recorded runs (solbench.triage/1)")
    def triage(body: TriageRequest, who: str = Depends(client)) -> dict:
        return service.triage(who, body.jobs, body.recorded, body.scenario)

    @app.get("/v1/suites", summary="the suites, with scenario counts")
    def suites(who: str = Depends(client)) -> dict:
        return service.suites()

    @app.get("/v1/roofline", summary="`solbench roofline` (solbench.roofline/1)")
    def roofline(arch: str, suite: str = "smoke", who: str = Depends(client)) -> dict:
        return service.roofline(arch, suite)

    @app.get("/v1/baselines", summary="`solbench baselines` (solbench.baselines/1)")
    def baselines(suite: str = "smoke", arch: str | None = None, who: str = Depends(client)) -> dict:
        return service.baselines(suite, arch)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page(request: Request):
        try:
            who = client(request)
        except ServeError as exc:
            return HTMLResponse(login_page("" if exc.status == 401 and not request.cookies.get(COOKIE) else str(exc)))
        return HTMLResponse(queue_page(who, service.jobs(who), f"{service.device} · {', '.join(service.devices)}"))

    @app.get("/ui", include_in_schema=False)
    def login(token: str):
        if tokens.client(token) is None:
            return HTMLResponse(login_page("unknown token"), status_code=401)
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
        return response

    if mcp is not None:
        app.mount("/mcp", _with_token(mcp_app, tokens))
    return app


def _with_token(inner, tokens: Tokens):
    """`inner` for requests that carry a known bearer token; a 401 error object for the rest."""

    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            header = dict(scope.get("headers") or []).get(b"authorization", b"").decode(errors="replace")
            if not header.startswith("Bearer ") or tokens.client(header[7:].strip()) is None:
                return await _refuse(401, "no valid token: send 'Authorization: Bearer TOKEN'")(scope, receive, send)
        return await inner(scope, receive, send)

    return guarded
