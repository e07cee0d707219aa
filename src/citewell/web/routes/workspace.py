"""``GET /v1/workspace``: whom an API key acts for (sessions envelope).

The web app signs in with a key and shows the workspace it opens; a script can check a key
the same way. Answers ``{"status": "ok", "data": {"workspace": {id, name}, "key": {id,
platform}, "user_id"}}``; 401 ``API_KEY_MISSING`` / ``INVALID_API_KEY`` as every route.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel

from ..deps import Context, context
from .common import error_docs, ok

router = APIRouter(tags=["workspace"])


class WorkspaceOut(BaseModel):
    """A workspace: its id and name."""

    id: str
    name: str


class KeyOut(BaseModel):
    """The API key of the request: its stored id (never the key) and whether it is a platform key."""

    id: str | None
    platform: bool


class WorkspaceData(BaseModel):
    """What ``GET /v1/workspace`` tells."""

    workspace: WorkspaceOut
    key: KeyOut
    user_id: str | None


class WorkspaceResponse(BaseModel):
    """``{"status": "ok", "data": {"workspace", "key", "user_id"}}``."""

    status: Literal["ok"]
    data: WorkspaceData


@router.get("/v1/workspace", response_model=WorkspaceResponse, responses=error_docs("sessions"),
            summary="The workspace this key acts for")
def workspace(ctx: Context = Depends(context)) -> dict[str, Any]:
    """The workspace (id and name) the request acts for, its key's id and kind, and the
    user a platform key acts for (else null)."""
    who = ctx.who
    name = ctx.engine.store.workspace_name(who.workspace_id)
    return ok({"workspace": {"id": who.workspace_id, "name": name},
               "key": {"id": who.key_id, "platform": who.platform}, "user_id": who.user_id})


__all__ = ["router"]
