"""The sessions profile (seed 001): a message as ``content`` + ``response.parts[]`` +
``citations[]``.

Shape of :func:`render_message` (JSON-ready)::

    {"id": str | None, "role": "user" | "assistant" | "system",
     "content": str,                  # Message.text without its markers (rule 6)
     "response": None                 # user (and system) messages
               | {"type": "answer", "form": None,
                  "parts": [{"text": str, "source": Source | None}, ...]},
     "citations": [{"resource_id", "resource_title", "chunk_index", "metadata"}, ...],
     "resource_ids": [str, ...], "image_url": str | None,
     "created_at": "2026-08-05T10:02:14.480Z"}
    Source = {"chunk_id", "resource_id", "resource_title", "chunk_index", "metadata"}

``content``: each ``[N]`` marker (located by the numbered references' occurrences, in
their ``offset_unit``) is removed with the whitespace directly before it; each part's
text is its slice of the same result, so ``"".join(p["text"] for p in parts) ==
content``. Rule 5 escapes (``\\[12\\]``) are kept: content is markdown.

Additive fields the design defines appear only when they say something the seed's
fields do not (so a plain answer has exactly the seed's shape): a part's ``sources``
(further passages of its sentence, rule 6) when non-empty, ``support`` (rule 8) when
checked and ``relevance`` (:mod:`citewell.cite.relevance`) when judged; a citation's ``chunk_indices`` (rule 7) when it cites more than its first
chunk; a post's ``source``/``id`` on its source objects and citations; the message's
``warnings`` (``[{code, message, …}]``: no matching resources, files still processing,
dropped citations …) when there are any.

With ``render_message(message, offsets=UNIT)`` (``codepoint``, ``utf16``, ``utf8``) each
part also gets ``start_index``/``end_index``: the half-open span of the part's text in
``content``, in that unit (``content[start:end]`` for code points, UTF-16 code units
``content.encode("utf-16-le")[2*start:2*end]``, UTF-8 bytes ``content.encode()[start:end]``),
and the message gets ``offset_unit``. Without ``offsets`` the shape is exactly the seed's.
"""

from __future__ import annotations

from typing import Any

from citewell.cite.offsets import OffsetMap, check_unit
from citewell.models import Citation, Message, SourceRef
from citewell.store.base import iso_utc

_SOURCE_KEYS = ("chunk_id", "resource_id", "resource_title", "chunk_index", "metadata")


def _post_fields(obj: SourceRef | Citation) -> dict[str, Any]:
    extra = obj.model_extra or {}
    if extra.get("source") is not None and extra.get("id") is not None:
        return {"source": extra["source"], "id": extra["id"]}
    return {}


def render_source(ref: SourceRef | None) -> dict[str, Any] | None:
    """A part's ``source`` object: the seed's five fields (+ ``source``/``id`` for a post)."""
    if ref is None:
        return None
    out = {key: getattr(ref, key) for key in _SOURCE_KEYS}
    out["metadata"] = dict(ref.metadata or {})
    out.update(_post_fields(ref))
    return out


def render_citation(citation: Citation) -> dict[str, Any]:
    """One ``citations[]`` entry (rule 7)."""
    out: dict[str, Any] = {"resource_id": citation.resource_id, "resource_title": citation.resource_title,
                           "chunk_index": citation.chunk_index, "metadata": dict(citation.metadata or {})}
    if citation.chunk_indices and citation.chunk_indices != [citation.chunk_index]:
        out["chunk_indices"] = list(citation.chunk_indices)
    out.update(_post_fields(citation))
    return out


def marker_spans(message: Message) -> list[tuple[int, int]]:
    """Code-point spans of every ``[N]`` marker of ``message.text``, in text order,
    from the numbered references' ``occurrences`` (else ``start_index``/``end_index``)."""
    omap = OffsetMap(message.text)
    spans: set[tuple[int, int]] = set()
    for ref in message.references:
        if ref.citation is None:
            continue
        unit = check_unit(ref.offset_unit or message.offset_unit)
        pairs = [(o.start_index, o.end_index) for o in ref.occurrences or []]
        if not pairs and ref.start_index is not None and ref.end_index is not None:
            pairs = [(ref.start_index, ref.end_index)]
        for a, b in pairs:
            spans.add((omap.from_unit(a, unit), omap.from_unit(b, unit)))
    return sorted(spans)


