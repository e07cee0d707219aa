"""Answers read off financial statement rows: the figures a question names, each with its
row label and the periods of its columns.

A figure question ("What were total inventories at the end of 2022?") and a question
that needs a calculation ("the 2022 inventory turnover ratio") are answered by the rows of the statements that state the line items they
name — not by a sentence, which a filing rarely writes for them. :func:`find_rows` picks,
for each line item the question names (:func:`citewell.domains.finance.statements.item_mentions`:
directly, by an abbreviation, or through a ratio computed from it), the row of the best
retrieved passages that states it:

- the row's label must state the item by one of its captions, and the row must say which
  periods its values belong to (a column header, or years in the row itself)
  (:func:`~citewell.domains.finance.statements.items_of_row`): ``Total net revenues`` states revenues,
  ``Property and equipment, net`` states PP&E;
- among such rows, one on a page titled as the statement the question names ("according
  to the statement of cash flows"), or else as the primary statement that presents the
  item (the balance sheet for inventories: a note or a schedule repeats captions for a
  part of the group); then the one whose label is most nearly the caption itself
  (:func:`~citewell.domains.finance.statements.caption_share`: ``Total net revenues`` before
  ``Subscription, licensing, and other revenues`` or ``Product sales``: a total before
  its parts); then, for an element that is a net amount (``PropertyPlantAndEquipmentNet``),
  the one whose label says "net"; then the one whose column header reports more of the
  years asked; then
  the better-ranked passage; then the earlier row.

Each row is rendered (:func:`render_row`) as ``Label: v1 (period 1), v2 (period 2) …``
when its value cells and its column header's periods pair up one to one (the label and
values exactly as the row writes them, the periods as the header names them), otherwise
as the column header and the row quoted verbatim; both are one cited sentence. The
column header is the nearest header row above the row in its chunk, else the one the
PDF extractor recorded for the chunk (:func:`citewell.text.tables.table_header`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from citewell.text.quantities import declared_scales
from citewell.models import Passage
from citewell.question.periods import QuestionPeriods
from .facts import member_items, names_segment, row_scope, scope_rank, segment_named, table_context, total_items
from .measure import ReportingScope
from .statements import (
    PARENTHETICAL_RE,
    CONJUNCTIONS,
    PREPOSITIONS,
    caption_share,
    item_mentions,
    items_of_row,
    measures_of_row,
    statement_of_heading,
    statements_named,
    statements_of_items,
)
from citewell.text.numbers import NUMERIC_CELL_RE, PERIOD_SPAN_RE, YEAR_RE, Period, column_periods, months_spanned, years
from citewell.question.kinds import lead
from citewell.text.tables import NIL_CELLS as _NIL
from citewell.text.tables import (header_before, is_header_row, paired_columns, row_label, row_spans,
                                  table_header, value_cells)
from citewell.text.terms import tokens

__all__ = ["FoundRow", "asked_span", "column_fit", "find_rows", "measure_rows", "period_fit", "render_row", "reports_year",
           "reports_year_of", "row_name", "rows_for_items", "shown_columns"]

#: A value cell written apart from its number (``$ 6,489``) or standing for nil.


@dataclass(frozen=True)
class FoundRow:
    """A row stating a line item.

    ``item``: the line-item key; ``passage_index``: position of its passage in the list
    given; ``start``/``end``: the row's span in the chunk text; ``label``: its label;
    ``values``: its value cells in column order (``$`` joined to its number);
    ``header``: the column header labelling it (text) or None; ``header_in_text``: that
    header's span in the chunk text, None when it comes from the chunk's metadata;
    ``years``: the years of the header; ``scale``: the power of ten its numbers are in
    as the table declares it (``(in millions)``: 6; the header, else the chunk's text
    before the row, else the table's title, else the page heading; None when nothing
    declares one); ``columns``: the value cell of each period column
    (:func:`~citewell.text.tables.paired_columns`; empty when they cannot be told apart);
    ``scope``: the part of the entity it states (:func:`~citewell.domains.finance.facts.row_scope`);
    ``context``: the words that title its table (:func:`~citewell.domains.finance.facts.table_context`).
    """

    item: str
    passage_index: int
    start: int
    end: int
    label: str
    values: tuple[str, ...]
    header: str | None
    header_in_text: tuple[int, int] | None
    years: frozenset[int]
    scale: int | None = None
    columns: tuple[tuple[Period, str], ...] = ()
    scope: ReportingScope = field(default_factory=ReportingScope)
    context: str = ""


def _scale(passage: Passage, start: int, header: str | None) -> int | None:
    """The scale a row at ``start`` of ``passage``'s chunk is declared in (:class:`FoundRow`)."""
    found = declared_scales(header or "")
    if found:
        return found[0]
    found = declared_scales(passage.chunk.text[:start])  # the declaration nearest before the row
    if found:
        return found[-1]
    found = declared_scales(_title(passage) or "")
    if found:
        return found[-1]
    found = declared_scales(str(passage.chunk.metadata.get("page_heading") or ""))
    return found[0] if found else None


