"""The citewell HTTP API: :func:`create_app` builds the FastAPI application.

::

    from citewell.web import create_app
    app = create_app("citewell.sqlite")          # uvicorn serves it; or `citewell serve`

One store is opened for the app (the SQLite store keeps one connection per thread, so the
threadpool that runs the sync routes shares it safely); each request gets a cheap
:class:`~citewell.Engine` on its key's workspace (:mod:`citewell.web.deps`). Uploads are
extracted by a small background worker (:mod:`citewell.jobs`) that, on startup,
resumes every upload a previous run left ``processing``; the turns of ``POST /v1/ask``
are answered by another, and on startup every turn a previous run left ``pending``
settles as failed (``TURN_INTERRUPTED``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline
from starlette.routing import Route
from starlette.concurrency import run_in_threadpool

from .. import __version__
from ..agents import AgentRunner, Scheduler, tick_seconds
from ..engine import Engine
from ..mcp_server import MCPEndpoint, http_app, http_server
from ..errors import UsageError
from ..generate import Generator
from ..jobs.process import resume_left_work
from ..jobs.workers import TurnWorker, UploadWorker
from ..retrieve.hybrid import MODES
from ..settings import LLMSettings, Settings, resolve_generator
from ..store import Store, open_store
from .. import webapp
from . import errors
from .openapi import build_openapi
from .auth import KeyPresenceMiddleware
from .bodylimit import BodyLimitMiddleware
from .requestid import RequestIdMiddleware
from .routes import ROUTERS
from .routes.analytics import ResumeByHeader
from .uploads import max_upload_bytes

DESCRIPTION = """Grounded answers with exact citations over your own files.

Authenticate with `X-API-KEY: <key>` (or `Authorization: Bearer <key>`); make keys with
`citewell keys create --workspace NAME [--platform]`. Every answer carries `X-Request-ID`.

Three wire profiles share one engine: sessions (seed 001: `/v1/sessions…`, `/v1/resources…`),
analytics (seeds 003/004: `/v1/references`, `/v2/analytics/…`, `/v1/presigned_url…`,
`/rms/viewer…`) and chats (seed 000:
`/v1/ask`, `/v1/chats…`, `/v1/mentions`, `/v1/datasets…`, `/v1/research_previews…`,
`/v1/patterns…`). `POST /v1/ask` answers 202 at once; poll
`GET /v1/chats/{chat_id}/messages/{message_id}` until `status` is not `pending`.

