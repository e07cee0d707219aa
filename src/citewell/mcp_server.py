"""The MCP server (issue 17, "MCP"), on the official ``mcp`` SDK (:class:`MCPServer`).

Two transports, one set of tools:

- **stdio**: ``citewell mcp`` (for desktop assistants), on the store and workspace of the
  command's ``--store``/``--workspace`` (or their environment and config file);
- **streamable HTTP**: mounted at ``/mcp`` on ``citewell serve``, each request
  authenticated by the same API keys as the HTTP API (``X-API-KEY`` or ``Authorization:
  Bearer``; a platform key may name ``organization_id`` in the query): a missing or bad key
  is refused with 401 and the chats error envelope before the SDK sees the request, and
  every tool call works in the key's workspace.

Tools (each result is a JSON object, sent as structured content and as text; errors come
back as tool errors ``CODE: message`` with the HTTP API's codes — bad arguments are
``INVALID_REQUEST_BODY`` — never a traceback):

``ask``, ``get_message``, ``resolve_mentions``, ``search_mentions``, ``search_passages``,
``list_resources``, ``list_tracking_agents``, ``read_alerts`` (see each tool's description).
Answers and alerts carry seed 000's ``references[]``: post references with ``citation``
and ``start_index``/``end_index`` such that ``text[start_index:end_index] == "[N]"``
(Unicode code points), passage references with their ``chunk_id``, entity references
(``pattern`` …) as ``{type, id}``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, get_args
from urllib.parse import parse_qs, urlencode

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import ValidationError

from . import __version__
from .agents import Agents
from .agents.spec import agent_json
from .engine import Engine
from .errors import CitewellError, NotFoundError, UsageError
from .models import Passage, ResourceStatus
from .profiles.chats import render_message

INSTRUCTIONS = ("citewell answers questions over the user's own documents and social-media posts with exact "
                "citations. Cite what you use: every answer's text has [N] markers and references[] tells what "
                "each [N] points at (a post by source and id, a passage by chunk_id and resource).")

#: The statuses ``list_resources`` narrows to.
STATUSES = get_args(ResourceStatus)

#: Builds the engine of one tool call from its request headers and query (HTTP) or from
#: nothing (stdio); returns ``(engine, key_id)`` (``key_id`` None over stdio).
EngineFactory = Callable[[dict[str, str], dict[str, str]], tuple[Engine, str | None]]


def _problem(exc: ValidationError) -> str:
    """The first problem of a validation error, as the HTTP API words it (``loc: msg``,
    and how many more)."""
    errors = exc.errors()
    if not errors:
        return "the arguments are not valid"
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc") or ())
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    return f"{where + ': ' if where else ''}{first.get('msg', 'invalid value')}{more}"


def _passage_json(p: Passage) -> dict[str, Any]:
    meta = p.chunk.metadata or {}
    out: dict[str, Any] = {"chunk_id": p.chunk.id, "resource_id": p.chunk.resource_id,
                           "resource_title": p.resource_title, "kind": p.resource_kind,
                           "chunk_index": p.chunk.chunk_index, "text": p.chunk.text, "text_type": p.chunk.text_type,
                           "metadata": meta, "score": p.score}
    if p.resource_kind == "post":
        out.update(source=meta.get("source"), id=meta.get("id"))
    return out


def build_server(engine_for: EngineFactory, *, viewer_base: Callable[[Context], str | None] | None = None) -> MCPServer:
    """The citewell MCP server. ``engine_for(headers, query)``: the engine (and API key id)
    a call works with (raises :class:`CitewellError` for a bad key); ``viewer_base(ctx)``:
    the base URL signed viewer links are made on (None: no links, as over stdio)."""
    server = MCPServer(name="citewell", version=__version__, instructions=INSTRUCTIONS)

    def headers_of(ctx: Context) -> tuple[dict[str, str], dict[str, str]]:
        try:
            request = ctx.request_context.request
        except ValueError:
            request = None
        headers = {k.lower(): v for k, v in (getattr(request, "headers", None) or {}).items()}
        query_string = getattr(getattr(request, "url", None), "query", "") or ""
        query = {k: v[0] for k, v in parse_qs(query_string).items()}
        return headers, query

    async def call(ctx: Context, work: Callable[[Engine, str | None], Any]) -> Any:
        headers, query = headers_of(ctx)

        def run() -> Any:
            engine, key_id = engine_for(headers, query)
            return work(engine, key_id)

        try:
            return await anyio.to_thread.run_sync(run)
        except CitewellError as exc:  # the HTTP API's codes (INVALID_REQUEST is INVALID_REQUEST_BODY there)
            from .web.errors import RENAMED
            raise ToolError(f"{RENAMED.get(exc.code, exc.code)}: {exc.message}") from None
        except ValidationError as exc:  # a tool's arguments read into a request model
            raise ToolError(f"INVALID_REQUEST_BODY: {_problem(exc)}") from None

    def links(ctx: Context, engine: Engine, key_id: str | None, message_id: str | None,
              citations: list[int]) -> dict[str, str]:
        base = viewer_base(ctx) if viewer_base is not None else None
        if base is None or key_id is None or message_id is None:
            return {}
        from .web import signing
        from .web.routes.viewer import CHAT_MESSAGE_ID

        expires = signing.viewer_expiry()
        out = {}
        for n in citations:
            params = signing.sign_viewer(engine.store, engine.workspace_id, CHAT_MESSAGE_ID, message_id, str(n),
                                         key_id, expires)
            out[str(n)] = f"{base}/rms/viewer?{urlencode(params)}"
        return out

    @server.tool(description=(
        "Ask a question over the workspace's documents and posts. Returns the cited answer: `text` with [N] "
        "markers, `references` (seed 000: a post is {type: post, source, id, citation, start_index, end_index} "
        "with text[start_index:end_index] == '[N]' in Unicode code points; a passage {type: chunk, id, citation, "
        "…, resource_title, text, metadata}), `citations` (one per cited resource), `viewer_links` ({N: URL} of "
        "a page showing each citation in place; over HTTP only), `chat_id` and `message_id` (pass chat_id to "
        "ask a follow-up). `filters`: {key: value} as docs/architecture.md \"Filters\" (source, kind, "
        "resource_id, tickers, created_at …)."))
    async def ask(question: str, ctx: Context, chat_id: str | None = None,
                  filters: dict[str, Any] | None = None) -> dict[str, Any]:
        def work(engine: Engine, key_id: str | None) -> dict[str, Any]:
            pending = engine.begin_turn(question, chat_id=chat_id, filters=filters)
            message = engine.complete_turn(pending)
            out = render_message(message)
            out["citations"] = [c.model_dump(mode="json") for c in message.citations]
            out["viewer_links"] = links(ctx, engine, key_id, message.id,
                                        [r.citation for r in message.references if r.citation is not None])
            out["chat_id"], out["message_id"] = pending.chat.id, message.id
            return out
        return await call(ctx, work)

    @server.tool(description=(
        "Get one stored message by id: a chat answer (as `ask` returned it) or a tracking-agent alert, in seed "
        "000's shape (text with [N], references)."))
    async def get_message(message_id: str, ctx: Context) -> dict[str, Any]:
        def work(engine: Engine, key_id: str | None) -> dict[str, Any]:
            try:
                return render_message(engine.message(message_id))
            except NotFoundError:
                return render_message(Agents(engine).alert(message_id)[1])
        return await call(ctx, work)

    @server.tool(description=(
        "Resolve cited posts to full mentions: `post_refs` is a list of {source, id, dataset_id?} (a post "
        "reference's source and id, and its resource_id as dataset_id). Returns {mentions: [...]} in the order "
        "asked (text, author, url, created_at, dataset_id, every field the source gave); an unknown post is an "
        "item with `error`."))
    async def resolve_mentions(post_refs: list[dict[str, Any]], ctx: Context) -> dict[str, Any]:
        from .web.routes.mentions import mentions_by_refs
        from .web.schemas import MentionsBody

        def work(engine: Engine, key_id: str | None) -> dict[str, Any]:
            return mentions_by_refs(engine, MentionsBody(post_refs=post_refs))
        return await call(ctx, work)

    @server.tool(description=(
        "Search posts (mentions) by words, source, dataset and time: returns {mentions, next_cursor} oldest "
        "first; pass next_cursor back as `cursor` for the next page. Dates are ISO 8601."))
    async def search_mentions(ctx: Context, query: str | None = None, source: str | None = None,
                              dataset_id: str | None = None, created_after: str | None = None,
                              created_before: str | None = None, limit: int = 20,
                              cursor: str | None = None) -> dict[str, Any]:
        from .web.routes.mentions import mentions_by_query
        from .web.schemas import MentionsBody

        def work(engine: Engine, key_id: str | None) -> dict[str, Any]:
            body = MentionsBody(query=query, source=source, dataset_id=dataset_id, created_after=created_after,
                                created_before=created_before, limit=limit, cursor=cursor)
            return mentions_by_query(engine, body)
        return await call(ctx, work)

    @server.tool(description=(
        "Search passages (chunks of documents, transcripts and posts) for a query, as `ask` retrieves: returns "
        "{passages: [{chunk_id, resource_id, resource_title, kind, chunk_index, text, text_type, metadata (page "
        "and boxes, start_time/end_time, or post source/id), score}]}, best first. `k` 1–50."))
    async def search_passages(query: str, ctx: Context, k: int = 5,
                              filters: dict[str, Any] | None = None) -> dict[str, Any]:
        def work(engine: Engine, key_id: str | None) -> dict[str, Any]:
            if not 1 <= k <= 50:
                raise UsageError("k must be 1 to 50")
            from .web.rules import MAX_QUESTION_CHARS  # as ask's question
            if len(query) > MAX_QUESTION_CHARS:
                raise UsageError(f"query: at most {MAX_QUESTION_CHARS:,} characters")
            return {"passages": [_passage_json(p) for p in engine.retrieve(query, k=k, filters=filters)]}
        return await call(ctx, work)

    @server.tool(description=(
        "List the workspace's resources (files and posts datasets): {resources: [{id, title, file_name, kind, "
        "status, chunk_count, created_at}]}, oldest first; `status` (ready, processing, failed, superseded, "
        "missing) narrows it."))
    async def list_resources(ctx: Context, status: str | None = None) -> dict[str, Any]:
        def work(engine: Engine, key_id: str | None) -> dict[str, Any]:
            if status is not None and status not in STATUSES:
                raise UsageError(f"status: one of {', '.join(STATUSES)}")
            found = engine.resources(statuses=[status] if status else None)
            return {"resources": [{"id": r.id, "title": r.title, "file_name": r.file_name, "kind": r.kind,
                                   "status": r.status, "chunk_count": r.chunk_count,
                                   "created_at": r.created_at.isoformat()} for r in found]}
        return await call(ctx, work)

    @server.tool(description=(
        "List the workspace's tracking agents: {tracking_agents: [{id, name, query, filters, keywords, authors, "
        "interval_s, state, last_run_at, next_run_at, last_error, runs, alerts}]}."))
    async def list_tracking_agents(ctx: Context) -> dict[str, Any]:
        def work(engine: Engine, key_id: str | None) -> dict[str, Any]:
            return {"tracking_agents": [agent_json(a) for a in Agents(engine).list()]}
        return await call(ctx, work)

    @server.tool(description=(
        "Read a tracking agent's alerts, newest first: {messages: [...], next_before}. Each alert is an "
        "assistant message in seed 000's shape: text with [N] markers citing the new posts (post references "
        "with start_index/end_index of their first [N]) and a {type: pattern, id} reference when the new "
        "mentions form a pattern across datasets. Pass next_before as `before` for older alerts."))
    async def read_alerts(agent_id: str, ctx: Context, limit: int = 10, before: str | None = None) -> dict[str, Any]:
        def work(engine: Engine, key_id: str | None) -> dict[str, Any]:
            page, next_before = Agents(engine).alerts(agent_id, limit=limit, before=before)
            return {"messages": [render_message(m) for m in page], "next_before": next_before}
        return await call(ctx, work)

    return server


# -- stdio -----------------------------------------------------------------------------

def run_stdio(engine: Engine) -> None:
    """Serve the tools over stdio on ``engine`` (its store and workspace) until stdin closes."""
    server = build_server(lambda headers, query: (engine, None))
    anyio.run(server.run_stdio_async)


# -- streamable HTTP on citewell serve ----------------------------------------------------

class MCPEndpoint:
    """The ASGI endpoint mounted at ``/mcp`` on the HTTP API: checks the API key (401
    ``API_KEY_MISSING``/``INVALID_API_KEY``, 403 ``FORBIDDEN``, chats envelope) and hands
    the request to the SDK's streamable HTTP app of the running server
    (``app.state.mcp_http``, made by :func:`http_app` at each start)."""

    def __init__(self, state: Any) -> None:
        self.state = state

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Awaitable[Any]],
                       send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        from .web.auth import resolve_principal
        from .web.errors import status_for

        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        query = {k: v[0] for k, v in parse_qs(scope.get("query_string", b"").decode("latin-1")).items()}
        try:
            await anyio.to_thread.run_sync(lambda: resolve_principal(
                self.state.store, _key(headers), organization_id=query.get("organization_id")))
        except CitewellError as exc:
            body = json.dumps({"error": {"code": exc.code, "message": exc.message}}).encode()
            await send({"type": "http.response.start", "status": status_for(exc.code),
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        app = getattr(self.state, "mcp_http", None)
        if app is None:  # the server is starting or stopping
            body = b'{"error": {"code": "SERVER_BUSY", "message": "the MCP endpoint is not running"}}'
            await send({"type": "http.response.start", "status": 503,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)


def _key(headers: dict[str, str]) -> str | None:
    key = headers.get("x-api-key", "").strip()
    if key:
        return key
    auth = headers.get("authorization", "")
    return auth[7:].strip() if auth[:7].lower() == "bearer " else None


def http_server(state: Any) -> MCPServer:
    """The MCP server of the HTTP API: each call's engine is the workspace of its API key
    (with the app's answer writers), and viewer links are signed with that key."""
    from .web.auth import resolve_principal

    def engine_for(headers: dict[str, str], query: dict[str, str]) -> tuple[Engine, str | None]:
        who = resolve_principal(state.store, _key(headers), organization_id=query.get("organization_id"))
        engine = Engine.for_workspace_id(state.store, who.workspace_id, generator=state.generator,
                                         generators=state.generators, llm=state.llm)
        return engine, who.key_id

    def viewer_base(ctx: Context) -> str | None:
        try:
            url = ctx.request_context.request.url  # type: ignore[union-attr]
        except (ValueError, AttributeError):
            return None
        return f"{url.scheme}://{url.netloc}"

    return build_server(engine_for, viewer_base=viewer_base)


def http_app(server: MCPServer) -> Any:
    """The SDK's streamable HTTP ASGI app of ``server`` (stateless, JSON answers; no DNS
    rebinding check: every request must carry an API key)."""
    return server.streamable_http_app(
        streamable_http_path="/mcp", stateless_http=True, json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))


__all__ = ["MCPEndpoint", "build_server", "http_app", "http_server", "run_stdio"]
