"""Typed results of :mod:`citewell.client`: pydantic models of the API's wire shapes.

The shapes are written once, in :mod:`citewell.wire` (the server's response models): each
model here is a thin subclass of its wire class that differs only in being open
(``extra="allow"``, :mod:`citewell.wire.open_copy`), so its fields, types and
required-ness are the server's and a field the server adds later survives as an attribute
(``model.some_new_field``) and in ``model.model_dump()``. The few client-only fields are
marked as such (``tests/test_wire_model.py`` lists them). Times are kept as the ISO 8601
text the server sent. Fields are named as on the wire, per profile:

- sessions (seed 001): :class:`Session`, :class:`SessionMessage` (``content``, ``response.parts``,
  ``citations``), :class:`Turn`, :class:`SessionMessages`;
- resources: :class:`Resource`, :class:`ResourceList`, :class:`Deleted`;
- analytics (seeds 003/004): :class:`Reference` (an RMSReference);
- chats (seed 000): :class:`AskAccepted`, :class:`ChatMessage` (``text`` with ``[N]``,
  ``references``), :class:`ChatMessagesPage`, :class:`Chat`, :class:`Mention`,
  :class:`MentionNotFound`, :class:`MentionsPage`, :class:`Dataset`,
  :class:`ResearchPreview`;
- tracking agents: :class:`TrackingAgent`, :class:`AgentRun`, :class:`AlertsPage`,
  :class:`Pattern` (its :class:`PatternMember` list), :class:`PatternSummary`,
  :class:`PatternList`;
- the answer stream: :class:`StreamEvent` and its kinds (:class:`ConversationEvent`,
  :class:`SearchResultsEvent`, :class:`CitationEvent`, :class:`AnswerEvent`,
  :class:`SupportEvent`, :class:`ResetEvent`, :class:`DoneEvent`, :class:`ErrorEvent`);
- documents: :class:`PresignedUrl`.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Discriminator, Field, Tag, ValidationError

from ..wire import agents as _agents
from ..wire import analytics as _analytics
from ..wire import chats as _chats
from ..wire import errors as _errors
from ..wire import resources as _resources
from ..wire import sessions as _sessions
from ..wire.base import ResourceStatus
from ..wire.open_copy import OpenCopy


class Model(OpenCopy):
    """The base of every result: open (unknown fields are kept), compared by value."""


class ErrorInfo(_errors.ErrorInfo, Model):
    """A coded error ``{code, message}``."""


class Notice(_errors.Notice, Model):
    """A coded warning ``{code, message, …}`` (extra keys carry specifics such as ``page``)."""


# -- sessions profile (seed 001) ------------------------------------------------------------

class Session(_sessions.Session, Model):
    """A session (the same object as a chat): ``{id, title, workspace_id, created_at, updated_at}``."""


class Source(_sessions.SourceOut, Model):
    """The passage a part or citation came from."""


class Part(_sessions.PartOut, Model):
    """A span of the answer with the one source it came from (None: unsourced). With an
    ``offsets`` unit it also has ``start_index``/``end_index``."""


class Answer(_sessions.AnswerOut, Model):
    """``response`` of an assistant message: ``{type: "answer", parts, form}``."""


class Citation(_sessions.CitationOut, Model):
    """One cited resource (its first-cited passage)."""


class SessionMessage(_sessions.MessageOut, Model):
    """A message in the sessions profile: ``content`` without markers, ``response.parts``
    with their sources, ``citations`` one per cited resource."""


class SessionMessages(_sessions.SessionMessagesData, Model):
    """``GET /v1/sessions/{id}/messages``: the session and its messages, oldest first."""


class Turn(_sessions.TurnData, Model):
    """``POST /v1/sessions/{id}/messages``: the session, the question and the answer."""


# -- resources -------------------------------------------------------------------------------

class Resource(_resources.ResourceOut, Model):
    """An uploaded file: ``status`` processing → ready or failed (``error {code, message}``)."""


class ResourceList(_resources.ResourceListData, Model):
    """``GET /v1/resources``: one page (oldest first) and ``total`` over all pages."""


class Deleted(_resources.DeletedData, Model):
    """``DELETE /v1/resources/{id}``: ``{resource_id, deleted: true}``."""


# -- analytics profile (seeds 003/004) ---------------------------------------------------------

class ReferenceMetadata(_analytics.ReferenceMetadata, Model):
    """RMSReference ``metadata``: the seeds' typed keys plus the passage's provenance
    (``offset`` PDF boxes ``{page, top, left, width, height}``, ``blocks`` transcript cues …)."""


class Reference(_analytics.RMSReference, Model):
    """One evidence reference (an RMSReference): ``id``/``citation_idx`` are the ``[N]``
    number as text (on the conversation route: the number across the conversation, and
    ``citation`` is the ``[N]`` in its message); ``document_id`` the resource; ``text`` the
    cited passage; ``text_type`` in seed 004's enum, citewell's own in ``chunk_text_type``.
    The conversation route adds ``chat_message_id``; ``external_url`` opens the source (its
    own URL, or a signed download or viewer link); ``viewer_url`` is a signed link to the
    viewer page of the citation."""

    #: Client-only: the conversation route's message of this reference (None elsewhere).
    chat_message_id: str | None = None


class PresignedUrl(_analytics.PresignedUrl, Model):
    """``GET /v1/presigned_url``: a URL of a document's original bytes that works without
    an API key until ``expires_at`` (ISO 8601 UTC)."""


# -- chats profile (seed 000) -----------------------------------------------------------------

class AskAccepted(_chats.AskAccepted, Model):
    """``POST /v1/ask`` (202): the turn runs in the background; poll ``message_id``."""


class ChatReference(_chats.ChatReference, Model):
    """A ``references[]`` entry of a chats message: a post ``{type: "post", source, id,
    citation, start_index, end_index, …}``, a passage (``type: "chunk"``), or an entity
    ``{type, id}`` (pattern, dataset, research_preview, resource, chat).

    The server declares only ``type``; the fields below are client-only conveniences
    (None when the entry has no such key)."""

    id: str | None = None
    source: str | None = None
    citation: int | None = None
    start_index: int | None = None
    end_index: int | None = None


class ChatMessage(_chats.ChatMessage, Model):
    """A message in the chats profile: ``status`` pending → settled (``text`` with ``[N]``,
    ``references``) or failed (``error {code, message}``)."""

    #: Client-only: a failed turn's ``{code, message}`` (None on other messages).
    error: ErrorInfo | None = None


class ChatMessagesPage(_chats.ChatMessagesPage, Model):
    """``GET /v1/chats/{id}/messages``: a page oldest first; pass ``next_after`` as ``after``."""


class Chat(_chats.ChatOut, Model):
    """A chat (the same object as a session)."""


class Mention(_chats.MentionOut, Model):
    """A post with every field its source gave (``score``, ``likes``, ``permalink`` … as extras)."""


class MentionNotFound(_chats.MentionNotFound, Model):
    """A ``post_refs`` item that names no post of the workspace: ``{source, id, error}``."""


def _mention_kind(value: Any) -> str:
    has_error = ("error" in value) if isinstance(value, dict) else getattr(value, "error", None) is not None
    return "not_found" if has_error else "mention"


#: A ``mentions[]`` item: told apart by its ``error`` key (the wire's ``MentionOut | MentionNotFound``).
MentionItem = Annotated[Annotated[Mention, Tag("mention")] | Annotated[MentionNotFound, Tag("not_found")],
                        Discriminator(_mention_kind)]


class MentionsPage(_chats.MentionsPage, Model):
    """``POST /v1/mentions``: mentions (by refs: in the order asked, an unknown ref as a
    :class:`MentionNotFound`) and ``next_cursor`` (None on the last page)."""

    mentions: list[MentionItem]  # type: ignore[assignment]  # the same shapes, with a discriminator


class Dataset(_chats.DatasetOut, Model):
    """A posts file of the workspace (``post_count`` posts)."""


class ResearchPreview(_chats.ResearchPreviewOut, Model):
    """The pointer to a turn: its assistant message (``id`` = ``message_id``), status, question."""


# -- tracking agents and patterns ---------------------------------------------------------------

class PatternMember(_agents.PatternMemberOut, Model):
    """A member of a pattern ``{source, id, dataset_id, created_at}``: a ``post_refs`` item
    of ``mentions_by_refs``."""


class PatternSummary(_agents.PatternSummary, Model):
    """A pattern as ``GET /v1/patterns`` lists it: without its members."""


class Pattern(_agents.PatternOut, Model):
    """A pattern a tracking agent found: similar mentions (``members``, each a
    :class:`PatternMember`, a ``post_refs`` item of ``mentions_by_refs``), the ``datasets``
    and ``sources`` they span, ``first_seen``/``last_seen``, ``size`` and ``trend``."""


class PatternList(_agents.PatternList, Model):
    """``GET /v1/patterns``: patterns newest first (without members) and how many there are."""


class TrackingAgent(_agents.TrackingAgentOut, Model):
    """A tracking agent: what it watches (``query``, ``filters``, ``keywords``, ``authors``),
    its schedule (``interval_s``, ``next_run_at``) and state (``state``, ``last_run_at``,
    ``last_error``, ``runs``, ``alerts``)."""


class TrackingAgentList(_agents.TrackingAgentList, Model):
    """``GET /v1/tracking_agents``."""


class AgentRun(_agents.RunOut, Model):
    """``POST /v1/tracking_agents/{id}/run``: what a run did (``alert`` None: nothing matched)."""


class AlertsPage(_agents.AlertsPage, Model):
    """``GET /v1/tracking_agents/{id}/messages``: alerts newest first; pass ``next_before`` as ``before``."""


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
    "PatternList",
    "PatternMember",
    "PatternSummary",
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
    "TrackingAgent",
    "TrackingAgentList",
    "Turn",
    "stream_event",
]
