"""The viewer's data as JSON: one citation where it lives, for the web app (``/``).

:func:`viewer_data` turns a :class:`~citewell.web.viewer_page.Cited` (what the HTML viewer
shows) and its message into the payload of ``GET /rms/viewer/data``::

    {citation_idx, chat_message_id, kind ("pdf" | "transcript" | "post" | "text"), title,
     resource: {id, title, file_name, kind, metadata} | null,
     passage: {chunk_id, text, text_type, metadata},     # the reference's chunk, exact text
     quotes: [{start_index, end_index,                   # the [N] marker in the answer (code points)
               sentence,                                 # the citing sentence, markers removed
               passage_start, passage_end, how,          # its span in passage.text (cite.quote)
               support,                                  # {verdict, score, reasons} or null
               boxes: [{page, top, left, width, height}]}],   # PDF: the span's own line boxes
     pages: {cited: [int], count: int | null, images: {page: signed URL}},   # PDF
     cues: [{start, end, text, role: "quoted" | "passage" | "context"}],      # transcript
     media: {url, type: "audio" | "video"} | null,                           # transcript
     post: {source, id, author, community, created_at, title, text, links, engagement,
            quote_start, quote_end} | null,                                  # post
     context: {before, after} | null,                                        # text
     download_url}

Every string is data for ``textContent``, never HTML. Offsets are Unicode code points
(JavaScript strings index UTF-16: the app converts). Line boxes come from
:mod:`citewell.ingest.pdf_lines` (the page's own character boxes, in a child process)
and are cached per process; when they cannot be derived the quote has ``boxes: []`` and
the passage boxes (``passage.metadata.offset``) remain.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from functools import partial
from pathlib import Path
from typing import Any

from ..cite.offsets import convert_offsets
from ..cite.quote import quoted_span
from ..cite.support import message_sentence
from ..errors import CitewellError
from ..ingest.pdf_lines import span_line_boxes_isolated
from ..isolation import IsolationError
from ..models import Message, Reference
from ..profiles.analytics import numbered_references
from .viewer_page import (
    CONTEXT_CUES,
    Cited,
    _cues,
    _engagement,
    _neighbours,
    _seconds,
    cited_pages,
    post_field,
    post_links,
    recording,
)

log = logging.getLogger("citewell.web.viewer")

#: Line-box results kept per process (each costs a child process to derive).
_CACHE_SIZE = 512
_cache: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
_cache_lock = threading.Lock()


def line_boxes(pdf_path: Path, sha256: str, page: int, text: str, start: int, end: int,
               passage_boxes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The line boxes of ``text[start:end]`` on ``page`` of the PDF (see
    :mod:`citewell.ingest.pdf_lines`), cached by (document, page, text, span); ``[]`` when
    they cannot be derived (the failure is logged, never raised)."""
    key = json.dumps([sha256, page, text, start, end, passage_boxes], sort_keys=True)
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return [dict(b) for b in _cache[key]]
    try:
        boxes = span_line_boxes_isolated(pdf_path, page, text, start, end, passage_boxes)
    except (CitewellError, IsolationError) as exc:
        log.warning("line boxes of page %d of %s: %s", page, sha256[:12], exc)
        return []
    with _cache_lock:
        _cache[key] = boxes
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return [dict(b) for b in boxes]


def _part_bounds(message: Message) -> list[tuple[int, int]]:
    bounds, pos = [], 0
    for part in message.parts:
        bounds.append((pos, pos + len(part.text)))
        pos += len(part.text)
    return bounds


def quotes(message: Message, ref: Reference) -> list[dict[str, Any]]:
    """One entry per occurrence of ``ref``'s ``[N]`` in ``message`` (code-point offsets):
    the marker's span, the citing sentence (its part, every marker removed), the span of
    the passage that backs it (:func:`~citewell.cite.quote.quoted_span`) and its support.
    ``boxes`` is left empty (PDF line boxes are added by the caller)."""
    markers = [(o.start_index, o.end_index) for r in numbered_references(message) for o in (r.occurrences or [])]
    bounds = _part_bounds(message)
    passage = ref.text or ""
    out = []
    for occ in ref.occurrences or []:
        a, b = next(((x, y) for x, y in bounds if x <= occ.start_index < y), (0, len(message.text)))
        sentence = message_sentence(message.text, a, b, markers)
        span = quoted_span(sentence, passage, ref.text_type)
        out.append({"start_index": occ.start_index, "end_index": occ.end_index, "sentence": sentence,
                    "passage_start": span.start, "passage_end": span.end, "how": span.how,
                    "support": occ.support, "boxes": []})
    return out


