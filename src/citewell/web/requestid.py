"""Request ids: ``X-Request-ID`` on every answer, on every log line, one access line per request.

- A sane incoming ``X-Request-ID`` (1–128 of ``A-Z a-z 0-9 . _ : -``) is echoed; otherwise
  a new ``uuid4().hex`` is made.
- The id lives in :data:`citewell.logcontext.REQUEST_ID` (a context variable: it follows
  the request into the threadpool that runs sync endpoints, and into the jobs it queues)
  and in ``request.state.request_id``.
- :class:`citewell.logcontext.RequestIdFilter` puts it on every log record as
  ``record.request_id`` ("-" outside a request); :data:`citewell.logcontext.LOG_CONFIG` is
  a ``logging.config.dictConfig`` for uvicorn that prints it on every line.
- :class:`RequestIdMiddleware` writes one ``citewell.access`` line per request
  (method, path, status, milliseconds) and turns an exception that escaped every handler
  into the coded 500 answer, so even that answer carries the header.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..logcontext import REQUEST_ID

HEADER = "X-Request-ID"
_SANE = re.compile(r"[A-Za-z0-9._:\-]{1,128}")

access_log = logging.getLogger("citewell.access")
log = logging.getLogger("citewell.web")


def request_id_from(value: str | None) -> str:
    """``value`` when it is a sane request id, else a new ``uuid4().hex``."""
    if value is not None and _SANE.fullmatch(value):
        return value
    return uuid.uuid4().hex


class RequestIdMiddleware:
    """Pure ASGI middleware: request id in, ``X-Request-ID`` out, one access log line.

    ``on_error(request, exc) -> Response`` renders an exception no handler took (the
    coded 500); it is only used when the answer has not started yet, otherwise the
    exception is logged and re-raised for the server to close the connection.
    """

    def __init__(self, app: ASGIApp, on_error: Callable[[Request, BaseException], Response]) -> None:
        self.app = app
        self.on_error = on_error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one ASGI connection (HTTP only; lifespan and websockets pass through)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = None
        for name, value in scope.get("headers") or ():
            if name == b"x-request-id":
                incoming = value.decode("latin-1")
                break
        rid = request_id_from(incoming)
        token = REQUEST_ID.set(rid)
        scope.setdefault("state", {})["request_id"] = rid
        started = time.perf_counter()
        status = [500, False]  # status code, response started

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[HEADER] = rid
                status[0], status[1] = message["status"], True
            await send(message)

        try:
            try:
                await self.app(scope, receive, send_with_id)
            except Exception as exc:
                if status[1]:
                    log.error("request %s failed after its answer started", rid, exc_info=exc)
                    raise
                response = self.on_error(Request(scope), exc)
                await response(scope, receive, send_with_id)
        finally:
            access_log.info("%s %s %s %.1fms", scope.get("method", "-"), _printable(scope.get("path", "-")), status[0],
                            (time.perf_counter() - started) * 1000.0)
            REQUEST_ID.reset(token)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _printable(path: str) -> str:
    """``path`` with control characters written as ``\\xNN``: a decoded ``%0A`` in a path
    must not start a forged log line."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", path)


__all__ = ["HEADER", "RequestIdMiddleware", "request_id_from"]
