"""Answer streams: SSE events become typed events, each seen exactly once across reconnects.

A stream starts with ``POST /v2/analytics/sse``. Each event carries
``id: <chat_message_id>:<seq>``. When the connection drops (an error, or the end of the
answer before its ``done``/``error`` event), the stream reconnects with
``GET /v2/analytics/sse?chat_message_id=…`` and ``Last-Event-ID: <the last delivered id>``
after a backoff (the server's ``retry:`` when it sent one, else ``backoff`` doubling up to
``backoff_max``). An event whose ``seq`` is not past the last one seen is dropped, so a
server that replays a little too much still gives every event exactly once.

``max_retries`` bounds the reconnects in a row that bring no new event; then (or when the
stream dropped before its first event id, so there is nothing to resume) the stream
raises :class:`~citewell.client.StreamInterruptedError`. A connection refused before the
first POST reached the server is retried too (nothing was asked yet); once the POST was
sent, it is never sent again (that would be a second question).

:class:`StreamState` is the I/O-free part; :class:`EventStream` and
:class:`AsyncEventStream` drive it over httpx.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any, Self

import httpx

from ._errors import ServerError, StreamInterruptedError
from ._sse import ServerSentEvent, SSEDecoder
from .types import AnswerEvent, ConversationEvent, ResetEvent, StreamEvent, stream_event

#: Gateway answers a reconnect may meet while the server restarts (retried like a drop).
RETRY_STATUSES = frozenset({502, 503, 504})
FINAL_EVENTS = frozenset({"done", "error"})


class StreamState:
    """What a stream knows between connections: ids, the last ``seq`` per message, the
    answer text so far, and the retry budget."""

    def __init__(self, *, max_retries: int, backoff: float, backoff_max: float,
                 chat_message_id: str | None = None, last_event_id: str | None = None) -> None:
        self.max_retries = max_retries
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.chat_message_id = chat_message_id
        self.conversation_id: str | None = None
        self.last_event_id = last_event_id
        self.last_seq: dict[str, int] = {}
        if last_event_id is not None:
            seed = StreamEvent(event="seed", id=last_event_id)
            if seed.chat_message_id is not None and seed.seq is not None:
                self.last_seq[seed.chat_message_id] = seed.seq
                self.chat_message_id = self.chat_message_id or seed.chat_message_id
        self.text = ""
        self.finished = False
        self.failures = 0
        self.connections = 0
        self.delivered = 0
        self.duplicates = 0

    def accept(self, sse: ServerSentEvent) -> StreamEvent | None:
        """The typed event for ``sse``, or None for a duplicate (already delivered)."""
        try:
            data = json.loads(sse.data)
        except ValueError:
            data = {"text": sse.data}
        if not isinstance(data, dict):
            data = {"value": data}
        name = sse.event
        if name == "message" and isinstance(data.get("event_name"), str):
            name = data["event_name"]
        event = stream_event(name, sse.id, data)
        mid, seq = event.chat_message_id, event.seq
        if sse.id is not None and mid is not None and seq is not None:
            if seq <= self.last_seq.get(mid, -1):
                self.duplicates += 1
                return None
            self.last_seq[mid] = seq
        if sse.id is not None:
            self.last_event_id = sse.id
        if self.chat_message_id is None and mid is not None:
            self.chat_message_id = mid
        if isinstance(event, ConversationEvent) and event.conversation_id:
            self.conversation_id = event.conversation_id
        if isinstance(event, AnswerEvent):
            self.text += event.delta
        elif isinstance(event, ResetEvent):
            self.text = event.text
        if event.event in FINAL_EVENTS:
            self.finished = True
        self.failures = 0
        self.delivered += 1
        return event

    def resume(self) -> tuple[dict[str, str], dict[str, str]]:
        """``(params, headers)`` of the reconnecting ``GET``; raises
        :class:`StreamInterruptedError` when there is nothing to resume from."""
        if self.chat_message_id is None or self.last_event_id is None:
            raise StreamInterruptedError(
                "the answer stream dropped before its first event id: it cannot be resumed (the turn may "
                "still complete on the server)", chat_message_id=self.chat_message_id,
                last_event_id=self.last_event_id)
        return {"chat_message_id": self.chat_message_id}, {"Last-Event-ID": self.last_event_id}

    def delay(self, reason: str, retry_ms: int | None) -> float:
        """Count a drop; the seconds to wait before reconnecting. Raises
        :class:`StreamInterruptedError` when ``max_retries`` drops in a row brought nothing."""
        self.failures += 1
        if self.failures > self.max_retries:
            raise StreamInterruptedError(
                f"the answer stream dropped {self.failures} time(s) in a row without a new event ({reason})",
                chat_message_id=self.chat_message_id, last_event_id=self.last_event_id)
        if retry_ms is not None:
            return min(retry_ms / 1000.0, self.backoff_max)
        return min(self.backoff * (2 ** (self.failures - 1)), self.backoff_max)


Opener = Callable[[str, str, dict[str, Any] | None, Any, dict[str, str]],
                  AbstractContextManager[httpx.Response]]
AsyncOpener = Callable[[str, str, dict[str, Any] | None, Any, dict[str, str]],
                       AbstractAsyncContextManager[httpx.Response]]


def _connect_failure(exc: Exception) -> bool:
    """True when the request never reached the server (safe to send again)."""
    return isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))


class _StreamBase:
    """The properties both stream classes share."""

    _state: StreamState

    @property
    def chat_message_id(self) -> str | None:
        """The answer's message id (known from its first event id)."""
        return self._state.chat_message_id

    @property
    def conversation_id(self) -> str | None:
        """The conversation id (from the ``conversation`` event)."""
        return self._state.conversation_id

    @property
    def last_event_id(self) -> str | None:
        """The id of the last event delivered (what a reconnect sends as ``Last-Event-ID``)."""
        return self._state.last_event_id

    @property
    def text(self) -> str:
        """The answer so far: the ``answer`` deltas delivered, concatenated (a ``reset``
        event replaces it)."""
        return self._state.text

    @property
    def finished(self) -> bool:
        """True once the ``done`` or ``error`` event was delivered."""
        return self._state.finished

    @property
    def reconnects(self) -> int:
        """How many times the stream reconnected."""
        return max(0, self._state.connections - 1)


