"""Table rows and column headers in a chunk's text: one definition for every stage.

A table chunk's text has one table row per line (the PDF extractor writes each visual row
of a table as one line, its cells separated by single spaces). The PDF extractor records
what it knows of a chunk's table at ingest (:func:`table_metadata`: the row spans and the
column header, which may stand in an earlier chunk of the same page); the generator, the
support checks and the CLI read rows and headers through this module, from that metadata
when a chunk has it and from the text otherwise (chunks of other extractors, stores
written by older versions).

- :func:`row_spans`: the rows of a table text (a letterless line such as ``$``,
  ``34,229`` or ``(1,749)`` continues the row above it; a line starting in lower case
  continues a label row above it that has no value yet; a blank line sets apart what
  follows, such as a page footer).
- :func:`is_header_row`: a column header row names two or more years and no other value
  (``(Millions) 2022 2021``, ``Year Ended December 31, 2015 2016 2017``).
- :func:`header_before`: the column header that labels a row: the nearest header row
  above it.
- :func:`looks_tabular`: a text of unknown kind reads as a table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .numbers import NUMERIC_CELL_RE, YEAR_RE, column_periods, years

__all__ = ["column_header", "ends_in_value", "header_before", "is_header_row", "is_prose_row",
           "looks_tabular", "row_spans", "table_header", "table_metadata"]

_LETTER_RE = re.compile(r"[^\W\d_]")
_CLOSERS = "\"'\u201d\u2019)]"
_TERMINAL_RE = re.compile(rf"[.!?\u2026][{re.escape(_CLOSERS)}]*$")
_SPACE_RE = re.compile(r"\s+")


def ends_in_value(row: str) -> bool:
    """The row's last cell is a value (``34,229``, ``(1,749)``, ``12%``, ``$``, ``—``)."""
    cells = row.split()
    last = cells[-1] if cells else ""
    return bool(NUMERIC_CELL_RE.match(last) and not last.endswith((".", ","))) or last in (
        "$", "\u2014", "-", "%")


def row_spans(text: str) -> list[tuple[int, int]]:
    """Half-open code-point spans of the rows of a table text (module docstring), without
    surrounding whitespace, in text order."""
    spans: list[tuple[int, int]] = []
    pos = 0
    blank = False
    for line in text.splitlines(keepends=True):
        body = line.strip()
        if body:
            start = pos + (len(line) - len(line.lstrip()))
            end = start + len(body)
            above = text[spans[-1][0]:spans[-1][1]] if spans and not blank else ""
            if above and not _LETTER_RE.search(body) or (above and body[0].islower() and not ends_in_value(above)
                                                          and not _TERMINAL_RE.search(above)
                                                          and not above.endswith(":")):
                spans[-1] = (spans[-1][0], end)
            else:
                spans.append((start, end))
        blank = not body  # a blank line sets apart what follows (a page footer): never joined
        pos += len(line)
    return spans


def is_prose_row(row: str) -> bool:
    """A line of running text inside a table chunk (a note under a table, a caption): at
    least 6 words, fewer than a third of them numeric cells, and not ending in a value
    cell (a table row ends in its last column's value)."""
    cells = row.split()
    if len(cells) < 6 or ends_in_value(row):
        return False
    numeric = sum(1 for c in cells if NUMERIC_CELL_RE.match(c))
    return numeric * 3 < len(cells)


def is_header_row(row: str) -> bool:
    """A column header row: it names two or more years and has no other value cell
    (``(Millions) 2022 2021 2020``, ``Year Ended December 31, 2015 2016 2017``; the day
    of a date and one- or two-digit cells such as footnote marks are allowed)."""
    if len(years(row)) < 2:
        return False
    cells = [c.strip("$(),.%") for c in row.split() if NUMERIC_CELL_RE.match(c)]
    return all(YEAR_RE.fullmatch(c) or len(c) <= 2 for c in cells)


def header_before(text: str, spans: Sequence[tuple[int, int]], index: int) -> tuple[int, int] | None:
    """The span of the column header labelling row ``index`` of ``spans`` (rows of
    ``text``): the nearest header row (:func:`is_header_row`) above it, or None."""
    for start, end in reversed(spans[:index]):
        if is_header_row(text[start:end]):
            return start, end
    return None


def table_header(metadata: Mapping[str, Any] | None) -> str | None:
    """The column header the extractor recorded for a chunk (``metadata["table"]["header"]``),
    or None."""
    table = (metadata or {}).get("table")
    header = table.get("header") if isinstance(table, Mapping) else None
    return header if isinstance(header, str) and header else None


def column_header(text: str, metadata: Mapping[str, Any] | None = None) -> str | None:
    """The column header of a table chunk, whitespace collapsed: the first row of ``text``
    naming two or more years, else the header the extractor recorded in ``metadata``
    (one standing in an earlier chunk of the page), else None."""
    for start, end in row_spans(text):
        row = _SPACE_RE.sub(" ", text[start:end])
        if len(years(row)) >= 2:
            return row
    header = table_header(metadata)
    return _SPACE_RE.sub(" ", header) if header else None


def table_metadata(text: str, header: str | None) -> dict[str, Any]:
    """What the PDF extractor records of a table chunk: ``rows`` (the :func:`row_spans`
    of ``text`` as ``[start, end]`` pairs) and, when a column header labels them
    (``header``: one found in this chunk or carried from an earlier chunk of the page),
    ``header`` (its text) and ``periods`` (:func:`~citewell.text.numbers.column_periods`
    as ``{"year", "months"}``)."""
    out: dict[str, Any] = {"rows": [[a, b] for a, b in row_spans(text)]}
    if header:
        out["header"] = header
        out["periods"] = [{"year": p.year, "months": p.months} for p in column_periods(header)]
    return out


def looks_tabular(text: str) -> bool:
    """A text of unknown kind reads as a table: at least 4 non-blank lines, most of them
    short and numeric (a line counts when it has no letters or at least as many numbers
    as words)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) < 4:
        return False
    numeric = 0
    for ln in lines:
        nums = len(re.findall(r"\d[\d,.]*", ln))
        words = len(re.findall(r"[^\W\d_]{2,}", ln))
        if nums and (words == 0 or nums >= words):
            numeric += 1
    return numeric * 2 >= len(lines)