Errors: sessions routes answer `{"status": "error", "error": {"code", "message"}}`, the
analytics routes `{"error": {"code", "msg", "message"}, "payload": null}` (their success
bodies `{"error": null, "payload": …}`, except `GET /v1/references`: seed 004's bare
`{"references": [...]}`), the chats routes `{"error": {"code", "message"}}` (their success
bodies are the seed's bare objects).
Codes: 401 API_KEY_MISSING, INVALID_API_KEY; 403 FORBIDDEN; 404 NOT_FOUND
(an id of another workspace answers exactly like an unknown id); 400 INVALID_REQUEST_BODY,
INVALID_FILTER and the *_MISSING codes; 413 FILE_TOO_LARGE; 500 SERVER_ERROR, GET_REF_FAIL.
A chats turn that fails is not an HTTP error: its message settles `failed` with
`error: {code, message}` (e.g. SERVER_ERROR, TURN_INTERRUPTED).
"""


def create_app(store: Store | str | os.PathLike[str] | None = None, *, max_upload_mb: float | None = None,
               worker_threads: int = 2, turn_threads: int = 2, generator: Generator | str | None = None,
               llm: LLMSettings | None = None, agent_tick_s: float | None = None, workers: bool = True) -> FastAPI:
    """Build the API on ``store`` (a :class:`~citewell.store.Store`, a SQLite file path, a
    PostgreSQL URL (see :func:`~citewell.store.open_store`), or None for the configured default: ``CITEWELL_STORE``, config file, user data folder).

    ``max_upload_mb``: upload cap in MB (default ``CITEWELL_MAX_UPLOAD_MB``, else 100);
    ``worker_threads``: threads extracting uploads (default 2: one workspace uses at most
    one, so another's upload never waits behind a flood); ``turn_threads``: threads
    answering questions (``POST /v1/ask`` turns, the analytics stream, session messages; at
    least 1; one workspace uses at most ``turn_threads - 1`` of them when there are two or
    more, :mod:`citewell.jobs.fairness`); ``generator``: the answer writer of
    every request's engine, or its name (``extractive``, ``llm``; default: ``llm`` when an
    endpoint is configured, else ``extractive``); it is shared by the request and worker
    threads, so it must be thread-safe; ``llm``: the LLM endpoint (default
    :meth:`LLMSettings.resolve`: environment and config file); ``agent_tick_s``: seconds between
    two looks of the tracking-agent scheduler at the schedule (default
    ``CITEWELL_AGENT_TICK_S``, else 30; 0 turns it off); ``workers``: run workers in
    this process (extraction, embedding and turns are jobs in the store,
    :mod:`citewell.jobs`; False: serve only, and ``citewell worker`` processes on
    the same store do the work). A request may name the
    other writer (``generator`` in its body). A store opened here is closed at
    shutdown; a :class:`Store` passed in is left open. Raises
    :class:`~citewell.errors.StoreError` when the store cannot be opened and
    :class:`~citewell.errors.UsageError` for a bad upload cap or thread count, a
    ``CITEWELL_RETRIEVAL_MODE`` that is not a retrieval mode (every request would fail), a
    bad LLM setting, or ``llm`` without a configured endpoint.
    """
    if worker_threads < 1 or turn_threads < 1:
        raise UsageError("worker_threads and turn_threads must be at least 1")
    llm = llm if llm is not None else LLMSettings.resolve()
    if generator is None or isinstance(generator, str):
        generator = resolve_generator(generator, llm)
    mode = os.environ.get("CITEWELL_RETRIEVAL_MODE")
    if mode and mode not in MODES:
        raise UsageError(f"CITEWELL_RETRIEVAL_MODE must be one of {', '.join(MODES)}, not {mode!r}")
    try:
        tick_s = tick_seconds() if agent_tick_s is None else max(0.0, float(agent_tick_s))
    except ValueError:
        raise UsageError("CITEWELL_AGENT_TICK_S must be a number of seconds") from None
    try:
        cap = max_upload_bytes(max_upload_mb)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    owned = store is None or isinstance(store, (str, os.PathLike))
    if store is None:
        store = open_store(Settings.resolve().store)
    elif isinstance(store, (str, os.PathLike)):
        store = open_store(store)
    opened: Store = store

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        """Start: turns whose worker died (lease expired) or that a citewell of before the
        jobs left pending settle as failed (``TURN_INTERRUPTED``); uploads left processing
        without a job get one, resources an older extractor version made are queued for
        re-extraction from their stored bytes, (hybrid or dense mode) workspaces with
        passages that have no vector are queued for embedding; with ``workers`` this
        process's workers and the tracking-agent scheduler start
        (:mod:`citewell.agents.scheduler`; it stops after its run in progress); the MCP
        endpoint at ``/mcp`` starts (:mod:`citewell.mcp_server`). Stop: running turns and
        the running extraction finish, the running embedding stops after its batch and
        goes back to the queue, queued jobs stay queued for any worker (another replica,
        or the next start); a store opened here is closed."""
        app.state.stopping.clear()
        if app.state.worker.closed:
            app.state.worker = UploadWorker(opened, threads=worker_threads, run=workers, start=False)
        if app.state.turns.closed:
            app.state.turns = TurnWorker(opened, threads=turn_threads, run=workers, start=False,
                                         engine_for=engine_for)
        await run_in_threadpool(resume_left_work, app.state.worker, app.state.turns)
        app.state.worker.start()  # this process's workers (none with workers=False)
        app.state.turns.start()
        scheduler = Scheduler(AgentRunner(opened, engine_for), tick_s=tick_s if workers else 0.0)
        scheduler.start()  # due tracking agents run here, once per tick across processes (the store's lease)
        mcp = http_server(app.state)  # a new one per start: the SDK's session manager runs once
        mcp_asgi = http_app(mcp)
        try:
            async with mcp.session_manager.run():
                app.state.mcp_http = mcp_asgi
                try:
                    yield
                finally:
                    app.state.mcp_http = None
        finally:
            app.state.stopping.set()  # questions still embedding stop after their batch
            await run_in_threadpool(scheduler.stop)
            await run_in_threadpool(app.state.turns.shutdown)
            await run_in_threadpool(app.state.worker.shutdown)
            if owned:
                opened.close()

    # /docs (Swagger UI) and /redoc (ReDoc) load their scripts and styles from this server
    # (the fastapi-offline package ships them): the docs work without internet. No spec
    # validator badge either (Swagger UI would ask validator.swagger.io for it).
    app = FastAPIOffline(title="citewell", version=__version__, description=DESCRIPTION, lifespan=lifespan,
                         swagger_ui_parameters={"validatorUrl": None})
    app.state.store = opened
    #: set when the server stops (by the lifespan, or by ``citewell serve`` at the signal,
    #: before uvicorn waits for open requests): questions stop embedding after their batch
    app.state.stopping = threading.Event()
    app.state.max_upload_bytes = cap
    app.state.generator = generator
    app.state.llm = llm
    app.state.generators = {}  # writers built on first use, shared by every request's engine

    def engine_for(workspace_id: str) -> Engine:
        """The engine of a job of ``workspace_id`` queued by another process: the app's writers."""
        return Engine.for_workspace_id(opened, workspace_id, generator=app.state.generator,
                                       generators=app.state.generators, llm=app.state.llm)

    # their workers start with the app (the lifespan): an app that is never run polls nothing
    app.state.worker = UploadWorker(opened, threads=worker_threads, run=workers, start=False)
    app.state.turns = TurnWorker(opened, threads=turn_threads, run=workers, start=False, engine_for=engine_for)
    errors.install(app)
    for router in ROUTERS:
        app.include_router(router)
    # MCP over streamable HTTP (the same API keys; not in the OpenAPI document: JSON-RPC, see citewell.mcp_server)
    app.state.mcp_http = None
    app.router.routes.append(Route("/mcp", endpoint=MCPEndpoint(app.state), methods=["GET", "POST", "DELETE"]))
    webapp.install(app)  # the web app at / (static files shipped in the package)
    app.add_middleware(ResumeByHeader)  # innermost: a POST resume is the GET resume, its body never read
    app.add_middleware(BodyLimitMiddleware)
    app.add_middleware(KeyPresenceMiddleware)  # before the body limit: a keyless request reads nothing
    app.add_middleware(RequestIdMiddleware, on_error=errors.unhandled_error_response)  # outermost: ids on all
    app.openapi = lambda: build_openapi(app)  # type: ignore[method-assign]
    return app


def app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory citewell.web.app:app_from_env``: the configured store."""
    return create_app()


__all__ = ["app_from_env", "create_app"]
