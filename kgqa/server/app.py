"""The ASGI app of ``kgqa serve`` (FastAPI): thin, like the CLI; every answer comes from
:func:`kgqa.service.ask` (docs/server.md).

- ``POST /v1/ask``: the answer document (:class:`~kgqa.server.schema.AnswerDocument`, the
  same as ``kgqa ask --json``); with ``Accept: text/event-stream`` the stages as server-sent
  events while they happen, then the answer;
- ``GET /v1/retrieve``, ``GET /v1/stats``, ``GET /v1/runs/{run_id}``, ``GET /healthz``;
- ``GET /openapi.json``: the OpenAPI document (no Swagger page: it would load from a CDN).

Questions run one at a time on one worker (:mod:`kgqa.server.runner`); cache hits are served
without queueing. Errors are JSON (:mod:`kgqa.server.errors`), never a traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from concurrent.futures import Future
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from kgqa import __version__
from kgqa.errors import KGQAError
from kgqa.server.errors import QueueFull, bug_body, error_body, status_of
from kgqa.server.runner import Job
from kgqa.server.schema import AnswerDocument, AskRequest, ErrorDocument
from kgqa.server.state import ServerState

log = logging.getLogger("kgqa.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Paths that need no token: a load balancer's probe, and the page (it holds no data; its
# requests carry the token the user gives it).
OPEN_PATHS = frozenset({"/healthz", "/", "/favicon.ico"})
OPEN_PREFIXES = ("/static/",)
STATIC = Path(__file__).parent / "static"
# The page loads nothing from anywhere else.
PAGE_CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
EVENT_STREAM = "text/event-stream"
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorDocument, "description": what}
    for code, what in (
        (401, "missing or wrong bearer token"),
        (404, "unknown entity (with suggestions) or saved run"),
        (409, "ambiguous entity"),
        (413, "request body too large"),
        (422, "invalid request (the field is named) or a question that cannot be asked"),
        (503, "Neo4j, the LLM server or the index unavailable; queue full (Retry-After)"),
        (504, "past server.request_timeout"),
    )
}


def error_response(error: KGQAError) -> JSONResponse:
    headers = {}
    if isinstance(error, QueueFull):
        headers["Retry-After"] = str(error.retry_after)
    return JSONResponse(error_body(error), status_code=status_of(error), headers=headers)


def bug_response(error: BaseException) -> JSONResponse:
    log.error("internal error", exc_info=error)
    return JSONResponse(bug_body(error), status_code=500)


async def _plain(send: Send, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
    data = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data})


def _error(kind: str, message: str, code: int = 2) -> dict[str, Any]:
    return {"error": {"type": kind, "message": message, "exit_code": code}}


class Guard:
    """ASGI middleware: the bearer token (when ``server.api_token`` is set; compared in
    constant time, never logged) and the body size limit (413), before anything is read."""

    def __init__(self, app: ASGIApp, token: str | None, max_body: int):
        self.app = app
        self.token = token
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        path = scope["path"]
        open_path = path in OPEN_PATHS or path.startswith(OPEN_PREFIXES)
        if self.token and not open_path and scope["method"] != "OPTIONS":
            given = headers.get("authorization", "")
            scheme, _, value = given.partition(" ")
            if scheme.lower() != "bearer" or not secrets.compare_digest(
                value.strip().encode(), self.token.encode()
            ):
                body = _error(
                    "Unauthorized", "a bearer token is required (Authorization: Bearer ...)"
                )
                await _plain(send, 401, body, {"WWW-Authenticate": "Bearer"})
                return
        length = headers.get("content-length")
        too_big = _error(
            "PayloadTooLarge",
            f"the request body is larger than server.max_body_bytes ({self.max_body} bytes)",
        )
        if length is not None:
            if not length.isdigit() or int(length) > self.max_body:
                await _plain(send, 413, too_big, {})
                return
            await self.app(scope, receive, send)
            return
        if scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send)
            return
        # A body without a length (chunked): read it here, up to the limit, and replay it.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                await _plain(send, 413, too_big, {})
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _field(loc: tuple[Any, ...] | list[Any]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path")]
    return ".".join(parts) or ".".join(str(p) for p in loc)


def create_app(state: ServerState) -> FastAPI:
    """The app over ``state`` (built and warmed up by ``kgqa serve``, or by a test)."""
    s = state.settings.server
    app = FastAPI(
        title="kgqa",
        version=__version__,
        description="Explainable question answering over a Neo4j knowledge graph (docs/server.md).",
        docs_url=None,
        redoc_url=None,
    )
    app.state.kgqa = state
    origins = [o.strip() for o in s.cors_origins.split(",") if o.strip()]
    if origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "Accept"],
        )
    app.add_middleware(Guard, token=s.api_token or None, max_body=s.max_body_bytes)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        fields = [
            {"field": _field(e.get("loc", ())), "message": str(e.get("msg", ""))}
            for e in exc.errors()
        ]
        message = "; ".join(f"{f['field']}: {f['message']}" for f in fields) or "invalid request"
        body = _error("ValidationError", message)
        body["error"]["fields"] = fields
        return JSONResponse(body, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(
            _error("HTTPError", str(exc.detail)), status_code=exc.status_code, headers=exc.headers
        )

    @app.exception_handler(KGQAError)
    async def _kgqa(_request: Request, exc: KGQAError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(Exception)
    async def _bug(_request: Request, exc: Exception) -> JSONResponse:
        return bug_response(exc)

    @app.post(
        "/v1/ask",
        response_model=AnswerDocument,
        responses={
            **ERRORS,
            200: {
                "content": {EVENT_STREAM: {}},
                "description": "The answer document; with Accept: text/event-stream, events "
                "(queued, entities, decomposition, candidates, reformulation, sub_answer, hop, "
                "synthesis, check, evidence, answer, costs, done | error; docs/server.md).",
            },
        },
    )
    async def ask(req: AskRequest, request: Request) -> Response:
        """Answer a question (``kgqa ask --json``)."""
        stream = EVENT_STREAM in request.headers.get("accept", "")
        hit = await run_in_threadpool(state.cached, req)
        if hit is not None:
            doc = hit.to_json()
            if not stream:
                return JSONResponse(doc)
            evidence = await run_in_threadpool(state.evidence, doc)
            return _event_stream(_finished(doc, evidence))
        if not stream:
            doc = await state.runner.run(lambda job: state.answer(req, job, None))
            return JSONResponse(doc)
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()

        def emit(event: str, data: dict[str, Any]) -> None:
            loop.call_soon_threadsafe(events.put_nowait, (event, data))

        ahead = state.runner.pending
        job, future = state.runner.submit(lambda job: state.answer(req, job, emit))
        return _event_stream(_progress(job, future, events, ahead))

    @app.get("/v1/retrieve", responses=ERRORS)
    async def retrieve(
        question: Annotated[str, Query(min_length=1, max_length=2000)],
        entity: Annotated[list[str] | None, Query(max_length=8)] = None,
        hops: Annotated[int | None, Query(ge=1, le=3)] = None,
        top_k: Annotated[int | None, Query(ge=1, le=1000)] = None,
    ) -> JSONResponse:
        """Candidates and top-K triples for a question (``kgqa retrieve --json``)."""
        doc = await state.runner.run(
            lambda _job: state.retrieve(question, entity or [], hops, top_k)
        )
        return JSONResponse(doc)

    @app.get("/v1/stats", responses=ERRORS)
    async def stats() -> JSONResponse:
        """Graph counts, the index against the graph, the queue, the models, the cache."""
        return JSONResponse(await run_in_threadpool(state.stats))

    @app.get("/v1/runs/{run_id}", responses=ERRORS)
    async def run(run_id: str) -> JSONResponse:
        """A run saved with ``save: true`` (``kgqa ask --save``)."""
        return JSONResponse(await run_in_threadpool(state.run, run_id))

    @app.get("/v1/neighbours", responses=ERRORS)
    async def neighbours(
        entity: Annotated[str, Query(min_length=1, max_length=500)],
        limit: Annotated[int, Query(ge=1, le=100)] = 25,
    ) -> JSONResponse:
        """The triples touching an entity, at most ``limit`` (read-only; the page's graph)."""
        return JSONResponse(await run_in_threadpool(state.neighbours, entity, limit))

    @app.get("/v1/info")
    async def info() -> JSONResponse:
        """The version, the modes and where Neo4j Browser is (the page's settings)."""
        return JSONResponse(state.info())

    @app.get("/", include_in_schema=False)
    async def page() -> Response:
        from fastapi.responses import FileResponse

        headers = {"Content-Security-Policy": PAGE_CSP, "X-Content-Type-Options": "nosniff"}
        return FileResponse(STATIC / "index.html", headers=headers)

    from fastapi.staticfiles import StaticFiles

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/healthz")
    async def healthz() -> JSONResponse:
        """Neo4j reachable, models loaded, index consistent (200), else 503 with what is not."""
        ok, details = await run_in_threadpool(state.health)
        return JSONResponse(details, status_code=200 if ok else 503)

    return app


def _event_stream(events: AsyncIterator[dict[str, str]]) -> Response:
    from sse_starlette.sse import EventSourceResponse

    return EventSourceResponse(events, ping=15)


def _sse(event: str, data: dict[str, Any]) -> dict[str, str]:
    return {"event": event, "data": json.dumps(data, ensure_ascii=False)}


async def _finished(doc: dict[str, Any], evidence: dict[str, Any]) -> AsyncIterator[dict[str, str]]:
    yield _sse("evidence", evidence)
    yield _sse("answer", doc)
    yield _sse("costs", doc["timings"])
    yield _sse("done", {})


async def _progress(
    job: Job,
    future: Future[dict[str, Any]],
    events: asyncio.Queue[tuple[str, dict[str, Any]]],
    ahead: int,
) -> AsyncIterator[dict[str, str]]:
    """The stages as the worker reports them, then the answer (or the error)."""
    done: asyncio.Future[Any] = asyncio.wrap_future(future)
    try:
        yield _sse("queued", {"ahead": ahead})
        while True:
            getter: asyncio.Future[Any] = asyncio.ensure_future(events.get())
            finished, _ = await asyncio.wait(
                {getter, done},
                timeout=max(0.0, job.remaining()),
                return_when=asyncio.FIRST_COMPLETED,
            )
            if getter in finished:
                yield _sse(*getter.result())
                continue
            getter.cancel()
            if done not in finished:  # past the deadline: stopped at its next stage
                job.cancel()
                future.cancel()
                try:
                    job.check()
                except KGQAError as e:
                    yield _sse("error", error_body(e) | {"status": status_of(e)})
                return
            # Events emitted before the work ended are already queued.
            while not events.empty():
                yield _sse(*events.get_nowait())
            error = done.exception()
            if error is None:
                doc = done.result()
                yield _sse("answer", doc)
                yield _sse("costs", doc["timings"])
                yield _sse("done", {})
            elif isinstance(error, KGQAError):
                yield _sse("error", error_body(error) | {"status": status_of(error)})
            else:
                log.error("internal error", exc_info=error)
                yield _sse("error", bug_body(error) | {"status": 500})
            return
    finally:
        if not future.done():
            job.cancel()  # the client went away: stop at the next stage
            future.cancel()
            done.cancel()  # what the stopped work raises is nobody's to read