def _title(passage: Passage) -> str | None:
    """The lead-in that titles the chunk's table, as the PDF extractor recorded it
    (``metadata["table"]["title"]``, :func:`citewell.ingest.pdf_tables.lead_in`), or None."""
    table = passage.chunk.metadata.get("table")
    title = table.get("title") if isinstance(table, Mapping) else None
    return title if isinstance(title, str) and title else None


def _context(passage: Passage, header: str | None) -> str:
    """The words that title a row's table (:func:`~citewell.domains.finance.facts.table_context`)."""
    return _table_context(_title(passage), header)


@lru_cache(maxsize=4096)
def _table_context(title: str | None, header: str | None) -> str:
    """:func:`_context` of a table's recorded title and a row's header (cached: a table's
    rows share both)."""
    return table_context(title, row_label(header) if header else None)


def table_part(metadata: Mapping[str, Any] | None) -> str | None:
    """The segment or area a table chunk's recorded title and carried column header
    name (:func:`~citewell.domains.finance.facts.segment_named` of
    :func:`~citewell.domains.finance.facts.table_context`: ``International`` for "Selected
    financial data for the International segment … ($ in millions):"), or None: a
    figure of that table is that part's, which a claim must name
    (:func:`citewell.cite.verdict.check_rules`'s ``part``)."""
    table = (metadata or {}).get("table")
    if not isinstance(table, Mapping):
        return None
    title, header = table.get("title"), table.get("header")
    context = _table_context(title if isinstance(title, str) and title else None,
                             header if isinstance(header, str) and header else None)
    return segment_named(context) if context else None


#: Fit of a column's span to the period asked (higher first): the span asked; a column
#: whose header gives no span (an annual statement's years, a balance sheet's date); a
#: span of another length (a quarter for a year asked, a year for a quarter asked).
FIT_ASKED, FIT_UNSTATED, FIT_OTHER = 2, 1, 0
#: The span a question asks, in months: a fiscal year, a quarter, half a year, or part of
#: a year of unsaid length (``year to date``); a question naming a span of months or weeks
#: (``nine months ended``) asks that many months.
YEAR_SPAN, QUARTER_SPAN, HALF_SPAN, PART_SPAN = 12, 3, 6, 0
#: Half a fiscal year (``first half``, ``H1``, ``half-year``): the six months of an interim
#: report's year-to-date columns (SEC Regulation S-X Rule 10-01(c): interim statements for
#: the quarter and the year to date).
_HALF_RE = re.compile(r"\b(?:first|second|1st|2nd)\s+half\b|\bhalf[- ]year(?:ly)?\b|\b(?:H[12]|[12]H)\b",
                      re.IGNORECASE)


def asked_span(periods: QuestionPeriods, question: str = "") -> int:
    """The span a question's periods ask: :data:`QUARTER_SPAN` when it names a quarter;
    for another part of a year, :data:`HALF_SPAN` when ``question`` names a half, the months
    of a span of months or weeks under a year it names (``six months ended``:
    :data:`~citewell.text.numbers.PERIOD_SPAN_RE`), else :data:`PART_SPAN`; else
    :data:`YEAR_SPAN`. A quarter's columns never answer a half year as its own."""
    if periods.quarters:
        return QUARTER_SPAN
    if _HALF_RE.search(question):  # before the periods' reading, which does not know "H1" for part of a year
        return HALF_SPAN
    if not periods.partial:
        return YEAR_SPAN
    spans = [months_spanned(m) for m in PERIOD_SPAN_RE.finditer(question)]
    return next((m for m in spans if m < YEAR_SPAN), PART_SPAN)


def column_fit(period: Period, span: int) -> int:
    """How a column of ``period`` fits the ``span`` asked (:func:`asked_span`):
    :data:`FIT_ASKED`, :data:`FIT_UNSTATED` or :data:`FIT_OTHER`. A column with no span
    answers a year as its own (annual statements write years alone) and a part of a year
    only after a column that states the part."""
    if period.months is None:
        return FIT_ASKED if span == YEAR_SPAN else FIT_UNSTATED
    if span == PART_SPAN:
        return FIT_ASKED if period.months < 12 else FIT_OTHER
    return FIT_ASKED if period.months == span else FIT_OTHER


