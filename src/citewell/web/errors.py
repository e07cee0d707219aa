"""The one place where errors become HTTP responses.

Every error the API answers with has a ``code`` and a ``message`` and is rendered in the
envelope of the profile the route belongs to (chosen by path prefix, :func:`profile_of`):

- sessions routes (``/v1/sessions…``, ``/v1/resources…`` and anything unknown)::

      {"status": "error", "error": {"code": str, "message": str}}

- analytics routes (``/v1/references``, ``/v2/analytics/…``, ``/v1/presigned_url…``,
  ``/rms/viewer…``), seed 004::

      {"error": {"code": str, "msg": str, "message": str}, "payload": null}

  The viewer's errors are JSON in this envelope too, although its pages are HTML and PNG
  (a browser opening an expired link sees the code).

- chats routes (seed 000: ``/v1/ask``, ``/v1/chats…``, ``/v1/mentions``, ``/v1/patterns…``,
  ``/v1/datasets…``, ``/v1/research_previews…``, ``/v1/tracking_agents…``), whose success bodies are the seed's
  bare objects::

      {"error": {"code": str, "message": str}}

Status by code (:func:`status_for`)::

    code                          status  raised by
    ----------------------------  ------  -------------------------------------------------
    API_KEY_MISSING               401     no X-API-KEY / Authorization: Bearer header
    INVALID_API_KEY               401     a key that no workspace owns
    FORBIDDEN                     403     a plain key acting for another organization/user;
                                          an expired or altered signed link (presigned URL,
                                          viewer_url): any field, the expiry or the signature
    NOT_FOUND                     404     unknown id, another workspace's id, unknown route
    METHOD_NOT_ALLOWED            405     a known path with a method it does not take
    INVALID_REQUEST_BODY          400     validation failures (never 422); library
                                          UsageError (INVALID_REQUEST) is renamed to this
    INVALID_FILTER                400     a bad filter (resource_ids, /v1/ask filters …)
    *_MISSING                     400     a missing required parameter: CHAT_MESSAGE_ID_MISSING,
                                          DOCUMENT_ID_MISSING, FILE_MISSING, USER_ID_MISSING,
                                          USER_EMAIL_MISSING, ORGANIZATION_ID_MISSING …
    UNSUPPORTED_FILE, EMPTY_FILE, 400     ingest codes, should one reach a route (uploads
    PDF_CORRUPT, PDF_ENCRYPTED,           record them on the failed resource instead)
    VTT_MALFORMED, SRT_MALFORMED,
    JSONL_MALFORMED, TEXT_ENCODING
    AGENT_BUSY                    409     run now while another process runs the tracking agent
    AGENT_PAUSED                  409     run now on a paused tracking agent
    FILE_TOO_LARGE                413     an upload over CITEWELL_MAX_UPLOAD_MB
    REQUEST_TOO_LARGE             413     another request body over CITEWELL_MAX_BODY_MB (16)
    STORE_UNAVAILABLE             503     the database cannot be reached right now (PostgreSQL
                                          refused or lost the connection); with Retry-After,
                                          the same request may work once it is back
    SERVER_BUSY                   503     every page-render slot stayed busy; with Retry-After
    GET_REF_FAIL                  500     an unexpected failure on a references route
    SERVER_ERROR                  500     any other unexpected failure (STORE_ERROR included:
                                          e.g. every pooled connection stayed in use)

Chats routes answer with the same codes and statuses. A turn of ``POST /v1/ask`` that
fails in the background is not an HTTP error: its message settles with ``status: "failed"``
and ``error: {code, message}`` (``SERVER_ERROR``, ``TURN_INTERRUPTED`` when the server
stopped before finishing it, or the library code that stopped it).

A 5xx answer never carries a traceback or an internal detail: the exception is logged
with the request id (the ``X-Request-ID`` header of the answer) and the client gets a
fixed message. A 503 keeps its code (the client should try again, not report a bug), with
a fixed message for ``STORE_UNAVAILABLE`` (the library's names the database) and a
``Retry-After`` header in whole seconds (:data:`RETRY_AFTER_S`, or the error's own
``retry_after_s``).
"""

from __future__ import annotations

import logging
import math
from typing import Any, Literal

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match

from ..errors import CitewellError
from ..validtext import valid_text

log = logging.getLogger("citewell.web")

Profile = Literal["sessions", "analytics", "chats"]

#: Path prefixes of the analytics profile (seeds 003/004).
ANALYTICS_PREFIXES: tuple[str, ...] = ("/v1/references", "/v2/analytics", "/v1/presigned_url", "/rms")
#: Path prefixes of the chats profile (seed 000); every path of neither profile is "sessions".
CHATS_PREFIXES: tuple[str, ...] = ("/v1/ask", "/v1/chats", "/v1/mentions", "/v1/patterns", "/v1/datasets",
                                   "/v1/research_previews", "/v1/tracking_agents")

