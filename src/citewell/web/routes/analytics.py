"""Analytics profile (seeds 003/004): answers streamed as Server-Sent Events, resumable.

Routes (analytics envelope for every error, always answered as JSON *before* a stream
starts: 400 ``INVALID_REQUEST_BODY``/``INVALID_FILTER``, 401, 403, 404 ``NOT_FOUND``)::

    POST /v2/analytics/sse   {query, conversation_id?, filters?, offsets?, policy?}
         → a new turn in the conversation (a chat; without conversation_id a new one),
           streamed;
         with header ``Last-Event-ID: <chat_message_id>:<seq>`` → resume that message's
           stream after ``seq`` (the body is ignored)
    GET  /v2/analytics/sse?chat_message_id=…   (header Last-Event-ID optional)
         → the stream of an answer from the start, or after the Last-Event-ID (what an
           EventSource sends when it reconnects)

How a stream runs: the route begins the turn (:meth:`Engine.begin_turn`: the user
message and a ``pending`` assistant message are stored), records the ``conversation``
event and queues :meth:`Engine.stream_turn` as a turn job
(:class:`~citewell.jobs.workers.TurnWorker`). That job, on a worker of this or another
process, runs the turn to the end whatever the client does, recording every client event
with ``Store.append_events`` as it is produced (``seq`` 1, 2, 3 …; the producer:
:mod:`citewell.jobs.streaming`). The HTTP response only *tails* the recorded events: it
reads the store (the source of truth) after the last ``seq`` it sent and, when it has
caught up, waits on the message's in-process channel (woken on every recorded event), so
there is no gap and no duplicate, live or resumed. A message whose turn runs in another
process (a worker of another replica, or ``citewell worker``: turns are jobs in the store,
:mod:`citewell.jobs`) is followed by polling the store every
:data:`POLL_SECONDS` until it settles, so a reconnect may land on any replica. A resumed stream of a finished turn is replayed
from the store. A message that was never streamed (``POST /v1/ask``, sessions) replays
as ``conversation``, its ``citation`` events, one ``answer`` with the whole text and
``done``; a stream cut short by a server stop ends with the ``error`` its message
settled with (``TURN_INTERRUPTED``). Those synthetic events are not recorded: they
follow from the settled message, so their ids are stable too.

Event grammar (``text/event-stream``; every event is one block, a blank line ends it)::

    stream      = { event | heartbeat }
    event       = "id: " chat_message_id ":" seq LF "event: " name LF "data: " json LF LF
    heartbeat   = ": ping" LF LF                  (every ~15 s while nothing is sent)

    order       = conversation search_results { citation | answer | support } (done | error)
                  (a failure before retrieval finished skips search_results; a replay of
                  a message that was never streamed has no search_results or support)

Every ``data`` is one JSON object (one line) whose ``event_name`` repeats the name:

``conversation``    ``{conversation_id, chat_message_id}`` (seq 1)
``search_results``  ``{chat_message_id, results: [{rank, chunk_id, chunk_index, document_id,
                    document_name, page, text_type, chunk_text_type, text, start_time?,
                    end_time?}]}``: the retrieved passages best first; ``text`` an excerpt
                    of at most 300 characters; ``page`` the PDF page (null otherwise);
                    ``text_type`` in seed 004's enum, citewell's own in ``chunk_text_type``
                    (:func:`~citewell.profiles.analytics.seed_text_type`); ``start_time``/
                    ``end_time`` (seconds) for transcript passages
``citation``        an RMSReference of the /v1/references shape (``id``, ``citation_idx``
                    (strings), ``search_type``, ``chunk_id``, ``text``, ``text_type``,
                    ``document_id``, ``document_name``, ``s3_file_key``, ``external_url``,
                    ``metadata``, ``custom_metadata``, ``chunk_text_type``, ``viewer_url``)
                    without its offsets, plus ``citation`` (int) and ``chat_message_id``;
                    sent before the ``answer`` that first shows its ``[N]``; ``update: true``
                    when a source becomes known later (never expected for passages). Its
                    signed links (``viewer_url``, and ``external_url`` when no unsigned URL
                    is known: :mod:`citewell.web.reflinks`) are made as the event is sent,
                    so a replayed stream carries links that work
``answer``          ``{delta}``: the next piece of the answer text; the deltas concatenated
                    are the message text with its ``[N]`` markers, exactly as
                    ``/v1/references`` offsets and the chat history read it
``support``         ``{part_index, start, end, offset_unit, citation, chunk_id, support:
                    {verdict, score, reasons}}``: the rule-8 check of one cited passage
                    of one sentence (``start``/``end`` locate the sentence in the text,
                    in the turn's ``offsets`` unit)
``reset``           ``{text}``: replace the text received so far (a safety valve of the
                    streaming citer; never expected)
``done``            ``{chat_message_id, conversation_id, status: "settled", grounded,
                    warnings}``: the last event of an answer; the message is stored
``error``           ``{chat_message_id, conversation_id, code, message}``: the last event
                    of a turn that failed (its message is stored ``failed`` with that
                    error: SERVER_ERROR, TURN_INTERRUPTED, or a library code)
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Header, Query, Request
from pydantic import BaseModel, Field, WithJsonSchema
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ...digits import whole_number
from ...engine import Engine
from ...errors import NotFoundError, StoreUnavailable
from ...jobs.streaming import OFFSET_KEYS, CitationSources, TurnRecorder, citation_data, live_channel
from ...jobs.turns import turn_active
from ...models import Message
from ..deps import Context, context
from .. import rules
from ..errors import ApiError
from ..reflinks import ReferenceLinks
from ..schemas import FilterValue, OffsetUnit
from .common import error_docs

log = logging.getLogger("citewell.web.sse")

router = APIRouter(tags=["analytics"])

#: Seconds between ``: ping`` comment lines while a stream has nothing to send.
HEARTBEAT_SECONDS = 15.0
#: Seconds between store reads while following a turn that runs in another process.
POLL_SECONDS = 0.25
#: seconds at most between a stream reader's tries of a store that is unreachable (it waits the
#: error's ``retry_after_s`` when shorter), pinging the client meanwhile
OUTAGE_POLL_SECONDS = 1.0
#: Events that end a stream.
TERMINAL = ("done", "error")


class SseBody(BaseModel):
    """``POST /v2/analytics/sse`` body (seeds 003/004)."""

    query: str = Field(json_schema_extra=rules.question(),
                       description="The question: not blank, at most 8,000 characters.")
    conversation_id: str | None = Field(
        None, description="Ask in this conversation (the `conversation_id` of an earlier `conversation` event; a "
                          "follow-up that refers back carries the previous subject and filters). Without it a new "
                          "conversation is made.")
    filters: Annotated[dict[str, FilterValue | list[FilterValue]] | list[str] | None,
                       WithJsonSchema(rules.filters())] = Field(
        None, description='Metadata filters: an object ({"tickers": ["MMM"], "fiscal_year": 2022}: a list means any '
                          'of its values) or "key=value" / "key>=value" / "key<=value" strings; an unknown key is '
                          "400 INVALID_FILTER.")
    offsets: OffsetUnit | None = Field(
        None, description="Unit of the stored message's offsets and of `support` events (codepoint, the default; "
                          "utf16; utf8).")
    policy: Literal["flag", "drop"] | None = Field(
        None, description="Unsupported citations: flag (default) marks them; drop removes them (the answer is then "
                          "checked whole and sent as one `answer` event).")
    generator: Literal["extractive", "llm"] | None = Field(
        None, description="Answer writer: extractive (quotes the passages, no model) or llm (the server's "
                          "OpenAI-compatible endpoint; 400 when none is configured). Default: the server's.")


class EventStreamResponse(StreamingResponse):
    """A ``text/event-stream`` answer that no proxy buffers or caches."""

    media_type = "text/event-stream"

    def __init__(self, content: AsyncIterator[str], **kwargs: Any) -> None:
        """Stream ``content`` (SSE blocks) with ``Cache-Control: no-cache`` and
        ``X-Accel-Buffering: no``; ``kwargs`` as :class:`StreamingResponse`'s."""
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **(kwargs.pop("headers", None) or {})}
        super().__init__(content, headers=headers, **kwargs)


