""":class:`Client` and :class:`AsyncClient`: one method per route, typed results.

Both send the calls of :mod:`._routes` through httpx; they differ only in being sync or
async. Errors: :mod:`._errors`. Answer streams: :mod:`._stream`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Self, TypeVar

import httpx
from pydantic import ValidationError

from .. import __version__
from . import _routes as routes
from ._errors import (
    CitewellAPIError,
    ResourceFailedError,
    WaitTimeoutError,
    error_from_response,
    transport_error,
)
from ._routes import Call, FileInput, TimeInput
from ._stream import AsyncEventStream, EventStream, StreamState
from .types import (
    AgentRun,
    AlertsPage,
    AskAccepted,
    Chat,
    ChatMessage,
    ChatMessagesPage,
    Dataset,
    Deleted,
    Mention,
    MentionsPage,
    Pattern,
    PatternList,
    PresignedUrl,
    Reference,
    ResearchPreview,
    Resource,
    ResourceList,
    Session,
    SessionMessages,
    TrackingAgent,
    Turn,
)

T = TypeVar("T")

#: 60 s to read (an answer may take a while), 10 s to connect.
DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=10.0)
Filters = Mapping[str, Any] | Iterable[str] | None


class _Base:
    """Configuration and answer reading shared by the two clients."""

    def __init__(self, base_url: str | httpx.URL, api_key: str | None, *, organization_id: str | None,
                 user_id: str | None, user_email: str | None, headers: Mapping[str, str] | None,
                 max_stream_retries: int, stream_backoff: float, stream_backoff_max: float) -> None:
        self.base_url = str(base_url).rstrip("/")
        self._headers = {"Accept": "application/json", "User-Agent": f"citewell-client/{__version__}"}
        if api_key:
            self._headers["X-API-KEY"] = api_key
        self._headers.update(headers or {})
        self._params = {k: v for k, v in {"organization_id": organization_id, "user_id": user_id,
                                          "user_email": user_email}.items() if v is not None}
        self.max_stream_retries = max_stream_retries
        self.stream_backoff = stream_backoff
        self.stream_backoff_max = stream_backoff_max

    @staticmethod
    def _request_kwargs(call: Call[Any]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"params": call.params, "headers": call.headers or None}
        if call.files is not None:
            kwargs.update(files=call.files, data=call.data)
        elif call.json is not None:
            kwargs["json"] = call.json
        return kwargs

    @staticmethod
    def _result(call: Call[T], response: httpx.Response) -> T:
        if response.status_code >= 400:
            raise error_from_response(response)
        if call.raw:
            return call.parse(response.content)
        try:
            return call.parse(response.json())
        except (ValueError, KeyError, TypeError, ValidationError) as exc:
            raise CitewellAPIError("INVALID_RESPONSE", f"{call.method} {call.path}: the answer is not what the "
                                   f"API documents ({type(exc).__name__}: {exc})"[:500], response.status_code,
                                   response.headers.get("x-request-id")) from exc

    def _stream_state(self, chat_message_id: str | None = None, last_event_id: str | None = None) -> StreamState:
        return StreamState(max_retries=self.max_stream_retries, backoff=self.stream_backoff,
                           backoff_max=self.stream_backoff_max, chat_message_id=chat_message_id,
                           last_event_id=last_event_id)

    def _signed_request(self, base: httpx.URL, url: str) -> httpx.Request:
        """A bare GET of ``url`` (absolute, or relative to the base URL): no key, no
        acting-for parameters: a signed link carries its own authority."""
        target = httpx.URL(url)
        if not target.is_absolute_url:
            target = base.join(url)
        return httpx.Request("GET", target, headers={"User-Agent": self._headers["User-Agent"]})

    @staticmethod
    def _stream_headers(headers: Mapping[str, str]) -> dict[str, str]:
        return {"Accept": "text/event-stream", "Cache-Control": "no-cache", **headers}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_url!r})"


class Client(_Base):
    """A client of the citewell HTTP API (sync). Use it as a context manager, or call
    :meth:`close`.

    ``base_url``: the server (``http://127.0.0.1:8000``); ``api_key``: sent as
    ``X-API-KEY`` (None sends none: every route then answers 401). A platform key may act
    for a workspace (``organization_id``) and a user of it (``user_id`` with
    ``user_email``): they are sent with every request. ``timeout``: seconds or an
    :class:`httpx.Timeout` (default 60 s, 10 s to connect). ``transport``: an httpx
    transport (tests, proxies). ``max_stream_retries``, ``stream_backoff``,
    ``stream_backoff_max``: how :meth:`stream` reconnects (see :mod:`citewell.client`).

    Every method raises :class:`~citewell.client.CitewellAPIError` (a subclass by status)
    for an error answer and :class:`~citewell.client.TransportError` when no answer came.
    """

    def __init__(self, base_url: str | httpx.URL, api_key: str | None, *, organization_id: str | None = None,
                 user_id: str | None = None, user_email: str | None = None,
                 timeout: float | httpx.Timeout | None = DEFAULT_TIMEOUT, headers: Mapping[str, str] | None = None,
                 transport: httpx.BaseTransport | None = None, max_stream_retries: int = 5,
                 stream_backoff: float = 0.5, stream_backoff_max: float = 8.0) -> None:
        super().__init__(base_url, api_key, organization_id=organization_id, user_id=user_id, user_email=user_email,
                         headers=headers, max_stream_retries=max_stream_retries, stream_backoff=stream_backoff,
                         stream_backoff_max=stream_backoff_max)
        self._http = httpx.Client(base_url=self.base_url, headers=self._headers, params=self._params,
                                  timeout=timeout, transport=transport)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def _send(self, call: Call[T]) -> T:
        request = self._http.build_request(call.method, call.path, **self._request_kwargs(call))
        try:
            response = self._http.send(request)
        except httpx.TransportError as exc:
            raise transport_error(exc) from exc
        return self._result(call, response)

    # -- sessions (seed 001) -------------------------------------------------------------
    def create_session(self, title: str | None = None) -> Session:
        """``POST /v1/sessions``: a new session (of the acting user, for a platform key acting for one)."""
        return self._send(routes.create_session(title))

    def get_session(self, session_id: str) -> Session:
        """``GET /v1/sessions/{session_id}``; :class:`NotFoundError` for an unknown id."""
        return self._send(routes.get_session(session_id))

    def session_messages(self, session_id: str, *, offsets: str | None = None) -> SessionMessages:
        """``GET /v1/sessions/{session_id}/messages``: the session and its messages, oldest
        first. ``offsets`` (codepoint, utf16, utf8): parts then carry start/end indices."""
        return self._send(routes.session_messages(session_id, offsets))

    def ask_session(self, session_id: str, content: str, resource_ids: Iterable[str] | None = None,
                    image_url: str | None = None, offsets: str | None = None) -> Turn:
        """``POST /v1/sessions/{session_id}/messages``: answer ``content`` (from
        ``resource_ids`` only, when given; about ``image_url``, a ``data:`` URL or this API's
        content URL) and return the turn: session, user message, cited answer."""
        return self._send(routes.ask_session(session_id, content, resource_ids, image_url, offsets))

    # -- resources -----------------------------------------------------------------------
    def upload(self, file: FileInput, *, filename: str | None = None, metadata: Mapping[str, Any] | None = None,
               content_type: str | None = None) -> Resource:
        """``POST /v1/resources``: upload a path, bytes (with ``filename``) or a binary file
        object; ``metadata``: title, custom_metadata and the typed fields. The resource
        comes back ``processing`` (or the existing resource with the same bytes): see
        :meth:`wait_ready`. :class:`PayloadTooLargeError` over the server's cap."""
        with routes.upload(file, filename, metadata, content_type) as call:
            return self._send(call)

    def list_resources(self, limit: int | None = None, offset: int | None = None,
                       status: str | Iterable[str] | None = None) -> ResourceList:
        """``GET /v1/resources``: a page, oldest first, and the total; ``status`` one or
        several of processing, ready, failed, superseded, missing."""
        return self._send(routes.list_resources(limit, offset, status))

    def get_resource(self, resource_id: str) -> Resource:
        """``GET /v1/resources/{resource_id}``."""
        return self._send(routes.get_resource(resource_id))

    def delete_resource(self, resource_id: str) -> Deleted:
        """``DELETE /v1/resources/{resource_id}``: the resource and its passages (stored
        answers keep their citations)."""
        return self._send(routes.delete_resource(resource_id))

    def download(self, resource_id: str) -> bytes:
        """``GET /v1/resources/{resource_id}/content``: the original bytes."""
        return self._send(routes.download(resource_id))

    def wait_ready(self, resource_id: str, timeout: float = 120.0, *, interval: float = 0.1,
                   max_interval: float = 1.0) -> Resource:
        """Poll the resource until it is no longer ``processing`` (every ``interval`` s,
        growing to ``max_interval``). Returns it when ready (or superseded/missing);
        raises :class:`ResourceFailedError` when it failed and :class:`WaitTimeoutError`
        after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            resource = self.get_resource(resource_id)
            if resource.status == "failed":
                raise ResourceFailedError(resource)
            if resource.status != "processing":
                return resource
            left = deadline - time.monotonic()
            if left <= 0:
                raise WaitTimeoutError(f"resource {resource_id} still processing after {timeout} s", resource)
            time.sleep(min(interval, left))
            interval = min(interval * 1.5, max_interval)

    # -- references (analytics, seeds 003/004) -------------------------------------------
    def references(self, chat_message_id: str, offsets: str | None = None) -> list[Reference]:
        """``GET /v1/references``: the references of one answer, in citation order."""
        return self._send(routes.references(chat_message_id, offsets))

    def conversation_references(self, conversation_id: str, offsets: str | None = None) -> list[Reference]:
        """``GET /v2/analytics/conversations/{id}/references``: the references of every
        answer of a conversation, each with ``chat_message_id``."""
        return self._send(routes.conversation_references(conversation_id, offsets))

    def stream(self, query: str, conversation_id: str | None = None, filters: Filters = None,
               offsets: str | None = None, policy: str | None = None) -> EventStream:
        """``POST /v2/analytics/sse``: the answer as typed events (conversation,
        search_results, citation, answer, support, done or error), each exactly once:
        a dropped connection is resumed with ``Last-Event-ID``. The request is sent when
        iteration starts; iteration ends after ``done``/``error``. Use it in a ``with``
        block (or :meth:`EventStream.close`) to drop the connection early."""
        body = routes.stream_body(query, conversation_id, _filters(filters), offsets, policy)
        return EventStream(self._open_stream, ("POST", routes.STREAM_PATH, None, body, {}), self._stream_state(),
                           sleep=time.sleep)

    def resume_stream(self, chat_message_id: str, last_event_id: str | None = None) -> EventStream:
        """``GET /v2/analytics/sse?chat_message_id=``: the events of an answer after
        ``last_event_id`` (all of them without it), live or replayed from the stored
        message; resumed like :meth:`stream` when the connection drops."""
        state = self._stream_state(chat_message_id, last_event_id)
        headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
        return EventStream(self._open_stream, ("GET", routes.STREAM_PATH, {"chat_message_id": chat_message_id},
                                               None, headers), state, sleep=time.sleep)

    @contextmanager
    def _open_stream(self, method: str, path: str, params: dict[str, Any] | None, body: Any,
                     headers: dict[str, str]) -> Iterator[httpx.Response]:
        request = self._http.build_request(method, path, params=params, json=body,
                                           headers=self._stream_headers(headers))
        response = self._http.send(request, stream=True)
        try:
            if response.status_code >= 400:
                response.read()
                raise error_from_response(response)
            yield response
        finally:
            response.close()

    # -- documents and the viewer (seeds 003/004) ----------------------------------------
    def presigned_url(self, document_id: str, expires_in: int | None = None) -> PresignedUrl:
        """``GET /v1/presigned_url``: a URL of the document's original bytes that works
        without an API key for ``expires_in`` seconds (server default 900, at most a day)."""
        return self._send(routes.presigned_url(document_id, expires_in))

    def fetch_signed(self, url: str) -> bytes:
        """GET a signed link of this API (a presigned URL, a reference's ``viewer_url``)
        *without* the API key or the acting-for parameters; the answer's bytes.
        :class:`PermissionDeniedError` (403 ``FORBIDDEN``) once it expired or was altered."""
        request = self._signed_request(self._http.base_url, url)
        try:
            response = self._http.send(request)
        except httpx.TransportError as exc:
            raise transport_error(exc) from exc
        return self._result(Call("GET", url, lambda raw: raw, raw=True), response)

    def viewer(self, citation_idx: int | str, *, chat_message_id: str | None = None,
               conversation_id: str | None = None) -> str:
        """``GET /rms/viewer``: the HTML page showing citation ``citation_idx`` of an answer
        (``chat_message_id``: its ``[N]``) or of a conversation (``conversation_id``: the
        ``citation_idx`` of its references route, numbered across the conversation)."""
        return self._send(routes.viewer(citation_idx, chat_message_id, conversation_id))

    def viewer_page(self, citation_idx: int | str, *, chat_message_id: str | None = None,
                    conversation_id: str | None = None, page: int | None = None,
                    boxes: bool | None = None) -> bytes:
        """``GET /rms/viewer/page``: the cited PDF page as PNG bytes, the citation's boxes
        drawn in (``boxes=False``: the plain page); :class:`NotFoundError` for a citation
        that is not on a PDF page."""
        return self._send(routes.viewer_page(citation_idx, chat_message_id, conversation_id, page, boxes))

    # -- chats (seed 000) ----------------------------------------------------------------
    def ask(self, question: str, chat_id: str | None = None, filters: Filters = None, offsets: str | None = None,
            policy: str | None = None) -> AskAccepted:
        """``POST /v1/ask``: start a turn (answered in the background); ``{chat_id,
        message_id, status: "pending"}``. Without ``chat_id`` a new chat. ``filters``: a
        mapping or ``"key=value"`` strings. See :meth:`wait_message`."""
        return self._send(routes.ask(question, chat_id, _filters(filters), offsets, policy))

    def get_message(self, chat_id: str, message_id: str, offsets: str | None = None) -> ChatMessage:
        """``GET /v1/chats/{chat_id}/messages/{message_id}``: ``status`` pending, settled or failed."""
        return self._send(routes.get_message(chat_id, message_id, offsets))

    def wait_message(self, chat_id: str, message_id: str, timeout: float = 120.0, *, offsets: str | None = None,
                     interval: float = 0.1, max_interval: float = 1.0) -> ChatMessage:
        """Poll a message until it is not ``pending``; return it, ``settled`` or
        ``failed`` (then ``error {code, message}``: a failed turn is not an exception).
        :class:`WaitTimeoutError` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.get_message(chat_id, message_id, offsets)
            if message.status != "pending":
                return message
            left = deadline - time.monotonic()
            if left <= 0:
                raise WaitTimeoutError(f"message {message_id} still pending after {timeout} s", message)
            time.sleep(min(interval, left))
            interval = min(interval * 1.5, max_interval)

    def chat_messages(self, chat_id: str, limit: int | None = None, after: str | None = None,
                      offsets: str | None = None) -> ChatMessagesPage:
        """``GET /v1/chats/{chat_id}/messages``: a page oldest first (``limit`` 1–200);
        pass ``next_after`` as ``after`` for the next one."""
        return self._send(routes.chat_messages(chat_id, limit, after, offsets))

    def iter_chat_messages(self, chat_id: str, *, page_size: int | None = None,
                           offsets: str | None = None) -> Iterator[ChatMessage]:
        """Every message of a chat, oldest first, page by page."""
        after: str | None = None
        while True:
            page = self.chat_messages(chat_id, page_size, after, offsets)
            yield from page.messages
            if not page.next_after:
                return
            after = page.next_after

    def chats(self) -> list[Chat]:
        """``GET /v1/chats``: the chats, oldest first (the acting user's only, when acting for one)."""
        return self._send(routes.chats())

    def get_chat(self, chat_id: str) -> Chat:
        """``GET /v1/chats/{chat_id}``."""
        return self._send(routes.get_chat(chat_id))

    def mentions_by_refs(self, refs: Iterable[Any]) -> MentionsPage:
        """``POST /v1/mentions`` ``{post_refs}``: the posts in the order asked (at most
        200); refs are ``(source, id)`` pairs, ``{source, id}`` mappings or post
        references; an unknown one comes back as a :class:`MentionNotFound`."""
        return self._send(routes.mentions_by_refs(refs))

    def mentions(self, *, source: str | None = None, query: str | None = None,
                 created_after: TimeInput | None = None, created_before: TimeInput | None = None,
                 dataset_id: str | None = None, limit: int | None = None, cursor: str | None = None) -> MentionsPage:
        """``POST /v1/mentions`` list query: posts oldest first, filtered by source, words
        (``query``), creation time (dates or datetimes, bounds included) and dataset; pass
        ``next_cursor`` as ``cursor`` for the next page (or use :meth:`iter_mentions`)."""
        return self._send(routes.mentions(source, query, created_after, created_before, dataset_id, limit, cursor))

    def iter_mentions(self, *, source: str | None = None, query: str | None = None,
                      created_after: TimeInput | None = None, created_before: TimeInput | None = None,
                      dataset_id: str | None = None, page_size: int | None = None) -> Iterator[Mention]:
        """Every mention of a list query (as :meth:`mentions`), following ``next_cursor``."""
        cursor: str | None = None
        while True:
            page = self.mentions(source=source, query=query, created_after=created_after,
                                 created_before=created_before, dataset_id=dataset_id, limit=page_size,
                                 cursor=cursor)
            yield from (m for m in page.mentions if isinstance(m, Mention))
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    # -- entities (seed 000) -------------------------------------------------------------
    def dataset(self, dataset_id: str) -> Dataset:
        """``GET /v1/datasets/{dataset_id}``: a posts file (``post_count``, status)."""
        return self._send(routes.dataset(dataset_id))

    def research_preview(self, research_preview_id: str) -> ResearchPreview:
        """``GET /v1/research_previews/{id}``: the turn a ``research_preview`` reference points at."""
        return self._send(routes.research_preview(research_preview_id))

    def pattern(self, pattern_id: str) -> Pattern:
        """``GET /v1/patterns/{pattern_id}``: a pattern a tracking agent found, with its members
        (:class:`NotFoundError` for an unknown id or one of another workspace)."""
        return self._send(routes.pattern(pattern_id))

    def patterns(self, *, limit: int | None = None, offset: int | None = None) -> PatternList:
        """``GET /v1/patterns``: the workspace's patterns, newest first (without members)."""
        return self._send(routes.patterns(limit, offset))

    # -- tracking agents (issue 17) ------------------------------------------------------
    def create_agent(self, query: str, *, name: str | None = None, filters: Filters = None,
                     keywords: list[str] | None = None, authors: list[str] | None = None,
                     interval_s: int | None = None, state: str | None = None) -> TrackingAgent:
        """``POST /v1/tracking_agents``: a new agent, due at once."""
        return self._send(routes.create_agent({"query": query, "name": name, "filters": _filters(filters),
                                                "keywords": keywords, "authors": authors,
                                                "interval_s": interval_s, "state": state}))

    def tracking_agents(self) -> list[TrackingAgent]:
        """``GET /v1/tracking_agents``: the workspace's agents, oldest first."""
        return self._send(routes.tracking_agents()).tracking_agents

    def tracking_agent(self, agent_id: str) -> TrackingAgent:
        """``GET /v1/tracking_agents/{agent_id}``."""
        return self._send(routes.tracking_agent(agent_id))

    def update_agent(self, agent_id: str, **fields: Any) -> TrackingAgent:
        """``PATCH /v1/tracking_agents/{agent_id}``: ``state="paused"`` pauses, ``"active"`` resumes;
        also ``query``, ``name``, ``filters``, ``keywords``, ``authors``, ``interval_s``."""
        return self._send(routes.update_agent(agent_id, fields))

    def delete_agent(self, agent_id: str) -> None:
        """``DELETE /v1/tracking_agents/{agent_id}`` (with its alerts)."""
        self._send(routes.delete_agent(agent_id))

    def run_agent(self, agent_id: str) -> AgentRun:
        """``POST /v1/tracking_agents/{agent_id}/run``: run now (``AGENT_BUSY``/``AGENT_PAUSED``: 409)."""
        return self._send(routes.run_agent(agent_id))

    def alerts(self, agent_id: str, *, limit: int | None = None, before: str | None = None,
               offsets: str | None = None) -> AlertsPage:
        """``GET /v1/tracking_agents/{agent_id}/messages``: alerts, newest first."""
        return self._send(routes.alerts(agent_id, limit, before, offsets))


class AsyncClient(_Base):
    """The async twin of :class:`Client`: the same constructor (``transport`` an
    :class:`httpx.AsyncBaseTransport`) and methods, each awaited; ``async with``, or
    :meth:`aclose`. :meth:`stream` returns an :class:`AsyncEventStream` (``async for``);
    :meth:`iter_mentions` and :meth:`iter_chat_messages` are async iterators."""

    def __init__(self, base_url: str | httpx.URL, api_key: str | None, *, organization_id: str | None = None,
                 user_id: str | None = None, user_email: str | None = None,
                 timeout: float | httpx.Timeout | None = DEFAULT_TIMEOUT, headers: Mapping[str, str] | None = None,
                 transport: httpx.AsyncBaseTransport | None = None, max_stream_retries: int = 5,
                 stream_backoff: float = 0.5, stream_backoff_max: float = 8.0) -> None:
        super().__init__(base_url, api_key, organization_id=organization_id, user_id=user_id, user_email=user_email,
                         headers=headers, max_stream_retries=max_stream_retries, stream_backoff=stream_backoff,
                         stream_backoff_max=stream_backoff_max)
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=self._headers, params=self._params,
                                       timeout=timeout, transport=transport)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def _send(self, call: Call[T]) -> T:
        request = self._http.build_request(call.method, call.path, **self._request_kwargs(call))
        try:
            response = await self._http.send(request)
        except httpx.TransportError as exc:
            raise transport_error(exc) from exc
        return self._result(call, response)

    # -- sessions (seed 001) -------------------------------------------------------------
    async def create_session(self, title: str | None = None) -> Session:
        """As :meth:`Client.create_session`."""
        return await self._send(routes.create_session(title))

    async def get_session(self, session_id: str) -> Session:
        """As :meth:`Client.get_session`."""
        return await self._send(routes.get_session(session_id))

    async def session_messages(self, session_id: str, *, offsets: str | None = None) -> SessionMessages:
        """As :meth:`Client.session_messages`."""
        return await self._send(routes.session_messages(session_id, offsets))

    async def ask_session(self, session_id: str, content: str, resource_ids: Iterable[str] | None = None,
                          image_url: str | None = None, offsets: str | None = None) -> Turn:
        """As :meth:`Client.ask_session`."""
        return await self._send(routes.ask_session(session_id, content, resource_ids, image_url, offsets))

    # -- resources -----------------------------------------------------------------------
    async def upload(self, file: FileInput, *, filename: str | None = None,
                     metadata: Mapping[str, Any] | None = None, content_type: str | None = None) -> Resource:
        """As :meth:`Client.upload`."""
        with routes.upload(file, filename, metadata, content_type) as call:
            return await self._send(call)

    async def list_resources(self, limit: int | None = None, offset: int | None = None,
                             status: str | Iterable[str] | None = None) -> ResourceList:
        """As :meth:`Client.list_resources`."""
        return await self._send(routes.list_resources(limit, offset, status))

    async def get_resource(self, resource_id: str) -> Resource:
        """As :meth:`Client.get_resource`."""
        return await self._send(routes.get_resource(resource_id))

    async def delete_resource(self, resource_id: str) -> Deleted:
        """As :meth:`Client.delete_resource`."""
        return await self._send(routes.delete_resource(resource_id))

    async def download(self, resource_id: str) -> bytes:
        """As :meth:`Client.download`."""
        return await self._send(routes.download(resource_id))

    async def wait_ready(self, resource_id: str, timeout: float = 120.0, *, interval: float = 0.1,
                         max_interval: float = 1.0) -> Resource:
        """As :meth:`Client.wait_ready`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            resource = await self.get_resource(resource_id)
            if resource.status == "failed":
                raise ResourceFailedError(resource)
            if resource.status != "processing":
                return resource
            left = deadline - loop.time()
            if left <= 0:
                raise WaitTimeoutError(f"resource {resource_id} still processing after {timeout} s", resource)
            await asyncio.sleep(min(interval, left))
            interval = min(interval * 1.5, max_interval)

    # -- references (analytics) ----------------------------------------------------------
    async def references(self, chat_message_id: str, offsets: str | None = None) -> list[Reference]:
        """As :meth:`Client.references`."""
        return await self._send(routes.references(chat_message_id, offsets))

    async def conversation_references(self, conversation_id: str, offsets: str | None = None) -> list[Reference]:
        """As :meth:`Client.conversation_references`."""
        return await self._send(routes.conversation_references(conversation_id, offsets))

    def stream(self, query: str, conversation_id: str | None = None, filters: Filters = None,
               offsets: str | None = None, policy: str | None = None) -> AsyncEventStream:
        """As :meth:`Client.stream` (not awaited: ``async for event in client.stream(…)``)."""
        body = routes.stream_body(query, conversation_id, _filters(filters), offsets, policy)
        return AsyncEventStream(self._open_stream, ("POST", routes.STREAM_PATH, None, body, {}),
                                self._stream_state(), sleep=asyncio.sleep)

    def resume_stream(self, chat_message_id: str, last_event_id: str | None = None) -> AsyncEventStream:
        """As :meth:`Client.resume_stream`."""
        state = self._stream_state(chat_message_id, last_event_id)
        headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
        return AsyncEventStream(self._open_stream, ("GET", routes.STREAM_PATH, {"chat_message_id": chat_message_id},
                                                    None, headers), state, sleep=asyncio.sleep)

    @asynccontextmanager
    async def _open_stream(self, method: str, path: str, params: dict[str, Any] | None, body: Any,
                           headers: dict[str, str]) -> AsyncIterator[httpx.Response]:
        request = self._http.build_request(method, path, params=params, json=body,
                                           headers=self._stream_headers(headers))
        response = await self._http.send(request, stream=True)
        try:
            if response.status_code >= 400:
                await response.aread()
                raise error_from_response(response)
            yield response
        finally:
            await response.aclose()

    # -- documents and the viewer (seeds 003/004) ----------------------------------------
    async def presigned_url(self, document_id: str, expires_in: int | None = None) -> PresignedUrl:
        """As :meth:`Client.presigned_url`."""
        return await self._send(routes.presigned_url(document_id, expires_in))

    async def fetch_signed(self, url: str) -> bytes:
        """As :meth:`Client.fetch_signed`."""
        request = self._signed_request(self._http.base_url, url)
        try:
            response = await self._http.send(request)
        except httpx.TransportError as exc:
            raise transport_error(exc) from exc
        return self._result(Call("GET", url, lambda raw: raw, raw=True), response)

    async def viewer(self, citation_idx: int | str, *, chat_message_id: str | None = None,
                     conversation_id: str | None = None) -> str:
        """As :meth:`Client.viewer`."""
        return await self._send(routes.viewer(citation_idx, chat_message_id, conversation_id))

    async def viewer_page(self, citation_idx: int | str, *, chat_message_id: str | None = None,
                          conversation_id: str | None = None, page: int | None = None,
                          boxes: bool | None = None) -> bytes:
        """As :meth:`Client.viewer_page`."""
        return await self._send(routes.viewer_page(citation_idx, chat_message_id, conversation_id, page, boxes))

    # -- chats (seed 000) ----------------------------------------------------------------
    async def ask(self, question: str, chat_id: str | None = None, filters: Filters = None,
                  offsets: str | None = None, policy: str | None = None) -> AskAccepted:
        """As :meth:`Client.ask`."""
        return await self._send(routes.ask(question, chat_id, _filters(filters), offsets, policy))

    async def get_message(self, chat_id: str, message_id: str, offsets: str | None = None) -> ChatMessage:
        """As :meth:`Client.get_message`."""
        return await self._send(routes.get_message(chat_id, message_id, offsets))

    async def wait_message(self, chat_id: str, message_id: str, timeout: float = 120.0, *,
                           offsets: str | None = None, interval: float = 0.1,
                           max_interval: float = 1.0) -> ChatMessage:
        """As :meth:`Client.wait_message`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            message = await self.get_message(chat_id, message_id, offsets)
            if message.status != "pending":
                return message
            left = deadline - loop.time()
            if left <= 0:
                raise WaitTimeoutError(f"message {message_id} still pending after {timeout} s", message)
            await asyncio.sleep(min(interval, left))
            interval = min(interval * 1.5, max_interval)

    async def chat_messages(self, chat_id: str, limit: int | None = None, after: str | None = None,
                            offsets: str | None = None) -> ChatMessagesPage:
        """As :meth:`Client.chat_messages`."""
        return await self._send(routes.chat_messages(chat_id, limit, after, offsets))

    async def iter_chat_messages(self, chat_id: str, *, page_size: int | None = None,
                                 offsets: str | None = None) -> AsyncIterator[ChatMessage]:
        """As :meth:`Client.iter_chat_messages` (``async for``)."""
        after: str | None = None
        while True:
            page = await self.chat_messages(chat_id, page_size, after, offsets)
            for message in page.messages:
                yield message
            if not page.next_after:
                return
            after = page.next_after

    async def chats(self) -> list[Chat]:
        """As :meth:`Client.chats`."""
        return await self._send(routes.chats())

    async def get_chat(self, chat_id: str) -> Chat:
        """As :meth:`Client.get_chat`."""
        return await self._send(routes.get_chat(chat_id))

    async def mentions_by_refs(self, refs: Iterable[Any]) -> MentionsPage:
        """As :meth:`Client.mentions_by_refs`."""
        return await self._send(routes.mentions_by_refs(refs))

    async def mentions(self, *, source: str | None = None, query: str | None = None,
                       created_after: TimeInput | None = None, created_before: TimeInput | None = None,
                       dataset_id: str | None = None, limit: int | None = None,
                       cursor: str | None = None) -> MentionsPage:
        """As :meth:`Client.mentions`."""
        return await self._send(routes.mentions(source, query, created_after, created_before, dataset_id, limit,
                                                cursor))

    async def iter_mentions(self, *, source: str | None = None, query: str | None = None,
                            created_after: TimeInput | None = None, created_before: TimeInput | None = None,
                            dataset_id: str | None = None, page_size: int | None = None) -> AsyncIterator[Mention]:
        """As :meth:`Client.iter_mentions` (``async for``)."""
        cursor: str | None = None
        while True:
            page = await self.mentions(source=source, query=query, created_after=created_after,
                                       created_before=created_before, dataset_id=dataset_id, limit=page_size,
                                       cursor=cursor)
            for mention in page.mentions:
                if isinstance(mention, Mention):
                    yield mention
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    # -- entities (seed 000) -------------------------------------------------------------
    async def dataset(self, dataset_id: str) -> Dataset:
        """As :meth:`Client.dataset`."""
        return await self._send(routes.dataset(dataset_id))

    async def research_preview(self, research_preview_id: str) -> ResearchPreview:
        """As :meth:`Client.research_preview`."""
        return await self._send(routes.research_preview(research_preview_id))

    async def pattern(self, pattern_id: str) -> Pattern:
        """As :meth:`Client.pattern`."""
        return await self._send(routes.pattern(pattern_id))

    async def patterns(self, *, limit: int | None = None, offset: int | None = None) -> PatternList:
        """As :meth:`Client.patterns`."""
        return await self._send(routes.patterns(limit, offset))

    async def create_agent(self, query: str, *, name: str | None = None, filters: Filters = None,
                           keywords: list[str] | None = None, authors: list[str] | None = None,
                           interval_s: int | None = None, state: str | None = None) -> TrackingAgent:
        """As :meth:`Client.create_agent`."""
        return await self._send(routes.create_agent({"query": query, "name": name, "filters": _filters(filters),
                                                      "keywords": keywords, "authors": authors,
                                                      "interval_s": interval_s, "state": state}))

    async def tracking_agents(self) -> list[TrackingAgent]:
        """As :meth:`Client.tracking_agents`."""
        return (await self._send(routes.tracking_agents())).tracking_agents

    async def tracking_agent(self, agent_id: str) -> TrackingAgent:
        """As :meth:`Client.tracking_agent`."""
        return await self._send(routes.tracking_agent(agent_id))

    async def update_agent(self, agent_id: str, **fields: Any) -> TrackingAgent:
        """As :meth:`Client.update_agent`."""
        return await self._send(routes.update_agent(agent_id, fields))

    async def delete_agent(self, agent_id: str) -> None:
        """As :meth:`Client.delete_agent`."""
        await self._send(routes.delete_agent(agent_id))

    async def run_agent(self, agent_id: str) -> AgentRun:
        """As :meth:`Client.run_agent`."""
        return await self._send(routes.run_agent(agent_id))

    async def alerts(self, agent_id: str, *, limit: int | None = None, before: str | None = None,
                     offsets: str | None = None) -> AlertsPage:
        """As :meth:`Client.alerts`."""
        return await self._send(routes.alerts(agent_id, limit, before, offsets))


def _filters(filters: Filters) -> Any:
    """Filters as the API takes them: a mapping as an object, strings as a list."""
    if filters is None:
        return None
    if isinstance(filters, Mapping):
        return dict(filters)
    if isinstance(filters, str):
        return [filters]
    return list(filters)


__all__ = ["DEFAULT_TIMEOUT", "AsyncClient", "Client"]
