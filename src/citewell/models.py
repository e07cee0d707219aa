"""Canonical data of citewell (docs/architecture.md, "Canonical data").

Every layer above the store speaks these types; each wire profile derives its own
shape from them. Field names follow the seeds (000 chats, 001 sessions, 003/004
analytics). Models allow extra fields so that additive fields survive a round trip.

Units used throughout:

- character offsets (``char_start``/``char_end``, ``start_index``/``end_index``) are
  Unicode code points unless an object states another ``offset_unit``;
- box coordinates (``top``, ``left``, ``width``, ``height``) are fractions (0..1) of
  the page *as displayed* (``/Rotate`` and CropBox applied), top-left origin;
- times (``start_time``, ``end_time``) are seconds, millisecond precision;
- pages are 1-based physical pages.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

ResourceKind = Literal["pdf", "transcript", "text", "post"]
ResourceStatus = Literal["processing", "ready", "failed", "superseded", "missing"]
TextType = Literal["paragraph", "table", "image", "news", "transcript", "post"]
OffsetUnit = Literal["codepoint", "utf16", "utf8"]
ENTITY_TYPES: tuple[str, ...] = ("pattern", "dataset", "research_preview", "resource", "chat")
FORMAT_VERSION = 1


def utcnow() -> datetime:
    """Return the current time as an aware UTC ``datetime``."""
    return datetime.now(timezone.utc)


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Box(_Model):
    """One highlight rectangle on a PDF page: fractions of the displayed page, top-left origin."""

    page: int
    top: float
    left: float
    width: float
    height: float


class ErrorInfo(_Model):
    """A coded error (``code`` from docs/architecture.md "Errors", human ``message``)."""

    code: str = Field(description="Stable error code (API_KEY_MISSING, NOT_FOUND, INVALID_REQUEST_BODY …).")
    message: str = Field(description="What went wrong, for people.")


class Notice(_Model):
    """A warning attached to a resource or message: ``{code, message, …}``.

    Extra keys carry specifics: ``page`` (NO_TEXT_LAYER), ``line`` (CUE_DROPPED,
    LINE_SKIPPED), ``label``/``source``/``id``/``chunk_id`` (unknown_target).
    """

    code: str
    message: str


class Resource(_Model):
    """One ingested file version (a PDF, a transcript, a text file or a posts file).

    ``metadata`` holds the typed metadata of seeds 003/004 (calendar_date, fiscal_year,
    fiscal_quarter, tickers, company_names, document_category, document_subcategory,
    sector, publisher, source, external_url, page_count …); ``custom_metadata`` is free.
    """

    id: str
    workspace_id: str
    title: str
    file_name: str
    kind: ResourceKind | None = None
    media_type: str | None = None
    sha256: str
    size_bytes: int
    blob_key: str | None = None
    status: ResourceStatus = "processing"
    error: ErrorInfo | None = None
    warnings: list[Notice] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    custom_metadata: dict[str, Any] | None = None
    extractor_version: str | None = None
    chunk_count: int = 0
    paths: list[str] = Field(default_factory=list)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class Chunk(_Model):
    """A passage of a resource with its provenance.

    ``text`` equals the resource's extracted text sliced at ``[char_start, char_end)``
    (code points). ``metadata`` always has ``source_type`` (the resource kind) and,
    by kind: PDF ``page`` (1-based) and ``offset`` (list of :class:`Box` dicts, one per
    column run); transcript ``start_time``/``end_time`` (seconds), ``blocks`` (0-based
    cue positions) and ``speakers``; post ``source``/``id``/``created_at``; text
    ``char_start``/``char_end``.
    """

    id: str
    resource_id: str
    chunk_index: int
    text: str
    text_type: TextType = "paragraph"
    char_start: int = 0
    char_end: int = 0
    metadata: dict[str, Any] = Field(default_factory=dict)


class Mention(_Model):
    """One social post (seed 000 "Mention"): unique by (``source``, ``id``) in a workspace.

    Engagement counts (``score``, ``likes``, ``num_comments`` …) and ``url``/``permalink``
    are kept as the source gave them in ``extra``-style fields.
    """

    source: str
    id: str
    text: str
    url: str | None = None
    author: str | None = None
    created_at: str | None = None
    dataset_id: str | None = None
    chunk_id: str | None = None

    @field_validator("url", "author", "created_at", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        """A number, object or list a source gave (stored before citewell wrote them as
        text) reads as text, like ``citewell.ingest.posts.as_text``."""
        if value is None or isinstance(value, str):
            return value
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")) if isinstance(value, (dict, list)) \
            else str(value)


class Passage(_Model):
    """A retrieved chunk with what a generator and the cite stage need to know about it.

    ``score`` is the retriever's score (higher is better); ``rank`` is 1-based.
    """

    chunk: Chunk
    resource_title: str
    resource_kind: ResourceKind
    file_name: str | None = None
    score: float = 0.0
    rank: int = 0
    #: Other names of the resource from its metadata (tickers, company names): a question
    #: may name a document by them.
    resource_names: list[str] = Field(default_factory=list)


class Occurrence(BaseModel):
    """One ``[N]`` marker in a message text: half-open ``[start_index, end_index)``, plus
    its rule-8 ``support`` once checked and its ``relevance`` to the question
    (:mod:`citewell.cite.relevance`) once judged. A closed shape (unknown keys are ignored): a
    100 KB answer has hundreds of occurrences, and an open model validates 25% slower."""

    start_index: int
    end_index: int
    support: dict[str, Any] | None = None
    relevance: dict[str, Any] | None = None


class Reference(_Model):
    """A numbered source (``type`` chunk or post) or an entity pointer.

    Numbered: ``text[start_index:end_index] == f"[{citation}]"`` in ``offset_unit``;
    ``occurrences`` lists every marker. A post reference also carries ``source`` and
    ``id``. An entity reference (``type`` in :data:`ENTITY_TYPES`) has only ``type``
    and ``id``.
    """

    type: str
    id: str | None = None
    source: str | None = None
    citation: int | None = None
    start_index: int | None = None
    end_index: int | None = None
    occurrences: list[Occurrence] | None = None
    offset_unit: OffsetUnit | None = None
    chunk_id: str | None = None
    resource_id: str | None = None
    resource_title: str | None = None
    chunk_index: int | None = None
    text: str | None = None
    text_type: str | None = None
    metadata: dict[str, Any] | None = None


class SourceRef(_Model):
    """The source of a part or citation (seed 001): a passage of a resource."""

    chunk_id: str
    resource_id: str
    resource_title: str
    chunk_index: int
    metadata: dict[str, Any] = Field(default_factory=dict)


class Part(_Model):
    """A span of ``Message.text`` through one sentence and its markers (rule 6).

    ``"".join(p.text for p in parts) == message.text``; ``start_index``/``end_index``
    locate the part in the text (``offset_unit`` of the message).
    """

    text: str
    source: SourceRef | None = None
    sources: list[SourceRef] = Field(default_factory=list)
    support: dict[str, Any] | None = None
    relevance: dict[str, Any] | None = None


class Citation(_Model):
    """One cited resource (rule 7): its first-cited passage plus ``chunk_indices``."""

    resource_id: str
    resource_title: str
    chunk_index: int
    metadata: dict[str, Any] = Field(default_factory=dict)
    chunk_indices: list[int] = Field(default_factory=list)


class Message(_Model):
    """The canonical chat message every profile renders.

    ``text`` carries ``[N]`` markers; ``references`` the numbered sources (then entity
    references); ``parts`` partition ``text``; ``citations`` one entry per cited
    resource; ``resource_ids`` the cited resources in first-citation order.
    """

    id: str | None = None
    chat_id: str | None = None
    role: Literal["user", "assistant", "system"] = "assistant"
    text: str = ""
    status: Literal["pending", "settled", "failed"] = "settled"
    parts: list[Part] = Field(default_factory=list)
    references: list[Reference] = Field(default_factory=list)
    citations: list[Citation] = Field(default_factory=list)
    resource_ids: list[str] = Field(default_factory=list)
    image_url: str | None = None
    warnings: list[Notice] = Field(default_factory=list)
    offset_unit: OffsetUnit = "codepoint"
    grounded: bool = True
    format_version: int = FORMAT_VERSION
    created_at: datetime = Field(default_factory=utcnow)