_EXAMPLE = (
    'id: 5f0c…:1\nevent: conversation\ndata: {"event_name": "conversation", "conversation_id": "9a1e…", '
    '"chat_message_id": "5f0c…"}\n\n'
    'id: 5f0c…:2\nevent: search_results\ndata: {"event_name": "search_results", "chat_message_id": "5f0c…", '
    '"results": [{"rank": 1, "chunk_id": "…", "document_name": "acme-2022", "page": null, "text": "…"}]}\n\n'
    'id: 5f0c…:3\nevent: citation\ndata: {"event_name": "citation", "citation": 1, "citation_idx": "1", '
    '"chunk_id": "…", "document_name": "acme-2022", "metadata": {…}}\n\n'
    'id: 5f0c…:4\nevent: answer\ndata: {"event_name": "answer", "delta": "Acme revenue was $12.4 million [1]."}\n\n'
    'id: 5f0c…:5\nevent: done\ndata: {"event_name": "done", "chat_message_id": "5f0c…", "conversation_id": '
    '"9a1e…", "status": "settled", "grounded": true, "warnings": []}\n\n')

#: Every event name of the stream, in the order they first appear.
EVENT_NAMES = ("conversation", "search_results", "citation", "answer", "support", "reset", "done", "error")

#: One server-sent event, as OpenAPI 3.0/3.1 tools (schemathesis) read the ``schema`` of a
#: ``text/event-stream`` response: the schema of each event's fields.
EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "event", "data"],
    "properties": {
        "id": {"type": "string", "pattern": "^[^:]+:[0-9]+$",
               "description": "`<chat_message_id>:<seq>`, seq 1, 2, 3 … without gaps."},
        "event": {"type": "string", "enum": list(EVENT_NAMES)},
        "data": {"type": "string", "contentMediaType": "application/json",
                 "contentSchema": {"type": "object", "required": ["event_name"],
                                   "properties": {"event_name": {"type": "string", "enum": list(EVENT_NAMES)}}},
                 "description": "One line of JSON; `event_name` repeats the event's name."},
    },
}

