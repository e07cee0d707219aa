"""The exceptions of :mod:`citewell.client`, and how an error answer becomes one.

::

    CitewellClientError                  everything the client raises
    ├── TransportError                   no usable answer: connect/read failure (wraps httpx's)
    │   ├── RequestTimeoutError          a connect/read/write/pool timeout
    │   └── StreamInterruptedError       an SSE stream dropped and could not be resumed
    │                                    (.chat_message_id, .last_event_id to resume later)
    ├── CitewellAPIError                 the server answered an error envelope
    │   │                                (.code, .message, .status_code, .request_id, .body)
    │   ├── BadRequestError              400 INVALID_REQUEST_BODY, INVALID_FILTER, *_MISSING …
    │   ├── AuthenticationError          401 API_KEY_MISSING, INVALID_API_KEY
    │   ├── PermissionDeniedError        403 FORBIDDEN
    │   ├── NotFoundError                404 NOT_FOUND (unknown id, or another workspace's)
    │   ├── PayloadTooLargeError         413 FILE_TOO_LARGE
    │   └── ServerError                  5xx SERVER_ERROR, GET_REF_FAIL (and a proxy's 502/503/504)
    │   (any other status, e.g. 405 METHOD_NOT_ALLOWED, is a plain CitewellAPIError)
    ├── ResourceFailedError              wait_ready: the upload ended failed (.resource, .code)
    └── WaitTimeoutError                 wait_ready / wait_message gave up polling (also a
                                         built-in TimeoutError)

The three error envelopes of the API are all read (``code`` and ``message`` from
whichever profile answered):

- sessions/resources: ``{"status": "error", "error": {"code", "message"}}``
- analytics: ``{"error": {"code", "msg", "message"}, "payload": null}``
- chats: ``{"error": {"code", "message"}}``

An answer that is not an envelope (a proxy's HTML page) gets ``code`` ``HTTP_<status>``
and the start of its text as ``message``. ``request_id`` is the answer's ``X-Request-ID``
(quote it when reporting a problem: the server's log lines carry it).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from .types import Resource


class CitewellClientError(Exception):
    """The base of every exception :mod:`citewell.client` raises."""


class TransportError(CitewellClientError):
    """The request got no usable answer: the server could not be reached, the connection
    broke, or the answer was cut off. ``__cause__`` is httpx's exception."""


class RequestTimeoutError(TransportError):
    """A connect, read, write or pool timeout (the client's ``timeout``)."""


class StreamInterruptedError(TransportError):
    """An answer stream dropped and could not be resumed: the retries ran out, or it dropped
    before its first event id (so there was nothing to resume from).

    ``chat_message_id`` and ``last_event_id`` (None when unknown) let a caller resume later
    with :meth:`citewell.client.Client.resume_stream`; the turn itself still completes on
    the server."""

    def __init__(self, message: str, *, chat_message_id: str | None = None,
                 last_event_id: str | None = None) -> None:
        super().__init__(message)
        self.chat_message_id = chat_message_id
        self.last_event_id = last_event_id


class CitewellAPIError(CitewellClientError):
    """The server answered with an error: ``code`` (``NOT_FOUND``, ``INVALID_API_KEY`` …),
    ``message``, ``status_code``, ``request_id`` (its ``X-Request-ID``) and ``body`` (the
    decoded JSON answer, or None)."""

    def __init__(self, code: str, message: str, status_code: int, request_id: str | None = None,
                 body: Any = None) -> None:
        super().__init__(f"{status_code} {code}: {message}" + (f" (request {request_id})" if request_id else ""))
        self.code = code
        self.message = message
        self.status_code = status_code
        self.request_id = request_id
        self.body = body


class BadRequestError(CitewellAPIError):
    """400: ``INVALID_REQUEST_BODY``, ``INVALID_FILTER``, a ``*_MISSING`` code …"""


class AuthenticationError(CitewellAPIError):
    """401: ``API_KEY_MISSING`` or ``INVALID_API_KEY``."""


class PermissionDeniedError(CitewellAPIError):
    """403 ``FORBIDDEN``: the key may not act for that organization or user."""


class NotFoundError(CitewellAPIError):
    """404 ``NOT_FOUND``: an unknown id, or an id of another workspace (they answer alike)."""


class PayloadTooLargeError(CitewellAPIError):
    """413 ``FILE_TOO_LARGE``: the upload is over the server's cap."""


class ServerError(CitewellAPIError):
    """5xx: ``SERVER_ERROR``, ``GET_REF_FAIL``, or a gateway's error page."""


class ResourceFailedError(CitewellClientError):
    """:meth:`~citewell.client.Client.wait_ready`: the upload ended ``failed``.
    ``resource`` is the failed resource, ``code``/``message`` its error
    (``PDF_CORRUPT``, ``EMPTY_FILE`` …)."""

    def __init__(self, resource: Resource) -> None:
        error = resource.error
        self.resource = resource
        self.code = error.code if error is not None else "FAILED"
        self.message = error.message if error is not None else "the resource failed"
        super().__init__(f"resource {resource.id} failed: {self.code}: {self.message}")


class WaitTimeoutError(CitewellClientError, TimeoutError):
    """A wait (:meth:`~citewell.client.Client.wait_ready`,
    :meth:`~citewell.client.Client.wait_message`) ran out of time. ``last`` is the last
    object polled (still processing / pending)."""

    def __init__(self, message: str, last: Any = None) -> None:
        super().__init__(message)
        self.last = last


_BY_STATUS: dict[int, type[CitewellAPIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    413: PayloadTooLargeError,
}


def error_class(status_code: int) -> type[CitewellAPIError]:
    """The exception class for an error answer with ``status_code``."""
    if status_code >= 500:
        return ServerError
    return _BY_STATUS.get(status_code, CitewellAPIError)


def api_error(status_code: int, content: bytes, headers: httpx.Headers | None = None) -> CitewellAPIError:
    """The exception for an error answer (any of the three envelopes, or none)."""
    request_id = headers.get("x-request-id") if headers is not None else None
    body: Any = None
    code, message = f"HTTP_{status_code}", ""
    try:
        body = json.loads(content) if content else None
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        code = error["code"]
        text = error.get("message", error.get("msg"))
        message = text if isinstance(text, str) else ""
    if not message:
        message = content[:200].decode("utf-8", "replace").strip() if body is None and content else \
            f"the server answered HTTP {status_code}"
    return error_class(status_code)(code, message, status_code, request_id, body)


def error_from_response(response: httpx.Response) -> CitewellAPIError:
    """The exception for ``response`` (its body must have been read)."""
    return api_error(response.status_code, response.content, response.headers)


def transport_error(exc: httpx.TransportError) -> TransportError:
    """Our exception for httpx's transport failure ``exc`` (raise it ``from exc``)."""
    if isinstance(exc, httpx.TimeoutException):
        return RequestTimeoutError(f"timed out: {exc}")
    return TransportError(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)


__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "CitewellAPIError",
    "CitewellClientError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RequestTimeoutError",
    "ResourceFailedError",
    "ServerError",
    "StreamInterruptedError",
    "TransportError",
    "WaitTimeoutError",
    "api_error",
    "error_class",
    "error_from_response",
    "transport_error",
]
