"""Request and response models: what the OpenAPI document says about every route.

Response models describe the JSON the routes send; they are open (``extra="allow"``)
wherever the canonical data carries additive fields (docs/architecture.md "Canonical data": names are
the interface, fields may be added), so a client validating against this document accepts
every answer. Errors use :class:`SessionsError`, :class:`AnalyticsError` or
:class:`ChatsError` (see :mod:`citewell.web.errors`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from ..profiles.analytics import ENUMS
from ..validtext import valid_json
from . import rules

OffsetUnit = Literal["codepoint", "utf16", "utf8"]
ResourceStatus = Literal["processing", "ready", "failed", "superseded", "missing"]


class _Body(BaseModel):
    """A request body: every string has its lone surrogates replaced (a JSON ``"\\ud800"``
    escape parses into one, and no response or store could encode it)."""

    @model_validator(mode="before")
    @classmethod
    def _valid_strings(cls, data: Any) -> Any:
        return valid_json(data)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- errors ------------------------------------------------------------------------------

class ErrorInfo(_Closed):
    """A coded error of the sessions profile."""

    code: str = Field(description="Stable error code (API_KEY_MISSING, NOT_FOUND, INVALID_REQUEST_BODY …).")
    message: str = Field(description="What went wrong, for people.")


class SessionsError(_Closed):
    """Sessions-profile error envelope: ``{"status": "error", "error": {code, message}}``."""

    status: Literal["error"]
    error: ErrorInfo


class AnalyticsErrorInfo(_Closed):
    """A coded error of the analytics profile (seed 004): ``msg`` repeats ``message``."""

    code: str
    msg: str = Field(description="Error message (deprecated, use `message` instead).")
    message: str


class AnalyticsError(_Closed):
    """Analytics-profile error envelope: ``{"error": {code, msg, message}, "payload": null}``."""

    error: AnalyticsErrorInfo
    payload: None = Field(description="Always null for error responses.")


class ChatsError(_Closed):
    """Chats-profile error envelope (seed 000 routes): ``{"error": {code, message}}``."""

    error: ErrorInfo


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


# -- sessions profile (seed 001) -----------------------------------------------------------

class Session(_Open):
    """A session (= chat), seed 001."""

    id: str
    title: str = Field(description="The title given at creation; else the first question (up to 80 characters); "
                                   "\"\" until the first question.")
    workspace_id: str
    created_at: str = Field(description="ISO 8601 UTC, milliseconds, Z.")
    updated_at: str = Field(description="ISO 8601 UTC, milliseconds, Z.")


class SourceOut(_Open):
    """The passage a part or citation came from."""

    chunk_id: str
    resource_id: str
    resource_title: str
    chunk_index: int
    metadata: dict[str, Any]


class PartOut(_Open):
    """A span of the answer with the single source it came from (None: unsourced)."""

    text: str
    source: SourceOut | None


class AnswerOut(_Open):
    """``response`` of an assistant message."""

    type: Literal["answer"]
    parts: list[PartOut]
    form: Any = None


class CitationOut(_Open):
    """One cited resource (its first-cited passage)."""

    resource_id: str
    resource_title: str
    chunk_index: int
    metadata: dict[str, Any]


class MessageOut(_Open):
    """A message in the sessions profile (seed 001)."""

    id: str | None
    role: Literal["user", "assistant", "system"]
    content: str = Field(description="The text without its [N] markers (markdown).")
    response: AnswerOut | None
    citations: list[CitationOut]
    resource_ids: list[str]
    image_url: str | None
    created_at: str


class SessionData(_Closed):
    """``data`` of a session answer."""

    session: Session


class SessionMessagesData(_Closed):
    """``data`` of ``GET /v1/sessions/{session_id}/messages``."""

    session: Session
    messages: list[MessageOut]


class TurnData(_Closed):
    """``data`` of ``POST /v1/sessions/{session_id}/messages``."""

    session: Session
    user_message: MessageOut
    assistant_message: MessageOut


class SessionResponse(_Closed):
    """``{"status": "ok", "data": {"session"}}``."""

    status: Literal["ok"]
    data: SessionData


class SessionMessagesResponse(_Closed):
    """``{"status": "ok", "data": {"session", "messages"}}``."""

    status: Literal["ok"]
    data: SessionMessagesData


class TurnResponse(_Closed):
    """``{"status": "ok", "data": {"session", "user_message", "assistant_message"}}``."""

    status: Literal["ok"]
    data: TurnData


# -- resources -----------------------------------------------------------------------------

class Notice(_Open):
    """A coded warning or error (``{code, message, …}``)."""

    code: str
    message: str


class ResourceOut(_Open):
    """A resource: the canonical Resource without ``paths`` (server file paths)."""

    id: str
    workspace_id: str
    title: str
    file_name: str
    kind: Literal["pdf", "transcript", "text", "post"] | None
    media_type: str | None
    sha256: str
    size_bytes: int
    blob_key: str | None
    status: ResourceStatus
    error: Notice | None
    warnings: list[Notice]
    metadata: dict[str, Any]
    custom_metadata: dict[str, Any] | None
    extractor_version: str | None
    chunk_count: int
    created_at: str
    updated_at: str


class ResourceData(_Closed):
    """``data`` of a one-resource answer."""

    resource: ResourceOut


class ResourceListData(_Closed):
    """``data`` of ``GET /v1/resources``: a page and the total."""

    resources: list[ResourceOut]
    total: int = Field(description="How many resources match (all pages).")
    limit: int
    offset: int


class DeletedData(_Closed):
    """``data`` of ``DELETE /v1/resources/{resource_id}``."""

    resource_id: str
    deleted: Literal[True]


class ResourceResponse(_Closed):
    """``{"status": "ok", "data": {"resource"}}``."""

    status: Literal["ok"]
    data: ResourceData


class ResourceListResponse(_Closed):
    """``{"status": "ok", "data": {"resources", "total", "limit", "offset"}}``."""

    status: Literal["ok"]
    data: ResourceListData


class DeletedResponse(_Closed):
    """``{"status": "ok", "data": {"resource_id", "deleted": true}}``."""

    status: Literal["ok"]
    data: DeletedData


# -- chats profile (seed 000) --------------------------------------------------------------

class AskAccepted(_Open):
    """``POST /v1/ask`` answer (202): the turn is stored and runs in the background."""

    chat_id: str
    message_id: str = Field(description="The assistant message to poll.")
    status: Literal["pending"]


class ChatReference(_Open):
    """A ``references[]`` entry: a post ``{type: "post", source, id, citation, start_index,
    end_index}`` or passage (``type: "chunk"``) with the canonical additive fields, or an
    entity ``{type, id}`` (pattern, dataset, research_preview, resource, chat).

    Only ``type`` is declared: the other fields pass through in the serializer's order
    (the seed's fields first) and absent ones stay absent."""

    type: str = Field(description="post, chunk, or an entity type (pattern, dataset, research_preview, "
                                  "resource, chat).")


class ChatMessage(_Open):
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


class ChatMessagesPage(_Closed):
    """``GET /v1/chats/{chat_id}/messages``: a page, oldest first."""

    messages: list[ChatMessage]
    next_after: str | None = Field(description="Pass as `after` for the next page; null on the last page.")


class ChatOut(_Open):
    """A chat (the same object as a session)."""

    id: str
    title: str = Field(description="As a session's title.")
    workspace_id: str
    created_at: str
    updated_at: str


class ChatList(_Closed):
    """``GET /v1/chats``."""

    chats: list[ChatOut]


class MentionOut(_Open):
    """A post (seed 000 Mention) with every field its source gave (score, likes,
    num_comments, url, permalink …)."""

    source: str
    id: str
    text: str
    url: str | None = None
    author: str | None = None
    created_at: str | None = None
    dataset_id: str | None = None
    chunk_id: str | None = None


class MentionNotFound(_Closed):
    """A ``post_refs`` item that names no post of the workspace."""

    source: str
    id: str
    error: ErrorInfo


class MentionsPage(_Closed):
    """``POST /v1/mentions``: the mentions (``post_refs``: in the order asked, unknown ones
    as :class:`MentionNotFound`) and the list query's ``next_cursor`` (always null for
    ``post_refs``)."""

    mentions: list[MentionOut | MentionNotFound]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last page.")


class DatasetOut(_Open):
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


class ResearchPreviewOut(_Open):
    """The pointer to a turn (its assistant message), pending or not."""

    id: str = Field(description="The assistant message id.")
    chat_id: str
    status: Literal["pending", "settled", "failed"]
    question: str | None = Field(description="The question of the turn.")
    message_id: str
    created_at: str


# -- analytics profile (seeds 003/004) -----------------------------------------------------

def _enum(key: str) -> Any:
    """The ``Literal`` of seed 004's enum of metadata key ``key``."""
    return Literal.__getitem__(ENUMS[key])


def _no_default(schema: dict[str, Any]) -> None:
    """JSON Schema of an optional field that is absent rather than null: no ``default``."""
    schema.pop("default", None)


def _absent() -> Any:
    """An optional field that is absent (never null) when it has no value."""
    return Field(None, json_schema_extra=_no_default)


class ReferenceMetadata(_Open):
    """RMSReference ``metadata``: the seed's typed keys (always present, but for the scalar
    enum keys, which are absent when unknown; enum keys hold only seed 004's values, the
    stored value being in ``as_given`` when it differs) plus the chunk's provenance."""

    calendar_date: str | None = Field(description="ISO 8601 date-time, UTC (2026-03-02T00:00:00Z).")
    fiscal_year: int | None
    fiscal_quarter: str | None = Field(description="\"1\"..\"4\" (seed 004's string type).")
    source: str | None
    tickers: list[str]
    company_names: list[str]
    stock_ids: list[str]
    # seed 004's enums admit no null: these are absent when unknown
    document_category: _enum("document_category") = _absent()  # type: ignore[valid-type]
    document_subcategory: _enum("document_subcategory") = _absent()  # type: ignore[valid-type]
    rms_document_type: _enum("rms_document_type") = _absent()  # type: ignore[valid-type]
    rms_type: _enum("rms_type") = _absent()  # type: ignore[valid-type]
    rms_sub_type: str | None
    sector: list[_enum("sector")]  # type: ignore[valid-type]
    subsector: list[_enum("subsector")]  # type: ignore[valid-type]
    publisher: str | None
    countries: list[str]
    regions: list[str]
    participants: list[dict[str, Any]]
    tags: list[str]
    parent_id: str | None
    parent_document_id: str | None
    creation_timestamp: str | None
    last_contribution_timestamp: str | None
    document_tags: list[str]
    creator_name: str | None
    last_contributor_name: str | None
    offset: list[dict[str, Any]] | None = Field(description="PDF boxes {page, top, left, width, height}.")
    blocks: list[int] | None = Field(description="Transcript cue indices of the chunk.")
    as_given: dict[str, Any] = Field(None, json_schema_extra=_no_default,
                                     description="Additive, only when some value differs from the stored one: the "
                                                 "stored values of the keys above that seed 004's types or enums "
                                                 "could not carry as they are.")


class RMSReference(_Open):
    """One evidence reference (seeds 003/004); ``id``/``citation_idx`` are the [N] number as a
    string (across the whole conversation on the conversation route)."""

    id: str
    citation_idx: str
    search_type: Literal["rms", "external"]
    chunk_id: str | None
    text: str | None
    text_type: Literal["paragraph", "table", "image", "news"] = Field(
        description="Seed 004's enum: a transcript passage is paragraph, a post news; citewell's own type is in "
                    "chunk_text_type.")
    document_id: str = Field(None, json_schema_extra=_no_default,
                             description="The cited resource (absent when unknown).")
    document_name: str | None
    s3_file_key: str = Field(None, json_schema_extra=_no_default,
                             description="The stored file's key in the blob folder (absent when not stored).")
    external_url: str = Field(description="A URL the reader can open: the filing's own (metadata external_url), "
                                          "the post's own page, else a signed download (or, without stored bytes, "
                                          "viewer) link valid one to two hours.")
    metadata: ReferenceMetadata
    custom_metadata: dict[str, Any] | None
    citation: int = Field(description="Additive: the [N] of this reference in its message's text.")
    chunk_text_type: str | None = Field(description="Additive: citewell's own text_type of the chunk (paragraph, "
                                                    "table, image, news, transcript, post).")
    viewer_url: str | None = Field(None, description="Additive: a signed link (no API key needed, valid one to two "
                                                     "hours) to GET /rms/viewer, which shows this citation in place.")


class ReferencesResponse(_Closed):
    """``GET /v1/references`` (seed 004 ``ReferencesResponse``, no envelope):
    ``{"references": [...], "text": ...}``; ``text`` is additive."""

    references: list[RMSReference]
    text: str = Field(description="Additive: the message's text with its [N] markers (as the analytics stream and "
                                  "the chats profile return it): start_index/end_index/occurrences index it.")


class ReferencedMessage(_Closed):
    """One assistant message of a conversation: its id and the text its references' offsets index."""

    chat_message_id: str
    text: str


class ConversationReferencesPayload(_Closed):
    """``payload`` of the conversation references route."""

    references: list[RMSReference]
    messages: list[ReferencedMessage] = Field(
        description="Each assistant message's text with its [N] markers, in order (the references' "
                    "chat_message_id names the one their offsets index).")


class ConversationReferencesResponse(_Closed):
    """``{"error": null, "payload": {"references": [...], "messages": [...]}}``."""

    error: None
    payload: ConversationReferencesPayload


__all__ = [
    "AnalyticsError",
    "ConversationReferencesResponse",
    "AskAccepted",
    "AskBody",
    "ChatList",
    "ChatMessage",
    "ChatMessagesPage",
    "ChatOut",
    "ChatsError",
    "CreateSessionBody",
    "DatasetOut",
    "DeletedResponse",
    "MentionNotFound",
    "MentionOut",
    "MentionsBody",
    "MentionsPage",
    "MessageOut",
    "OffsetUnit",
    "PostMessageBody",
    "PostRef",
    "RMSReference",
    "ReferencesResponse",
    "ResearchPreviewOut",
    "ResourceListResponse",
    "ResourceOut",
    "ResourceResponse",
    "SessionMessagesResponse",
    "SessionResponse",
    "SessionsError",
    "TurnResponse",
]
