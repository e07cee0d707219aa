"""Statement facts: of which part of the reporting entity a table row states its figures.

A row of a financial table states a line item (its concept: the row label, or the table's
title when the row names a part of it) for one part of the reporting entity (its scope)
in each of its columns' periods (:func:`citewell.text.tables.paired_columns`) and in the
unit its table declares (:func:`citewell.domains.finance.rows.unit_words`). This module
reads the scope and the concept a breakdown's row takes from its title:

- **consolidated** (the default): the row states the reporting entity as a whole;
- **segment**: the row's label names a part before its caption (``Las Vegas Strip Resorts
  net revenues``: :func:`label_part`), or the table is titled for an operating segment or
  geographic area (FASB ASC
  280, Segment Reporting: ``Rigid Packaging Segment ($ in millions)``, ``Selected financial
  data for the International segment was as follows``), or the row is a member of a
  breakdown of the item its table is titled for (``Consumer`` in a table titled
  ``Consolidated Operating Revenues``: the members of a dimension, as XBRL's dimensional
  reporting presents segments, ``us-gaap:StatementBusinessSegmentsAxis``);
- **attributable**: the amount attributable to the parent's shareholders (FASB ASC
  810-10-50-1A: ``Net loss attributable to Boeing Shareholders``);
- **noncontrolling**: the amount attributable to noncontrolling interests (ASC 810-10-45-20),
  never the answer for the entity.

:func:`scope_rank` orders rows for the scope a question asks (:class:`ReportingScope`):
consolidated wins unless a segment, the amount attributable to shareholders or the amount
attributable to noncontrolling interests is asked.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .measure import NONCONTROLLING_RE, ReportingScope
from .statements import PARENTHETICAL_RE, caption_share, items_of_row, mentions, phrase_terms

__all__ = ["label_part", "member_items", "names_segment", "row_scope", "same_segment", "scope_rank", "segment_named", "table_context"]

#: The least share of a breakdown's title that its item's caption must cover
#: (:func:`~citewell.domains.finance.statements.caption_share`) for its rows to be read as
#: members: a title that adds more words than it has caption words is about something narrower.
MEMBER_TITLE_SHARE = 0.5
_ATTRIBUTABLE_RE = re.compile(r"\battributable\s+to\b|\bavailable\s+to\s+common\b", re.IGNORECASE)
#: A segment or area named in a table's title: capitalised words before ``segment``,
#: ``division`` or ``region`` (ASC 280's terms), as the question reader reads it
#: (:func:`citewell.domains.finance.measure.read_scope`).
_SEGMENT_TITLE_RE = re.compile(r"\b((?:[A-Z][\w&.'-]*\s+(?:(?:and|&)\s+)?){0,3}[A-Z][\w&.'-]*)\s+"
                               r"(?i:segment|division|region)s?\b")
#: Words that name no particular segment (``Reportable Segments``, ``Business Segment Results``).
_GENERIC_WORDS = frozenset({"reportable", "operating", "business", "total", "each", "our", "the", "all", "by",
                            "results", "selected", "other", "segment", "segments", "information", "financial",
                            "geographic", "geographical", "reporting"})
#: Words that link a title's subject to its breakdown (``Net Sales By Segment``, ``Information
#: About Our Segments``): a segment's name is only what follows the last of them.
_LINK_WORDS = frozenset({"by", "about", "of", "for", "per", "from", "in", "on", "across"})
#: A row that totals or consolidates a breakdown rather than naming a member of it.
_TOTAL_RE = re.compile(r"^(?:total|consolidated|combined|net)\b", re.IGNORECASE)
#: Words of a column header that say how its columns span, not what the table is about.
_SPAN_WORDS = (r"\b(?:increase|decrease|change|years?|months?|weeks?|quarters?|ended|ending|fiscal|"
               r"as\s+of|at|vs\.?)\b")
_HEADER_WORDS_RE = re.compile(_SPAN_WORDS + r".*$", re.IGNORECASE)
#: In a table's title (a lead-in: ``Fiscal 2023 Flexibles Segment Results``), the same words
#: only part what comes before them from what follows: the title goes on after them.
_TITLE_SPAN_WORDS_RE = re.compile(_SPAN_WORDS, re.IGNORECASE)


def table_context(title: str | None, header_label: str | None) -> str:
    """The words that title a row's table: the lead-in the extractor recorded (``title``)
    and the label part of its column header row (``Rigid Packaging Segment ($ in
    millions)``), parenthetical asides (the scale) left out, joined by `` | ``; ``""`` when
    neither says anything. The header's label ends at the words of its column spans; the
    title's span words (``Fiscal 2023 Flexibles Segment Results``) part it, so that a
    segment it names after them is still named."""
    parts = []
    if title:  # the title's span words part it (a segment named after them is still named)
        plain = _TITLE_SPAN_WORDS_RE.sub(" | ", PARENTHETICAL_RE.sub(" ", title.replace("|", " ")))
        parts.extend(" ".join(piece.split()) for piece in plain.split("|"))
    if header_label:  # a column header's label: what stands before its columns' spans
        parts.append(" ".join(_HEADER_WORDS_RE.sub(" ", PARENTHETICAL_RE.sub(" ", header_label)).split()))
    return " | ".join(p for p in parts if p)  # "|": a segment's name never runs across two parts


@lru_cache(maxsize=4096)
def segment_named(context: str) -> str | None:
    """The segment or area a table's title names (``International``, ``Rigid Packaging``,
    ``Safety and Industrial``: a name may join its words with ``and``), or None (module docstring; names made of generic words only are none, and a title in
    title case names none by the words before a linking word: ``Net Sales By Segment``,
    ``Information About Our Segments``, ``Sales by Geographic Region``)."""
    for match in _SEGMENT_TITLE_RE.finditer(context):
        words = match.group(1).split()
        links = [i for i, w in enumerate(words) if w.lower() in _LINK_WORDS]
        if links:  # "Net Sales By Segment": the words before "By" are the table's item, no segment's name
            words = words[links[-1] + 1:]
        words = [w for w in words if w.lower() not in _GENERIC_WORDS]
        if words:
            return " ".join(words)
    return None


@lru_cache(maxsize=16384)
def row_scope(label: str, context: str, *, member: bool = False) -> ReportingScope:
    """The :class:`ReportingScope` of a row with ``label`` in a table titled ``context``
    (:func:`table_context`); ``member``: the row names a member of the breakdown its title
    states (:func:`member_items`), whose name is the segment's."""
    if NONCONTROLLING_RE.search(label):
        return ReportingScope("noncontrolling")
    named = segment_named(context)
    if named:
        return ReportingScope("segment", named)
    if member:
        return ReportingScope("segment", " ".join(PARENTHETICAL_RE.sub(" ", label).split()))
    if _ATTRIBUTABLE_RE.search(label):
        return ReportingScope("attributable")
    part = label_part(label)
    if part:
        return ReportingScope("segment", part)
    return ReportingScope()


