"""PDF pages as PNG images for the viewer, with a citation's boxes drawn into them.

A page is rendered with pypdfium2 as it is displayed (``/Rotate`` and the CropBox
applied: the frame of the extractor's boxes) at :data:`SCALE` (1.5 px per PDF point,
108 dpi), less when the longer side would exceed :data:`MAX_SIDE_PX`. The plain render is
cached on disk as a file derived from the original (:meth:`citewell.blobs.BlobStore.derived`:
``<cache_dir>/.pages/<sha[:2]>/<sha256>-p<page>-s<scale>.png``, the blob folder itself
for a local store, this machine's cache folder for a bucket), keyed by the original's
SHA-256, the 1-based page and the scale, and written atomically (one process writing
while another reads sees either no file or the whole file). A render depends on nothing
but those, so each machine may keep its own. Blobs are shared by workspaces, so the
cache is too; who may see a page is decided before these functions are called.

Boxes are drawn into a copy of the cached render on every request: a translucent fill
(:data:`FILL`) and an outline (:data:`OUTLINE`), each box grown by :data:`PAD_PX` so the
outline does not cover the glyphs. Every pixel inside a box differs from the plain
render; every pixel farther than ``PAD_PX + OUTLINE_PX`` outside all boxes is untouched.

Box coordinates are fractions (0..1) of the displayed page, top-left origin:
``{"page", "top", "left", "width", "height"}`` as the references' ``metadata.offset``.

Rendering runs in a child Python process, like the extraction of uploads
(:mod:`citewell.ingest.isolate`): a document is untrusted, and rendering decodes what text
extraction never touches (a page image that inflates to gigabytes, a crash of the native
library) — that must not take the server down. The child's address space is capped at
``CITEWELL_EXTRACT_MEMORY_MB`` (default 2048) and it is killed after
``CITEWELL_RENDER_TIMEOUT_S`` seconds (default 20); it writes the cache file itself, so
only a cache miss pays for it (about half a second). pdfium is not thread-safe, and in
its own process it never shares one with another render.
"""

from __future__ import annotations

import io
import math
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from ..blobs import BlobStore, write_atomic
from ..errors import CitewellError
from ..isolation import IsolationError, limit, run_isolated

#: Pixels per PDF point of a render (1.5 = 108 dpi).
SCALE = 1.5
#: The longer side of a render is at most this many pixels (the scale shrinks for big pages).
MAX_SIDE_PX = 2000
#: Box fill (RGBA: translucent amber) and outline (RGBA), outline width and padding in pixels.
FILL: tuple[int, int, int, int] = (255, 196, 0, 84)
OUTLINE: tuple[int, int, int, int] = (214, 96, 0, 255)
OUTLINE_PX = 2
PAD_PX = 3
#: Defaults of the child process's limits (see the module docstring).
DEFAULT_MEMORY_MB = 2048
DEFAULT_TIMEOUT_S = 20.0
#: Renders that may run at once in this process (each is a child process); a request that
#: waits longer than :data:`SLOT_WAIT_S` for one answers 503 ``SERVER_BUSY``.
RENDER_SLOTS = 2
SLOT_WAIT_S = 30.0
#: Seconds a failed render is remembered: the same page answers at once instead of burning
#: another timeout.
FAILURE_TTL_S = 600.0

_slots = threading.BoundedSemaphore(RENDER_SLOTS)
_pages_lock = threading.Lock()
_page_locks: dict[str, threading.Lock] = {}


class RenderError(CitewellError):
    """A page that could not be rendered (the child ran out of memory or time, or
    crashed): answered as 500 ``SERVER_ERROR``."""

    code = "SERVER_ERROR"


def cache_path(blobs: BlobStore, sha256: str, page: int, scale: float = SCALE) -> Path:
    """Where the plain render of ``page`` (1-based) of the original ``sha256`` at ``scale``
    is cached on this machine (a derived file of ``blobs``)."""
    return blobs.derived(sha256, f"p{page}-s{scale:g}.png")


def render_to_file(pdf_path: str, page: int, target: str) -> None:
    """Render ``page`` (1-based) of the PDF at ``pdf_path`` into the PNG file ``target``
    (written atomically), in this process: what the isolated child runs."""
    write_atomic(Path(target), _render(Path(pdf_path), page))


def _render(pdf_path: Path, page: int) -> bytes:
    """PNG bytes of ``page`` (1-based) of the PDF as displayed, in this process;
    ``NotFoundError`` when the PDF has no such page or cannot be read."""
    from ..ingest.pdf_page import open_page

    with open_page(pdf_path, page, action="rendered") as pdf_page:
        width, height = pdf_page.get_size()
        scale = min(SCALE, MAX_SIDE_PX / max(width, height, 1.0))
        bitmap = pdf_page.render(scale=scale, may_draw_forms=True)
        try:
            image = bitmap.to_pil().convert("RGB")  # a copy: the bitmap's buffer is freed below
        finally:
            bitmap.close()
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=3)
    return out.getvalue()


