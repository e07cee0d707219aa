"""API keys → the principal a request acts as.

A key comes in ``X-API-KEY: <key>`` or ``Authorization: Bearer <key>`` (X-API-KEY wins
when both are sent) and is looked up by its SHA-256 (:func:`citewell.keys.hash_key`):
keys are never stored. The query parameters ``organization_id``, ``user_id`` and
``user_email`` (seed 003) choose whom a platform key acts for:

==========================  ===============================================================
no key                      401 ``API_KEY_MISSING``
unknown key                 401 ``INVALID_API_KEY``
plain key                   its own workspace; ``organization_id`` may only name that
                            workspace, and ``user_id``/``user_email`` are not allowed
                            (403 ``FORBIDDEN``)
platform key                ``organization_id`` (an unknown id is 404 ``NOT_FOUND``); on
                            the analytics routes (seeds 003/004) it is required (400
                            ``ORGANIZATION_ID_MISSING`` without it), elsewhere its own
                            workspace is the default; ``user_id`` and ``user_email``
                            together (one alone: 400 ``USER_EMAIL_MISSING`` /
                            ``USER_ID_MISSING``) make the request act for that user: its
                            chats only
==========================  ===============================================================

Why only the analytics routes require ``organization_id``: seed 003 documents it as
"Required for platform API keys to identify the target organization" on its routes; the
sessions (001) and chats (000) seeds have no organization parameter at all, so there a
platform key acts for its own workspace unless it names another.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Query, Request, Security
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from ..keys import hash_key
from ..store.base import KeyStore
from .errors import ApiError, error_response, profile_of

_api_key_header = APIKeyHeader(name="X-API-KEY", auto_error=False, scheme_name="ApiKeyAuth",
                               description="An API key made with `citewell keys create`.")
_bearer = HTTPBearer(auto_error=False, scheme_name="BearerAuth",
                     description="The same API key as `Authorization: Bearer <key>`.")


@dataclass(frozen=True)
class Principal:
    """Whom a request acts as.

    ``workspace_id``: the workspace every call is scoped to (the key's own, or the
    ``organization_id`` a platform key named); ``platform``: the key is a platform key;
    ``user_id``/``user_email``: the user a platform key acts for (both or neither);
    ``key_id``: the stored key's id (for logs).
    """

    workspace_id: str
    platform: bool
    user_id: str | None = None
    user_email: str | None = None
    key_id: str | None = None


def blank(value: str | None) -> str | None:
    """``value``, or None when it is None or only whitespace."""
    return value if value is not None and value.strip() else None


def resolve_principal(store: KeyStore, key: str | None, *, organization_id: str | None = None,
                      user_id: str | None = None, user_email: str | None = None,
                      require_organization: bool = False) -> Principal:
    """The :class:`Principal` for ``key`` and the acting-for parameters (rules in the
    module docstring). ``require_organization``: a platform key must name
    ``organization_id`` (the analytics routes, seed 003). Raises
    :class:`~citewell.web.errors.ApiError` (401/403/400 ``ORGANIZATION_ID_MISSING`` …) or
    :class:`~citewell.errors.NotFoundError` (unknown ``organization_id``)."""
    key = blank(key)
    if key is None:
        raise ApiError("header does not contain api key", code="API_KEY_MISSING")
    record = store.api_key(hash_key(key.strip()))
    if record is None:
        raise ApiError("the API key is not valid", code="INVALID_API_KEY")
    organization_id, user_id, user_email = blank(organization_id), blank(user_id), blank(user_email)
    if not record.platform:
        if organization_id is not None and organization_id != record.workspace_id:
            raise ApiError("this API key may not act for another organization", code="FORBIDDEN")
        if user_id is not None or user_email is not None:
            raise ApiError("only a platform API key may act for a user", code="FORBIDDEN")
        return Principal(record.workspace_id, False, key_id=record.id)
    if organization_id is None and require_organization:
        raise ApiError("organization_id is required for a platform API key", code="ORGANIZATION_ID_MISSING")
    workspace_id = record.workspace_id
    if organization_id is not None and organization_id != record.workspace_id:
        store.workspace_name(organization_id)  # NotFoundError for an unknown organization
        workspace_id = organization_id
    if user_id is not None and user_email is None:
        raise ApiError("user_email is required together with user_id", code="USER_EMAIL_MISSING")
    if user_email is not None and user_id is None:
        raise ApiError("user_id is required together with user_email", code="USER_ID_MISSING")
    return Principal(workspace_id, True, user_id, user_email, record.id)


#: The acting-for query parameters and key headers, shared by every dependency that resolves a key.
ORGANIZATION_ID = Query(None, description="Organization (workspace) id a platform API key acts for (required "
                                          "for a platform key on the analytics routes: 400 "
                                          "ORGANIZATION_ID_MISSING). A plain key may only name its own.")
USER_ID = Query(None, description="User a platform API key acts for; required together with user_email.")
USER_EMAIL = Query(None, description="Email of the user a platform API key acts for; required together with "
                                     "user_id.")
API_KEY_HEADER = Security(_api_key_header)
BEARER = Security(_bearer)


def key_of(api_key: str | None, bearer: HTTPAuthorizationCredentials | None) -> str | None:
    """The key a request sent: ``X-API-KEY`` when not blank, else the Bearer credentials."""
    return blank(api_key) or (bearer.credentials if bearer is not None else None)


def principal(
    request: Request,
    api_key: str | None = API_KEY_HEADER,
    bearer: HTTPAuthorizationCredentials | None = BEARER,
    organization_id: str | None = ORGANIZATION_ID,
    user_id: str | None = USER_ID,
    user_email: str | None = USER_EMAIL,
) -> Principal:
    """FastAPI dependency: the request's :class:`Principal` (errors as :func:`resolve_principal`;
    a platform key must name ``organization_id`` on the analytics routes)."""
    return resolve_principal(request.app.state.store, key_of(api_key, bearer), organization_id=organization_id,
                             user_id=user_id, user_email=user_email,
                             require_organization=profile_of(request.url.path) == "analytics")


#: Paths that need a key (or a signed link): every API route; not /docs, /openapi.json.
KEYED_PREFIXES: tuple[str, ...] = ("/v1/", "/v2/", "/rms/")
#: Routes that never take a key: a presigned download is judged by its signature alone.
SIGNED_ONLY_PREFIXES: tuple[str, ...] = ("/v1/presigned_url/",)


class KeyPresenceMiddleware:
    """Answer 401 ``API_KEY_MISSING`` to an API request that carries no key at all (neither
    ``X-API-KEY`` nor ``Authorization``) and no signed-link ``signature``, before anything
    else reads it: FastAPI parses a JSON body before it runs the key dependency, so a
    keyless request with a malformed body would otherwise get 400 instead of 401. A key
    that is present is judged by :func:`principal` as before."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path.startswith(KEYED_PREFIXES) and not path.startswith(SIGNED_ONLY_PREFIXES):
            headers = Headers(scope=scope)
            signed = b"signature=" in scope.get("query_string", b"")
            if not signed and not (headers.get("x-api-key") or "").strip() and not headers.get("authorization"):
                request = Request(scope)
                response = error_response(request, "API_KEY_MISSING", "header does not contain api key")
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


__all__ = ["KEYED_PREFIXES", "KeyPresenceMiddleware", "Principal", "principal", "resolve_principal"]