_STREAM_DOCS: dict[int | str, dict[str, Any]] = {
    200: {"description": "The answer as Server-Sent Events: conversation, search_results, then citation / "
                         "answer / support events, then done (or error). Each event has "
                         "`id: <chat_message_id>:<seq>`; send the last one back as `Last-Event-ID` to resume. "
                         "Comment lines `: ping` keep a waiting connection alive.",
          "content": {"text/event-stream": {"schema": EVENT_SCHEMA, "example": _EXAMPLE}}},
    # errors are JSON (the route's own media type is text/event-stream, so name it)
    **{status: {"description": doc["description"],
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AnalyticsError"}}}}
       for status, doc in error_docs("analytics").items()},
}


# -- replay of what was not recorded ---------------------------------------------------------

def _synthetic(engine: Engine, message: Message, recorded: int) -> list[tuple[int, str, str]]:
    """The events a settled message's stream ends with that were never recorded: the whole
    stream of a message that was never streamed (``recorded == 0``), else the terminal event
    of a stream cut short (its message settled without it: a server stop)."""
    ids = {"chat_message_id": str(message.id)}
    events: list[tuple[str, dict[str, Any]]] = []
    if recorded == 0:
        events.append(("conversation", {"conversation_id": message.chat_id, **ids}))
        sources = CitationSources(engine)
        for ref in sorted((r for r in message.references if r.citation is not None and r.type in ("chunk", "post")),
                          key=lambda r: r.citation or 0):
            events.append(("citation", citation_data(ref.model_copy(update={k: None for k in OFFSET_KEYS}),
                                                      sources.resource(ref.resource_id), sources.mention(ref),
                                                      str(message.id))))
        if message.text:
            events.append(("answer", {"delta": message.text}))
    if message.status == "failed":
        error = (message.model_extra or {}).get("error") or {}
        events.append(("error", {**ids, "conversation_id": message.chat_id, "code": error.get("code", "SERVER_ERROR"),
                                 "message": error.get("message", "the answer could not be produced")}))
    else:
        events.append(("done", {**ids, "conversation_id": message.chat_id, "status": message.status,
                                "grounded": bool(message.grounded),
                                "warnings": [w.model_dump(mode="json") for w in message.warnings]}))
    return [(recorded + i, name, json.dumps({"event_name": name, **data}, ensure_ascii=False, separators=(",", ":")))
            for i, (name, data) in enumerate(events, start=1)]


# -- the reader: recorded events, then live ones -----------------------------------------------
# (the producer, a turn job, is :mod:`citewell.jobs.streaming`)

def _frame(message_id: str, seq: int, name: str, data: str) -> str:
    """One SSE event block (``data`` is one line of JSON)."""
    return f"id: {message_id}:{seq}\nevent: {name}\ndata: {data}\n\n"


def _linked(links: ReferenceLinks, message_id: str, name: str, data: str) -> str:
    """A recorded event's ``data`` as sent: a ``citation`` event gets its signed links
    (:meth:`ReferenceLinks.complete`), made now so that they work when the event is read."""
    if name != "citation":
        return data
    event = json.loads(data)
    if not isinstance(event.get("citation"), int):
        return data
    return json.dumps(links.complete(event, message_id), ensure_ascii=False, separators=(",", ":"))


async def _tail(engine: Engine, message_id: str, after: int, links: ReferenceLinks) -> AsyncIterator[str]:
    """The events of ``message_id`` with ``seq > after`` as SSE blocks, following the turn
    live until its ``done`` or ``error`` (see the module docstring); ``links`` signs the
    links of ``citation`` events. While the store is unreachable (``STORE_UNAVAILABLE``)
    the stream stays open, pinging, and reads again every :data:`OUTAGE_POLL_SECONDS` at
    most: the events recorded, and the terminal one, follow once it is back (a turn that
    met the outage itself ends with its ``error`` event, ``STORE_UNAVAILABLE``)."""
    quiet_since = time.monotonic()

    def frame(seq: int, name: str, data: str) -> str:
        return _frame(message_id, seq, name, _linked(links, message_id, name, data))

    waited = False  # whether this stream met the outage already (logged once)
    while True:
        try:
            rows = await run_in_threadpool(lambda: engine.recorded_events(message_id, after=after))
            for seq, name, data in rows:
                yield frame(seq, name, data)
                after = seq
                if name in TERMINAL:
                    return
            if rows:
                quiet_since = time.monotonic()
            channel = live_channel(message_id)
            if channel is not None:
                wake = channel.waiter(after)
                if wake is None:
                    continue
                try:
                    await asyncio.wait_for(wake.wait(), HEARTBEAT_SECONDS)
                except TimeoutError:
                    yield ": ping\n\n"
                finally:
                    channel.forget(wake)
                continue
            message = await run_in_threadpool(engine.message, message_id)
            # answered by another process (or queued here), or settled with its last events still
            # being recorded (the turn's job runs until they are): poll
            if message.status == "pending" or await run_in_threadpool(turn_active, engine.store, message_id):
                if time.monotonic() - quiet_since >= HEARTBEAT_SECONDS:
                    yield ": ping\n\n"
                    quiet_since = time.monotonic()
                await asyncio.sleep(POLL_SECONDS)
                continue
            recorded = await run_in_threadpool(engine.recorded_events, message_id)
            last = recorded[-1] if recorded else None
            if last is not None and last[0] > after:
                continue  # the producer recorded its last events meanwhile: send them
            if last is not None and last[1] in TERMINAL:
                return  # the client has seen the whole stream already
            for seq, name, data in await run_in_threadpool(_synthetic, engine, message, last[0] if last else 0):
                if seq > after:
                    yield frame(seq, name, data)
            return
        except StoreUnavailable as exc:  # the database is away: keep the client, try again
            if not waited:
                log.warning("stream of %s: %s; reading again until it is back", message_id, exc)
                waited = True
            yield ": ping\n\n"
            await asyncio.sleep(min(exc.retry_after_s, OUTAGE_POLL_SECONDS))


def _parse_last_event_id(value: str) -> tuple[str, int]:
    """``<chat_message_id>:<seq>`` → ``(chat_message_id, seq)``; 400 otherwise."""
    message_id, sep, seq = value.strip().rpartition(":")
    number = whole_number(seq, max_digits=12)
    if not sep or not message_id or number is None:
        raise ApiError("Last-Event-ID must be <chat_message_id>:<seq> (the id of an event of this API)",
                       code="INVALID_REQUEST_BODY")
    return message_id, number


def _resume(request: Request, ctx: Context, message_id: str, after: int) -> EventStreamResponse:
    """The stream of an answer of the caller's workspace after ``after``; 404 otherwise."""
    message = ctx.engine.message(message_id, user_id=ctx.user_id)  # NOT_FOUND: unknown or another workspace's
    if message.role != "assistant":
        raise NotFoundError(f"message {message_id} is not an answer: it has no stream")
    return EventStreamResponse(_tail(ctx.engine, str(message.id), after, ReferenceLinks(request, ctx.engine, ctx.who.key_id or "")))


#: ``Last-Event-ID: <chat_message_id>:<seq>`` (an EventSource sends it when it reconnects): the
#: stream continues after that event. It replaces the body (POST) or must name the message of
#: ``chat_message_id`` (GET): rules between parameters that no schema states, so the routes
#: describe it instead of declaring it.
_LAST_EVENT_ID = Header(None, alias="Last-Event-ID", include_in_schema=False)


@router.post("/v2/analytics/sse", response_class=EventStreamResponse, status_code=200,
             responses=_STREAM_DOCS, summary="Ask, with the answer streamed (SSE)",
             openapi_extra={"requestBody": {"required": True,
                                            "description": "The question. Required, except with the header "
                                                           "`Last-Event-ID: <chat_message_id>:<seq>`, which resumes "
                                                           "that answer's stream after event seq (the body is then "
                                                           "ignored; a malformed id is 400)."}})
def analytics_sse(request: Request, body: SseBody | None = Body(None),
                  ctx: Context = Depends(context)) -> EventStreamResponse:
    """Ask in a conversation and stream the answer as Server-Sent Events: ``conversation``,
    ``search_results``, ``citation``/``answer``/``support`` …, then ``done`` (or ``error``).
    The turn runs to the end and is stored even if the client goes away. With
    ``Last-Event-ID: <chat_message_id>:<seq>`` the request never reaches this route: it is
    the resume of :func:`analytics_sse_resume` (:class:`ResumeByHeader`), whatever the
    body. Errors come before the stream, as JSON: 400
    ``INVALID_REQUEST_BODY`` (empty query, bad offsets/policy, bad Last-Event-ID), 400
    ``INVALID_FILTER``, 401, 404 ``NOT_FOUND`` (unknown conversation_id or message)."""
    if body is None:
        raise ApiError("query is required and must be a string", code="INVALID_REQUEST_BODY")
    offsets = body.offsets or "codepoint"
    pending = ctx.engine.begin_turn(body.query, chat_id=body.conversation_id, filters=body.filters,
                                    offsets=offsets, policy=body.policy or "flag", user_id=ctx.who.user_id,
                                    user_email=ctx.who.user_email, generator=body.generator)
    recorder = TurnRecorder(ctx.engine, pending, offsets)
    try:
        recorder.start()
    except Exception as exc:
        ctx.engine.fail_turn(pending, "SERVER_ERROR", f"the answer stream could not start ({type(exc).__name__})")
        raise
    request.app.state.turns.submit(ctx.engine, pending, job=recorder.run, stream=True)
    return EventStreamResponse(_tail(ctx.engine, recorder.message_id, 0, ReferenceLinks(request, ctx.engine, ctx.who.key_id or "")))


class ResumeByHeader:
    """ASGI middleware: a ``POST /v2/analytics/sse`` with a non-blank ``Last-Event-ID``
    header is served as ``GET /v2/analytics/sse`` (the resume after that event), so its
    body is never read or validated: a client reconnecting may send its first body again,
    an empty one or none (seed 004's resume rule; README "Resume a stream")."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and _route_path(scope) == "/v2/analytics/sse" \
                and _last_event_id(scope).strip():
            scope = {**scope, "method": "GET"}
        await self.app(scope, receive, send)


def _last_event_id(scope: Scope) -> str:
    """The request's first ``Last-Event-ID`` header as the routes read it (Starlette's
    ``Headers.get``: latin-1), or ``""``; blank is what ``str.strip`` leaves empty."""
    for name, value in scope["headers"]:
        if name.lower() == b"last-event-id":
            return value.decode("latin-1")
    return ""


def _route_path(scope: Scope) -> str:
    """The request path below the app's ``root_path`` (what routes match)."""
    path, root = scope["path"], scope.get("root_path", "")
    return path[len(root):] if root and path.startswith(root) else path


