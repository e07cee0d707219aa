"""The sessions profile (seed 001): a session, its messages with their parts and
citations, and the ``{"status": "ok", "data": …}`` envelopes of the session routes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import ClosedModel, OpenModel


class Session(OpenModel):
    """A session (= chat), seed 001."""

    id: str
    title: str = Field(description="The title given at creation; else the first question (up to 80 characters); "
                                   "\"\" until the first question.")
    workspace_id: str
    created_at: str = Field(description="ISO 8601 UTC, milliseconds, Z.")
    updated_at: str = Field(description="ISO 8601 UTC, milliseconds, Z.")


class SourceOut(OpenModel):
    """The passage a part or citation came from."""

    chunk_id: str
    resource_id: str
    resource_title: str
    chunk_index: int
    metadata: dict[str, Any]


class PartOut(OpenModel):
    """A span of the answer with the single source it came from (None: unsourced)."""

    text: str
    source: SourceOut | None


class AnswerOut(OpenModel):
    """``response`` of an assistant message."""

    type: Literal["answer"]
    parts: list[PartOut]
    form: Any = None


class CitationOut(OpenModel):
    """One cited resource (its first-cited passage)."""

    resource_id: str
    resource_title: str
    chunk_index: int
    metadata: dict[str, Any]


class MessageOut(OpenModel):
    """A message in the sessions profile (seed 001)."""

    id: str | None
    role: Literal["user", "assistant", "system"]
    content: str = Field(description="The text without its [N] markers (markdown).")
    response: AnswerOut | None
    citations: list[CitationOut]
    resource_ids: list[str]
    image_url: str | None
    created_at: str


class SessionData(ClosedModel):
    """``data`` of a session answer."""

    session: Session


class SessionMessagesData(ClosedModel):
    """``data`` of ``GET /v1/sessions/{session_id}/messages``."""

    session: Session
    messages: list[MessageOut]


class TurnData(ClosedModel):
    """``data`` of ``POST /v1/sessions/{session_id}/messages``."""

    session: Session
    user_message: MessageOut
    assistant_message: MessageOut


class SessionResponse(ClosedModel):
    """``{"status": "ok", "data": {"session"}}``."""

    status: Literal["ok"]
    data: SessionData


class SessionMessagesResponse(ClosedModel):
    """``{"status": "ok", "data": {"session", "messages"}}``."""

    status: Literal["ok"]
    data: SessionMessagesData


class TurnResponse(ClosedModel):
    """``{"status": "ok", "data": {"session", "user_message", "assistant_message"}}``."""

    status: Literal["ok"]
    data: TurnData


__all__ = ["AnswerOut", "CitationOut", "MessageOut", "PartOut", "Session", "SessionData", "SessionMessagesData",
           "SessionMessagesResponse", "SessionResponse", "SourceOut", "TurnData", "TurnResponse"]
