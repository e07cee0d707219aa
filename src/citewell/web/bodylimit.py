"""A size limit on request bodies other than uploads.

JSON bodies are parsed whole, so an unbounded one is a memory attack (a 400 MB
``{"question": "aaa…"}``). :class:`BodyLimitMiddleware` answers 413 ``REQUEST_TOO_LARGE``
to a body over the limit before the app reads it: at once when ``Content-Length`` says
so, and otherwise (a chunked body) after reading at most the limit plus one byte, which
it then hands to the app unchanged. Multipart uploads are left to the upload parser,
which streams them under their own cap (``CITEWELL_MAX_UPLOAD_MB``).

The limit is ``CITEWELL_MAX_BODY_MB`` (default 16: room for a 10 MB image as a base64
``data:`` URL).
"""

from __future__ import annotations

import os

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..digits import whole_number
from .errors import error_response

DEFAULT_MAX_BODY_MB = 16.0


def max_body_bytes() -> int:
    """The limit in bytes (``CITEWELL_MAX_BODY_MB``, else 16 MB; a bad value gives the default)."""
    try:
        mb = float(os.environ.get("CITEWELL_MAX_BODY_MB") or DEFAULT_MAX_BODY_MB)
    except ValueError:
        mb = DEFAULT_MAX_BODY_MB
    return int((mb if 0 < mb < 1 << 20 else DEFAULT_MAX_BODY_MB) * 1024 * 1024)


class BodyLimitMiddleware:
    """413 ``REQUEST_TOO_LARGE`` for a non-multipart request body over :func:`max_body_bytes`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if headers.get("content-type", "").lower().startswith("multipart/form-data"):
            await self.app(scope, receive, send)
            return
        limit = max_body_bytes()
        declared = headers.get("content-length", "")
        if declared.isascii() and declared.isdigit():
            size = whole_number(declared)
            if size is None or size > limit:  # None: more digits than any real body
                await self._refuse(scope, receive, send, limit)
                return
            await self.app(scope, receive, send)
            return
        # no length given: read up to the limit, then replay what was read
        chunks: list[Message] = []
        size = 0
        while True:
            message = await receive()
            chunks.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > limit:
                await self._refuse(scope, receive, send, limit)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return chunks.pop(0) if chunks else await receive()

        await self.app(scope, replay, send)

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        response = error_response(Request(scope), "REQUEST_TOO_LARGE",
                                  f"the request body is larger than {limit // (1024 * 1024)} MB")
        await response(scope, receive, send)