class EventStream(_StreamBase):
    """The events of one answer, in order, each once (an iterator and a context manager).

    The request is sent when iteration starts; iteration ends after the ``done`` or
    ``error`` event. :meth:`close` (or leaving the ``with`` block) drops the connection;
    the turn still completes on the server."""

    def __init__(self, opener: Opener, first: tuple[str, str, dict[str, Any] | None, Any, dict[str, str]] | None,
                 state: StreamState, sleep: Callable[[float], None] = time.sleep) -> None:
        self._opener = opener
        self._first = first
        self._state = state
        self._sleep = sleep
        self._events = self._run()

    def __iter__(self) -> Iterator[StreamEvent]:
        return self

    def __next__(self) -> StreamEvent:
        return next(self._events)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop reading and drop the connection."""
        self._events.close()

    def until_done(self) -> list[StreamEvent]:
        """Read the rest of the stream; the events read."""
        return list(self)

    def _run(self) -> Iterator[StreamEvent]:
        state = self._state
        first = self._first
        while True:
            if first is not None:
                method, path, params, body, headers = first
            else:
                params, headers = state.resume()
                method, path, body = "GET", "/v2/analytics/sse", None
            decoder = SSEDecoder(state.last_event_id)
            sent = False
            cause: BaseException | None = None
            try:
                state.connections += 1
                with self._opener(method, path, params, body, headers) as response:
                    sent = True
                    for chunk in response.iter_bytes():
                        for sse in decoder.feed(chunk):
                            event = state.accept(sse)
                            if event is not None:
                                yield event
                            if state.finished:
                                return
                    for sse in decoder.close():
                        event = state.accept(sse)
                        if event is not None:
                            yield event
                    if state.finished:
                        return
                    reason = "the connection closed before the last event"
            except httpx.TransportError as exc:
                if first is not None and not sent and _connect_failure(exc):
                    try:
                        wait = state.delay(f"could not connect: {type(exc).__name__}", None)
                    except StreamInterruptedError as interrupted:
                        raise interrupted from exc
                    self._sleep(wait)
                    continue
                reason, cause = f"{type(exc).__name__}: {exc}", exc
            except ServerError as exc:
                if first is not None or exc.status_code not in RETRY_STATUSES:
                    raise
                reason, cause = f"HTTP {exc.status_code}", exc
            first = None
            try:
                wait = state.delay(reason, decoder.retry)
                state.resume()  # raises now when there is nothing to resume from
            except StreamInterruptedError as exc:
                raise exc from cause
            self._sleep(wait)


class AsyncEventStream(_StreamBase):
    """The async twin of :class:`EventStream`: ``async for event in stream``, ``async with``."""

    def __init__(self, opener: AsyncOpener,
                 first: tuple[str, str, dict[str, Any] | None, Any, dict[str, str]] | None,
                 state: StreamState, sleep: Callable[[float], Any] = asyncio.sleep) -> None:
        self._opener = opener
        self._first = first
        self._state = state
        self._sleep = sleep
        self._events = self._run()

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        return self

    async def __anext__(self) -> StreamEvent:
        return await self._events.__anext__()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop reading and drop the connection."""
        await self._events.aclose()

    async def until_done(self) -> list[StreamEvent]:
        """Read the rest of the stream; the events read."""
        return [event async for event in self]

    async def _run(self) -> AsyncIterator[StreamEvent]:
        state = self._state
        first = self._first
        while True:
            if first is not None:
                method, path, params, body, headers = first
            else:
                params, headers = state.resume()
                method, path, body = "GET", "/v2/analytics/sse", None
            decoder = SSEDecoder(state.last_event_id)
            sent = False
            cause: BaseException | None = None
            try:
                state.connections += 1
                async with self._opener(method, path, params, body, headers) as response:
                    sent = True
                    async for chunk in response.aiter_bytes():
                        for sse in decoder.feed(chunk):
                            event = state.accept(sse)
                            if event is not None:
                                yield event
                            if state.finished:
                                return
                    for sse in decoder.close():
                        event = state.accept(sse)
                        if event is not None:
                            yield event
                    if state.finished:
                        return
                    reason = "the connection closed before the last event"
            except httpx.TransportError as exc:
                if first is not None and not sent and _connect_failure(exc):
                    try:
                        wait = state.delay(f"could not connect: {type(exc).__name__}", None)
                    except StreamInterruptedError as interrupted:
                        raise interrupted from exc
                    await self._sleep(wait)
                    continue
                reason, cause = f"{type(exc).__name__}: {exc}", exc
            except ServerError as exc:
                if first is not None or exc.status_code not in RETRY_STATUSES:
                    raise
                reason, cause = f"HTTP {exc.status_code}", exc
            first = None
            try:
                wait = state.delay(reason, decoder.retry)
                state.resume()  # raises now when there is nothing to resume from
            except StreamInterruptedError as exc:
                raise exc from cause
            await self._sleep(wait)


__all__ = ["AsyncEventStream", "EventStream", "StreamState"]
