"""Typed results of :mod:`citewell.client`: pydantic models of the API's wire shapes.

Every model is open (``extra="allow"``): a field the server adds later survives as an
attribute (``model.some_new_field``) and in ``model.model_dump()``. Times are kept as the
ISO 8601 text the server sent. Fields are named as on the wire, per profile:

- sessions (seed 001): :class:`Session`, :class:`SessionMessage` (``content``, ``response.parts``,
  ``citations``), :class:`Turn`, :class:`SessionMessages`;
- resources: :class:`Resource`, :class:`ResourceList`, :class:`Deleted`;
- analytics (seeds 003/004): :class:`Reference` (an RMSReference);
- chats (seed 000): :class:`AskAccepted`, :class:`ChatMessage` (``text`` with ``[N]``,
  ``references``), :class:`ChatMessagesPage`, :class:`Chat`, :class:`Mention`,
  :class:`MentionNotFound`, :class:`MentionsPage`, :class:`Dataset`,
  :class:`ResearchPreview`, :class:`Pattern`;
- the answer stream: :class:`StreamEvent` and its kinds (:class:`ConversationEvent`,
  :class:`SearchResultsEvent`, :class:`CitationEvent`, :class:`AnswerEvent`,
  :class:`SupportEvent`, :class:`ResetEvent`, :class:`DoneEvent`, :class:`ErrorEvent`);
- documents: :class:`PresignedUrl`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError


class Model(BaseModel):
    """The base of every result: open (unknown fields are kept), compared by value."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class ErrorInfo(Model):
    """A coded error ``{code, message}``."""

    code: str
    message: str = ""


class Notice(Model):
    """A coded warning ``{code, message, …}`` (extra keys carry specifics such as ``page``)."""

    code: str
    message: str = ""


# -- sessions profile (seed 001) ------------------------------------------------------------

class Session(Model):
    """A session (the same object as a chat): ``{id, title, workspace_id, created_at, updated_at}``."""

    id: str
    title: str | None = None
    workspace_id: str | None = None
    created_at: str | None = None
    updated_at: str | None = None


class Source(Model):
    """The passage a part or citation came from."""

    chunk_id: str | None = None
    resource_id: str
    resource_title: str | None = None
    chunk_index: int | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class Part(Model):
    """A span of the answer with the one source it came from (None: unsourced). With an
    ``offsets`` unit it also has ``start_index``/``end_index``."""

    text: str
    source: Source | None = None


class Answer(Model):
    """``response`` of an assistant message: ``{type: "answer", parts, form}``."""

    type: str = "answer"
    parts: list[Part] = Field(default_factory=list)
    form: Any = None


class Citation(Model):
    """One cited resource (its first-cited passage)."""

    resource_id: str
    resource_title: str | None = None
    chunk_index: int | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class SessionMessage(Model):
    """A message in the sessions profile: ``content`` without markers, ``response.parts``
    with their sources, ``citations`` one per cited resource."""

    id: str | None = None
    role: Literal["user", "assistant", "system"]
    content: str = ""
    response: Answer | None = None
    citations: list[Citation] = Field(default_factory=list)
    resource_ids: list[str] = Field(default_factory=list)
    image_url: str | None = None
    created_at: str | None = None


class SessionMessages(Model):
    """``GET /v1/sessions/{id}/messages``: the session and its messages, oldest first."""

    session: Session
    messages: list[SessionMessage]


class Turn(Model):
    """``POST /v1/sessions/{id}/messages``: the session, the question and the answer."""

    session: Session
    user_message: SessionMessage
    assistant_message: SessionMessage


# -- resources -------------------------------------------------------------------------------

ResourceStatus = Literal["processing", "ready", "failed", "superseded", "missing"]


class Resource(Model):
    """An uploaded file: ``status`` processing → ready or failed (``error {code, message}``)."""

    id: str
    workspace_id: str | None = None
    title: str | None = None
    file_name: str | None = None
    kind: str | None = None
    media_type: str | None = None
    sha256: str | None = None
    size_bytes: int | None = None
    blob_key: str | None = None
    status: str
    error: ErrorInfo | None = None
    warnings: list[Notice] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    custom_metadata: dict[str, Any] | None = None
    extractor_version: str | None = None
    chunk_count: int = 0
    created_at: str | None = None
    updated_at: str | None = None


class ResourceList(Model):
    """``GET /v1/resources``: one page (oldest first) and ``total`` over all pages."""

    resources: list[Resource]
    total: int
    limit: int
    offset: int