def render_isolated(pdf_path: Path, page: int, target: Path) -> None:
    """Render ``page`` (1-based) of the PDF into the PNG file ``target`` in a child
    process (:func:`citewell.isolation.run_isolated`; memory ``CITEWELL_EXTRACT_MEMORY_MB``,
    default 2048, time ``CITEWELL_RENDER_TIMEOUT_S``, default 20). Raises ``NotFoundError``
    for a page the PDF does not have (or an unreadable PDF) and :class:`RenderError` when
    the child fails, runs out of memory or time."""
    memory_mb = int(limit("CITEWELL_EXTRACT_MEMORY_MB", DEFAULT_MEMORY_MB))
    timeout_s = limit("CITEWELL_RENDER_TIMEOUT_S", DEFAULT_TIMEOUT_S)
    try:
        run_isolated("citewell.web.viewer_render:render_to_file", str(pdf_path), page, str(target),
                     memory_mb=memory_mb, timeout_s=timeout_s)
    except IsolationError as exc:
        raise RenderError(f"rendering page {page} failed ({exc.reason}: {exc.detail})") from None


def plain_page(blobs: BlobStore, pdf_path: Path, sha256: str, page: int) -> Path:
    """The cached plain render of ``page`` (1-based) of the PDF at ``pdf_path`` (whose
    bytes hash to ``sha256``), rendering it first (in a child process) when missing.
    Raises ``NotFoundError`` for a page the PDF does not have, :class:`RenderError` when
    it cannot be rendered."""
    target = cache_path(blobs, sha256, page)
    if target.is_file():
        return target
    with _pages_lock:  # one render per page at a time: the others wait for its result
        page_lock = _page_locks.setdefault(str(target), threading.Lock())
    with page_lock:
        if target.is_file():
            return target
        failed = target.with_suffix(".failed")
        if failed.is_file() and time.time() - failed.stat().st_mtime < FAILURE_TTL_S:
            raise RenderError(f"page {page} could not be rendered ({failed.read_text('utf-8', 'replace')}); "
                              f"not tried again for {FAILURE_TTL_S:g} s")
        if not _slots.acquire(timeout=SLOT_WAIT_S):
            raise CitewellError(f"every page renderer stayed busy for {SLOT_WAIT_S:g} s; try again",
                                code="SERVER_BUSY")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            render_isolated(pdf_path, page, target)
        except RenderError as exc:
            write_atomic(failed, exc.message.encode("utf-8"))
            raise
        finally:
            _slots.release()
    with _pages_lock:
        _page_locks.pop(str(target), None)
    if not target.is_file():  # pragma: no cover - the child said ok
        raise RenderError(f"rendering page {page} left no image")
    return target


def _fraction(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def box_pixels(box: Mapping[str, Any], size: tuple[int, int], pad: int = 0) -> tuple[int, int, int, int] | None:
    """The pixel rectangle ``(x0, y0, x1, y1)`` (inclusive) of a box given in fractions of
    the displayed page (top-left origin) on an image of ``size`` (width, height), grown by
    ``pad`` pixels and clipped to the image; None for a box without readable numbers or
    without area."""
    left, top = _fraction(box.get("left")), _fraction(box.get("top"))
    width, height = _fraction(box.get("width")), _fraction(box.get("height"))
    if left is None or top is None or width is None or height is None or width <= 0 or height <= 0:
        return None
    w, h = size
    x0, y0 = max(0, int(left * w) - pad), max(0, int(top * h) - pad)
    x1, y1 = min(w - 1, round((left + width) * w) + pad), min(h - 1, round((top + height) * h) + pad)
    if x1 <= x0 or y1 <= y0:
        return None
    return x0, y0, x1, y1


def draw_boxes(image: Image.Image, boxes: Iterable[Mapping[str, Any]]) -> Image.Image:
    """A copy of ``image`` (RGB) with ``boxes`` (fractions of the page, top-left origin)
    filled with :data:`FILL` and outlined with :data:`OUTLINE`."""
    base = image.convert("RGBA")
    overlay = Image.new("RGBA", base.size, (0, 0, 0, 0))
    pen = ImageDraw.Draw(overlay)
    for box in boxes:
        rect = box_pixels(box, base.size, PAD_PX)
        if rect is not None:
            pen.rectangle(rect, fill=FILL, outline=OUTLINE, width=OUTLINE_PX)
    return Image.alpha_composite(base, overlay).convert("RGB")


def page_png(blobs: BlobStore, pdf_path: Path, sha256: str, page: int,
             boxes: Iterable[Mapping[str, Any]] = ()) -> bytes:
    """PNG bytes of ``page`` (1-based) of a PDF with ``boxes`` drawn in (none: the plain
    cached render as it is). Raises ``NotFoundError`` for a page the PDF does not have."""
    plain = plain_page(blobs, pdf_path, sha256, page)
    boxes = list(boxes)
    if not boxes:
        return plain.read_bytes()
    with Image.open(plain) as image:
        image.load()
        drawn = draw_boxes(image, boxes)
    out = io.BytesIO()
    drawn.save(out, format="PNG", compress_level=3)
    return out.getvalue()


__all__ = ["FILL", "MAX_SIDE_PX", "OUTLINE", "SCALE", "RenderError", "box_pixels", "cache_path",
           "draw_boxes", "page_png", "plain_page", "render_isolated", "render_to_file"]
