"""What the routers share: envelopes and the documented error answers of a route (the chats
profile's success bodies are bare objects, with no envelope)."""

from __future__ import annotations

from typing import Any

from ..errors import Profile
from ..schemas import AnalyticsError, ChatsError, SessionsError

_DESCRIPTIONS = {
    400: "Bad request: INVALID_REQUEST_BODY, INVALID_FILTER or a *_MISSING code.",
    401: "API_KEY_MISSING or INVALID_API_KEY.",
    403: "FORBIDDEN: the key may not act for that organization or user.",
    404: "NOT_FOUND: unknown id, or an id of another workspace (the two answer alike).",
    409: "AGENT_BUSY (another process is running the tracking agent) or AGENT_PAUSED.",
    413: "FILE_TOO_LARGE: the upload is over CITEWELL_MAX_UPLOAD_MB.",
    500: "SERVER_ERROR (GET_REF_FAIL on the references routes); never a trace.",
    503: "STORE_UNAVAILABLE: the database is unreachable right now (SERVER_BUSY on a page image: every "
         "renderer stayed busy); try again after the Retry-After header's seconds.",
}


def ok(data: dict[str, Any]) -> dict[str, Any]:
    """The sessions-profile success envelope ``{"status": "ok", "data": data}``."""
    return {"status": "ok", "data": data}


def payload(data: dict[str, Any]) -> dict[str, Any]:
    """The analytics-profile success envelope ``{"error": None, "payload": data}``."""
    return {"error": None, "payload": data}


def error_docs(profile: Profile, *extra: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for the errors every authenticated route may answer (400,
    401, 403, 404, 500, and 503 while the database is unreachable) plus ``extra``
    statuses, in ``profile``'s error envelope."""
    model = {"analytics": AnalyticsError, "chats": ChatsError}.get(profile, SessionsError)
    return {status: {"model": model, "description": _DESCRIPTIONS[status]}
            for status in sorted({400, 401, 403, 404, 500, 503, *extra})}


__all__ = ["error_docs", "ok", "payload"]
