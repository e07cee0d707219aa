"""The analytics profile (seeds 003/004): evidence references (RMSReference) with their
typed metadata, the references routes' answers and the presigned URL of a document."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import ClosedModel, OpenModel
from .enums import ENUMS


def _enum(key: str) -> Any:
    """The ``Literal`` of seed 004's enum of metadata key ``key``."""
    return Literal.__getitem__(ENUMS[key])


def _no_default(schema: dict[str, Any]) -> None:
    """JSON Schema of an optional field that is absent rather than null: no ``default``."""
    schema.pop("default", None)


def _absent() -> Any:
    """An optional field that is absent (never null) when it has no value."""
    return Field(None, json_schema_extra=_no_default)


class ReferenceMetadata(OpenModel):
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


class RMSReference(OpenModel):
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


class ReferencesResponse(ClosedModel):
    """``GET /v1/references`` (seed 004 ``ReferencesResponse``, no envelope):
    ``{"references": [...], "text": ...}``; ``text`` is additive."""

    references: list[RMSReference]
    text: str = Field(description="Additive: the message's text with its [N] markers (as the analytics stream and "
                                  "the chats profile return it): start_index/end_index/occurrences index it.")


class ReferencedMessage(ClosedModel):
    """One assistant message of a conversation: its id and the text its references' offsets index."""

    chat_message_id: str
    text: str


class ConversationReferencesPayload(ClosedModel):
    """``payload`` of the conversation references route."""

    references: list[RMSReference]
    messages: list[ReferencedMessage] = Field(
        description="Each assistant message's text with its [N] markers, in order (the references' "
                    "chat_message_id names the one their offsets index).")


class ConversationReferencesResponse(ClosedModel):
    """``{"error": null, "payload": {"references": [...], "messages": [...]}}``."""

    error: None
    payload: ConversationReferencesPayload


class PresignedUrl(ClosedModel):
    """``payload`` of ``GET /v1/presigned_url``."""

    url: str = Field(description="Absolute URL of the original bytes; works without an API key until expires_at.")
    expires_at: str = Field(description="When the URL stops working: ISO 8601 UTC, whole seconds "
                                        "(2026-03-02T15:49:29Z).")


class PresignedUrlResponse(ClosedModel):
    """``{"error": null, "payload": {"url", "expires_at"}}``."""

    error: None
    payload: PresignedUrl


__all__ = ["ConversationReferencesPayload", "ConversationReferencesResponse", "PresignedUrl", "PresignedUrlResponse",
           "RMSReference", "ReferenceMetadata", "ReferencedMessage", "ReferencesResponse"]