@router.get("/v2/analytics/sse", response_class=EventStreamResponse, status_code=200,
            responses=_STREAM_DOCS, summary="Follow or replay an answer stream (SSE)")
def analytics_sse_resume(
        request: Request,
        chat_message_id: str | None = Query(None, description=(
            "The answer (the chat_message_id of its events). Instead, an EventSource reconnecting may send only "
            "the Last-Event-ID header `<chat_message_id>:<seq>` (with both, they must name the same answer)."),
            json_schema_extra={"x-required": True, "x-schema": rules.nonblank()}),
        last_event_id: str | None = _LAST_EVENT_ID,
        ctx: Context = Depends(context)) -> EventStreamResponse:
    """The stream of one answer: from the start, or after ``Last-Event-ID`` (what an
    EventSource sends when it reconnects); live while its turn runs, replayed from the
    store once it has finished. 400 ``CHAT_MESSAGE_ID_MISSING`` without an id (in the
    query or the header), 400 ``INVALID_REQUEST_BODY`` when the two disagree or the header
    is malformed; 404 ``NOT_FOUND`` for an unknown message or one of another workspace."""
    after = 0
    message_id = chat_message_id.strip() if chat_message_id and chat_message_id.strip() else None
    if last_event_id is not None and last_event_id.strip():
        header_id, after = _parse_last_event_id(last_event_id)
        if message_id is not None and header_id != message_id:
            raise ApiError("Last-Event-ID names another message than chat_message_id", code="INVALID_REQUEST_BODY")
        message_id = header_id
    if message_id is None:
        raise ApiError("chat_message_id is required", code="CHAT_MESSAGE_ID_MISSING")
    return _resume(request, ctx, message_id, after)


__all__ = ["EVENT_NAMES", "EVENT_SCHEMA", "TERMINAL", "EventStreamResponse", "ResumeByHeader", "SseBody", "router"]
