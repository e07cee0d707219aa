"""Line-level boxes of a span of a PDF passage, from pdfium's character boxes.

A stored PDF chunk keeps one box per column run (``metadata.offset``: the union of its
lines); a reader following a citation wants the cited *sentence* marked, one rectangle
per line it occupies. :func:`span_line_boxes` derives those boxes on demand from the page
itself, with the extractor's own character reader (:mod:`citewell.ingest.pdf`), so they
share its frame: fractions (0..1, 4 decimals) of the page as displayed, top-left origin,
``/Rotate`` and the CropBox applied, ``{"page", "top", "left", "width", "height"}``.

How a span is found on the page: the chunk's text is the page's own characters in
reading order (whitespace runs collapsed, line-end hyphens joined), one chunk line per
text line. Each chunk line the span touches is looked up as a *compact* string (no
whitespace, no hyphen marks) in the page's glyphs in pdfium's order; among several
occurrences the one whose glyphs lie most inside the passage's own boxes wins (ties: the
first after the previous line's match). Its glyphs are grouped into visual lines (a
pdfium line break, or a jump of more than 0.6 text heights) and each group's union is
one box. A chunk line not found (text the extractor wrote differently) falls back to
nothing for that line; the caller then still has the passage boxes.

This decodes an untrusted document: :func:`span_line_boxes_isolated` runs it in a child
process under the same limits as page rendering (:mod:`citewell.web.viewer_render`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from citewell.ingest.pdf_layout import SOFT_HYPHEN, Frame

#: Characters left out of the compact strings on both sides (hyphen marks: a broken word
#: is joined in the chunk text but split on the page).
_SKIP = frozenset({"-", SOFT_HYPHEN, "\u2010", "\u2011", "\x02"})


def _compact(text: str) -> str:
    return "".join(ch for ch in text if not ch.isspace() and ch not in _SKIP)


def _inside(cx: np.ndarray, cy: np.ndarray, boxes: Sequence[Mapping[str, Any]], page: int) -> np.ndarray:
    """Which glyph centres (display fractions) lie in one of ``boxes`` on ``page`` (a
    little slack: the passage boxes are rounded to 4 decimals)."""
    hit = np.zeros(len(cx), dtype=bool)
    for box in boxes:
        try:
            if int(box.get("page")) != page:  # type: ignore[arg-type]
                continue
            left, top = float(box["left"]), float(box["top"])
            right, bottom = left + float(box["width"]), top + float(box["height"])
        except (KeyError, TypeError, ValueError):
            continue
        hit |= (cx >= left - 0.002) & (cx <= right + 0.002) & (cy >= top - 0.002) & (cy <= bottom + 0.002)
    return hit


def span_line_boxes(pdf_path: str, page: int, chunk_text: str, start: int, end: int,
                    passage_boxes: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The line boxes of ``chunk_text[start:end]`` (code points) on ``page`` (1-based) of
    the PDF at ``pdf_path``, in reading order; ``passage_boxes`` are the chunk's stored
    ``offset`` boxes (they choose between repeated text). ``[]`` when the span's text is
    not found on the page. Raises :class:`~citewell.errors.NotFoundError` for a page the
    PDF does not have or a PDF that cannot be read."""
    from citewell.ingest.pdf import _BREAK, _GLYPH, _display_box, _text_rotation, page_chars
    from citewell.ingest.pdf_page import open_page

    start, end = max(0, start), min(len(chunk_text), end)
    fragments = [_compact(line) for line in chunk_text[start:end].split("\n")]
    fragments = [f for f in fragments if f]
    if not fragments:
        return []
    with open_page(pdf_path, page) as pdf_page:
        rotation, box, chars = page_chars(pdf_page)
    display = Frame(rotation, box)
    reading = Frame(_text_rotation(chars, rotation), box) if np.any(chars.kind == _GLYPH) else display
    glyphs = np.flatnonzero(chars.kind == _GLYPH)
    keep = [i for i in glyphs.tolist() if chr(int(chars.codes[i])) not in _SKIP]
    if not keep:
        return []
    at = np.array(keep)
    stream = "".join(chr(int(c)) for c in chars.codes[at])
    line_no = np.cumsum(chars.kind == _BREAK)[at]
    d0, e0, d1, e1 = display.from_user(*chars.boxes[:, at])
    width, height = display.width or 1.0, display.height or 1.0
    inside = _inside((d0 + d1) / 2 / width, (e0 + e1) / 2 / height, passage_boxes, page)
    r0, s0, r1, s1 = reading.from_user(*chars.boxes[:, at])

    chosen: list[int] = []  # positions in ``at``
    after = 0
    for fragment in fragments:
        best: tuple[float, int, int] | None = None  # (share inside the passage, after the last match, -position)
        pos = stream.find(fragment)
        while pos >= 0:
            key = (float(np.mean(inside[pos:pos + len(fragment)])), 1 if pos >= after else 0, -pos)
            best = key if best is None or key > best else best
            pos = stream.find(fragment, pos + 1)
        if best is None:
            continue
        pos = -best[2]
        chosen.extend(range(pos, pos + len(fragment)))
        after = pos + len(fragment)
    if not chosen:
        return []

    boxes: list[dict[str, Any]] = []
    group: list[int] = []

    def flush() -> None:
        if group:
            run = (float(r0[group].min()), float(s0[group].min()), float(r1[group].max()), float(s1[group].max()))
            boxes.append(_display_box(reading, display, run, page))
            group.clear()

    for k in sorted(set(chosen)):
        if group:
            last = group[-1]
            h = max(float(s1[last] - s0[last]), float(s1[k] - s0[k]), 0.5)
            jump = abs(float((s0[k] + s1[k]) - (s0[last] + s1[last]))) / 2 > 0.6 * h
            if jump or line_no[k] != line_no[last] and float(r0[k]) < float(r1[last]) - h:
                flush()
        group.append(k)
    flush()
    return [b for b in boxes if b["width"] > 0 and b["height"] > 0]


def span_line_boxes_isolated(pdf_path: Path, page: int, chunk_text: str, start: int, end: int,
                             passage_boxes: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """:func:`span_line_boxes` in a child process (memory ``CITEWELL_EXTRACT_MEMORY_MB``,
    default 2048; time ``CITEWELL_RENDER_TIMEOUT_S``, default 20). Raises ``NotFoundError``
    as it does, and :class:`~citewell.isolation.IsolationError` when the child runs out of
    memory or time or crashes."""
    from citewell.isolation import limit, run_isolated

    return run_isolated("citewell.ingest.pdf_lines:span_line_boxes", str(pdf_path), page, chunk_text, start, end,
                        [dict(b) for b in passage_boxes],
                        memory_mb=int(limit("CITEWELL_EXTRACT_MEMORY_MB", 2048)),
                        timeout_s=limit("CITEWELL_RENDER_TIMEOUT_S", 20.0))


__all__ = ["span_line_boxes", "span_line_boxes_isolated"]
