"""Reading stored messages back (docs/architecture.md rule 10).

A stored message row carries ``format_version``:

- **current** (``format_version == FORMAT_VERSION``): the row's ``payload`` is the whole
  canonical :class:`~citewell.models.Message` as JSON, and it is read back exactly as
  stored: ``read_message(row).model_dump_json() == row["payload"]``, byte for byte. Its
  text is never rewritten and its markers are never renumbered, whatever happened in the
  workspace since (new or changed sources, a newer cite stage).
- **legacy** (``format_version`` NULL): the shape written before messages had a version:
  ``text`` with raw generator links (``[label](post:SOURCE:ID)``,
  ``[label](chunk:CHUNK_ID)``, ``[label](TYPE:ID)``) and ``references`` null. It is
  converted into exactly what a fresh turn would return: the cite stage runs on the raw
  text *without sources* (rule 4: every post link counts; a chunk link counts when the
  chunk exists in the message's workspace; entity links when the entity exists;
  anything else keeps its label and gets an ``unknown_target`` warning), then the row's
  identity (``id``, ``chat_id``, ``created_at``, ``status``, ``image_url``,
  ``resource_ids`` of a user message) is kept and ``format_version`` stamped.
  A user message is never cited: its text is kept as it is.
  A legacy row that already has numbered ``references`` (text with ``[N]``) keeps its
  text and references; parts and citations are rebuilt from the references' offsets.

Conversion is deterministic: the output depends only on the row and on which link
targets exist in the workspace (no clock, no randomness). Reading a stored message
(:func:`citewell.answer.messages.stored_message`) writes the converted message back on
first read (``persist``, default on), so "converted once" holds literally: later reads are current-row reads, byte-identical, even after the
workspace changes. The original legacy row is kept beside it (column ``legacy``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from citewell.errors import StoreError
from citewell.models import FORMAT_VERSION, Chunk, Message, Passage, Reference

from .offsets import OffsetMap, check_unit
from .parts import Marker, build_citations, build_parts, source_ref
from .processor import cite
from .support import apply_support
from .resolver import SourceResolver

#: Row keys :func:`read_message` looks at (the columns of the ``messages`` table).
ROW_KEYS = ("id", "chat_id", "role", "status", "text", "payload", "format_version", "created_at", "legacy")


def is_current(row: Mapping[str, Any]) -> bool:
    """Whether ``row`` is in the current format (it reads back without conversion)."""
    return row.get("format_version") == FORMAT_VERSION


def read_message(row: Mapping[str, Any], resolver: SourceResolver | None = None) -> Message:
    """The canonical :class:`Message` of a stored row (rule 10).

    Args:
        row: a mapping with the ``messages`` columns (see :data:`ROW_KEYS`; missing keys
            count as NULL). Current rows need ``format_version`` and ``payload`` (the
            message JSON). Legacy rows need ``text`` and ``role``; ``legacy`` (or
            ``payload``) may hold the original row as JSON with more fields
            (``references``, ``image_url``, ``resource_ids``, ``status`` …).
        resolver: link-target lookups in the message's workspace, used only to convert
            a legacy row (without one, post links still count, chunk and entity links
            do not: rule 4).

    Returns:
        The message: for a current row exactly the stored one; for a legacy row the
        conversion with ``format_version == FORMAT_VERSION``.

    Raises:
        StoreError: the row has a ``format_version`` newer than this citewell reads, or
            a current row whose payload is not a message.
    """
    version = row.get("format_version")
    if version is not None:
        if int(version) > FORMAT_VERSION:
            raise StoreError(f"message {row.get('id')} has format version {version}; this citewell reads "
                             f"up to {FORMAT_VERSION}: upgrade citewell")
        if int(version) == FORMAT_VERSION:
            payload = row.get("payload")
            if not payload:
                raise StoreError(f"message {row.get('id')} has no payload")
            return Message.model_validate_json(payload)
    return convert_legacy(row, resolver)


def _original(row: Mapping[str, Any]) -> dict[str, Any]:
    """The legacy row's own fields (JSON in ``legacy`` or ``payload``) under its columns."""
    fields: dict[str, Any] = {}
    for key in ("payload", "legacy"):  # ``legacy`` wins: it is the row as first stored
        raw = row.get(key)
        if raw:
            try:
                value = json.loads(raw) if isinstance(raw, (str, bytes)) else dict(raw)
            except ValueError:
                value = None
            if isinstance(value, dict):
                fields.update(value)
    for key in ("id", "chat_id", "role", "status", "text", "created_at"):
        if row.get(key) is not None:
            fields[key] = row[key]
    return fields


def _created_at(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    parsed = datetime.fromisoformat(str(value))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def convert_legacy(row: Mapping[str, Any], resolver: SourceResolver | None = None) -> Message:
    """Convert a legacy (``format_version`` NULL) row into a current message.

    See the module docstring; :func:`read_message` calls this for legacy rows.
    Deterministic: the same row and workspace give the same message.
    """
    old = _original(row)
    role = old.get("role") or "assistant"
    text = old.get("text") or ""
    references = old.get("references")
    if role != "assistant":
        message = Message(role=role, text=text)
        if old.get("resource_ids"):
            message.resource_ids = [str(r) for r in old["resource_ids"]]
    elif references:
        message = _renumbered(text, references)
    else:  # exactly what a fresh turn returns: cited, then checked for support (flag)
        message = apply_support(cite(text, resolver=resolver))
    message.id = str(old["id"]) if old.get("id") is not None else None
    message.chat_id = str(old["chat_id"]) if old.get("chat_id") is not None else None
    if old.get("status") in ("pending", "settled", "failed"):
        message.status = old["status"]
    created = _created_at(old.get("created_at"))
    if created is not None:
        message.created_at = created
    if old.get("image_url") is not None:
        message.image_url = str(old["image_url"])
    message.format_version = FORMAT_VERSION
    return message


def _renumbered(text: str, references: list[Any]) -> Message:
    """An assistant message from text that already has ``[N]`` and its references:
    text and references kept; parts and citations rebuilt from the offsets."""
    refs = [Reference.model_validate(r) for r in references]
    omap = OffsetMap(text)
    markers: list[Marker] = []
    for ref in refs:
        if ref.citation is None:
            continue
        unit = check_unit(ref.offset_unit or "codepoint")
        spans = [(o.start_index, o.end_index) for o in ref.occurrences or []]
        if not spans and ref.start_index is not None and ref.end_index is not None:
            spans = [(ref.start_index, ref.end_index)]
        src = None
        if ref.chunk_id and ref.resource_id and ref.chunk_index is not None:
            src = source_ref(Passage(
                chunk=Chunk(id=ref.chunk_id, resource_id=ref.resource_id, chunk_index=ref.chunk_index,
                            text=ref.text or "", metadata=dict(ref.metadata or {})),
                resource_title=ref.resource_title or "", resource_kind="post" if ref.type == "post" else "text"),
                ref.citation)
        for a, b in spans:
            start, end = omap.from_unit(a, unit), omap.from_unit(b, unit)
            markers.append(Marker(start, end, ref.citation, src))
        ref.offset_unit = unit  # type: ignore[assignment]
    parts = build_parts(text, sorted(markers, key=lambda m: m.start), offset_map=omap,
                        passage_texts={r.chunk_id: r.text for r in refs if r.chunk_id and r.text})
    citations, resource_ids = build_citations(parts)
    return Message(role="assistant", text=text, parts=parts, references=refs, citations=citations,
                   resource_ids=resource_ids, grounded=bool(markers))


__all__ = ["ROW_KEYS", "convert_legacy", "is_current", "read_message"]