def _kept(text: str, spans: list[tuple[int, int]]) -> list[bool]:
    """Per code point: kept in ``content`` (not a marker, nor whitespace right before one)."""
    keep = [True] * len(text)
    for a, b in spans:
        for i in range(a, b):
            keep[i] = False
        j = a - 1
        while j >= 0 and keep[j] and text[j].isspace():
            keep[j] = False
            j -= 1
    return keep


def render_message(message: Message, *, offsets: str | None = None) -> dict[str, Any]:
    """The seed 001 shape of ``message`` (see the module docstring).

    ``offsets``: None (default) renders exactly the seed's shape; a unit (``codepoint``,
    ``utf16``, ``utf8``) adds to each part ``start_index``/``end_index`` (half-open, the
    part's span of ``content`` in that unit) and to the message ``offset_unit``.

    Raises ``ValueError`` for an unknown unit, and when a reference offset does not fall
    on a character boundary of the text (a corrupt message).
    """
    if offsets is not None:
        check_unit(offsets)
    text = message.text
    keep = _kept(text, marker_spans(message))
    content = "".join(ch for ch, k in zip(text, keep) if k)
    response: dict[str, Any] | None = None
    if message.role == "assistant":
        parts: list[dict[str, Any]] = []
        spans: list[tuple[int, int]] = []  # code points of each rendered part in content
        pos = 0
        for part in message.parts:  # parts partition text: a part is the next len(part.text) code points
            end = pos + len(part.text)
            rendered: dict[str, Any] = {
                "text": "".join(ch for ch, k in zip(text[pos:end], keep[pos:end]) if k),
                "source": render_source(part.source),
            }
            if part.sources:
                rendered["sources"] = [render_source(s) for s in part.sources]
            if part.support is not None:
                rendered["support"] = dict(part.support)
            if getattr(part, "relevance", None) is not None:
                rendered["relevance"] = dict(part.relevance)  # type: ignore[arg-type]
            parts.append(rendered)
            at = spans[-1][1] if spans else 0
            spans.append((at, at + len(rendered["text"])))
            pos = end
        if offsets is not None:
            _locate_parts(parts, spans, content, offsets)
        response = {"type": "answer", "parts": parts, "form": None}
    out: dict[str, Any] = {
        "id": message.id,
        "role": message.role,
        "content": content,
        "response": response,
        "citations": [render_citation(c) for c in message.citations] if message.role == "assistant" else [],
        "resource_ids": list(message.resource_ids),
        "image_url": message.image_url,
        "created_at": iso_utc(message.created_at),
    }
    if offsets is not None:
        out["offset_unit"] = offsets
    if message.warnings:
        out["warnings"] = [w.model_dump(mode="json") for w in message.warnings]
    extra = message.model_extra or {}
    for key in ("generation", "grounded_coverage"):  # additive: who wrote the answer, how much is grounded
        if extra.get(key) is not None:
            out[key] = extra[key]
    return out


def _locate_parts(parts: list[dict[str, Any]], spans: list[tuple[int, int]], content: str, unit: str) -> None:
    """Give each rendered part its ``start_index``/``end_index`` in ``content`` (in ``unit``),
    right after its ``source`` (the parts partition ``content``, so ``spans`` are adjacent)."""
    omap = OffsetMap(content)
    for i, (part, (a, b)) in enumerate(zip(parts, spans)):
        items = list(part.items())
        located = dict(items[:2])  # text, source
        located["start_index"] = omap.to_unit(a, unit)
        located["end_index"] = omap.to_unit(b, unit)
        located.update(items[2:])
        parts[i] = located


__all__ = ["marker_spans", "render_citation", "render_message", "render_source"]
