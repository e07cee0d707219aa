"""PDF extractor: pypdfium2 text layer → reading-ordered chunks with page boxes.

``extract_pdf(data, name=...)`` returns an :class:`~citewell.extraction.Extraction`
(kind ``pdf``, media type ``application/pdf``):

- ``text``: every page's chunks in reading order; chunks are separated by ``"\\n\\n"``
  (also between pages). Each chunk's text is its lines joined by ``"\\n"``; a line is
  the page's own characters (runs of whitespace collapsed to one space, pdfium's
  line-end hyphen marker joins the broken word when the next line goes on in lower case,
  e.g. ``impor-``/``tance`` → ``importance``; otherwise it is written ``-``).
- each chunk: ``metadata = {"source_type": "pdf", "page": N (1-based physical page),
  "offset": [box, …]}`` (+ ``page_label`` when the PDF defines printed labels); a box is
  ``{"page", "top", "left", "width", "height"}`` in fractions (0..1, 4 decimals) of the
  page as displayed (CropBox and /Rotate applied, top-left origin), one per column run.
  Also, from :mod:`citewell.ingest.pdf_tables`: ``page_heading`` (the title lines at the
  top of the page, such as ``CONSOLIDATED BALANCE SHEETS (in millions)``) and, for a
  chunk holding table rows, ``table`` ``{"rows": [[start, end], …], "header", "periods",
  "title"}`` (row spans in the chunk text, the column header labelling them — carried from
  an earlier chunk of the page when the table started there — its periods, and the
  lead-in lines that title the table, such as ``Selected financial data for the
  International segment was as follows ($ in millions):``).
- ``warnings``: ``{"code": "NO_TEXT_LAYER", "message", "page"}`` per page without text.
- ``metadata``: ``{"page_count": N}`` (+ ``pdf_title`` from the info dictionary).

Errors (:class:`~citewell.errors.IngestError`): ``EMPTY_FILE``, ``PDF_CORRUPT``,
``PDF_ENCRYPTED`` (only when a user password is needed).
"""

from __future__ import annotations

import ctypes
import math
import re
from itertools import repeat
from typing import Any, NamedTuple

import numpy as np
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from citewell.errors import IngestError
from citewell.extraction import ChunkDraft, Extraction, TextBuilder
from citewell.ingest.pdf_layout import SOFT_HYPHEN, ChunkPlan, Frame, Seg, make_blocks, make_chunks, order_lines
from citewell.ingest.pdf_tables import page_heading, page_tables

__all__ = ["extract_pdf", "page_chars"]

_CHUNK_SEP = "\n\n"
_SPACES = {0x20, 0x09, 0xA0, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006,
           0x2007, 0x2008, 0x2009, 0x200A, 0x202F, 0x205F, 0x3000, 0x0B, 0x0C}