def period_fit(row: FoundRow, asked_years: frozenset[int], span: int) -> int:
    """The best :func:`column_fit` among the row's columns for a year asked (any column
    when none is asked). A row whose cells cannot be paired with its columns fits at best
    :data:`FIT_UNSTATED`, and :data:`FIT_OTHER` when no period of its column header fits
    better (the header's columns are all another span, or none may be a year asked): a row
    whose cells do not even pair never outranks one whose columns are known."""
    if not row.columns:
        periods = column_periods(row.header) if row.header else []
        if not periods:  # years in the row itself: nothing says their span
            return FIT_UNSTATED
        cols = [p for p in periods if not asked_years or any(reports_year_of(p, y) for y in asked_years)]
        return min(FIT_UNSTATED, max((column_fit(p, span) for p in cols), default=FIT_OTHER))
    cols = [p for p, _ in row.columns if not asked_years or any(reports_year_of(p, y) for y in asked_years)]
    return max((column_fit(p, span) for p in cols), default=FIT_OTHER)


#: A US-GAAP element that reports an amount net of something (``AccountsReceivableNetCurrent``,
#: ``PropertyPlantAndEquipmentNet``; not ``NetIncomeLoss``, whose caption starts with "net").
_NET_ELEMENT_RE = re.compile(r"(?<=[a-z])Net(?=[A-Z]|$)")
_NET_WORD_RE = re.compile(r"\bnet\b", re.IGNORECASE)


def _states_net(label: str, item: str) -> bool:
    """Whether ``label`` says "net" for an item whose element is the net amount: of two rows
    that both state the caption (``Property, plant and equipment`` and ``Property, plant and
    equipment — net``), the net one is the element's."""
    return bool(_NET_ELEMENT_RE.search(item) and _NET_WORD_RE.search(label))


#: a full year that ends in one of these months lies mostly in the calendar year before its
#: end, and some companies name it by that year (a retail year of 52 or 53 weeks that ends
#: late in January: "fiscal 2022" ends January 28, 2023), others by its end year
_EARLY_END_MONTHS = frozenset({"jan", "feb", "mar"})


def reports_year_of(p: Period, year: int) -> bool:
    """Whether column period ``p`` may be fiscal ``year`` (:func:`reports_year`)."""
    early = p.date is not None and p.date[:3].lower() in _EARLY_END_MONTHS
    if p.year == year or (p.year - year == 1 and early):
        return True
    # a part of a year: a quarter of fiscal ``year`` may end in the calendar year before; one
    # ending in the calendar year after only early in it (the last quarter of a retail year)
    # or when its date is not written
    return (p.months or 12) < 12 and (p.year - year == -1 or (p.year - year == 1 and p.date is None))


def reports_year(row: FoundRow, year: int) -> bool:
    """Whether a column of ``row`` may be fiscal ``year``. A column the header names by
    its year alone (``2022``: the year as the company names it) is that year. A dated full
    year (``November 27, 2020``) is the year it ends in, or the year before when it ends in
    January to March (:data:`_EARLY_END_MONTHS`: retail years are named by the year most of
    them falls in). A part of a year (``3 months 2022``, ``Three Months Ended December 31,
    2022``) is within a year of it: a quarter of fiscal 2023 may end in December 2022; but
    a dated part ending in the calendar year after ``year`` is that year's only when it ends
    in January to March (``July 30, 2022`` is no quarter of fiscal 2021)."""
    periods = column_periods(row.header) if row.header else []
    if not periods:
        return year in row.years
    return any(reports_year_of(p, year) for p in periods)


