"""A typed Python client of the citewell HTTP API, on httpx (sync and async).

::

    from citewell.client import Client, NotFoundError

    with Client("http://127.0.0.1:8000", api_key="cw_…") as cw:
        doc = cw.wait_ready(cw.upload("10-K.pdf", metadata={"title": "3M 2022 10-K"}).id)
        session = cw.create_session("3M capex")
        turn = cw.ask_session(session.id, "What was 3M capital expenditure in FY2022?")
        print(turn.assistant_message.content)
        for ref in cw.references(turn.assistant_message.id):
            print(ref.citation_idx, ref.document_name, ref.metadata.offset)

        with cw.stream("What was 3M capital expenditure in FY2022?") as events:
            for event in events:               # each event once, across reconnects
                if event.event == "answer":
                    print(event.delta, end="")

        accepted = cw.ask("What are people saying about Activision puts?", filters={"source": "reddit"})
        message = cw.wait_message(accepted.chat_id, accepted.message_id)   # settled or failed

:class:`AsyncClient` has the same methods, awaited (``async with AsyncClient(…) as cw``;
``async for event in cw.stream(…)``).

Routes → methods:

==================================================  ==========================================
sessions (seed 001)                                 ``create_session``, ``get_session``,
                                                    ``session_messages``, ``ask_session``
resources                                           ``upload``, ``list_resources``,
                                                    ``get_resource``, ``delete_resource``,
                                                    ``download``, ``wait_ready`` (polls)
analytics (seeds 003/004)                           ``references``, ``conversation_references``,
                                                    ``stream``, ``resume_stream`` (SSE),
                                                    ``presigned_url``, ``fetch_signed``,
                                                    ``viewer``, ``viewer_page``
chats (seed 000)                                    ``ask``, ``get_message``, ``wait_message``
                                                    (polls), ``chat_messages``,
                                                    ``iter_chat_messages``, ``chats``,
                                                    ``get_chat``, ``mentions_by_refs``,
                                                    ``mentions``, ``iter_mentions``,
                                                    ``dataset``, ``research_preview``,
                                                    ``pattern``
==================================================  ==========================================

Results are the pydantic models of :mod:`citewell.client.types` (open: fields the server
adds later are kept). Errors are the exceptions of :mod:`citewell.client._errors`, all
importable from here:

::

    CitewellClientError
    ├── TransportError (RequestTimeoutError, StreamInterruptedError)
    ├── CitewellAPIError(code, message, status_code, request_id)
    │   ├── BadRequestError 400, AuthenticationError 401, PermissionDeniedError 403,
    │   └── NotFoundError 404, PayloadTooLargeError 413, ServerError 5xx
    ├── ResourceFailedError (wait_ready)
    └── WaitTimeoutError (wait_ready, wait_message)

Streams: events arrive as ``id: <chat_message_id>:<seq>``; when the connection drops the
stream reconnects with ``Last-Event-ID`` (at most ``max_stream_retries`` times in a row
without a new event, waiting ``stream_backoff`` seconds doubling up to
``stream_backoff_max``, or the server's ``retry:``) and skips anything already delivered,
so every event is seen exactly once.
"""

from __future__ import annotations

from . import types
from ._client import DEFAULT_TIMEOUT, AsyncClient, Client
from ._errors import (
    AuthenticationError,
    BadRequestError,
    CitewellAPIError,
    CitewellClientError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RequestTimeoutError,
    ResourceFailedError,
    ServerError,
    StreamInterruptedError,
    TransportError,
    WaitTimeoutError,
)
from ._sse import ServerSentEvent, SSEDecoder
from ._stream import AsyncEventStream, EventStream
from .types import StreamEvent

__all__ = [
    "DEFAULT_TIMEOUT",
    "AsyncClient",
    "AsyncEventStream",
    "AuthenticationError",
    "BadRequestError",
    "CitewellAPIError",
    "CitewellClientError",
    "Client",
    "EventStream",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RequestTimeoutError",
    "ResourceFailedError",
    "SSEDecoder",
    "ServerError",
    "ServerSentEvent",
    "StreamEvent",
    "StreamInterruptedError",
    "TransportError",
    "WaitTimeoutError",
    "types",
]