#: Words of a label's modifier that name no part of the entity (``Total net revenues``,
#: ``Consolidated Net Sales``, ``Gross Revenues``).
_PLAIN_MODIFIERS = frozenset({"total", "net", "consolidated", "combined", "gross", "operating", "other", "adjusted",
                              "reported", "segment", "segments", "company", "group"})
_WORD_RE = re.compile(r"[^\W\d_][\w&.'\-]*")


def label_part(label: str) -> str | None:
    """The part of the entity a row's label names before the caption it states, or None:
    two or more capitalised words, other than plain modifiers (:data:`_PLAIN_MODIFIERS`) and
    the caption's own words, before the first caption (``Las Vegas Strip Resorts`` in
    ``Las Vegas Strip Resorts net revenues``, ``Digital Media`` in ``Total Digital Media
    revenue``; none in ``Total net revenues`` or ``Product sales``: a label's first word is
    capitalised whatever it is, so one word alone names no part)."""
    found = mentions(label, row=True)
    if not found:
        return None
    caption_terms = phrase_terms(label)[found[0].start:found[0].end]
    words: list[str] = []
    for match in _WORD_RE.finditer(label):
        word = match.group()
        stem = next(iter(_terms(word)), "")
        if stem and stem in caption_terms:
            break
        if not word[0].isupper():
            break
        if word.lower() not in _PLAIN_MODIFIERS:
            words.append(word)
    return " ".join(words) if len(words) >= 2 else None