def extract_pdf(data: bytes, *, name: str) -> Extraction:
    """Extract a PDF's text layer into page-bound chunks with display-frame boxes.

    ``data`` is the whole file; ``name`` (file name) is only used in messages.
    Raises :class:`IngestError` with ``EMPTY_FILE``, ``PDF_CORRUPT`` or ``PDF_ENCRYPTED``.
    """
    if not data:
        raise IngestError(f"{name}: the file is empty", code="EMPTY_FILE")
    doc = _open(data, name)
    try:
        n_pages = len(doc)
        if n_pages <= 0:
            raise IngestError(f"{name}: the PDF has no pages", code="PDF_CORRUPT")
        builder = TextBuilder()
        chunks: list[ChunkDraft] = []
        warnings: list[dict[str, Any]] = []
        laid_out: list[tuple[int, str, list[ChunkPlan], Frame, Frame]] = []
        for index in range(n_pages):
            page_no = index + 1
            try:
                label = doc.get_page_label(index)
            except Exception:  # pragma: no cover - label trees are optional
                label = ""
            try:
                plans, frame_display, frame_read = _page_layout(doc, index)
            except pdfium.PdfiumError as exc:
                warnings.append({
                    "code": "NO_TEXT_LAYER",
                    "message": f"page {page_no} could not be read ({exc}); no text taken from it",
                    "page": page_no,
                })
                continue
            if not plans:
                warnings.append({
                    "code": "NO_TEXT_LAYER",
                    "message": f"page {page_no} has no text layer (scanned image?); no text taken from it",
                    "page": page_no,
                })
                continue
            laid_out.append((page_no, label, plans, frame_display, frame_read))
        _mark_running_lines(laid_out)
        for page_no, label, plans, frame_display, frame_read in laid_out:
            heading = page_heading(plans)
            texts = [plan.text for plan in plans]
            tables = page_tables(texts, [plan.text_type for plan in plans])
            for plan, piece, table in zip(plans, texts, tables):
                if builder.length:
                    builder.sep(_CHUNK_SEP)
                start, end = builder.add(piece)
                boxes = [
                    _display_box(frame_read, frame_display, run, page_no)
                    for run in plan.column_runs()
                ]
                meta: dict[str, Any] = {"source_type": "pdf", "page": page_no, "offset": boxes}
                if label and label.strip():
                    meta["page_label"] = label.strip()
                if heading:
                    meta["page_heading"] = heading
                if table is not None:
                    meta["table"] = table
                chunks.append(ChunkDraft(piece, start, end, plan.text_type, meta))
        metadata: dict[str, Any] = {"page_count": n_pages}
        try:
            title = (doc.get_metadata_value("Title") or "").strip()
        except Exception:  # pragma: no cover - broken info dict
            title = ""
        if title:
            metadata["pdf_title"] = title
        return Extraction(
            kind="pdf",
            media_type="application/pdf",
            text=builder.text(),
            chunks=chunks,
            warnings=warnings,
            metadata=metadata,
        )
    finally:
        doc.close()


_DIGITS = re.compile(r"\d+")


def _running_key(text: str) -> str:
    """A line's text with digits and case ignored: a running header or footer keeps it
    from page to page (``Verizon 2022 Annual Report on Form 10-K 22``)."""
    return _DIGITS.sub("#", " ".join(text.lower().split()))


def _mark_running_lines(pages: list[tuple[int, str, list[ChunkPlan], Frame, Frame]]) -> None:
    """Mark running headers and footers: among the first two and last two lines of each
    page, those whose :func:`_running_key` recurs at a page edge on at least 3 pages and
    on at least 30% of the pages with text. Marked lines stay in the text (FinanceBench
    quotes start with headers such as "3M Company and Subsidiaries") but are set apart
    by a blank line, so no quoted sentence runs into a page footer."""
    edges: list[list] = []
    for _, _, plans, _, _ in pages:
        lines = [ln for plan in plans for ln in plan.lines]
        edges.append(lines[:2] + lines[-2:] if len(lines) > 4 else lines)
    counts: dict[str, int] = {}
    for lines in edges:
        for key in {_running_key(ln.text) for ln in lines}:
            counts[key] = counts.get(key, 0) + 1
    threshold = max(3, math.ceil(0.3 * len(pages)))
    running = {key for key, n in counts.items() if n >= threshold}  # "#" too: page numbers
    for lines in edges:
        for ln in lines:
            if _running_key(ln.text) in running:
                ln.running = True


def _open(data: bytes, name: str) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        if code in (pdfium_c.FPDF_ERR_PASSWORD, pdfium_c.FPDF_ERR_SECURITY):
            raise IngestError(f"{name}: the PDF is encrypted and needs a password", code="PDF_ENCRYPTED") from None
        raise IngestError(f"{name}: not a readable PDF ({exc})", code="PDF_CORRUPT") from None
    except Exception as exc:  # pragma: no cover - defensive: never leak pdfium internals
        raise IngestError(f"{name}: not a readable PDF ({exc})", code="PDF_CORRUPT") from None


def _page_box(page: pdfium.PdfPage) -> tuple[float, float, float, float]:
    """The visible page area in user space: CropBox ∩ MediaBox, normalised.

    pdfium's page bounding box resolves boxes inherited from the page tree (``/Pages``),
    which ``get_mediabox``/``get_cropbox`` do not (they fall back to US Letter).
    """
    try:
        l, b, r, t = page.get_bbox()
    except pdfium.PdfiumError:  # pragma: no cover - pdfium always has a box
        l, b, r, t = page.get_mediabox()
    l, r = min(l, r), max(l, r)
    b, t = min(b, t), max(b, t)
    if r - l <= 0 or t - b <= 0:
        w, h = page.get_size()
        return 0.0, 0.0, max(w, 1.0), max(h, 1.0)
    return l, b, r, t


