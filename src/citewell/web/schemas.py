"""Request and response models: what the OpenAPI document says about every route.

The request bodies are declared here, with the rules the routes enforce. The response
models are the wire model of :mod:`citewell.wire`, written once and re-exported here (the
typed client derives its own open copies from the same classes): they describe the JSON
the routes send and are open (``extra="allow"``) wherever the canonical data carries
additive fields (docs/architecture.md "Canonical data": names are the interface, fields
may be added), so a client validating against this document accepts every answer. Errors
use :class:`SessionsError`, :class:`AnalyticsError` or :class:`ChatsError` (see
:mod:`citewell.web.errors`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from ..validtext import valid_json
from ..wire.analytics import (ConversationReferencesPayload, ConversationReferencesResponse, ReferencedMessage,
                              ReferenceMetadata, ReferencesResponse, RMSReference)
from ..wire.base import OffsetUnit, ResourceStatus
from ..wire.chats import (AskAccepted, ChatList, ChatMessage, ChatMessagesPage, ChatOut, ChatReference, DatasetOut,
                          MentionNotFound, MentionOut, MentionsPage, ResearchPreviewOut)
from ..wire.errors import AnalyticsError, AnalyticsErrorInfo, ChatsError, ErrorInfo, Notice, SessionsError
from ..wire.resources import (DeletedData, DeletedResponse, ResourceData, ResourceListData, ResourceListResponse,
                              ResourceOut, ResourceResponse)
from ..wire.sessions import (AnswerOut, CitationOut, MessageOut, PartOut, Session, SessionData, SessionMessagesData,
                             SessionMessagesResponse, SessionResponse, SourceOut, TurnData, TurnResponse)
from . import rules


class _Body(BaseModel):
    """A request body: every string has its lone surrogates replaced (a JSON ``"\\ud800"``
    escape parses into one, and no response or store could encode it)."""

    @model_validator(mode="before")
    @classmethod
    def _valid_strings(cls, data: Any) -> Any:
        return valid_json(data)


# -- requests ----------------------------------------------------------------------------

class CreateSessionBody(_Body):
    """``POST /v1/sessions`` body (optional)."""

    title: Annotated[str | None, WithJsonSchema({"anyOf": [rules.title(), {"type": "null"}]})] = Field(
        None, description="A title for the session: one line of text (no control character such as NUL), at most "
                          "1,000 characters.")


class RenameSessionBody(_Body):
    """``PATCH /v1/sessions/{id}`` body."""

    title: Annotated[str, WithJsonSchema(rules.title())] = Field(
        description="The new title: one line of text (no control character such as NUL), at most 1,000 characters.")


#: ``image_url`` values the route takes: a base64 ``data:`` URL of an image or PDF type, or
#: this API's ``/v1/resources/{id}/content`` path (an unknown id is 404).
_IMAGE_URL = {"type": "string", "maxLength": 14_000_000, "pattern": (
    "^(?:data:(?:image/(?:png|jpeg|jpg|gif|webp|tiff|bmp|x-portable-anymap)|application/pdf)(?:;[A-Za-z0-9=._-]*)*"
    ";base64,(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{4}|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2}==)"
    "|/v1/resources/[A-Za-z0-9_.~-]+/content)$")}


class PostMessageBody(_Body):
    """``POST /v1/sessions/{session_id}/messages`` body."""

    model_config = ConfigDict(json_schema_extra=lambda schema: rules.alternatives(schema, [
        {"content": {**schema["properties"]["content"], **rules.nonblank()}},
        {"image_url": {**_IMAGE_URL, "description": schema["properties"]["image_url"].get("description", "")}}],
        required=[[], ["image_url"]]))

    content: str = Field(json_schema_extra={"maxLength": rules.MAX_QUESTION_CHARS},
                         description="The question (at most 8,000 characters). May be empty only with image_url (an "
                                     "image-only question).")
    resource_ids: list[str] | None = Field(
        None, description="Search only these resources of the workspace (an unknown id is 404 NOT_FOUND). "
                          "A follow-up that refers back (\"and in 2021?\") keeps the previous question's "
                          "restriction unless resource_ids or filters is given (an empty list: none).")
    filters: Annotated[dict[str, Any] | list[str] | None, WithJsonSchema(rules.filters())] = Field(
        None, description="Metadata filters as in the CLI: an object ({\"fiscal_year\": 2022, \"tickers\": "
                          "[\"MMM\"]}) or \"key=value\" strings; an unknown key is 400 INVALID_FILTER.")
    image_url: Annotated[str | None, WithJsonSchema({"anyOf": [_IMAGE_URL, {"type": "null"}]})] = Field(
        None, description="An image the question is about: a data: URL (base64, at most 10 MB) or this API's own "
                          "/v1/resources/{id}/content URL (also as an absolute URL on this host). Remote URLs are "
                          "not fetched.")
    offsets: OffsetUnit | None = Field(
        None, description="Unit of the offsets in the answer; when given, parts carry start_index/end_index.")
    generator: Literal["extractive", "llm"] | None = Field(
        None, description="Answer writer: extractive (quotes the passages, no model) or llm (the server's "
                          "OpenAI-compatible endpoint; 400 when none is configured). Default: the server's.")


FilterValue = str | int | float | bool


class AskBody(_Body):
    """``POST /v1/ask`` body (chats profile, seed 000)."""

    question: str = Field(json_schema_extra=rules.question(),
                          description="The question: not blank, at most 8,000 characters.")
    chat_id: str | None = Field(
        None, description="Ask in this chat (its earlier turns give the context: a follow-up that refers back "
                          "carries the previous subject and filters). Without it a new chat is made, titled by "
                          "the question.")
    filters: Annotated[dict[str, FilterValue | list[FilterValue]] | list[str] | None,
                       WithJsonSchema(rules.filters())] = Field(
        None, description='Metadata filters: an object ({"source": "reddit", "tickers": ["MMM", "AAPL"]}: a list '
                          'means any of its values) or a list of "key=value" / "key>=value" / "key<=value" '
                          "strings. Keys as docs/architecture.md \"Filters\" (document_name, kind, source, "
                          "resource_id, created_at, tickers …); an unknown key is 400 INVALID_FILTER.")
    offsets: OffsetUnit | None = Field(
        None, description="Unit of the answer's offsets (codepoint, the default; utf16; utf8).")
    policy: Literal["flag", "drop"] | None = Field(
        None, description="Unsupported citations: flag (default) marks them, drop removes them.")
    generator: Literal["extractive", "llm"] | None = Field(
        None, description="Answer writer: extractive (quotes the passages, no model) or llm (the server's "
                          "OpenAI-compatible endpoint; 400 when none is configured). Default: the server's.")


class PostRef(_Body):
    """A post by its ``(source, id)`` (source compared lower-cased, id exactly), and the
    dataset whose copy is wanted (each posts file keeps its own copy of a post)."""

    source: str
    id: str | int = Field(description="The post id (a number is read as its decimal string).")
    dataset_id: str | None = Field(
        None, description="The posts file (dataset) whose copy of the post to return, e.g. a post reference's "
                          "resource_id; without it, the copy of the most recently added ready dataset holding it.")


_LIST_QUERY = ("source", "query", "created_after", "created_before", "dataset_id", "limit", "cursor")
#: A time bound of the list query: blank (none), an ISO 8601 date, or a date-time.
_TIME = {"anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"},
                   {"type": "string", "maxLength": 0}, {"type": "null"}]}


class MentionsBody(_Body):
    """``POST /v1/mentions`` body: either ``post_refs`` (look posts up) or the list query
    fields (``source``, ``query``, ``created_after``, ``created_before``, ``dataset_id``,
    ``limit``, ``cursor``), never both (400 INVALID_REQUEST_BODY). An empty body lists
    every mention, first page."""

    model_config = ConfigDict(json_schema_extra=lambda schema: rules.alternatives(schema, [
        {name: {"type": "null"} for name in _LIST_QUERY},
        {"post_refs": {"type": "null"}}]))

    post_refs: list[PostRef] | None = Field(
        None, max_length=200, description="Posts to resolve, at most 200; answered in this order.")
    source: str | None = Field(None, description="Only posts of this source (case-insensitive).")
    query: str | None = Field(None, description="Only posts whose text has any of these words (full-text).")
    created_after: Annotated[str | None, WithJsonSchema(_TIME)] = Field(
        None, description="Only posts created at or after this ISO 8601 date or date-time.")
    created_before: Annotated[str | None, WithJsonSchema(_TIME)] = Field(
        None, description="Only posts created at or before this ISO 8601 date-time; a date alone covers that "
                          "whole day.")
    dataset_id: str | None = Field(None, description="Only posts of this dataset (a posts file).")
    limit: int | None = Field(None, ge=1, le=200, description="Page size, 1–200 (default 50).")
    cursor: Annotated[str | None, WithJsonSchema({"anyOf": [{"type": "string", "format": rules.CURSOR_FORMAT},
                                                            {"type": "null"}]})] = Field(
        None, description="next_cursor of the previous page, as it was given (an opaque string; any other is 400 "
                          "INVALID_REQUEST_BODY).")


__all__ = [
    "AnalyticsError",
    "AnalyticsErrorInfo",
    "AnswerOut",
    "AskAccepted",
    "AskBody",
    "ChatList",
    "ChatMessage",
    "ChatMessagesPage",
    "ChatOut",
    "ChatReference",
    "ChatsError",
    "CitationOut",
    "ConversationReferencesPayload",
    "ConversationReferencesResponse",
    "CreateSessionBody",
    "DatasetOut",
    "DeletedData",
    "DeletedResponse",
    "ErrorInfo",
    "FilterValue",
    "MentionNotFound",
    "MentionOut",
    "MentionsBody",
    "MentionsPage",
    "MessageOut",
    "Notice",
    "OffsetUnit",
    "PartOut",
    "PostMessageBody",
    "PostRef",
    "RMSReference",
    "ReferenceMetadata",
    "ReferencedMessage",
    "ReferencesResponse",
    "RenameSessionBody",
    "ResearchPreviewOut",
    "ResourceData",
    "ResourceListData",
    "ResourceListResponse",
    "ResourceOut",
    "ResourceResponse",
    "ResourceStatus",
    "Session",
    "SessionData",
    "SessionMessagesData",
    "SessionMessagesResponse",
    "SessionResponse",
    "SessionsError",
    "SourceOut",
    "TurnData",
    "TurnResponse",
]
