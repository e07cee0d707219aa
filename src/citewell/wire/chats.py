"""The chats profile (seed 000): the accepted question, chats and their messages with
``[N]`` markers and references, mentions (posts), datasets and research previews."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .. import models
from .base import ClosedModel, OpenModel, ResourceStatus
from .errors import ErrorInfo, Notice


class AskAccepted(OpenModel):
    """``POST /v1/ask`` answer (202): the turn is stored and runs in the background."""

    chat_id: str
    message_id: str = Field(description="The assistant message to poll.")
    status: Literal["pending"]


class ChatReference(OpenModel):
    """A ``references[]`` entry: a post ``{type: "post", source, id, citation, start_index,
    end_index}`` or passage (``type: "chunk"``) with the canonical additive fields, or an
    entity ``{type, id}`` (pattern, dataset, research_preview, resource, chat).

    Only ``type`` is declared: the other fields pass through in the serializer's order
    (the seed's fields first) and absent ones stay absent."""

    type: str = Field(description="post, chunk, or an entity type (pattern, dataset, research_preview, "
                                  "resource, chat).")


class ChatMessage(OpenModel):
    """A message in the chats profile (seed 000): ``text`` with ``[N]`` markers.

    A failed turn (``status: "failed"``) also has ``error: {code, message}`` (SERVER_ERROR,
    TURN_INTERRUPTED …); other messages have no ``error`` key."""

    id: str | None
    chat_id: str | None
    role: Literal["user", "assistant", "system"]
    text: str
    references: list[ChatReference]
    status: Literal["pending", "settled", "failed"]
    warnings: list[Notice]
    created_at: str = Field(description="ISO 8601 UTC, milliseconds, Z.")


class ChatMessagesPage(ClosedModel):
    """``GET /v1/chats/{chat_id}/messages``: a page, oldest first."""

    messages: list[ChatMessage]
    next_after: str | None = Field(description="Pass as `after` for the next page; null on the last page.")


class ChatOut(OpenModel):
    """A chat (the same object as a session)."""

    id: str
    title: str = Field(description="As a session's title.")
    workspace_id: str
    created_at: str
    updated_at: str


class ChatList(ClosedModel):
    """``GET /v1/chats``."""

    chats: list[ChatOut]


class MentionOut(models.Mention):
    """A post (seed 000 Mention) with every field its source gave (score, likes,
    num_comments, url, permalink …)."""


class MentionNotFound(ClosedModel):
    """A ``post_refs`` item that names no post of the workspace."""

    source: str
    id: str
    error: ErrorInfo


class MentionsPage(ClosedModel):
    """``POST /v1/mentions``: the mentions (``post_refs``: in the order asked, unknown ones
    as :class:`MentionNotFound`) and the list query's ``next_cursor`` (always null for
    ``post_refs``)."""

    mentions: list[MentionOut | MentionNotFound]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last page.")


class DatasetOut(OpenModel):
    """A dataset: a posts file of the workspace."""

    id: str
    title: str
    file_name: str
    post_count: int
    status: ResourceStatus
    error: Notice | None
    warnings: list[Notice]
    created_at: str
    updated_at: str


class ResearchPreviewOut(OpenModel):
    """The pointer to a turn (its assistant message), pending or not."""

    id: str = Field(description="The assistant message id.")
    chat_id: str
    status: Literal["pending", "settled", "failed"]
    question: str | None = Field(description="The question of the turn.")
    message_id: str
    created_at: str


__all__ = ["AskAccepted", "ChatList", "ChatMessage", "ChatMessagesPage", "ChatOut", "ChatReference", "DatasetOut",
           "MentionNotFound", "MentionOut", "MentionsPage", "ResearchPreviewOut"]