def page_chars(page: pdfium.PdfPage) -> tuple[int, tuple[float, float, float, float], _Chars]:
    """``(rotation, box, chars)`` of one page as the extractor reads it: its ``/Rotate``
    in degrees (0, 90, 180, 270), its visible box in PDF points (:func:`_page_box`:
    left, bottom, right, top) and its characters inside that box (:func:`_read_chars`,
    :func:`_visible`). The caller closes ``page``."""
    rotation = page.get_rotation() % 360
    box = _page_box(page)
    textpage = page.get_textpage()
    try:
        chars = _visible(_read_chars(textpage), box)
    finally:
        textpage.close()
    return rotation, box, chars


def _page_layout(doc: pdfium.PdfDocument, index: int) -> tuple[list[ChunkPlan], Frame, Frame]:
    """Return ``(chunk plans, display frame, reading frame)`` for one page."""
    page = doc[index]
    try:
        rotation, box, chars = page_chars(page)
    finally:
        page.close()
    display = Frame(rotation, box)
    if not np.any(chars.kind == _GLYPH):
        return [], display, display
    reading = Frame(_text_rotation(chars, rotation), box)
    segs = _segments(chars, reading)
    lines = order_lines(segs, reading.width)
    plans = make_chunks(make_blocks(lines))
    return plans, display, reading


class _Chars(NamedTuple):
    """A page's characters in pdfium's content order (``n`` of them).

    - ``codes``: ``(n,)`` int64 code points as the text takes them: the glyph's own
      (U+00AD, :data:`SOFT_HYPHEN`, for pdfium's line-end hyphen marker U+0002), 0x20 for
      any whitespace, 0x0A for a line break;
    - ``kind``: ``(n,)`` int8, :data:`_GLYPH` (a character with a box), :data:`_SPACE`
      (whitespace, or a character pdfium gives no box for: it only separates words) or
      :data:`_BREAK` (a pdfium line break);
    - ``boxes``: ``(4, n)`` float64 rows ``left, bottom, right, top``: each glyph's loose
      box in user space (points, ``left <= right``, ``bottom <= top``); meaningless for
      the other kinds.
    """

    codes: np.ndarray
    kind: np.ndarray
    boxes: np.ndarray

    def select(self, mask: np.ndarray) -> _Chars:
        """The characters where the ``(n,)`` bool ``mask`` is true, in order."""
        return _Chars(self.codes[mask], self.kind[mask], self.boxes[:, mask])


_GLYPH, _SPACE, _BREAK = 0, 1, 2
_SPACE_CODES = np.array(sorted(_SPACES), dtype=np.int64)


def _address_call(fn: Any, argtypes: tuple[type, ...] | None) -> Any:
    """The C function behind the ctypes function ``fn`` (same calling convention and
    return type) taking ``argtypes``, e.g. plain addresses (``c_void_p``) for pointers,
    or, with ``None``, no conversion at all (ctypes objects as they are, ints as C int):
    a call then costs little more than the C function itself."""
    call = type(fn)(ctypes.cast(fn, ctypes.c_void_p).value)
    call.argtypes = argtypes
    call.restype = fn.restype
    return call


