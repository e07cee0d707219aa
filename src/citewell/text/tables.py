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

from .numbers import COMPARISON_RE, NUMERIC_CELL_RE, YEAR_PATTERN, YEAR_RE, Period, column_periods, years

__all__ = ["NIL_CELLS", "column_header", "ends_in_value", "header_before", "is_header_continuation", "is_header_row", "is_prose_row",
           "looks_tabular", "paired_columns", "restate_row", "row_label", "row_spans", "table_header", "table_metadata",
           "value_cells"]

_LETTER_RE = re.compile(r"[^\W\d_]")
_CLOSERS = "\"'\u201d\u2019)]"
_TERMINAL_RE = re.compile(rf"[.!?\u2026][{re.escape(_CLOSERS)}]*$")
_SPACE_RE = re.compile(r"\s+")


def row_label(row: str) -> str:
    """The label of a table row: its text before the first value cell (a number, ``$``
    or a dash standing for nil), trailing ``:``/``,`` removed (``Total net revenues $
    6,489 $ 7,500`` -> ``Total net revenues``); the whole row when it has no value."""
    cells = row.split()
    for i, cell in enumerate(cells):
        if NUMERIC_CELL_RE.match(cell) or cell in ("$", "\u2014", "\u2013", "-"):
            return " ".join(cells[:i]).rstrip(":,; ")
    return " ".join(cells).rstrip(":,; ")


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


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_YEAR_CELL_RE = re.compile(rf"^\(?{YEAR_PATTERN}\)?[,.;:]?$")


def _between_years(cell: str) -> bool:
    """A cell that may stand between the years of a column header: the month and day of
    a date (``December 31,``), a footnote mark (``(a)``, ``(1)``), ``at``/``as of``/``and``,
    a quarter's or fiscal year's mark (``Q4 2023 Q4 2022 FY 2023 FY 2022``)."""
    low = cell.lower().strip(",.;:")
    return (low[:3] in _MONTHS and low.isalpha()) or (low.isdigit() and len(low) <= 2) or low in (
        "at", "as", "of", "and", "&") or bool(re.fullmatch(r"\(\w{1,2}\)|\(unaudited\)|q[1-4]|[1-4]q|fy", low))


def is_header_row(row: str) -> bool:
    """A column header row: two or more years in one run, with only the month and day of
    a date, footnote marks or ``at``/``as of`` between them (``(Millions) 2022 2021
    2020``, ``Year Ended December 31, 2015 2016 2017``, ``At December 31, 2019 At December
    31, 2018``), and no other value cell in the row (words before or after the run are
    labels: ``Fiscal Year 2020 2019 2018 Cash Flows - Operating Activities``). Running
    text naming two years far apart is not one."""
    cells = row.split()
    at = [i for i, c in enumerate(cells) if _YEAR_CELL_RE.match(c)]
    run = best = 1 if at else 0
    for a, b in zip(at, at[1:]):
        run = run + 1 if b - a <= 5 and all(_between_years(c) for c in cells[a + 1:b]) else 1
        best = max(best, run)
    if best < 2:
        return False
    values = [c.strip("$(),.%") for c in cells if NUMERIC_CELL_RE.match(c)]
    return all(YEAR_RE.fullmatch(c) or len(c) <= 2 for c in values)


_SPAN_CELL_RE = re.compile(r"^(?:\(?unaudited\)?|ended|ending|months?|weeks?|quarters?|years?|fiscal|three|six|nine|"
                           r"twelve|thirteen|fourteen|fifty-two|fifty-three|\d{1,2},?)$", re.IGNORECASE)


def is_header_continuation(row: str) -> bool:
    """A line of a column header above its years: the spans of its column groups and the
    months and days of its dates, written on lines of their own (``13 Weeks Ended 52 Weeks
    Ended``, ``January January``, ``28, 29,``); no year and no other word."""
    cells = row.split()
    return bool(cells) and len(cells) <= 24 and not YEAR_RE.search(row) and all(
        _SPAN_CELL_RE.match(c) or (c.lower().strip(",.")[:3] in _MONTHS and c.strip(",.").isalpha()) for c in cells)


def header_before(text: str, spans: Sequence[tuple[int, int]], index: int) -> tuple[int, int] | None:
    """The span of the column header labelling row ``index`` of ``spans`` (rows of
    ``text``): the nearest header row (:func:`is_header_row`) above it, with the lines
    right above it that continue it (:func:`is_header_continuation`: the spans and dates
    of a header written over several lines), or None."""
    for i in range(index - 1, -1, -1):
        start, end = spans[i]
        if is_header_row(text[start:end]):
            while i > 0 and is_header_continuation(text[spans[i - 1][0]:spans[i - 1][1]]):
                i -= 1
                start = spans[i][0]
            return start, end
    return None


def table_header(metadata: Mapping[str, Any] | None) -> str | None:
    """The column header the extractor recorded for a chunk (``metadata["table"]["header"]``),
    or None."""
    table = (metadata or {}).get("table")
    header = table.get("header") if isinstance(table, Mapping) else None
    return header if isinstance(header, str) and header else None


