"""Chats profile (seed 000): ``POST /v1/ask`` and ``/v1/chats…`` (chats envelope).

A turn settles in the background: ``POST /v1/ask`` validates the question (400/404 before
anything is stored), stores the user message and a ``pending`` assistant message, answers
202 ``{chat_id, message_id, status: "pending"}`` and hands the turn to the app's
:class:`~citewell.jobs.workers.TurnWorker`. ``GET /v1/chats/{chat_id}/messages/{message_id}``
answers the message with ``status`` pending until it settles (``settled``, or ``failed``
with ``error {code, message}``). Messages render through
:func:`citewell.profiles.chats.render_message`: ``text`` with ``[N]`` markers and a flat
``references[]`` (posts, passages, entities). Success bodies are bare objects.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse

from ...errors import NotFoundError
from ...models import Message
from ...profiles.chats import render_message
from ..deps import Context, context
from ..schemas import AskAccepted, AskBody, ChatList, ChatMessage, ChatMessagesPage, ChatOut, OffsetUnit
from .common import error_docs

router = APIRouter(tags=["chats"])

OFFSETS = Query(None, description="Unit of every offset in the answer: codepoint, utf16 or utf8 (default: the "
                                  "unit the turn was asked with).")


def render(message: Message, offsets: str | None) -> dict[str, Any]:
    """A message in the chats profile (:func:`~citewell.profiles.chats.render_message`),
    its offsets in unit ``offsets`` (None: the message's own)."""
    return render_message(message, offsets=offsets)


@router.post("/v1/ask", status_code=202, response_model=AskAccepted, responses=error_docs("chats"),
             summary="Ask a question (answered in the background)")
def ask(body: AskBody, request: Request, ctx: Context = Depends(context)) -> JSONResponse:
    """Start a turn: 202 ``{chat_id, message_id, status: "pending"}`` (and a ``Location``
    header: the message to poll). Without ``chat_id`` a new chat is made (of the acting
    user, when a platform key acts for one). Errors, before anything is stored: 400
    ``INVALID_REQUEST_BODY`` (empty question, bad offsets or policy), 400 ``INVALID_FILTER``,
    404 ``NOT_FOUND`` (unknown chat_id)."""
    pending = ctx.engine.begin_turn(body.question, chat_id=body.chat_id, filters=body.filters,
                                    offsets=body.offsets or "codepoint", policy=body.policy or "flag",
                                    user_id=ctx.who.user_id, user_email=ctx.who.user_email,
                                    generator=body.generator)
    request.app.state.turns.submit(ctx.engine, pending)
    chat_id, message_id = pending.chat.id, str(pending.message.id)
    return JSONResponse({"chat_id": chat_id, "message_id": message_id, "status": "pending"}, status_code=202,
                        headers={"Location": f"/v1/chats/{chat_id}/messages/{message_id}"})


@router.get("/v1/chats", response_model=ChatList, responses=error_docs("chats"), summary="List chats")
def list_chats(ctx: Context = Depends(context)) -> dict[str, Any]:
    """``{chats: [...]}``: the workspace's chats, oldest first (only the acting user's when
    a platform key acts for a user)."""
    return {"chats": [chat.to_dict() for chat in ctx.engine.chats(user_id=ctx.user_id)]}


@router.get("/v1/chats/{chat_id}", response_model=ChatOut, responses=error_docs("chats"), summary="Get a chat")
def get_chat(chat_id: str, ctx: Context = Depends(context)) -> dict[str, Any]:
    """One chat ``{id, title, workspace_id, created_at, updated_at}``; 404 ``NOT_FOUND``
    for an unknown chat or one of another workspace or user."""
    return ctx.engine.get_chat(chat_id, user_id=ctx.user_id).to_dict()


@router.get("/v1/chats/{chat_id}/messages", response_model=ChatMessagesPage, responses=error_docs("chats"),
            summary="List the messages of a chat")
def list_messages(chat_id: str,
                  limit: int = Query(50, ge=1, le=200, description="Page size, 1–200."),
                  after: str | None = Query(None, description="A message id of this chat (next_after of the "
                                                              "previous page): only later messages."),
                  offsets: OffsetUnit | None = OFFSETS, ctx: Context = Depends(context)) -> dict[str, Any]:
    """``{messages, next_after}``: the chat's messages oldest first, each exactly as
    ``GET …/messages/{message_id}`` answers it; ``next_after`` is the last message's id
    when more follow, else null. 404 for an unknown chat or ``after``."""
    page = ctx.engine.history(chat_id, limit=limit + 1, after=after or None, user_id=ctx.user_id)
    more = len(page) > limit
    page = page[:limit]
    return {"messages": [render(m, offsets) for m in page], "next_after": page[-1].id if more else None}


@router.get("/v1/chats/{chat_id}/messages/{message_id}", response_model=ChatMessage,
            responses=error_docs("chats"), summary="Get a message (poll a turn)")
def get_message(chat_id: str, message_id: str, offsets: OffsetUnit | None = OFFSETS,
                ctx: Context = Depends(context)) -> dict[str, Any]:
    """One message of the chat: ``status`` pending while its turn runs, then settled (text
    with ``[N]`` markers, references) or failed (``error {code, message}``). 404 for an
    unknown chat or message, or a message of another chat."""
    ctx.engine.get_chat(chat_id, user_id=ctx.user_id)
    try:
        message = ctx.engine.message(message_id, user_id=ctx.user_id)
    except NotFoundError:
        message = None
    if message is None or message.chat_id != chat_id:
        raise NotFoundError(f"no message {message_id} in chat {chat_id}")
    return render(message, offsets)


__all__ = ["render", "router"]