INGEST_CODES: tuple[str, ...] = ("UNSUPPORTED_FILE", "EMPTY_FILE", "PDF_CORRUPT", "PDF_ENCRYPTED", "VTT_MALFORMED",
                                 "SRT_MALFORMED", "JSONL_MALFORMED", "TEXT_ENCODING")

STATUS_BY_CODE: dict[str, int] = {
    "API_KEY_MISSING": 401,
    "INVALID_API_KEY": 401,
    "FORBIDDEN": 403,
    "NOT_FOUND": 404,
    "METHOD_NOT_ALLOWED": 405,
    "INVALID_REQUEST_BODY": 400,
    "INVALID_FILTER": 400,
    **{code: 400 for code in INGEST_CODES},
    "AGENT_BUSY": 409,
    "AGENT_PAUSED": 409,
    "FILE_TOO_LARGE": 413,
    "REQUEST_TOO_LARGE": 413,
    "STORE_UNAVAILABLE": 503,
    "SERVER_BUSY": 503,
    "GET_REF_FAIL": 500,
    "SERVER_ERROR": 500,
}

#: Library codes that are answered under another name.
RENAMED: dict[str, str] = {"INVALID_REQUEST": "INVALID_REQUEST_BODY", "STORE_ERROR": "SERVER_ERROR"}

SERVER_ERROR_MESSAGE = "An unexpected error occurred on the server."
#: The fixed messages of 503 codes whose library message names internals.
UNAVAILABLE_MESSAGES: dict[str, str] = {
    "STORE_UNAVAILABLE": "The database is unreachable right now; try again in a few seconds.",
}
#: Seconds a 503 asks the client to wait (``Retry-After``) when its error does not say.
RETRY_AFTER_S = 5.0
GET_REF_FAIL_MESSAGE = "The references could not be read because of an unexpected error on the server."


class ApiError(CitewellError):
    """An error of the HTTP layer itself (auth, ``*_MISSING``, ``FILE_TOO_LARGE`` …).

    ``code`` must be one of the codes of this module's table; the status follows from it.
    """

    code = "INVALID_REQUEST_BODY"


def _under(path: str, prefixes: tuple[str, ...]) -> bool:
    return any(path == prefix or path.startswith(prefix + "/") for prefix in prefixes)


def profile_of(path: str) -> Profile:
    """The profile whose envelope ``path`` answers in: ``"analytics"`` for
    ``/v1/references…`` and ``/v2/analytics…``, ``"chats"`` for :data:`CHATS_PREFIXES`
    (``/v1/ask``, ``/v1/chats…`` …), else ``"sessions"``."""
    if _under(path, ANALYTICS_PREFIXES):
        return "analytics"
    if _under(path, CHATS_PREFIXES):
        return "chats"
    return "sessions"


def status_for(code: str) -> int:
    """The HTTP status of ``code`` (any ``*_MISSING`` is 400; an unknown code is 500)."""
    if code in STATUS_BY_CODE:
        return STATUS_BY_CODE[code]
    return 400 if code.endswith("_MISSING") else 500


def error_body(profile: Profile, code: str, message: str) -> dict[str, Any]:
    """The error envelope of ``profile`` (see the module docstring)."""
    message = valid_text(message)  # an id echoed from the request may hold a lone surrogate
    if profile == "analytics":
        return {"error": {"code": code, "msg": message, "message": message}, "payload": None}
    if profile == "chats":
        return {"error": {"code": code, "message": message}}
    return {"status": "error", "error": {"code": code, "message": message}}