_get_unicode = _address_call(pdfium_c.FPDFText_GetUnicode, None)  # (c_void_p text page, int index)
_get_loose_box = _address_call(
    pdfium_c.FPDFText_GetLooseCharBox, (ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
)


def _read_chars(textpage: pdfium.PdfTextPage) -> _Chars:
    """Read every character of a text page with its loose box (user space, points).

    Two C calls per character (code point, then box for non-whitespace, written straight
    into one float32 ``FS_RECTF`` array); the rest is numpy. Characters that cannot be
    text (control codes other than whitespace and pdfium's hyphen marker, U+FFFE/U+FFFF,
    surrogates, beyond U+10FFFF) are left out.
    """
    n = max(textpage.count_chars(), 0)
    handle = ctypes.cast(textpage.raw, ctypes.c_void_p)
    codes = np.array(list(map(_get_unicode, repeat(handle, n), range(n))), dtype=np.int64)
    brk = (codes == 13) | (codes == 10)
    space = np.isin(codes, _SPACE_CODES)
    dropped = (
        ((codes < 32) & (codes != 2)) | (codes == 0xFFFE) | (codes == 0xFFFF)
        | ((codes >= 0xD800) & (codes <= 0xDFFF)) | (codes > 0x10FFFF)
    ) & ~brk & ~space
    glyph = ~(brk | space | dropped)
    other_space = [u for u in np.unique(codes[glyph]).tolist() if chr(u).isspace()]
    if other_space:
        space |= glyph & np.isin(codes, other_space)
        glyph &= ~space
    rects = (pdfium_c.FS_RECTF * n)()  # zeroed; left, top, right, bottom per character
    at = np.flatnonzero(glyph)
    addresses = (at * ctypes.sizeof(pdfium_c.FS_RECTF) + ctypes.addressof(rects)).tolist()
    boxed = np.array(list(map(_get_loose_box, repeat(handle.value), at.tolist(), addresses)), dtype=bool)
    space[at[~boxed]] = True  # a character without geometry only separates words
    glyph[at[~boxed]] = False
    left, top, right, bottom = np.frombuffer(rects, dtype=np.float32).reshape(n, 4).T.astype(np.float64)
    boxes = np.array([
        np.where(left > right, right, left),
        np.where(bottom > top, top, bottom),
        np.where(left > right, left, right),
        np.where(bottom > top, bottom, top),
    ])
    codes = np.where(codes == 2, ord(SOFT_HYPHEN), codes)
    codes = np.where(space, 0x20, np.where(brk, 0x0A, codes))
    kind = np.where(space, _SPACE, np.where(brk, _BREAK, _GLYPH)).astype(np.int8)
    return _Chars(codes, kind, boxes).select(glyph | space | brk)


def _visible(chars: _Chars, page: tuple[float, float, float, float]) -> _Chars:
    """Drop characters whose centre lies outside the visible page area (CropBox ∩
    MediaBox): text a viewer never shows is neither searchable nor citable."""
    l, b, r, t = page
    left, bottom, right, top = chars.boxes
    cx, cy = (left + right) / 2, (bottom + top) / 2
    inside = (l - 1 <= cx) & (cx <= r + 1) & (b - 1 <= cy) & (cy <= t + 1)
    return chars.select((chars.kind != _GLYPH) | inside)


def _text_rotation(chars: _Chars, page_rotation: int) -> int:
    """Clockwise rotation (0/90/180/270) of user space in which most text runs left to
    right, voted from consecutive glyphs of pdfium's lines (no line break between them)."""
    at = np.flatnonzero(chars.kind == _GLYPH)
    line = np.cumsum(chars.kind == _BREAK)[at]
    same = line[1:] == line[:-1]
    left, bottom, right, top = chars.boxes[:, at]
    dx = (left[1:] + right[1:] - left[:-1] - right[:-1]) / 2
    dy = (bottom[1:] + top[1:] - bottom[:-1] - top[:-1]) / 2
    across = same & (np.abs(dx) > np.abs(dy))
    along = same & (np.abs(dy) > np.abs(dx))
    votes = {
        0: int(np.count_nonzero(across & (dx > 0))),
        90: int(np.count_nonzero(along & (dy > 0))),
        180: int(np.count_nonzero(across & ~(dx > 0))),
        270: int(np.count_nonzero(along & ~(dy > 0))),
    }
    best = max(votes.values())
    if best == 0 or votes[page_rotation] == best:
        return page_rotation
    return max(votes, key=lambda k: votes[k])


def _segments(chars: _Chars, frame: Frame) -> list[Seg]:
    """Cut the character stream into segments: at pdfium line breaks, at a jump to
    another visual line, backwards, or across a horizontal gap wider than the text
    height (reading frame).

    A glyph is compared with the line's last glyph that has a non-empty box (else the
    line's first glyph). A segment's text is its glyphs with each run of whitespace
    between them written as one space; its box is the union of its non-empty glyph boxes.
    A segment without any non-empty box is appended (after a space) to the previous
    segment of the page, or dropped when there is none.
    """
    at = np.flatnonzero(chars.kind == _GLYPH)
    if not len(at):
        return []
    a0, b0, a1, b1 = frame.from_user(*chars.boxes[:, at])
    line = np.cumsum(chars.kind == _BREAK)[at]
    first = np.ones(len(at), dtype=bool)  # a line's first glyph
    first[1:] = line[1:] != line[:-1]
    extent = (a1 - a0 > 0) | (b1 - b0 > 0)
    prev = np.maximum.accumulate(np.where(extent | first, np.arange(len(at)), 0))[:-1]
    p0, q0, p1, q1 = a0[prev], b0[prev], a1[prev], b1[prev]
    c0, d0, d1 = a0[1:], b0[1:], b1[1:]
    h = np.maximum(np.maximum(q1 - q0, d1 - d0), 0.5)
    cut = (
        (np.abs((d0 + d1) - (q0 + q1)) / 2 > 0.6 * h)
        | (c0 < p1 - 0.6 * h - (p1 - p0))
        | (c0 - p1 > 1.0 * h)
    )
    starts = np.flatnonzero(first | np.concatenate([[False], cut]))
    stops = np.append(starts[1:], len(at))
    boxed = np.flatnonzero(extent)
    if not len(boxed):
        return []
    lo = np.searchsorted(boxed, starts)
    hi = np.searchsorted(boxed, stops)
    has_box = hi > lo
    # the segments with a box own consecutive runs of the glyphs with a box, in order
    firsts, ends = lo[has_box], hi[has_box]
    bounds = iter(zip(*(
        _run_extremes(v[extent], firsts, ends, pick)
        for v, pick in ((a0, min), (b0, min), (a1, max), (b1, max))
    )))
    text = chars.codes.astype("<u4").tobytes().decode("utf-32-le")
    pos = at.tolist()
    segs: list[Seg] = []
    for start, stop, box in zip(starts.tolist(), stops.tolist(), has_box.tolist()):
        piece = " ".join(text[pos[start]:pos[stop - 1] + 1].split())
        if box:
            segs.append(Seg(piece, *next(bounds), len(segs)))
        elif segs:
            segs[-1].text = f"{segs[-1].text} {piece}"
    return segs


def _run_extremes(values: np.ndarray, starts: np.ndarray, stops: np.ndarray, pick: Any) -> list[float]:
    """``pick`` (builtin ``min`` or ``max``) of each run ``values[starts[k]:stops[k]]``
    (float64; the runs are non-empty and tile ``values`` in order), as Python floats.

    numpy's reduction gives the same number except that between equal values it may
    return another one than the builtin (the first), which only shows for 0.0 and -0.0:
    runs whose extreme is zero are picked again with the builtin.
    """
    ufunc = np.minimum if pick is min else np.maximum
    out = ufunc.reduceat(values, starts)
    found = out.tolist()
    for k in np.flatnonzero(out == 0).tolist():
        found[k] = pick(values[starts[k]:stops[k]].tolist())
    return found


def _display_box(
    reading: Frame, display: Frame, run: tuple[float, float, float, float], page_no: int
) -> dict[str, Any]:
    """Reading-frame box (points) → ``{page, top, left, width, height}`` fractions of the
    displayed page, clamped into [0, 1] and rounded to 4 decimals."""
    l, b, r, t = reading.to_user(*run)
    X0, Y0, X1, Y1 = display.from_user(l, b, r, t)
    W = display.width or 1.0
    H = display.height or 1.0

    def clamp(v: float) -> float:
        return 0.0 if v < 0 else 1.0 if v > 1 else v

    left, right = clamp(X0 / W), clamp(X1 / W)
    top, bottom = clamp(Y0 / H), clamp(Y1 / H)
    return {
        "page": page_no,
        "top": round(top, 4),
        "left": round(left, 4),
        "width": round(right - left, 4),
        "height": round(bottom - top, 4),
    }