class Deleted(Model):
    """``DELETE /v1/resources/{id}``: ``{resource_id, deleted: true}``."""

    resource_id: str
    deleted: bool


# -- analytics profile (seeds 003/004) ---------------------------------------------------------

class ReferenceMetadata(Model):
    """RMSReference ``metadata``: the seeds' typed keys plus the passage's provenance
    (``offset`` PDF boxes ``{page, top, left, width, height}``, ``blocks`` transcript cues …)."""

    calendar_date: str | None = None
    fiscal_year: int | None = None
    fiscal_quarter: str | None = None
    source: str | None = None
    tickers: list[str] = Field(default_factory=list)
    company_names: list[str] = Field(default_factory=list)
    document_category: str | None = None
    offset: list[dict[str, Any]] | None = None
    blocks: list[int] | None = None


class Reference(Model):
    """One evidence reference (an RMSReference): ``id``/``citation_idx`` are the ``[N]``
    number as text (on the conversation route: the number across the conversation, and
    ``citation`` is the ``[N]`` in its message); ``document_id`` the resource; ``text`` the
    cited passage; ``text_type`` in seed 004's enum, citewell's own in ``chunk_text_type``.
    The conversation route adds ``chat_message_id``; ``external_url`` opens the source (its
    own URL, or a signed download or viewer link); ``viewer_url`` is a signed link to the
    viewer page of the citation."""

    id: str
    citation_idx: str | None = None
    search_type: str | None = None
    chunk_id: str | None = None
    text: str | None = None
    text_type: str | None = None
    document_id: str | None = None
    document_name: str | None = None
    s3_file_key: str | None = None
    external_url: str | None = None
    metadata: ReferenceMetadata = Field(default_factory=ReferenceMetadata)
    custom_metadata: dict[str, Any] | None = None
    citation: int | None = None
    chunk_text_type: str | None = None
    chat_message_id: str | None = None
    viewer_url: str | None = None


class PresignedUrl(Model):
    """``GET /v1/presigned_url``: a URL of a document's original bytes that works without
    an API key until ``expires_at`` (ISO 8601 UTC)."""

    url: str
    expires_at: str


# -- chats profile (seed 000) -----------------------------------------------------------------

class AskAccepted(Model):
    """``POST /v1/ask`` (202): the turn runs in the background; poll ``message_id``."""

    chat_id: str
    message_id: str
    status: str = "pending"


class ChatReference(Model):
    """A ``references[]`` entry of a chats message: a post ``{type: "post", source, id,
    citation, start_index, end_index, …}``, a passage (``type: "chunk"``), or an entity
    ``{type, id}`` (pattern, dataset, research_preview, resource, chat)."""

    type: str
    id: str | None = None
    source: str | None = None
    citation: int | None = None
    start_index: int | None = None
    end_index: int | None = None


class ChatMessage(Model):
    """A message in the chats profile: ``status`` pending → settled (``text`` with ``[N]``,
    ``references``) or failed (``error {code, message}``)."""

    id: str | None = None
    chat_id: str | None = None
    role: Literal["user", "assistant", "system"]
    text: str = ""
    references: list[ChatReference] = Field(default_factory=list)
    status: Literal["pending", "settled", "failed"]
    warnings: list[Notice] = Field(default_factory=list)
    error: ErrorInfo | None = None
    created_at: str | None = None


class ChatMessagesPage(Model):
    """``GET /v1/chats/{id}/messages``: a page oldest first; pass ``next_after`` as ``after``."""

    messages: list[ChatMessage]
    next_after: str | None = None


class Chat(Model):
    """A chat (the same object as a session)."""

    id: str
    title: str | None = None
    workspace_id: str | None = None
    created_at: str | None = None
    updated_at: str | None = None


class Mention(Model):
    """A post with every field its source gave (``score``, ``likes``, ``permalink`` … as extras)."""

    source: str
    id: str
    text: str
    url: str | None = None
    author: str | None = None
    created_at: str | None = None
    dataset_id: str | None = None
    chunk_id: str | None = None


class MentionNotFound(Model):
    """A ``post_refs`` item that names no post of the workspace: ``{source, id, error}``."""

    source: str
    id: str
    error: ErrorInfo


def _mention_kind(value: Any) -> str:
    has_error = ("error" in value) if isinstance(value, dict) else getattr(value, "error", None) is not None
    return "not_found" if has_error else "mention"