def trailing_values(row: str, count: int) -> tuple[str, list[str]]:
    """``(label, values)`` of a row whose caption itself holds a dash or figures
    (``Accounts receivable — net of allowances of $174 and $189 4,532 4,660``): the row
    must end in exactly ``count`` value cells (the columns of a header with ``count``
    periods: a statement's value columns are its right-most cells, cells as
    :func:`value_cells` reads them) once the figures the caption speaks of are left to
    it (a figure right after a preposition or conjunction: ``of $174 and $189``), and
    the label is all the row says before them. ``("", [])`` otherwise: a row with a blank column or more figures
    than periods is no row to read a figure from."""
    cells = row.split()
    run: list[str] = []
    i = len(cells)
    while i > 0:
        cell = cells[i - 1]
        if not (NUMERIC_CELL_RE.match(cell) or cell in _NIL):
            break
        dollar = i >= 2 and cells[i - 2] == "$"
        run.append(("$" if dollar else "") + cell)
        i -= 2 if dollar else 1
    run.reverse()
    # a figure right after a preposition or conjunction is the caption's ("of $174 and $189")
    while run and i > 0 and cells[i - 1].lower() in PREPOSITIONS | CONJUNCTIONS:
        first = run.pop(0)
        i += 2 if first.startswith("$") and cells[i] == "$" else 1
    label = " ".join(cells[:i]).rstrip(":,; ")
    if count <= 0 or len(run) != count or not any(c.isalpha() for c in label):
        return "", []
    return label, run


def _rows_of(passage: Passage) -> list[tuple[int, int, str | None, tuple[int, int] | None]]:
    """``(start, end, header text, header span or None)`` of each row of a passage's
    chunk: the extractor's rows when it recorded them, else :func:`row_spans` of a table
    chunk's text; header rows themselves are left out."""
    chunk = passage.chunk
    table = chunk.metadata.get("table") if isinstance(chunk.metadata.get("table"), Mapping) else None
    if table is not None and isinstance(table.get("rows"), list):
        spans = tuple((int(a), int(b)) for a, b in table["rows"])
    elif chunk.text_type == "table":
        spans = tuple(row_spans(chunk.text))
    else:
        return []
    return list(_chunk_rows(chunk.id, chunk.text, spans, table_header(chunk.metadata)))


@lru_cache(maxsize=4096)
def _chunk_rows(chunk_id: str, text: str, spans: tuple[tuple[int, int], ...],
                carried: str | None) -> tuple[tuple[int, int, str | None, tuple[int, int] | None], ...]:
    """:func:`_rows_of` of one chunk (cached: a chunk's text and rows never change; the
    chunk id keeps two chunks of one text apart in the cache's accounting only)."""
    out: list[tuple[int, int, str | None, tuple[int, int] | None]] = []
    for i, (a, b) in enumerate(spans):
        if is_header_row(text[a:b]):
            continue
        span = header_before(text, spans, i)
        out.append((a, b, text[span[0]:span[1]] if span else carried, span))
    return tuple(out)


def find_rows(question: str, passages: Sequence[Passage], *, asked_years: frozenset[int] = frozenset(),
              resource_id: str | None = None, scope: ReportingScope | None = None,
              span: int = YEAR_SPAN) -> list[FoundRow]:
    """For each line item ``question`` names, in question order, the row stating it (module
    docstring); items no row states are left out. ``asked_years``: the years the question
    names (a row whose header reports them is preferred); ``scope``/``span``: the
    reporting scope and the span of the period asked (:func:`rows_for_items`);
    ``resource_id``: read only that document's passages (None: all)."""
    wanted = item_mentions(question)
    found = rows_for_items(wanted, passages, asked_years=asked_years, named=frozenset(statements_named(question)),
                           resource_id=resource_id, scope=scope, span=span)
    return [found[i] for i in wanted if i in found]


