"""PDF extractor: pypdfium2 text layer → reading-ordered chunks with page boxes.

``extract_pdf(data, name=...)`` returns an :class:`~citewell.ingest.base.Extraction`
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
- ``warnings``: ``{"code": "NO_TEXT_LAYER", "message", "page"}`` per page without text.
- ``metadata``: ``{"page_count": N}`` (+ ``pdf_title`` from the info dictionary).

Errors (:class:`~citewell.errors.IngestError`): ``EMPTY_FILE``, ``PDF_CORRUPT``,
``PDF_ENCRYPTED`` (only when a user password is needed).
"""

from __future__ import annotations

import ctypes
import math
import re
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from citewell.errors import IngestError
from citewell.ingest.base import ChunkDraft, Extraction, TextBuilder
from citewell.ingest.pdf_layout import SOFT_HYPHEN, ChunkPlan, Frame, Seg, make_blocks, make_chunks, order_lines

__all__ = ["extract_pdf"]

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
            for plan in plans:
                piece = plan.text
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


def _page_layout(doc: pdfium.PdfDocument, index: int) -> tuple[list[ChunkPlan], Frame, Frame]:
    """Return ``(chunk plans, display frame, reading frame)`` for one page."""
    page = doc[index]
    try:
        rotation = page.get_rotation() % 360
        box = _page_box(page)
        display = Frame(rotation, box)
        textpage = page.get_textpage()
        try:
            chars = _visible(_read_chars(textpage), box)
        finally:
            textpage.close()
    finally:
        page.close()
    if not any(c[1] is not None for c in chars):
        return [], display, display
    reading = Frame(_text_rotation(chars, rotation), box)
    segs = _segments(chars, reading)
    lines = order_lines(segs, reading.width)
    plans = make_chunks(make_blocks(lines))
    return plans, display, reading


# One character: (text, user-space box (l, b, r, t) or None for whitespace, line break?)
_Char = tuple[str, "tuple[float, float, float, float] | None", bool]


def _read_chars(textpage: pdfium.PdfTextPage) -> list[_Char]:
    """Read every character of a text page with its loose box (user space, points)."""
    n = textpage.count_chars()
    get_unicode = pdfium_c.FPDFText_GetUnicode
    get_box = pdfium_c.FPDFText_GetLooseCharBox
    rect = pdfium_c.FS_RECTF()
    rect_ref = ctypes.byref(rect)
    out: list[_Char] = []
    append = out.append
    for i in range(n):
        u = get_unicode(textpage, i)
        if u == 13 or u == 10:
            append(("\n", None, True))
            continue
        if u in _SPACES:
            append((" ", None, False))
            continue
        if u == 2:  # pdfium's marker for a hyphen at a line end (word broken across lines)
            ch = SOFT_HYPHEN
        elif u < 32 or u == 0xFFFE or u == 0xFFFF or 0xD800 <= u <= 0xDFFF or u > 0x10FFFF:
            continue
        else:
            ch = chr(u)
        if ch.isspace():
            append((" ", None, False))
            continue
        if get_box(textpage, i, rect_ref):
            l, r = rect.left, rect.right
            b, t = rect.bottom, rect.top
            if l > r:
                l, r = r, l
            if b > t:
                b, t = t, b
            append((ch, (l, b, r, t), False))
        else:  # pragma: no cover - a char without geometry: keep its text
            append((ch, None, False))
    return out


def _visible(chars: list[_Char], page: tuple[float, float, float, float]) -> list[_Char]:
    """Drop characters whose centre lies outside the visible page area (CropBox ∩
    MediaBox): text a viewer never shows is neither searchable nor citable."""
    l, b, r, t = page
    out: list[_Char] = []
    for ch in chars:
        box = ch[1]
        if box is not None:
            cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
            if not (l - 1 <= cx <= r + 1 and b - 1 <= cy <= t + 1):
                continue
        out.append(ch)
    return out


def _text_rotation(chars: list[_Char], page_rotation: int) -> int:
    """Clockwise rotation (0/90/180/270) of user space in which most text runs left to
    right, voted from consecutive characters of pdfium's lines."""
    votes = {0: 0, 90: 0, 180: 0, 270: 0}
    prev = None
    for _, box, brk in chars:
        if brk:
            prev = None
            continue
        if box is None:
            continue
        if prev is not None:
            dx = (box[0] + box[2] - prev[0] - prev[2]) / 2
            dy = (box[1] + box[3] - prev[1] - prev[3]) / 2
            if abs(dx) > abs(dy):
                votes[0 if dx > 0 else 180] += 1
            elif abs(dy) > abs(dx):
                votes[90 if dy > 0 else 270] += 1
        prev = box
    best = max(votes.values())
    if best == 0 or votes[page_rotation] == best:
        return page_rotation
    return max(votes, key=lambda k: votes[k])


def _segments(chars: list[_Char], frame: Frame) -> list[Seg]:
    """Cut the character stream into segments: at pdfium line breaks, at a jump to
    another visual line, backwards, or across a horizontal gap wider than the text
    height (reading frame)."""
    segs: list[Seg] = []
    buf: list[str] = []
    X0 = Y0 = float("inf")
    X1 = Y1 = float("-inf")
    prev: tuple[float, float, float, float] | None = None
    from_user = frame.from_user

    def flush() -> None:
        nonlocal buf, X0, Y0, X1, Y1
        text = "".join(buf).strip()
        if text and X1 >= X0:
            segs.append(Seg(text, X0, Y0, X1, Y1, len(segs)))
        elif text and segs:  # characters without any geometry: attach to the previous run
            last = segs[-1]
            last.text = f"{last.text} {text}"
        buf = []
        X0 = Y0 = float("inf")
        X1 = Y1 = float("-inf")

    for ch, box, brk in chars:
        if brk:
            flush()
            prev = None
            continue
        if box is None:
            if buf and buf[-1] != " ":
                buf.append(" ")
            continue
        a0, b0, a1, b1 = from_user(*box)
        if prev is not None:
            p0, q0, p1, q1 = prev
            h = max(q1 - q0, b1 - b0, 0.5)
            if (
                abs((b0 + b1) - (q0 + q1)) / 2 > 0.6 * h
                or a0 < p1 - 0.6 * h - (p1 - p0)
                or a0 - p1 > 1.0 * h
            ):
                flush()
        buf.append(ch)
        if a1 - a0 > 0 or b1 - b0 > 0:
            X0 = min(X0, a0)
            Y0 = min(Y0, b0)
            X1 = max(X1, a1)
            Y1 = max(Y1, b1)
            prev = (a0, b0, a1, b1)
        elif prev is None:
            prev = (a0, b0, a1, b1)
    flush()
    return segs


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