MentionItem = Annotated[Annotated[Mention, Tag("mention")] | Annotated[MentionNotFound, Tag("not_found")],
                        Discriminator(_mention_kind)]


class MentionsPage(Model):
    """``POST /v1/mentions``: mentions (by refs: in the order asked, an unknown ref as a
    :class:`MentionNotFound`) and ``next_cursor`` (None on the last page)."""

    mentions: list[MentionItem]
    next_cursor: str | None = None


class Dataset(Model):
    """A posts file of the workspace (``post_count`` posts)."""

    id: str
    title: str | None = None
    file_name: str | None = None
    post_count: int = 0
    status: str
    error: ErrorInfo | None = None
    warnings: list[Notice] = Field(default_factory=list)
    created_at: str | None = None
    updated_at: str | None = None


class ResearchPreview(Model):
    """The pointer to a turn: its assistant message (``id`` = ``message_id``), status, question."""

    id: str
    chat_id: str | None = None
    status: str
    question: str | None = None
    message_id: str | None = None
    created_at: str | None = None


class Pattern(Model):
    """A pattern a tracking agent found: similar mentions (``members``, each
    ``{source, id, dataset_id, created_at}``, a ``post_refs`` item of ``mentions_by_refs``),
    the ``datasets`` and ``sources`` they span, ``first_seen``/``last_seen``, ``size`` and
    ``trend``."""

    id: str
    label: str | None = None
    size: int | None = None
    datasets: list[str] = []
    sources: list[str] = []
    first_seen: str | None = None
    last_seen: str | None = None
    trend: dict[str, Any] | None = None
    members: list[dict[str, Any]] = []


class PatternList(Model):
    """``GET /v1/patterns``: patterns newest first (without members) and how many there are."""

    patterns: list[Pattern]
    total: int


class TrackingAgent(Model):
    """A tracking agent: what it watches (``query``, ``filters``, ``keywords``, ``authors``),
    its schedule (``interval_s``, ``next_run_at``) and state (``state``, ``last_run_at``,
    ``last_error``, ``runs``, ``alerts``)."""

    id: str
    name: str
    query: str
    filters: Any = None
    keywords: list[str] = []
    authors: list[str] = []
    interval_s: int
    state: str
    next_run_at: str | None = None
    last_run_at: str | None = None
    last_error: dict[str, Any] | None = None
    runs: int = 0
    alerts: int = 0


class TrackingAgentList(Model):
    """``GET /v1/tracking_agents``."""

    tracking_agents: list[TrackingAgent]


class AgentRun(Model):
    """``POST /v1/tracking_agents/{id}/run``: what a run did (``alert`` None: nothing matched)."""

    agent_id: str
    ran: bool
    new_mentions: int
    matched: int
    alert: ChatMessage | None = None
    patterns: list[str] = []
    error: dict[str, Any] | None = None


class AlertsPage(Model):
    """``GET /v1/tracking_agents/{id}/messages``: alerts newest first; pass ``next_before`` as ``before``."""

    messages: list[ChatMessage]
    next_before: str | None = None


# -- the answer stream (SSE) ------------------------------------------------------------------

class StreamEvent(Model):
    """One event of an answer stream. ``event`` is its name (conversation,
    search_results, citation, answer, support, done, error, or a newer one), ``id``
    ``"<chat_message_id>:<seq>"`` (None when the event had none), ``data`` the whole JSON
    object as sent; the kinds below also expose their fields as attributes."""

    event: str
    id: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)

    @property
    def chat_message_id(self) -> str | None:
        """The message the event belongs to (from ``id``, else ``data``), or None."""
        found = _split_id(self.id)[0]
        if found is None and isinstance(self.data.get("chat_message_id"), str):
            found = self.data["chat_message_id"]
        return found

    @property
    def seq(self) -> int | None:
        """The event's position in its message's stream (from ``id``), or None."""
        return _split_id(self.id)[1]


class ConversationEvent(StreamEvent):
    """``conversation``: the conversation (session) the answer is stored in (the first event)."""

    conversation_id: str | None = None


class SearchResultsEvent(StreamEvent):
    """``search_results``: the retrieved passages with their document names and pages
    (``chat_message_id`` is the answer's message id)."""

    results: list[dict[str, Any]] = Field(default_factory=list)