def rows_for_items(wanted: Sequence[str], passages: Sequence[Passage], *, asked_years: frozenset[int] = frozenset(),
                   named: frozenset[str] = frozenset(), resource_id: str | None = None,
                   scope: ReportingScope | None = None, span: int = YEAR_SPAN) -> dict[str, FoundRow]:
    """The row stating each of the line items ``wanted`` (keys), by item, as
    :func:`find_rows` chooses them (``named``: the statements the question names;
    ``resource_id``: read only that document's passages, None: all). Before the module
    docstring's order: the row whose scope answers the asked ``scope``
    (:func:`~citewell.domains.finance.facts.scope_rank`: consolidated unless a segment or
    the amount attributable to shareholders is asked), then the row whose columns span the
    period asked (:func:`period_fit`: ``span``, :func:`asked_span`; a figure for another
    span is another figure, wherever it stands). A row naming a member of a breakdown (``Consumer`` in
    ``Consolidated Operating Revenues``, or ``Commercial Airplanes`` under a caption row
    ``Revenues:``) states its table's or section's item for that member
    (:func:`~citewell.domains.finance.facts.member_items`); a row whose label names the
    segment asked (``Total Digital Media revenue``) states that segment's
    (:func:`~citewell.domains.finance.facts.names_segment`)."""
    if not wanted:
        return {}
    best: dict[str, tuple[tuple, FoundRow]] = {}
    for index, passage in enumerate(passages):
        if resource_id is not None and passage.chunk.resource_id != resource_id:
            continue
        text = passage.chunk.text
        statement = statement_of_heading(str(passage.chunk.metadata.get("page_heading") or ""))
        section = ""  # the caption row above (``Revenues:``), whose item its members state
        last_header: str | None = None
        for order, (a, b, header, header_span) in enumerate(_rows_of(passage)):
            if header != last_header:  # a caption set on the header's line after its years opens a section
                section, last_header = _header_tail(header), header
            row = " ".join(text[a:b].split())
            periods = column_periods(header) if header else []
            label = row_label(row)
            values = value_cells(row, label)
            if not values:  # a caption with a dash or figures of its own: the header's columns are the last cells
                label, values = trailing_values(row, len(periods))
            if not values:
                if row == label and 0 < len(row.split()) <= SECTION_WORDS:
                    section = row.rstrip(":; ")
                continue
            context = _context(passage, header) + (f" | {section}" if section else "")
            stated = items_of_row(label)
            member, title = ((), "") if stated else member_items(label, context)
            total, totalled = ((), "") if stated or member else total_items(label, context)  # "Total" under "Capital Expenditures"
            items = [i for i in (stated or member or total) if i in wanted]
            if not items:
                continue
            head_years = frozenset(p.year for p in periods)
            found_years = head_years or frozenset(int(y) for y in years(row))
            if not found_years:  # never a figure without the period it belongs to
                continue
            covered = len(asked_years & found_years)
            columns = tuple(paired_columns(values, periods, header))
            if (member or total) and not columns:  # a breakdown's row is read only where its cells pair with periods
                continue
            found = FoundRow(items[0], index, a, b, label, tuple(values), header, header_span, found_years,
                             _scale(passage, a, header), columns, row_scope(label, context, member=bool(member)),
                             title or totalled or context)
            if scope is not None and scope.kind == "segment" and found.scope.kind == "consolidated" \
                    and names_segment(label, scope.name):  # "Total Digital Media revenue" for Digital Media
                found = replace(found, scope=ReportingScope("segment", scope.name))
            rank = scope_rank(found.scope, scope)
            fit = period_fit(found, asked_years, span)
            for item in items:
                # the statement the question names, else the one that presents the item
                home = statement is not None and statement in (named or statements_of_items([item]))
                net = _states_net(label, item)  # "net" is the element's own word: no extra word of the label
                # a member states its table's item: as much of it as the title is the caption
                share = caption_share(title if member else totalled if total else
                                      _NET_WORD_RE.sub(" ", label) if net else label, item)
                key = (rank, -fit, not home, -round(share, 6), -net, -covered, index, order)
                if item not in best or key < best[item][0]:
                    best[item] = (key, replace(found, item=item))
    return {i: best[i][1] for i in wanted if i in best}


def measure_rows(names: Sequence[str], question: str, passages: Sequence[Passage], *,
                 resource_id: str | None = None) -> list[FoundRow]:
    """Rows that state a measure the question names by its name (``Adjusted EBITDA``,
    ``Free cash flow``: :func:`~citewell.domains.finance.statements.measures_of_row`), one per measure of
    ``names`` (ratio first names): the row whose label shares the most words with the
    question (``Adjusted`` for "adjusted EBITDA"), then the better-ranked passage, then the
    earlier row. A statement that reports the measure is its answer; computing it from
    its components could give another figure (adjustments, a different definition).
    ``resource_id``: read only that document's passages (None: all)."""
    asked = {t.term for t in tokens(lead(question)) if t.content}
    best: dict[str, tuple[tuple, FoundRow]] = {}
    for index, passage in enumerate(passages):
        if resource_id is not None and passage.chunk.resource_id != resource_id:
            continue
        text = passage.chunk.text
        for order, (a, b, header, span) in enumerate(_rows_of(passage)):
            row = " ".join(text[a:b].split())
            label = row_label(row)
            stated = [n for n in measures_of_row(label) if n in names]
            values = value_cells(row, label) if stated else []
            if not values:
                continue
            shared = len(asked & {t.term for t in tokens(label) if t.content})
            head_years = frozenset(p.year for p in column_periods(header)) if header else frozenset()
            periods = column_periods(header) if header else []
            context = _context(passage, header)
            for name in stated:
                key = (-shared, index, order)
                if name not in best or key < best[name][0]:
                    best[name] = (key, FoundRow(name, index, a, b, label, tuple(values), header, span,
                                                head_years or frozenset(int(y) for y in years(row)),
                                                _scale(passage, a, header), tuple(paired_columns(values, periods, header)),
                                                row_scope(label, context), context))
    return [best[n][1] for n in names if n in best]


