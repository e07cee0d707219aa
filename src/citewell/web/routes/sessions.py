"""Sessions profile (seed 001): ``/v1/sessions…``.

Messages render through :func:`citewell.profiles.sessions.render_message` (markers out of
``content`` and parts); with an ``offsets`` unit, parts carry ``start_index``/``end_index``
and the message ``offset_unit``.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from fastapi import APIRouter, Body, Depends, Query, Request

from ...engine import Engine
from ...models import Message
from ...profiles.sessions import render_message
from ..deps import Context, context
from ..errors import ApiError
from ..images import question_image
from ..schemas import (
    CreateSessionBody,
    RenameSessionBody,
    OffsetUnit,
    PostMessageBody,
    SessionMessagesResponse,
    SessionResponse,
    TurnResponse,
)
from .common import error_docs, ok

router = APIRouter(tags=["sessions"])

_OFFSETS = Query(None, description="Offset unit (codepoint, utf16, utf8): parts then carry start_index/end_index "
                                   "of their span of content in that unit.")


def _render(message: Message, offsets: str | None) -> dict[str, Any]:
    return render_message(message, offsets=offsets) if offsets is not None else render_message(message)


def _user_message(engine: Engine, session_id: str, answer: Message, user_id: str | None) -> Message:
    """The user message stored with ``answer`` (the one right before it in the session)."""
    history = engine.history(session_id, user_id=user_id)
    for i, message in enumerate(history):
        if message.id == answer.id:
            for earlier in reversed(history[:i]):
                if earlier.role == "user":
                    return earlier
            break
    raise RuntimeError(f"the question of message {answer.id} is not in session {session_id}")


def _filters(body: PostMessageBody, resource_ids: list[str]) -> dict[str, Any] | list[str] | None:
    """The question's filters: ``filters`` plus ``resource_ids`` as ``resource_id`` values.
    None when the body gives neither (a follow-up may then keep the previous turn's);
    given but empty, an empty list (no restriction, nothing carried over)."""
    if "filters" not in body.model_fields_set and "resource_ids" not in body.model_fields_set:
        return None
    given = body.filters or []
    if isinstance(given, dict):
        merged = dict(given)
        if resource_ids:
            merged["resource_id"] = resource_ids
        return merged
    return [*given, *(f"resource_id={rid}" for rid in resource_ids)]


@router.post("/v1/sessions", response_model=SessionResponse, responses=error_docs("sessions"),
             summary="Create a session")
def create_session(body: CreateSessionBody | None = Body(None), ctx: Context = Depends(context)) -> dict[str, Any]:
    """Create a session (a chat) in the key's workspace; with a platform key acting for a
    user, the session is that user's."""
    chat = ctx.engine.chat(body.title if body is not None else None, user_id=ctx.who.user_id,
                           user_email=ctx.who.user_email)
    return ok({"session": chat.to_dict()})


@router.get("/v1/sessions/{session_id}", response_model=SessionResponse, responses=error_docs("sessions"),
            summary="Get a session")
def get_session(session_id: str, ctx: Context = Depends(context)) -> dict[str, Any]:
    """One session of the workspace (of the acting user); 404 ``NOT_FOUND`` otherwise."""
    return ok({"session": ctx.engine.get_chat(session_id, user_id=ctx.user_id).to_dict()})


@router.patch("/v1/sessions/{session_id}", response_model=SessionResponse, responses=error_docs("sessions"),
              summary="Rename a session")
def rename_session(session_id: str, body: RenameSessionBody, ctx: Context = Depends(context)) -> dict[str, Any]:
    """Set a session's title (one line of text, at most 1,000 characters); 404 for a
    session of another workspace or user, 400 ``INVALID_REQUEST_BODY`` for a bad title."""
    return ok({"session": ctx.engine.rename_chat(session_id, body.title, user_id=ctx.user_id).to_dict()})


@router.get("/v1/sessions/{session_id}/messages", response_model=SessionMessagesResponse,
            responses=error_docs("sessions"), summary="List the messages of a session")
def list_messages(session_id: str, offsets: OffsetUnit | None = _OFFSETS,
                  ctx: Context = Depends(context)) -> dict[str, Any]:
    """The session and its messages, oldest first, as they were first returned."""
    chat = ctx.engine.get_chat(session_id, user_id=ctx.user_id)
    messages = ctx.engine.history(session_id, user_id=ctx.user_id)
    return ok({"session": chat.to_dict(), "messages": [_render(m, offsets) for m in messages]})


@router.post("/v1/sessions/{session_id}/messages", response_model=TurnResponse, responses=error_docs("sessions"),
             summary="Ask a question in a session")
def post_message(session_id: str, body: PostMessageBody, request: Request,
                 ctx: Context = Depends(context)) -> dict[str, Any]:
    """Answer ``content`` from the workspace's resources (only ``resource_ids`` when given)
    and store the turn; returns the session, the user message and the cited answer.

    ``image_url`` (a data: URL or this API's content URL) makes it a question about an
    image; with empty ``content`` the image's text is the question (rule 11). Errors:
    404 for an unknown session or resource id, 400 ``INVALID_REQUEST_BODY`` for empty
    content without an image or an image URL this API does not accept.
    """
    engine, user_id = ctx.engine, ctx.user_id
    engine.get_chat(session_id, user_id=user_id)
    if not body.content.strip() and not body.image_url:
        raise ApiError("content is empty (an image-only question needs image_url)", code="INVALID_REQUEST_BODY")
    resource_ids = list(dict.fromkeys(body.resource_ids or []))
    for resource_id in resource_ids:
        engine.resource(resource_id)  # NOT_FOUND for an id that is not in the workspace
    filters = _filters(body, resource_ids)
    host = request.headers.get("host") or request.url.netloc

    def answer_it() -> Message:
        with ExitStack() as stack:
            image = None
            if body.image_url:
                image = stack.enter_context(question_image(body.image_url, engine=engine, host=host))
            return engine.ask(body.content, filters=filters, offsets=body.offsets or "codepoint",
                              chat_id=session_id, image=image, image_url=body.image_url or None, user_id=user_id,
                              sync=False, generator=body.generator)

    # answered on the fair question pool: another workspace's flood cannot hold it up
    answer = request.app.state.turns.call(engine.workspace_id, answer_it)
    question = _user_message(engine, session_id, answer, user_id)
    chat = engine.get_chat(session_id, user_id=user_id)
    return ok({"session": chat.to_dict(), "user_message": _render(question, body.offsets),
               "assistant_message": _render(answer, body.offsets)})


__all__ = ["router"]