def error_response(request: Request, code: str, message: str, *, status: int | None = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    """A JSON error answer for ``request`` in its profile's envelope (status from the table
    unless given)."""
    return JSONResponse(error_body(profile_of(request.url.path), code, message),
                        status_code=status if status is not None else status_for(code), headers=headers)


def _request_id(request: Request) -> str:
    return str(getattr(request.state, "request_id", "-"))


def _server_error(request: Request) -> JSONResponse:
    path = request.url.path
    if profile_of(path) == "analytics" and (path == "/v1/references" or path.endswith("/references")):
        return error_response(request, "GET_REF_FAIL", GET_REF_FAIL_MESSAGE)
    return error_response(request, "SERVER_ERROR", SERVER_ERROR_MESSAGE)


async def citewell_error_handler(request: Request, exc: Exception) -> Response:
    """:class:`~citewell.errors.CitewellError` (library and :class:`ApiError`) → its code's
    status: a 503 with its code and ``Retry-After``, another 5xx as ``SERVER_ERROR``
    (logged with its traceback), the rest with their own code and message."""
    assert isinstance(exc, CitewellError)
    code = RENAMED.get(exc.code, exc.code)
    status = status_for(code)
    if status == 503:  # try again later: the code, a safe message and when
        log.warning("request %s: %s", _request_id(request), exc)
        retry_after = float(getattr(exc, "retry_after_s", RETRY_AFTER_S))
        return error_response(request, code, UNAVAILABLE_MESSAGES.get(code, exc.message),
                              headers={"Retry-After": str(max(1, math.ceil(retry_after)))})
    if status >= 500:
        log.error("request %s failed: %s", _request_id(request), exc, exc_info=exc)
        return _server_error(request)
    return error_response(request, code, exc.message)


def _loc(loc: Any) -> str:
    return ".".join(str(p) for p in loc) if isinstance(loc, (list, tuple)) else str(loc)


async def validation_error_handler(request: Request, exc: Exception) -> Response:
    """FastAPI's :class:`RequestValidationError` → 400 (never 422).

    A required query, path or header parameter that is absent gives ``<NAME>_MISSING``
    (``chat_message_id`` → ``CHAT_MESSAGE_ID_MISSING``); anything else is
    ``INVALID_REQUEST_BODY`` with the first problem as the message.
    """
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    if not errors:
        return error_response(request, "INVALID_REQUEST_BODY", "the request is not valid")
    first = errors[0]
    loc = tuple(first.get("loc") or ())
    if first.get("type") == "missing" and len(loc) == 2 and loc[0] in ("query", "path", "header"):
        name = str(loc[1]).replace("-", "_")
        return error_response(request, f"{name.upper()}_MISSING", f"{name} is required")
    if first.get("type") == "json_invalid":
        message = "the request body is not valid JSON"
    else:
        message = f"{_loc(loc)}: {first.get('msg', 'invalid value')}"
        if len(errors) > 1:
            message += f" (and {len(errors) - 1} more problem(s))"
    return error_response(request, "INVALID_REQUEST_BODY", message)


def allowed_methods(request: Request) -> list[str]:
    """Every method some route of the app takes at ``request``'s path, and ``OPTIONS``
    (answered here), sorted: the ``Allow`` header of a 405 or an ``OPTIONS`` answer
    (Starlette names only the first route that matches the path)."""
    methods = {"OPTIONS"}
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):  # routes say FULL only for a method they take
        scope = {**request.scope, "method": method}
        if any(route.matches(scope)[0] == Match.FULL for route in request.app.router.routes):
            methods.add(method)
    return sorted(methods)


async def http_exception_handler(request: Request, exc: Exception) -> Response:
    """Starlette's HTTP exceptions (unknown route 404, wrong method 405 …) → coded envelope."""
    assert isinstance(exc, StarletteHTTPException)
    headers = dict(exc.headers) if exc.headers else None
    if exc.status_code == 404:
        return error_response(request, "NOT_FOUND", "The requested resource was not found.", headers=headers)
    if exc.status_code == 405:
        allow = ", ".join(allowed_methods(request))
        if request.method == "OPTIONS":  # RFC 9110 9.3.7: what the path takes, no error
            return Response(status_code=204, headers={"Allow": allow})
        return error_response(request, "METHOD_NOT_ALLOWED", f"method {request.method} is not allowed here",
                              headers={**(headers or {}), "Allow": allow})
    if exc.status_code == 413:
        return error_response(request, "FILE_TOO_LARGE", str(exc.detail), headers=headers)
    if exc.status_code >= 500:
        log.error("request %s failed: HTTP %s %s", _request_id(request), exc.status_code, exc.detail)
        return _server_error(request)
    return error_response(request, "INVALID_REQUEST_BODY", str(exc.detail), status=400, headers=headers)


def unhandled_error_response(request: Request, exc: BaseException) -> Response:
    """Any other exception → 500 ``SERVER_ERROR`` (``GET_REF_FAIL`` on the references
    routes), logged with the request id and traceback; the client gets a fixed message.

    Called by :class:`~citewell.web.requestid.RequestIdMiddleware`, which sits outside
    the exception middleware, so the answer still carries ``X-Request-ID``.
    """
    log.error("request %s failed with an unexpected error", _request_id(request), exc_info=exc)
    return _server_error(request)


def install(app: FastAPI) -> None:
    """Register the handlers of this module on ``app``."""
    app.add_exception_handler(CitewellError, citewell_error_handler)
    app.add_exception_handler(RequestValidationError, validation_error_handler)
    app.add_exception_handler(StarletteHTTPException, http_exception_handler)


__all__ = [
    "ANALYTICS_PREFIXES",
    "CHATS_PREFIXES",
    "RETRY_AFTER_S",
    "STATUS_BY_CODE",
    "UNAVAILABLE_MESSAGES",
    "ApiError",
    "error_body",
    "error_response",
    "install",
    "profile_of",
    "status_for",
    "unhandled_error_response",
]