#: The words of a scale a statement declares for its amounts ("in millions"; SEC Regulation
#: S-X Rule 3-01 to 3-04 statements state amounts in thousands or millions of the currency).
SCALE_WORDS = {3: "thousands", 6: "millions", 9: "billions"}
#: A row whose values are not in the declared scale ("in millions, except per share data"):
#: per-share amounts, percentages, ratios, counts of days.
_UNSCALED_RE = re.compile(r"per\s+(?:common\s+)?share|%|percent|ratio|margin|days\b|\b(?:millions?|thousands?|billions?)\b",
                          re.IGNORECASE)


def unit_words(row: FoundRow) -> str:
    """``, in millions`` (or thousands, billions) when the row's values are in the scale its
    statement declares and its label does not say otherwise (:data:`SCALE_WORDS`), else ``""``:
    an answer states a figure with its unit (after the values, so that the label stays as
    the row writes it)."""
    word = SCALE_WORDS.get(row.scale) if row.scale is not None else None
    if word is None or _UNSCALED_RE.search(row.label):
        return ""
    return f", in {word}"


def render_row(row: FoundRow, text: str, *, span: int = YEAR_SPAN) -> str:
    """The sentence stating ``row`` (module docstring), without its link: ``Label: v1
    (period 1), v2 (period 2), in millions`` when values and periods pair up (the unit when
    the statement declares one, :func:`unit_words`; the columns of :func:`shown_columns`
    for the period asked; a breakdown's member named with its table, :func:`row_name`),
    else the header (when there is one) and the row's text, whitespace collapsed, joined by
    `` … ``."""
    columns = shown_columns(row, span)
    if columns:
        pairs = ", ".join(f"{v} ({p.label()})" for p, v in columns)
        return f"{row_name(row)}: {pairs}{unit_words(row)}"
    body = " ".join(text[row.start:row.end].split())
    return f"{' '.join(row.header.split())} \u2026 {body}" if row.header else body


#: Most words of a caption row that opens a section of a table (``Revenues:``, ``Earnings
#: from operations:``), whose members' rows follow it.
SECTION_WORDS = 6


def _header_tail(header: str | None) -> str:
    """A caption written on a column header's line after its years (``… 2022 2021 2020
    Revenues:``), or ``""``."""
    if not header:
        return ""
    last = None
    for last in YEAR_RE.finditer(header):
        pass
    tail = " ".join(header[last.end():].split()).rstrip(":; ") if last else ""
    return tail if any(c.isalpha() for c in tail) and len(tail.split()) <= SECTION_WORDS else ""


def row_name(row: FoundRow) -> str:
    """How an answer names a row: its label; for a segment's row, the segment after it
    (``Net sales (Flexibles segment)``), and for a member of a breakdown (its scope a
    segment named by the label itself) the table's title (``Consumer (Consolidated
    Operating Revenues)``), so that a part's figure never reads as the company's; a
    breakdown's bare total likewise (``Total (Capital Expenditures)``)."""
    if row.scope.kind != "segment" or not row.scope.name:
        # a breakdown's bare total, with what it totals: "Total (Capital Expenditures)"
        return f"{row.label} ({row.context})" if row.context and total_items(row.label, row.context)[0] else row.label
    if row.scope.name == " ".join(PARENTHETICAL_RE.sub(" ", row.label).split()) and row.context:
        return f"{row.label} ({row.context})"  # a breakdown's member, with what it breaks down
    if names_segment(row.label, row.scope.name):
        return row.label  # the label names its segment itself
    return f"{row.label} ({row.scope.name} segment)"


def shown_columns(row: FoundRow, span: int = YEAR_SPAN) -> list[tuple[Period, str]]:
    """The columns of ``row`` an answer states: every paired column, but when some span the
    period asked and others another span (a quarter's and six months' columns for a
    quarter asked), only those that span it (:func:`column_fit`; ``span``: :func:`asked_span`)."""
    columns = list(row.columns)
    if not columns:
        return []
    fits = [column_fit(p, span) for p, _ in columns]
    best = max(fits)
    if best == FIT_ASKED and min(fits) < best:
        columns = [c for c, f in zip(columns, fits) if f == best]
    return columns
