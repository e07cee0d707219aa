"""Page-level structure the PDF extractor records with each chunk: the page's heading and
the table rows and column header of a chunk.

A financial statement page starts with its title lines (``ACME CORP AND SUBSIDIARIES``,
``CONSOLIDATED BALANCE SHEETS``, ``(in millions, except share data)``) and its table's
column header (``December 31, 2019 2018``) stands once at the top; the extractor cuts the
page into chunks of 50–250 words, so a chunk further down holds rows whose years are only
in the header of an earlier chunk. Recording both at ingest lets retrieval know which
statement a page is and which periods it reports, and lets the generator quote every row
with the years it belongs to, without reading the page again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from citewell.ingest.pdf_layout import ChunkPlan
from citewell.text.numbers import years
from citewell.text.tables import is_header_continuation, is_header_row, row_label, row_spans, table_metadata

__all__ = ["lead_in", "page_heading", "page_tables"]

#: Most title lines of a page heading, and most words of one title line.
HEADING_LINES = 4
HEADING_WORDS = 14
#: Words naming the span of a column group (``Three Months Ended``, ``Fiscal Years Ended``).
_SPAN_WORDS_RE = re.compile(r"\b(?:ended|ending|months?|weeks?|quarters?|years?)\b", re.IGNORECASE)
_SPACE_RE = re.compile(r"\s+")


def page_heading(plans: Sequence[ChunkPlan]) -> str:
    """The title lines at the top of a page, joined by one space: its first lines (running
    headers and footers skipped), while they are not table rows, have at most
    :data:`HEADING_WORDS` words and do not end a sentence, at most :data:`HEADING_LINES` of
    them; when the page's first line is a table row, the label part of that row (a title
    set on the line of the column header, ``Consolidated Statements of Cash Flows … Fiscal
    Year 2020 2019``); ``""`` when the page starts with running text."""
    out: list[str] = []
    for plan in plans:
        for line in plan.lines:
            if line.running:
                continue
            text = line.text.strip()
            if not out and (line.tabular or is_header_row(text)):  # a title on the line of the column header
                label = row_label(text)
                return label if len(label.split()) <= 2 * HEADING_WORDS else ""
            if (line.tabular or line.words > HEADING_WORDS or not text or len(out) >= HEADING_LINES
                    or (text.endswith(".") and line.words > 3)):
                return " ".join(out)
            out.append(text)
    return " ".join(out)


def _with_span_line(text: str, spans: Sequence[tuple[int, int]], index: int) -> str:
    """Header row ``index`` of ``spans``, preceded by the rows above it while they name the
    span of its columns or the months and days of its dates (``Three Months Ended`` over
    ``June 30, 2023 2022``; :func:`~citewell.text.tables.is_header_continuation`) and hold
    no year themselves; whitespace collapsed."""
    start, end = spans[index]
    row = _SPACE_RE.sub(" ", text[start:end])
    while index > 0:
        a, b = spans[index - 1]
        above = _SPACE_RE.sub(" ", text[a:b])
        if not (is_header_continuation(above) or (len(above.split()) <= 10 and not years(above)
                                                  and _SPAN_WORDS_RE.search(above))):
            break
        row = f"{above} {row}"
        index -= 1
    return row


#: Most lines, and most words of one line, of the lead-in above a table that titles it.
LEAD_LINES = 2
LEAD_WORDS = 30
#: The running line of an EDGAR filing's pages linking back to its table of contents.
_RUNNING_LINK_RE = re.compile(r"^(?:table\s+of\s+contents|index)$", re.IGNORECASE)
_SENTENCE_END_RE = re.compile(r"[.!?][\"'\u201d\u2019)]*$")


def lead_in(text: str) -> str | None:
    """The lines that title a table set right below ``text`` (the text above the table on its
    page), whitespace collapsed, or None: the last lines of ``text``, at most
    :data:`LEAD_LINES` of at most :data:`LEAD_WORDS` words, while each is a caption (no
    sentence end) or introduces what follows (ends in ``:``): ``International Segment`` and
    ``Selected financial data for the International segment was as follows ($ in
    millions):``. A line that ends a sentence stops it: running text is no title; the
    running ``Table of Contents`` link line of a filing's pages is skipped."""
    out: list[str] = []
    for line in reversed([ln.strip() for ln in text.splitlines() if ln.strip()]):
        if _RUNNING_LINK_RE.match(line):
            continue  # a filing's running link back to its contents, not a title
        if len(out) >= LEAD_LINES or len(line.split()) > LEAD_WORDS or _SENTENCE_END_RE.search(line):
            break
        if is_header_row(line):
            break
        out.append(line)
    return _SPACE_RE.sub(" ", " ".join(reversed(out))) if out else None


def page_tables(texts: Sequence[str], kinds: Sequence[str]) -> list[dict[str, Any] | None]:
    """The ``table`` metadata of each chunk of one page (texts and text types in page
    order): for a table chunk, or any chunk with a column header row,
    :func:`~citewell.text.tables.table_metadata` with the header carried from an earlier
    chunk of the page (the last header row above, with the row naming its columns' span)
    when the chunk does not start with a header of its own; None for other chunks. A
    header row inside a chunk labels the rows below it, which readers find in the chunk
    text itself. ``title``: the lead-in that titles the table (:func:`lead_in`: the lines
    above its first header row in the chunk, else the end of the chunk before it), carried
    to the page's later chunks with the header."""
    out: list[dict[str, Any] | None] = []
    carried: str | None = None
    title: str | None = None
    before = ""
    for text, kind in zip(texts, kinds):
        spans = row_spans(text)
        headers = [i for i, (a, b) in enumerate(spans) if is_header_row(text[a:b])]
        if kind != "table" and not headers:
            out.append(None)
            before = text
            continue
        if headers:
            first = headers[0]
            while first > 0 and is_header_continuation(text[spans[first - 1][0]:spans[first - 1][1]]):
                first -= 1  # the lines of the header above its years are no title
            above = text[:spans[first][0]]
            title = lead_in(above) if above.strip() else lead_in(before)
        elif carried is None:
            title = lead_in(before)
        meta = table_metadata(text, None if headers and headers[0] == 0 else carried)
        if title:
            meta["title"] = title
        out.append(meta)
        if headers:
            carried = _with_span_line(text, spans, headers[-1])
        before = text
    return out