@lru_cache(maxsize=16384)
def member_items(label: str, context: str) -> tuple[tuple[str, ...], str]:
    """The line items a row states as a member of a breakdown, and the part of ``context``
    that states them: a short label that states no item itself and totals nothing
    (``Consumer``, ``Corporate and other``; not ``Total``) in a table whose title states
    exactly one and is mostly its caption (:data:`MEMBER_TITLE_SHARE`: ``Consolidated
    Operating Revenues``, not ``Fios revenues for our two reportable segments``);
    ``((), "")`` otherwise."""
    if not context or len(label.split()) > 5 or _TOTAL_RE.match(label) or items_of_row(label):
        return (), ""
    return _title_item(context)


def _title_item(context: str) -> tuple[tuple[str, ...], str]:
    """The one line item a table's title states, and the part of ``context`` (its
    `` | ``-joined parts) that states it, mostly as its caption
    (:data:`MEMBER_TITLE_SHARE`); ``((), "")`` when no part does."""
    for part in context.split(" | "):
        items = items_of_row(part)
        if len(items) == 1 and caption_share(part, items[0]) >= MEMBER_TITLE_SHARE:
            return tuple(items), part.rstrip(":; ")
    return (), ""


#: A row that totals its breakdown and says nothing else: ``Total``, ``Total company``,
#: ``Consolidated``.
_BARE_TOTAL_RE = re.compile(r"^\W*(?:total|consolidated|combined)(?:\s+(?:company|consolidated|segments?))?\W*$",
                            re.IGNORECASE)


def total_items(label: str, context: str) -> tuple[tuple[str, ...], str]:
    """The line items a breakdown's total row states: a bare total label (``Total``,
    ``Consolidated``) in a table whose title states exactly one item and is mostly its
    caption, as for :func:`member_items` (``Capital Expenditures`` over ``North $218 …``
    and ``Total $1,222 …``: the total is the company's capital expenditures); ``((), "")`` otherwise."""
    if not context or not _BARE_TOTAL_RE.match(label):
        return (), ""
    return _title_item(context)


def _terms(text: str | None) -> frozenset[str]:
    """The content terms of ``text`` as a set (:func:`~citewell.domains.finance.statements.phrase_terms`)."""
    return frozenset(phrase_terms(text or ""))


def same_segment(row_name: str | None, asked_name: str | None) -> bool:
    """Whether a row's segment is the one asked: no name asked (any segment), or every
    content word of the row's segment name is in the asked name (``Consumer`` for
    ``Verizon Consumer``), or the reverse."""
    if not asked_name:
        return True
    row, asked = _terms(row_name), _terms(asked_name)
    return bool(row) and (row <= asked or asked <= row)


def names_segment(label: str, asked_name: str | None) -> bool:
    """Whether a row's label names the segment asked: every content word of the asked
    name is in the label (``Total Digital Media revenue`` for ``Digital Media``); False
    when no name is asked."""
    asked = _terms(asked_name)
    return bool(asked) and asked <= _terms(label)


#: Rank of a row's scope for each scope a question asks (lower first).
_RANKS = {
    "consolidated": {"consolidated": 0, "attributable": 1, "segment": 2, "noncontrolling": 4},
    "attributable": {"attributable": 0, "consolidated": 1, "segment": 2, "noncontrolling": 4},
    # the noncontrolling interests' share asked: that row, else the entity's figures (said to be another scope)
    "noncontrolling": {"noncontrolling": 0, "consolidated": 1, "attributable": 2, "segment": 3},
}


def scope_rank(row: ReportingScope, asked: ReportingScope | None) -> int:
    """How well a row's scope answers the asked one, lower first: the asked scope itself;
    for a segment asked, a segment of another name after the consolidated figures (it is
    another part of the entity); noncontrolling interests last (module docstring), unless
    they are what is asked."""
    kind = asked.kind if asked is not None else "consolidated"
    if kind == "segment":
        if row.kind == "segment":
            return 0 if same_segment(row.name, asked.name if asked else None) else 3
        return 1 if row.kind in ("consolidated", "attributable") else 4
    return _RANKS.get(kind, _RANKS["consolidated"]).get(row.kind, 4)