def _transcript(cited: Cited, spans: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """The cues to show: a few before, the passage's (``quoted`` when a cited sentence
    overlaps the cue's line, else ``passage``), a few after."""
    meta = cited.metadata
    before, after = _neighbours(cited)
    cues: list[dict[str, Any]] = []

    def add(role: str, start: float | None, end: float | None, text: str) -> None:
        cues.append({"start": start, "end": end, "text": text, "role": role})

    if before is not None:
        for cue in _cues(before.text, before.metadata.get("cue_times"))[-CONTEXT_CUES:]:
            add("context", *cue)
    pos = 0
    for start, end, line in _cues(cited.reference.text or "", meta.get("cue_times")):
        lo, hi = pos, pos + len(line)
        quoted = any(a < hi and b > lo for a, b in spans) if spans else True
        add("quoted" if quoted else "passage", start, end, line)
        pos = hi + 1
    if after is not None:
        for cue in _cues(after.text, after.metadata.get("cue_times"))[:CONTEXT_CUES]:
            add("context", *cue)
    return cues


def _media(cited: Cited) -> dict[str, str] | None:
    found = recording(cited)
    if found is None:
        return None
    base, video = found
    return {"url": base, "type": "video" if video else "audio"}


def _post(cited: Cited, spans: list[tuple[int, int]]) -> dict[str, Any]:
    meta, mention, ref = cited.metadata, cited.mention, cited.reference
    pick = partial(post_field, cited)

    text = mention.text if mention is not None else (ref.text or "")
    links = post_links(cited)
    quote_start = quote_end = None
    if spans:
        chunk = ref.text or ""
        at = text.find(chunk) if chunk else -1
        if at >= 0:
            quote_start, quote_end = at + spans[0][0], at + spans[0][1]
    return {"source": ref.source or pick("source"), "id": ref.id or pick("id"), "author": pick("author"),
            "community": pick("community"), "created_at": pick("created_at"), "title": pick("title"),
            "text": text, "links": links, "engagement": [[k, v] for k, v in _engagement(mention, meta)],
            "quote_start": quote_start, "quote_end": quote_end}


def viewer_data(cited: Cited, message: Message, *, citation_idx: str, pdf: tuple[Path, str] | None,
                page_count: int | None) -> dict[str, Any]:
    """The payload of ``GET /rms/viewer/data`` (module docstring) for ``cited``, the
    reference numbered ``[N]`` of ``message``. ``pdf``: the stored PDF's path and SHA-256
    (None when not a PDF or not stored: no line boxes); ``page_count``: its pages."""
    message = convert_offsets(message, "codepoint") if message.offset_unit != "codepoint" else message
    ref = next((r for r in numbered_references(message) if r.citation == cited.reference.citation), cited.reference)
    found = quotes(message, ref)
    spans = [(q["passage_start"], q["passage_end"]) for q in found]
    kind = cited.kind
    meta = cited.metadata
    res = cited.resource
    data: dict[str, Any] = {
        "citation_idx": citation_idx, "chat_message_id": message.id, "citation": ref.citation, "kind": kind,
        "title": cited.title,
        "resource": None if res is None else {"id": res.id, "title": res.title, "file_name": res.file_name,
                                              "kind": res.kind, "metadata": res.metadata},
        "passage": {"chunk_id": ref.chunk_id, "text": ref.text or "", "text_type": ref.text_type, "metadata": meta},
        "quotes": found, "pages": None, "cues": None, "media": None, "post": None, "context": None,
        "download_url": cited.download_url,
    }
    if kind == "pdf":
        pages = cited_pages(ref)
        data["pages"] = {"cited": pages, "count": page_count,
                         "images": {str(p): u for p, u in sorted(cited.page_images.items())}}
        if pdf is not None and pages:
            boxes = [dict(b) for b in meta.get("offset") or [] if isinstance(b, dict)]
            for quote in found:
                quote["boxes"] = line_boxes(pdf[0], pdf[1], pages[0], ref.text or "", quote["passage_start"],
                                            quote["passage_end"], boxes)
    elif kind == "transcript":
        data["cues"] = _transcript(cited, spans)
        data["media"] = _media(cited)
        start, end = _seconds(meta.get("start_time")), _seconds(meta.get("end_time"))
        data["passage"]["start_time"], data["passage"]["end_time"] = start, end
    elif kind == "post":
        data["post"] = _post(cited, spans)
    else:
        before, after = _neighbours(cited)
        data["context"] = {"before": before.text if before else None, "after": after.text if after else None}
    return data


__all__ = ["line_boxes", "quotes", "viewer_data"]
