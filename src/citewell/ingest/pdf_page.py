"""One page of a stored PDF file, opened for a reader of it (the viewer's page render,
:mod:`citewell.web.viewer_render`, and its line boxes, :mod:`citewell.ingest.pdf_lines`).

Light on purpose: it imports only pypdfium2 (when called), because each page render runs
in a fresh child process.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from citewell.errors import NotFoundError

if TYPE_CHECKING:
    import pypdfium2 as pdfium


@contextmanager
def open_page(pdf_path: str | Path, page: int, *, action: str = "read") -> Iterator[pdfium.PdfPage]:
    """The pypdfium2 page ``page`` (1-based) of the PDF file at ``pdf_path``, closed (with
    its document) on leaving. Raises :class:`~citewell.errors.NotFoundError` for a page
    the PDF does not have, or a PDF pdfium cannot open (``"the document cannot be
    {action} (...)"``)."""
    import pypdfium2 as pdfium

    try:
        doc = pdfium.PdfDocument(pdf_path)
    except pdfium.PdfiumError as exc:
        raise NotFoundError(f"the document cannot be {action} ({exc})") from None
    try:
        if not 1 <= page <= len(doc):
            raise NotFoundError(f"the document has no page {page}")
        pdf_page = doc[page - 1]
        try:
            yield pdf_page
        finally:
            pdf_page.close()
    finally:
        doc.close()


__all__ = ["open_page"]