class CitationEvent(StreamEvent):
    """``citation``: a numbered source, sent before the ``answer`` delta that first shows
    its ``[N]``: the reference as ``/v1/references`` gives it (without offsets) and
    ``citation``, its number; ``update`` when a source became known later."""

    citation: int | None = None
    citation_idx: str | None = None
    search_type: str | None = None
    chunk_id: str | None = None
    text: str | None = None
    text_type: str | None = None
    document_id: str | None = None
    document_name: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    update: bool = False


class AnswerEvent(StreamEvent):
    """``answer``: the next piece of the answer text (``delta``)."""

    delta: str = ""


class SupportEvent(StreamEvent):
    """``support``: the check of one cited passage against one sentence of the answer
    (``start``/``end`` locate the sentence in ``offset_unit``; ``support`` holds
    ``{verdict, score, reasons}``)."""

    part_index: int | None = None
    start: int | None = None
    end: int | None = None
    offset_unit: str | None = None
    citation: int | None = None
    chunk_id: str | None = None
    support: dict[str, Any] | None = None


class ResetEvent(StreamEvent):
    """``reset``: replace the answer text received so far with ``text`` (a safety valve
    of the streaming citer; :attr:`EventStream.text` follows it)."""

    text: str = ""


class DoneEvent(StreamEvent):
    """``done``: the answer is complete and stored (the last event)."""

    conversation_id: str | None = None
    status: str | None = None
    grounded: bool | None = None
    warnings: list[Notice] = Field(default_factory=list)


class ErrorEvent(StreamEvent):
    """``error``: the answer failed (the last event; its message is stored ``failed``);
    ``code`` (``SERVER_ERROR``, ``TURN_INTERRUPTED`` …) and ``message`` say why."""

    conversation_id: str | None = None
    code: str | None = None
    message: str | None = None


STREAM_EVENT_TYPES: dict[str, type[StreamEvent]] = {
    "conversation": ConversationEvent,
    "search_results": SearchResultsEvent,
    "citation": CitationEvent,
    "answer": AnswerEvent,
    "support": SupportEvent,
    "reset": ResetEvent,
    "done": DoneEvent,
    "error": ErrorEvent,
}


def _split_id(event_id: str | None) -> tuple[str | None, int | None]:
    if not event_id or ":" not in event_id:
        return None, None
    head, _, tail = event_id.rpartition(":")
    try:
        return head, int(tail)
    except ValueError:
        return head, None


#: Keys of ``data`` not copied to attributes (they name the event's own fields and properties).
_RESERVED = frozenset({"event", "id", "data", "chat_message_id", "seq"})


def stream_event(name: str, event_id: str | None, data: dict[str, Any]) -> StreamEvent:
    """The typed event for an SSE event ``name`` with JSON ``data`` (an unknown name is a
    plain :class:`StreamEvent`). ``error`` data may be ``{code, message}`` or
    ``{error: {code, message}}``."""
    cls = STREAM_EVENT_TYPES.get(name, StreamEvent)
    fields = {k: v for k, v in data.items() if k not in _RESERVED}
    if cls is ErrorEvent and isinstance(data.get("error"), dict):
        fields = {**fields, **{k: v for k, v in data["error"].items() if k in ("code", "message")}}
        fields.pop("error", None)
    try:
        return cls.model_validate({**fields, "event": name, "id": event_id, "data": data})
    except ValidationError:  # a field of an unexpected type: the raw data is still there
        return cls.model_validate({"event": name, "id": event_id, "data": data})


__all__ = [
    "STREAM_EVENT_TYPES",
    "AgentRun",
    "AlertsPage",
    "PatternList",
    "TrackingAgent",
    "TrackingAgentList",
    "Answer",
    "AnswerEvent",
    "AskAccepted",
    "Chat",
    "ChatMessage",
    "ChatMessagesPage",
    "ChatReference",
    "Citation",
    "CitationEvent",
    "ConversationEvent",
    "Dataset",
    "Deleted",
    "DoneEvent",
    "ErrorEvent",
    "ErrorInfo",
    "Mention",
    "MentionItem",
    "MentionNotFound",
    "MentionsPage",
    "Model",
    "Notice",
    "Part",
    "Pattern",
    "PresignedUrl",
    "Reference",
    "ReferenceMetadata",
    "ResearchPreview",
    "ResetEvent",
    "Resource",
    "ResourceList",
    "ResourceStatus",
    "SearchResultsEvent",
    "Session",
    "SessionMessage",
    "SessionMessages",
    "Source",
    "StreamEvent",
    "SupportEvent",
    "Turn",
    "stream_event",
]