def table_lead(metadata: Mapping[str, Any] | None) -> str | None:
    """The lines a table chunk is read after when a claim is checked against it: the
    table's title the extractor recorded (``metadata["table"]["title"]``, the lead-in
    that declares its scale: "… ($ in millions):") and its carried column header
    (:func:`table_header`), one per line; None when it has neither."""
    table = (metadata or {}).get("table")
    title = table.get("title") if isinstance(table, Mapping) else None
    lines = [line for line in (title if isinstance(title, str) else None, table_header(metadata)) if line]
    return "\n".join(lines) or None


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
    of ``text`` as ``[start, end]`` pairs); ``header``, when a column header carried from
    an earlier chunk of the page labels the chunk's first rows; and ``periods``, the
    periods of every column header labelling rows of the chunk (that one, then each header
    row of ``text``), as ``{"year", "months", "date"?}`` in order without repeats
    (:func:`~citewell.text.numbers.column_periods`)."""
    spans = row_spans(text)
    out: dict[str, Any] = {"rows": [[a, b] for a, b in spans]}
    if header:
        out["header"] = header
    heads = ([header] if header else []) + [text[a:b] for a, b in spans if is_header_row(text[a:b])]
    periods = list(dict.fromkeys((p.year, p.months, p.date) for h in heads for p in column_periods(h)))
    if periods:
        out["periods"] = [{"year": y, "months": m, **({"date": d} if d else {})} for y, m, d in periods]
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


#: Cells that stand for nil in a statement's value column (a dash).
NIL_CELLS = ("\u2014", "\u2013", "-")


def value_cells(row: str, label: str) -> list[str]:
    """The value cells of ``row`` after its ``label``, in order: numbers (``6,489``,
    ``(1,749)``, ``12%``), a ``$`` joined to the number after it (``$ 6,489`` ->
    ``$6,489``), and a dash standing for nil. Empty when anything else follows the label
    (the row is not a clean label-and-values row)."""
    rest = row[len(label):].lstrip(":, ").split() if row.startswith(label) else []
    cells: list[str] = []
    pending = ""
    for cell in rest:
        if cell == "$":
            pending = "$"
        elif cell == "%" and cells and cells[-1][-1:].isdigit() and not pending:
            cells[-1] += "%"  # "8.6 %": a percentage written apart from its sign
        elif NUMERIC_CELL_RE.match(cell):
            cells.append(pending + cell)
            pending = ""
        elif cell in NIL_CELLS:
            cells.append(cell)
            pending = ""
        else:
            return []
    return cells


#: A header that announces columns of changes beside its periods (``2022 vs. 2021``,
#: ``Increase/(Decrease)``, ``% Change``, ``Variance``).
_CHANGE_HEADER_RE = re.compile(rf"{COMPARISON_RE.pattern}|\b(?:change|increase|decrease|variance)\b", re.IGNORECASE)


def paired_columns(values: Sequence[str], periods: Sequence[Period], header: str | None) -> list[tuple[Period, str]]:
    """The value cell of each period column of a row, as ``(period, cell)`` in column
    order; ``[]`` when the row's cells cannot be told apart by column.

    ``values`` are the row's value cells (:func:`value_cells`), ``periods`` its column
    header's (:func:`~citewell.text.numbers.column_periods`). One cell per period pairs
    one to one. A row with more cells than periods pairs when the extra cells are
    accounted for by the layout of financial tables:

    - a share of the total beside each amount (``$ 3,226,773 100.0% $ 2,729,388 100.0%``:
      every other cell a percentage, as many of them as periods): the amounts pair;
    - change columns after the periods, announced by the header (``2022 vs. 2021``,
      ``Increase/(Decrease)``, ``% Change``: at most two per comparison, the amount and the
      percentage): the first cells pair.
    """
    n = len(periods)
    if not n or not values:
        return []
    if len(values) == n:
        return list(zip(periods, values))
    shares = [v.endswith("%") for v in values]
    if len(values) == 2 * n and shares == [False, True] * n:
        return list(zip(periods, values[0::2]))
    if (header and _CHANGE_HEADER_RE.search(header) and n < len(values) <= n + 2 * max(1, n // 2)
            and not any(shares[:n])):
        return list(zip(periods, values[:n]))
    return []


def restate_row(row: str, header: str) -> str | None:
    """``Label: v1 (period 1), v2 (period 2) …`` for a table row whose value cells pair
    with the periods of its column ``header`` (:func:`paired_columns`) (the label and values exactly as
    the row writes them, whitespace collapsed; the periods as the header names them), else
    None."""
    row = " ".join(row.split())
    label = row_label(row)
    values = value_cells(row, label)
    columns = paired_columns(values, column_periods(header), header)
    if not label or not columns:
        return None
    return f"{label}: " + ", ".join(f"{v} ({p.label()})" for p, v in columns)
