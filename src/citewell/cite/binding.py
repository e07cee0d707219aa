"""What a passage states a figure *for*: its period, its measure and its scope
(docs/architecture.md rule 8, the ``period_mismatch``, ``measure_mismatch`` and
``scope_mismatch`` reasons of :mod:`citewell.cite.verdict`).

A figure found in a passage supports a claim only when the passage states it for what
the claim says it is. This module reads, for each place a passage holds a number:

- **period**: the years its sentence names, and the periods it names relative to them:
  ``a year earlier``, ``a year ago``, ``the prior year``, ``the previous year``, ``last
  year``, ``year-ago`` name the year before the sentence's (or, when the sentence names
  none, the passage's latest year before it) (:func:`with_relative_years`);
- **measure**: for a table row, its label (the part before ``as a % of`` / ``as a
  percentage of`` when the row states a ratio: the measure of ``Cost of sales as a % of
  revenues`` is cost of sales) with the caption row above it (``Revenues:`` over its
  members); for prose, the clause holding the number, or the clause before it when that
  one names no measure or opens with a comparison ("Revenue was 5,000 in 2023, up from
  4,000 in 2022": both figures are revenue) (:func:`prose_contexts`, :func:`table_contexts`);
- **scope**: the capitalised words of a row's label (a segment or region member:
  ``Commercial``, ``International``).

The words that write numbers, periods and directions (:data:`~citewell.text.quantities.FILLER_TERMS`)
and the scope qualifiers of :data:`QUALIFIER_WORDS` never make two measures different.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Sequence

from citewell.text.quantities import FILLER_TERMS, Quantity, TextItems, porter_stem
from citewell.text.tables import is_header_row, row_label
from citewell.text.terms import Concept, tokens

__all__ = ["QUALIFIER_TERMS", "QUALIFIER_WORDS", "RELATIVE_PRIOR_RE", "FigureContext", "matches_measure",
           "measure_fit", "measure_words",
           "prose_contexts", "table_contexts", "with_relative_years"]

#: A period named relative to the year a text speaks of: the year before it. Plain English
#: (the wording of MD&A comparisons: "compared with 2,900 a year earlier", "the prior year").
RELATIVE_PRIOR_RE = re.compile(
    r"\b(?:a\s+year\s+(?:earlier|ago|before)|the\s+year\s+before|year[\s-]ago|"
    r"(?:the\s+)?(?:prior|previous|preceding|last)[\s-]+(?:fiscal[\s-]+)?year)\b", re.IGNORECASE)

#: Words that qualify a line item's scope without naming another measure: ``Total
#: revenue``, ``Net revenues`` and ``Consolidated revenue`` are revenue, ``Net income attributable to the
#: company's shareholders`` is net income (the attributable amount is what a filing's
#: "net income" means for its shareholders). "total" is already a filler word.
QUALIFIER_WORDS = frozenset("""net consolidated combined overall attributable shareholders stockholders
    holders owners parent common company group""".split())
QUALIFIER_TERMS = frozenset(porter_stem(w) for w in QUALIFIER_WORDS) | QUALIFIER_WORDS

#: Where a ratio row's own measure ends: "Cost of sales as a % of revenues".
_RATIO_OF_RE = re.compile(r"\s(?:as\s+a\s+(?:%|percent(?:age)?)\s+of|%\s+of|percent(?:age)?\s+of)\s", re.IGNORECASE)
#: Clause boundaries of prose: a comma or semicolon before a space (not a thousands
#: separator), a colon, a dash between words, and the joining words of a contrast.
#: A clause that opens with a comparison ("up from", "compared with", "down from", "versus").
_COMPARES_RE = re.compile(r"\s*(?:up|down)?\s*(?:from|compared|versus|vs\.?|against)\b", re.IGNORECASE)
_CLAUSE_RE = re.compile(r"[,;](?=\s)|:\s|\s[-\u2013\u2014]\s|\b(?:but|while|whereas|although|though|however)\b",
                        re.IGNORECASE)


@dataclass(frozen=True)
class FigureContext:
    """One place of a passage that holds numbers, with what it states them for.

    - ``numbers``: the numbers it holds (of the passage unit's :class:`TextItems`);
    - ``measure``: the content terms naming its measure (no filler words, qualifiers or
      numbers; no names in prose): a table row's label and caption, a clause's words;
    - ``own``: the measure words of the row's own label or the clause itself (what
      :func:`measure_fit` counts as words the claim does not say; a caption's words
      only widen what the row matches);
    - ``member``: a table row whose own label names none of what its caption names
      (``Commercial`` under ``Revenues:``): a part of the caption's measure, a segment,
      region or product line;
    - ``label``: the row's label as written (tables), the clause (prose);
    - ``names``: see the field.
    """

    numbers: tuple[Quantity, ...]
    measure: frozenset[str]
    own: frozenset[str]
    member: bool
    label: str
    #: prose: the names (capitalised words) the clause itself writes (a segment
    #: "Coatings", a region); empty for tables, whose names are in ``measure``
    names: frozenset[str] = frozenset()


#: Words that join a comparison or name a period: "compared with 2,900 a year earlier",
#: "(year ended December 31, 2022)", "three months ended" name no measure of their own.
_LINK_WORDS = frozenset("""compared comparison versus vs up down earlier ago prior previous preceding last
    before after against ended ending end week weeks three six nine twelve""".split())
_LINK_TERMS = frozenset(porter_stem(w) for w in _LINK_WORDS) | _LINK_WORDS


def _measure_terms(text: str, *, keep_names: bool) -> frozenset[str]:
    """Content terms of ``text`` that name a measure: no numbers, filler words,
    qualifiers or comparison words; capitalised names only when ``keep_names``."""
    return measure_words(frozenset(t.term for t in tokens(text)
                                   if t.content and not t.number and (keep_names or not t.name)))


def with_relative_years(units: Sequence[TextItems], texts: Sequence[str]) -> list[TextItems]:
    """``units`` (the items of a passage's sentences, in order, with their normalised
    ``texts``) with the years their relative periods name: each ``a year earlier`` /
    ``the prior year`` … (:data:`RELATIVE_PRIOR_RE`) of a sentence is the year before the
    sentence's latest year, or, when it names none, before the latest year of the nearest
    sentence before it that names one; such a sentence also speaks for that latest year
    itself, placed at its start ("The company had 3,100 employees at year end, compared
    with 2,900 a year earlier" after a sentence about 2023: 3,100 for 2023, 2,900 for
    2022). A unit without a relative period, or with no year to anchor it, is returned
    as it is."""
    out: list[TextItems] = []
    anchor: int | None = None
    for items, text in zip(units, texts):
        own = max(items.years) if items.years else None
        base = own if own is not None else anchor
        spots = [m.start() for m in RELATIVE_PRIOR_RE.finditer(text)] if base is not None else []
        if spots and base is not None:
            years = {y: list(p) for y, p in items.years.items()}
            if own is None:
                years.setdefault(base, []).insert(0, -4)  # the sentence's own period, before its first word
            for pos in spots:
                years.setdefault(base - 1, []).append(pos)
            out.append(replace(items, years={y: sorted(p) for y, p in years.items()}))
        else:
            out.append(items)
        if own is not None:
            anchor = own
    return out


def prose_contexts(text: str, items: TextItems) -> list[FigureContext]:
    """The clauses of one prose sentence (normalised ``text``, read into ``items``) that
    hold numbers, each with the measure it states them for: its own measure words, or
    those of the nearest clause before it that has some (module docstring)."""
    bounds = [0, *(m.end() for m in _CLAUSE_RE.finditer(text)), len(text) + 1]
    out: list[FigureContext] = []
    measure: frozenset[str] = frozenset()
    for a, b in zip(bounds, bounds[1:]):
        clause = text[a:b]
        own = _measure_terms(clause, keep_names=False)
        # "…, up from $2.41 billion in fiscal 2021, which represents 9% growth": a clause
        # that opens with a comparison speaks of the measure before it, and of its own
        measure = own | measure if _COMPARES_RE.match(clause) else own or measure
        names = frozenset(t.term for t in tokens(clause) if t.name and t.content and not t.number
                          and t.term not in FILLER_TERMS)
        numbers = tuple(q for q in items.numbers if a <= q.start < b)
        if numbers:
            out.append(FigureContext(numbers, measure, measure, False, clause.strip(), names))
    return out


def table_contexts(rows: Sequence[tuple[str, TextItems]]) -> list[FigureContext]:
    """The rows of a table passage (``(normalised row text, its items)``, in order) that
    hold numbers, each with its measure: the words of its label before a ratio's ``as a %
    of``, with those of the nearest caption row above it (a row with a label and no
    numbers, ``Revenues:``, below the last column header: the lines above a header
    title the table); a row whose own words are none of its caption's is a ``member``
    (``Commercial`` under ``Revenues:``)."""
    out: list[FigureContext] = []
    caption: frozenset[str] = frozenset()
    for text, items in rows:
        if is_header_row(text):  # the lines above a column header title the table: no caption
            caption = frozenset()
            continue
        label = row_label(text)
        if not items.numbers:
            caption = _measure_terms(label, keep_names=True)
            continue
        own = _measure_terms(_RATIO_OF_RE.split(f" {label} ", maxsplit=1)[0], keep_names=True)
        out.append(FigureContext(tuple(items.numbers), own | caption, own,
                                 bool(caption and own and not own & caption), label))
    return out


def measure_fit(concepts: Sequence[Concept], claim_terms: frozenset[str],
                context: FigureContext) -> tuple[float, int]:
    """``(coverage, extras)`` of a claim's measure by one figure context: the share of the
    claim's measure ``concepts`` that the context's measure words match
    (:meth:`~citewell.text.terms.Concept.matches`), and how many of its own words (not
    its caption's) the claim says in no form (``claim_terms``: every content term of the claim and of its
    concepts' alternatives). ``Revenue`` against ``Cost of revenue``: ``(1.0, 1)``;
    against ``Total revenue``: ``(1.0, 0)``. No concepts: ``(1.0, 0)``."""
    if not concepts:
        return 1.0, 0
    got = sum(1 for c in concepts if matches_measure(c, context.measure))
    return got / len(concepts), sum(1 for t in context.own if t not in claim_terms)


def measure_words(alternative: frozenset[str]) -> frozenset[str]:
    """The terms of one of a concept's alternatives (or of a row label) that can name a
    measure (the words a context's measure keeps; no footnote letters):
    ``{"total", "sharehold", "equiti"}`` → ``{"equiti"}``."""
    return frozenset(t for t in alternative - FILLER_TERMS - QUALIFIER_TERMS - _LINK_TERMS if len(t) > 1)


def matches_measure(concept: Concept, measure: frozenset[str], *, literal: bool = False) -> bool:
    """Whether ``measure`` (a context's measure words) names ``concept``: holds every
    measure word (:func:`measure_words`) of one of its alternatives, or of its first, the
    claim's own wording, when ``literal``. A concept of no measure words matches none."""
    alternatives = concept.alternatives[:1] if literal else concept.alternatives
    for alt in alternatives:
        words = measure_words(alt)
        if words and words <= measure:
            return True
    return False
