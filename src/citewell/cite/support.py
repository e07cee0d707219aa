"""Support checks: does the cited passage back the sentence? (docs/architecture.md rule 8).

Every (answer sentence, cited passage) pair gets a :class:`Support`
``{verdict, score, reasons[]}`` from deterministic checks; :func:`apply_support` puts it
on each cited part and each reference occurrence of a :class:`~citewell.models.Message`
and, under policy ``drop``, removes the citations that are not supported.

Inputs
======

``sentence`` is the answer sentence as a reader sees it: the part's text with its
``[N]`` markers (and the whitespace directly before each) removed and the rule-5
markdown escapes undone (a backslash before ASCII punctuation is dropped: ``\\[``,
``\\]``, ``\\```, ``\\\\``, ``\\(``, ``\\:`` …, the exact inverse of
:func:`citewell.generate.extractive.escape_quote` and of the cite stage's escapes).
``passage`` is the cited chunk's exact text (``Reference.text``).

Normalisation (both texts): thin / narrow no-break spaces between digit groups are
thousands separators (``34 229`` → ``34,229``); then Unicode NFKC (no-break spaces become
spaces, fullwidth digits ASCII digits, ``…`` three dots); the minus sign and the dashes
``‒ – —`` become ``-``; curly quotes become straight ones; whitespace runs become one space.

Verdicts and rules (in this order)
==================================

1. ``unchecked`` (score 0): the passage is missing or blank (reason ``no_passage``), or
   the sentence has nothing checkable: no number and no content word
   (``nothing_to_check``).
2. ``supported`` (score 1.0, reason ``verbatim``): the sentence, with its final run of
   ``.``/``!``/``?`` removed, occurs in the passage (after normalisation, case kept) at
   word boundaries (``rose 1`` is not found in ``rose 12%`` nor in ``rose 1.5%``). This is
   the extractive generator's case: its quotes are exact text, a line-broken unit
   collapsed to spaces, a long one cut after whole words with ``…``.
3. Otherwise the sentence's *items* are parsed and looked up in the passage:

   - **numbers** (kind ``amount``, ``percent``, ``pp``): digits with ``,`` thousands
     separators and ``.`` decimals; a currency (``$ € £ ¥ ₹``, ``US$``, ``USD``, ``EUR``,
     ``GBP`` … before, ``dollars``/``euros`` after); a scale word (``thousand``,
     ``million``, ``billion``, ``trillion``, ``bn``, ``mn``, ``mm``, ``tn``, and ``k``/
     ``m``/``b`` attached to a number that has a currency: ``$2.3B``); ``%``/``percent``
     (percent); ``percentage points``/``pp``/``points`` and ``basis points``/``bps``
     (÷100) (percentage points, which never match a percent). Signs, ``-``/``−``/``–``
     and table parentheses ``(1,749)`` are read as magnitudes. A number glued to a
     letter is a name, not a quantity (``3M``, ``A380``, ``COVID-19``, ``10-K``, ``2nd``),
     and so is the number of ``Item 7``, ``Note 12``, ``Form 10``, ``Page 5`` ….
     A passage declares a scale for its bare numbers with ``(Millions)``, ``in
     thousands``, ``($ in millions)``, ``millions of dollars`` or ``($000)``; such a bare
     number is read both as written and times each declared scale.
     A sentence number is *found* when some passage number of a compatible kind
     (same kind; a percent may also match a bare number of a passage that has a ``%``
     column header; currencies must agree when both are stated) equals it after
     scaling (``$2.3 billion`` = ``2,300`` in a millions table; ``1,234.5`` = ``1234.5``)
     or, rounded half-up to the sentence's precision (its last written digit times its
     scale), equals it (``$34.2 billion`` for ``34,229`` millions, ``$1.7 billion`` for
     ``(1,749)`` millions, ``12%`` for ``12.4%``). A sentence number without a scale word
     is also compared with the passage numbers as written (``34,229`` in a millions
     table). A number with at least 2 significant digits that is none of the passage's
     is *computed* (reason ``computed:<n>``) when the sentence says it is a change and it
     is, at its precision, the difference ``a-b`` of two of them (an amount) or their
     change ``(a-b)/b`` (a percent), or says it is a share or ratio and it is ``a/b``
     (a percent): ``increased by $2.3 million`` from ``$12.4 million`` and ``$10.1
     million``; ``grew 23%``; ``a margin of 25%``. A model asked for a margin or a growth
     rate computes it.
   - **years** (``2022``, ``FY2022``, ``FY22``, ``fiscal 2022``, ``fiscal '22``, the year
     of ``Q4 2023``/``4Q23``/``Q4 FY23`` and of dates): found when the passage names
     the same year in any of these forms.
   - **quarters** (``Q4``, ``4Q``, ``fourth quarter``): found when the passage names
     the same quarter in any of these forms.
   - **dates** (month and day: ``December 31, 2022``, ``31 December``, ``2022-12-31``,
     ``12/31/2022``): found when the passage has the same month and day in any of
     these forms (its year is a year item).

   Passage *units* are its sentences (syntok) for prose and its rows (non-blank lines, a
   line without letters continuing the row above) for tables (``text_type`` ``table``,
   or when ``text_type`` is not given, a passage most of whose lines are numeric).
   The *best unit* is the one sharing the most content terms with the sentence.

   **Hard contradictions** (any one gives ``unsupported``):

   - ``number_not_found:<as written>``: a sentence number is not found;
   - ``year_not_found:<yyyy>`` (prose only): the passage never names that year: the
     claim is about another year;
   - ``year_mismatch:<yyyy>`` (prose only): every passage sentence that holds one of the
     sentence's numbers names years, none of them a year of the sentence (``In 2021 …
     $34.2 billion`` against ``In 2022 … $34.2 billion. In 2021 … $35.4 billion.``);
   - ``quarter_not_found:Q<n>``, ``date_not_found:<mm>-<dd>`` (prose only);
   - ``negation_mismatch``: exactly one of the sentence and its best unit is negated —
     judged on the unit's clauses that share the most words with the sentence (all of
     them must disagree; when only some do, the soft reason ``negation_unclear``)
     (``not``, ``no``, ``never``, ``neither``, ``nor``, ``none``, ``cannot``, ``n't``;
     not ``not only`` nor ``No.`` before a number), and the best unit covers at least half of the sentence's concepts;
   - ``direction_mismatch``: the sentence says only up (``increased``, ``rose``, ``grew``,
     ``higher`` …) and the best unit only down (``decreased``, ``fell``, ``declined``,
     ``lower`` …), or the reverse, with the same coverage condition.

   **Soft doubts** (``uncertain`` when there is no hard contradiction):

   - ``low_overlap:<coverage>``: the share of the sentence's concepts found in the
     passage is below :data:`MIN_COVERAGE_WITH_NUMBERS` (0.5) when the sentence has a
     number, else below :data:`MIN_COVERAGE` (0.6). Concepts are
     :func:`citewell.text.terms.question_concepts` of the sentence (content words,
     stop words out, Porter stems, the finance synonyms of ``EXPANSIONS``: ``capital
     expenditures`` is found as ``purchases of property, plant and equipment``),
     without numbers and without the words numbers and periods are written with
     (:data:`FILLER_WORDS`: ``fiscal``, ``year``, ``billion``, ``percent``, month names,
     ``increased``/``decreased`` and the other direction words …);
   - ``entity_not_found:<terms>``: the sentence names entities (capitalised words that do
     not start it, a possessive first word such as ``Apple's``, all-caps words, tickers
     such as ``3M``; not period names such as ``Q4``/``FY22``) and fewer than half of them
     occur in the passage or in the optional ``title`` (the resource title);
   - the negation or direction mismatches above when the best unit covers less than half
     of the sentence's concepts;
   - ``year_not_found``/``quarter_not_found``/``date_not_found`` in a table (a table page
     may leave its period to a heading elsewhere);
   - ``number_out_of_context:<n>``: the number is found, but no passage unit holding it
     matches any of the sentence's concepts other than names (``$1.8 billion`` of
     capital expenditures found only as ``Depreciation and amortization 1,831``);
   - ``number_more_precise:<n>``: the sentence number is more precise than the passage
     number it rounds to (``$34,229 million`` against ``$34.2 billion``);
   - ``scale_unknown:<n>``: the sentence number has a scale word, the passage declares
     none, and one of its bare numbers matches under an assumed thousand/million/billion;
   - ``low_similarity:<s>``: an ``embedder`` is given and the cosine similarity of the
     sentence with the passage (best of the whole passage and its best unit) is below
     :data:`MIN_SIMILARITY` (0.5) — except for a table whose numbers the sentence all
     found (a sentence and a table row embed far apart even when they agree).

4. Otherwise ``supported``.

Score (in [0, 1]): ``coverage`` when the sentence has no number, else the mean of
``coverage`` and the share of its numbers found; with an embedder, the mean of that and
the similarity. ``unsupported`` caps it at 0.3, ``uncertain`` at 0.6; ``supported`` is always at least 0.5
(1.0 when verbatim); ``unchecked`` is 0. Reasons of a checked pair also carry
``coverage:<c>`` and, when numbers were checked, ``numbers_found:<k>/<n>``, and
``rounded:<n>`` for a number found by rounding. Reason values are written as in the
sentence (``number_not_found:$2.3 billion``); coverage and similarity with 2 decimals.

Messages
========

:func:`apply_support` (policy ``flag``, the default, or ``drop``) returns a copy of the
message where

- every reference occurrence gets the support of (the sentence of the part holding the
  marker, that reference's passage ``Reference.text``); a reference without text (a post
  the workspace does not know) gives ``unchecked``/``no_passage``;
- every part that holds a marker gets the *worst* support of its cited passages, by
  :data:`VERDICT_ORDER` ``supported < unchecked < uncertain < unsupported`` (ties: the
  lower score): ``unchecked`` means "could not check", which is better news than a check
  that found doubt. Parts without markers keep ``support: None``.

Policy ``drop`` removes every citation (marker occurrence) whose pair is ``unsupported``
or ``uncertain`` (``unchecked`` ones stay, flagged): the marker goes with the spaces and
tabs directly before it (a line break before it stays, so no two lines are joined; a bracketed number that
the removal creates, as in ``[12[1]]``, is escaped, rule 5);
remaining sources are renumbered gap-free by first appearance; references (first
occurrence and ``occurrences``), parts (rule 6, rebuilt with
:func:`~citewell.cite.parts.build_parts`), ``citations``/``resource_ids`` (rule 7) are
recomputed; entity references and earlier warnings are kept; the markdown structure
(code blocks and spans, links) must read back unchanged: if making a marker's line blank
would change it (a marker starting its line: a blank line, or a list marker or fence
brought to the line start; a marker between two code spans joining them), such markers,
then all removed ones, are replaced by :data:`LINE_KEEPER` (U+200B); if that does not
help either, those citations stay, flagged, with a ``citation_kept`` warning
(same fields) instead; ``grounded`` becomes false
when no numbered source is left. Removing a marker can merge two parts into one
sentence, so checking and dropping repeat until every remaining citation passes. Each
dropped (sentence, passage) pair adds one warning ``{"code": "citation_dropped",
"message", "citation": N in the input message, "verdict", "score", "reasons": [...]}``.
Offsets are worked in code points and returned in the message's ``offset_unit``.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from itertools import pairwise
from typing import Any, Callable

from citewell.embed import Embedder
from citewell.models import Message, Notice, Occurrence, Passage, Reference, SourceRef
from citewell.text.terms import NAME_BOOST, content_terms, porter_stem, question_concepts, tokens
from citewell.text.numbers import PERIOD_SPAN_RE, YEAR_PATTERN, column_periods
from citewell.text.sentences import sentence_spans
from citewell.text.tables import is_header_row, looks_tabular, row_label, row_spans, table_header

from .links import escape_numbers, scan
from .offsets import OffsetMap, convert_offsets
from .parts import Marker, build_citations, build_parts

__all__ = [
    "markers_by_part",
    "FILLER_WORDS",
    "LINE_KEEPER",
    "MIN_COVERAGE",
    "MIN_COVERAGE_WITH_NUMBERS",
    "MIN_SIMILARITY",
    "POLICIES",
    "VERDICTS",
    "VERDICT_ORDER",
    "Embedder",
    "Quantity",
    "Support",
    "apply_support",
    "Judge",
    "check_rules",
    "check_support",
    "declared_scales",
    "grounded_coverage",
    "message_sentence",
    "periods",
    "quantities",
    "rounds_to",
    "sentence_support",
    "unescape_markdown",
]

VERDICTS: tuple[str, ...] = ("supported", "unsupported", "uncertain", "unchecked")
#: Badness order used to combine the passages of one part (worst wins).
VERDICT_ORDER: dict[str, int] = {"supported": 0, "unchecked": 1, "uncertain": 2, "unsupported": 3}
POLICIES: tuple[str, ...] = ("flag", "drop")
#: Verdicts whose citations policy ``drop`` removes.
DROPPED_VERDICTS = frozenset({"unsupported", "uncertain"})

MIN_COVERAGE = 0.6
"""Concept coverage a sentence without numbers needs to be supported."""
MIN_COVERAGE_WITH_NUMBERS = 0.5
"""Concept coverage a sentence whose numbers were all found needs to be supported."""
MIN_SIMILARITY = 0.5
"""Cosine similarity (when an embedder is configured) below which a pair is uncertain."""
MIN_BEST_UNIT_COVERAGE = 0.5
"""Coverage of the sentence by its best passage unit from which a negation or direction
mismatch is a hard contradiction rather than a doubt."""
UNSUPPORTED_SCORE_CAP = 0.3
UNCERTAIN_SCORE_CAP = 0.6

#: ``judge(sentence, passage_text) -> True (supports) | False (does not) | None (no
#: opinion)``: a second opinion on ``uncertain`` pairs, e.g. a model asked the question
#: (:class:`citewell.generate.llm.LLMGenerator` with ``CITEWELL_LLM_JUDGE=1``).
Judge = Callable[[str, str], "bool | None"]


@dataclass(frozen=True)
class Support:
    """The support of one (sentence, passage) pair (docs/architecture.md rule 8).

    - ``verdict``: ``supported``, ``unsupported``, ``uncertain`` or ``unchecked``;
    - ``score``: evidence strength in [0, 1] (see the module docstring);
    - ``reasons``: short machine-readable strings ``name`` or ``name:value``
      (``verbatim``, ``number_not_found:2,300``, ``year_not_found:2021``,
      ``negation_mismatch``, ``low_overlap:0.31`` …).
    """

    verdict: str
    score: float
    reasons: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """``{"verdict": str, "score": float, "reasons": [str, ...]}``."""
        return {"verdict": self.verdict, "score": self.score, "reasons": list(self.reasons)}


# --------------------------------------------------------------------------- text


_UNESCAPE_RE = re.compile(r"\\([!-/:-@\[-`{-~])")
_GROUP_SPACE_RE = re.compile(r"(?<=\d)[\u2009\u202f](?=\d{3}(?!\d))")
_DASHES = str.maketrans({"\u2212": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2010": "-",
                         "\u2011": "-", "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_WS_RE = re.compile(r"\s+")
_LEADING_MARKDOWN_RE = re.compile(r"^(?:\s*(?:>|#{1,6}(?=\s)|[-*+\u2022](?=\s)|\d{1,3}[.)](?=\s)))+\s*")
_EMPHASIS_RE = re.compile(r"(\*\*|__|\*|_)(?=\S)(.+?)(?<=\S)\1")


def unescape_markdown(text: str) -> str:
    """Drop the backslash of every markdown escape (a backslash before ASCII
    punctuation): undoes rule 5 (``\\[12\\]``), :func:`~citewell.generate.extractive.
    escape_quote` (``\\\\``, ``\\```, ``\\[``, ``\\]``, ``\\(``) and the cite stage's
    ``\\(``/``\\:``/``\\~`` after markers, exactly."""
    return _UNESCAPE_RE.sub(r"\1", text)


def _normalise(text: str) -> str:
    """Normalised text for comparisons (see the module docstring)."""
    text = _GROUP_SPACE_RE.sub(",", text)
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text).translate(_DASHES)
    return _WS_RE.sub(" ", text).strip()


# --------------------------------------------------------------------------- items

_MONTHS = {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
           "oct": 10, "nov": 11, "dec": 12}
_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
          r"Sept?(?:ember)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
_YEAR4 = YEAR_PATTERN
_ISO_DATE_RE = re.compile(rf"\b({_YEAR4})-(\d{{1,2}})-(\d{{1,2}})\b")
_SLASH_DATE_RE = re.compile(rf"\b(\d{{1,2}})/(\d{{1,2}})/({_YEAR4}|\d{{2}})\b")
_MONTH_DAY_RE = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?!,\d)(?:,?\s+({_YEAR4})\b)?", re.IGNORECASE)
_DAY_MONTH_RE = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\b\.?(?:,?\s+({_YEAR4})\b)?", re.IGNORECASE)
_QUARTER_RE = re.compile(
    rf"\bQ([1-4])\b(?:\s*(?:(?:FY|CY)\s*'?|')(\d{{4}}|\d{{2}})\b|\s+({_YEAR4})\b)?"
    rf"|\b([1-4])Q\s*(?:'?(\d{{2}})|({_YEAR4}))?\b"
    r"|\b(first|second|third|fourth|1st|2nd|3rd|4th)[\s-]+(?:fiscal\s+|calendar\s+)?quarter\b",
    re.IGNORECASE)
_FISCAL_RE = re.compile(r"\b(?:FY|CY)\s*'?(\d{4}|\d{2})\b|\bfiscal\s+(?:year\s+)?'?(\d{2})\b(?![.,]\d)", re.IGNORECASE)
_LABEL_NUMBER_RE = re.compile(
    r"\b(?:Items?|Notes?|Parts?|Pages?|Sections?|Exhibits?|Rules?|Articles?|Forms?|Schedules?|Chapters?|"
    r"Figures?|Tables?|No\.)\s+\d+[A-Za-z]?\b|\b\d{1,2}-[KQF]\b")
_NUMBER_RE = re.compile(r"(?<![\w.,'/])(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?![\d,]\d)")
_CURRENCY_BEFORE_RE = re.compile(r"(US\$|USD|EUR|GBP|JPY|CHF|CAD|AUD|INR|RMB|CNY|[$€£¥₹])\s*\(?\s*-?\s*$")
_NEGATIVE_BEFORE_RE = re.compile(r"(?:\(|-)\s*(?:US\$|[$€£¥₹])?\s*$")
_SUFFIXES: tuple[tuple[re.Pattern[str], str, Decimal], ...] = tuple(
    (re.compile(p, re.IGNORECASE), kind, Decimal(f)) for p, kind, f in (
        (r"\s?(?:percentage[\s-]+points?|pp|ppts?|%\s*points?)\b", "pp", "1"),
        (r"\s?(?:basis[\s-]+points?|bps|bp)\b", "pp", "0.01"),
        (r"\s?%", "percent", "1"),
        (r"\s?(?:percent|per\s?cent|pct)\b", "percent", "1"),
        (r"\s?points?\b", "pp", "1"),
    ))
_SCALE_WORD_RE = re.compile(r"\s?(thousand|million|billion|trillion)s?\b|\s?(bn|mn|mln|mm|tn|trn)\b", re.IGNORECASE)
_SCALE_LETTER_RE = re.compile(r"([kKmMbBT])\b")
_SCALE_OF = {"thousand": 3, "million": 6, "billion": 9, "trillion": 12, "bn": 9, "mn": 6, "mln": 6,
             "mm": 6, "tn": 12, "trn": 12, "k": 3, "m": 6, "b": 9, "t": 12}
_CURRENCY_AFTER_RE = re.compile(r"\s?(USD|EUR|GBP|dollars?|euros?)\b", re.IGNORECASE)
_CURRENCY_CODE = {"$": "USD", "US$": "USD", "USD": "USD", "DOLLAR": "USD", "DOLLARS": "USD", "€": "EUR",
                  "EUR": "EUR", "EURO": "EUR", "EUROS": "EUR", "£": "GBP", "GBP": "GBP", "¥": "JPY",
                  "JPY": "JPY", "₹": "INR", "INR": "INR", "CHF": "CHF", "CAD": "CAD", "AUD": "AUD",
                  "RMB": "CNY", "CNY": "CNY"}
_DECLARED_SCALE_RE = re.compile(
    r"(?:\(|\bin\s)[^()\n]{0,30}?\b(thousands|millions|billions)\b"
    r"|\b(thousands|millions|billions)\s+of\s+(?:u\.?s\.?\s+)?(?:dollars|euros)\b", re.IGNORECASE)
_DECLARED_THOUSANDS_RE = re.compile(r"\(\s*(?:[$€£]\s*)?(?:in\s+)?000'?s?\s*\)")
_PERCENT_HEADER_RE = re.compile(r"(?<![\d\s])\s*%|\(%\)|%\s*(?:change|of)\b", re.IGNORECASE)


@dataclass(frozen=True)
class _Number:
    """A number of a text: ``kind`` amount/percent/pp; magnitudes as Decimals.

    ``raw``/``raw_step``: the number as written and its last digit's unit; ``scaled``:
    a scale word was written; ``value``/``step``: times that scale (``raw`` otherwise);
    ``start``: position in the normalised text; ``text``: as written.
    """

    kind: str
    raw: Decimal
    raw_step: Decimal
    value: Decimal
    step: Decimal
    scaled: bool
    currency: str | None
    start: int
    text: str


@dataclass
class _Items:
    """Everything checkable in one (normalised) text."""

    numbers: list[_Number] = field(default_factory=list)
    years: dict[int, list[int]] = field(default_factory=dict)  # year -> positions
    quarters: set[int] = field(default_factory=set)
    dates: set[tuple[int, int]] = field(default_factory=set)
    year_text: dict[int, str] = field(default_factory=dict)


def _year(two_or_four: str) -> int:
    y = int(two_or_four)
    return y if len(two_or_four) == 4 else 2000 + y if y < 70 else 1900 + y


def _month(name: str) -> int:
    return _MONTHS[name[:3].lower()]


def _month_ok(name: str) -> bool:
    return name[:1].isupper()  # "may 5" is a verb and a number


def _add_year(items: _Items, year: int, pos: int, text: str) -> None:
    if 1900 <= year <= 2099:
        items.years.setdefault(year, []).append(pos)
        items.year_text.setdefault(year, text)


def _extract(text: str) -> _Items:
    """Numbers, years, quarters and dates of normalised ``text``."""
    items = _Items()
    taken: list[tuple[int, int]] = []

    def free(a: int, b: int) -> bool:
        return all(b <= x or a >= y for x, y in taken)

    for m in _LABEL_NUMBER_RE.finditer(text):
        taken.append(m.span())
    for m in PERIOD_SPAN_RE.finditer(text):  # "3 months to July 29, 2023": a period's length, no figure
        taken.append(m.span())
    for m in _ISO_DATE_RE.finditer(text):
        if free(*m.span()) and 1 <= int(m.group(2)) <= 12 and 1 <= int(m.group(3)) <= 31:
            _add_year(items, int(m.group(1)), m.start(), m.group(1))
            items.dates.add((int(m.group(2)), int(m.group(3))))
            taken.append(m.span())
    for m in _SLASH_DATE_RE.finditer(text):
        if free(*m.span()) and 1 <= int(m.group(1)) <= 12 and 1 <= int(m.group(2)) <= 31:
            _add_year(items, _year(m.group(3)), m.start(), m.group(3))
            items.dates.add((int(m.group(1)), int(m.group(2))))
            taken.append(m.span())
    for m in _MONTH_DAY_RE.finditer(text):
        if free(*m.span()) and _month_ok(m.group(1)) and 1 <= int(m.group(2)) <= 31:
            items.dates.add((_month(m.group(1)), int(m.group(2))))
            if m.group(3):
                _add_year(items, int(m.group(3)), m.start(3), m.group(3))
            taken.append(m.span())
    for m in _DAY_MONTH_RE.finditer(text):
        if free(*m.span()) and _month_ok(m.group(2)) and 1 <= int(m.group(1)) <= 31:
            items.dates.add((_month(m.group(2)), int(m.group(1))))
            if m.group(3):
                _add_year(items, int(m.group(3)), m.start(3), m.group(3))
            taken.append(m.span())
    ordinal = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
    for m in _QUARTER_RE.finditer(text):
        if not free(*m.span()):
            continue
        g = m.groups()
        if g[0]:
            items.quarters.add(int(g[0]))
            y = g[1] or g[2]
        elif g[3]:
            items.quarters.add(int(g[3]))
            y = g[4] or g[5]
        else:
            items.quarters.add(ordinal[g[6].lower()])
            y = None
        if y:
            _add_year(items, _year(y), m.start(), y)
        taken.append(m.span())
    for m in _FISCAL_RE.finditer(text):
        if free(*m.span()):
            y = m.group(1) or m.group(2)
            _add_year(items, _year(y), m.start(), m.group(0))
            taken.append(m.span())
    for m in _NUMBER_RE.finditer(text):
        a, b = m.span()
        if not free(a, b):
            continue
        before = text[max(0, a - 2):a]
        if len(before) == 2 and before[1] == "-" and before[0].isalpha():
            continue  # COVID-19
        number = _number(text, m)
        if number is None:
            continue
        if number == "year":
            _add_year(items, int(m.group()), a, m.group())
            continue
        items.numbers.append(number)
    return items


def _number(text: str, m: re.Match[str]) -> _Number | str | None:
    """The quantity of number match ``m`` (``"year"`` for a bare year, ``None`` for a
    number that is part of a name)."""
    a, b = m.span()
    digits = m.group()
    try:
        raw = Decimal(digits.replace(",", ""))
    except InvalidOperation:  # pragma: no cover - the pattern only matches digits
        return None
    decimals = len(digits.split(".", 1)[1]) if "." in digits else 0
    raw_step = Decimal(1).scaleb(-decimals)
    cur_m = _CURRENCY_BEFORE_RE.search(text[max(0, a - 8):a])
    currency = _CURRENCY_CODE.get(cur_m.group(1).upper()) if cur_m else None
    rest = text[b:]
    kind, factor, scale, end = "amount", Decimal(1), 0, b
    for pattern, skind, sfactor in _SUFFIXES:
        sm = pattern.match(rest)
        if sm:
            kind, factor, end = skind, sfactor, b + sm.end()
            break
    if kind == "amount":
        sm = _SCALE_WORD_RE.match(rest)
        if sm:
            scale, end = _SCALE_OF[(sm.group(1) or sm.group(2)).lower()], b + sm.end()
        elif currency:
            lm = _SCALE_LETTER_RE.match(rest)
            if lm:
                scale, end = _SCALE_OF[lm.group(1).lower()], b + lm.end()
        after = _CURRENCY_AFTER_RE.match(text, end)
        if after and currency is None:
            currency = _CURRENCY_CODE.get(after.group(1).upper())
    if end == b and b < len(text) and (text[b].isalpha() or (text[b] == "-" and b + 2 <= len(text)
                                                             and text[b + 1:b + 2].isupper()
                                                             and not text[b + 2:b + 3].isalpha())):
        return None  # 3M, 10x, 2nd, 10-K
    if (kind == "amount" and scale == 0 and currency is None and decimals == 0 and len(digits) == 4
            and 1900 <= int(digits) <= 2099):
        return "year"
    mult = Decimal(1).scaleb(scale) * factor
    start = cur_m.start() + max(0, a - 8) if cur_m else a
    return _Number(kind, raw, raw_step, raw * mult, raw_step * mult, scale > 0, currency, a,
                   text[start:end].strip())


Quantity = _Number
"""A quantity of a text as :func:`quantities` reads it (public name of the parsed number)."""
_SIGN_BEFORE_RE = re.compile(r"(?:\(|-)\s*(?:US\$|USD|EUR|GBP|[$€£¥₹])?\s*$")


def quantities(text: str) -> list[tuple[Quantity, bool]]:
    """The quantities of ``text`` as the support checks read them, in text order, each
    with whether it is written negative (a ``-`` or an opening parenthesis before it,
    after an optional currency: ``-$1,561M``, ``$ (1,749)``).

    Every rule of the module docstring's *numbers* applies (currency, scale word, percent,
    percentage points, thousands separators; a number glued to a letter, a label number
    such as ``Item 7``, years, quarters and dates are not quantities). Magnitudes are
    Decimals: ``value``/``step`` with the scale applied, ``raw``/``raw_step`` as written.
    """
    norm = _normalise(text)
    return [(q, bool(_SIGN_BEFORE_RE.search(norm[max(0, q.start - 8):q.start]))) for q in _extract(norm).numbers]


def periods(text: str) -> tuple[frozenset[int], frozenset[int]]:
    """The years and quarters ``text`` names, in every form the support checks read
    (``2022``, ``FY2022``, ``FY22``, ``fiscal 2022``, ``Q4 2023``, ``4Q23``, dates …):
    ``(years, quarters)``, quarters as 1–4."""
    items = _extract(_normalise(text))
    return frozenset(items.years), frozenset(items.quarters)


def declared_scales(text: str) -> list[int]:
    """Powers of ten that ``text`` declares for its bare numbers (``(Millions)``, ``in
    thousands``, ``($000)`` …: 6, 3 …), in order of first declaration."""
    return _declared_scales(_normalise(text))


def rounds_to(precise: Decimal, coarse: Decimal, step: Decimal) -> bool:
    """Whether ``precise`` rounded half-up to multiples of ``step`` (either neighbour on
    an exact tie) equals ``coarse``: the rounding rule of the number checks."""
    return _near(precise, coarse, step)


def _declared_scales(text: str) -> list[int]:
    scales: list[int] = []
    for m in _DECLARED_SCALE_RE.finditer(text):
        word = (m.group(1) or m.group(2)).lower()
        exp = {"thousands": 3, "millions": 6, "billions": 9}[word]
        if exp not in scales:
            scales.append(exp)
    if _DECLARED_THOUSANDS_RE.search(text) and 3 not in scales:
        scales.append(3)
    return scales


# --------------------------------------------------------------------------- words

_NEGATION_RE = re.compile(r"\b(?:not|no|never|neither|nor|none|cannot)\b(?!\.\s?\d)|n't\b", re.IGNORECASE)
_NOT_NEGATION_RE = re.compile(r"\bnot\s+only\b|\bno\.\s?\d", re.IGNORECASE)
_UP_RE = re.compile(r"\b(?:increas\w*|rose|rise[sn]?|rising|grew|grow(?:s|n|ing|th)?|higher|improv\w*|"
                    r"expand\w*|up)\b", re.IGNORECASE)
_DOWN_RE = re.compile(r"\b(?:decreas\w*|declin\w*|fell|fall(?:s|en|ing)?|drop(?:s|ped|ping)?|lower|"
                      r"reduc\w*|shr[iau]nk\w*|contracted|down)\b", re.IGNORECASE)

FILLER_WORDS = frozenset(
    ["fiscal", "year", "years", "yearly", "annual", "annually", "quarter", "quarters", "quarterly", "month", "months", "period", "periods", "approximately", "roughly", "around", "nearly", "almost", "respectively", "reported", "total", "totaled", "totalled", "amounted", "thousand", "thousands", "million", "millions", "billion", "billions", "trillion", "trillions", "bn", "mn", "mm", "tn", "percent", "percentage", "percentages", "point", "points", "basis", "bps", "pp", "dollar", "dollars", "usd", "eur", "euros", "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "q1", "q2", "q3", "q4", "fy", "first", "second", "third", "fourth", "increase", "increased", "increases", "increasing", "rose", "rise", "rises", "risen", "rising", "grew", "grow", "grows", "grown", "growing", "higher", "decrease", "decreased", "decreases", "decreasing", "decline", "declined", "declines", "declining", "fell", "fall", "falls", "fallen", "falling", "drop", "dropped", "drops", "lower", "reduced", "reduction"]
)
"""Words left out of the content-word coverage: they write numbers, periods and
directions, which have their own checks."""
_FILLER_TERMS = frozenset(porter_stem(w) for w in FILLER_WORDS) | FILLER_WORDS
_POSSESSIVE_START_RE = re.compile(r"\W*([A-Z][\w&.-]*)'s\b")
_PERIOD_NAME_RE = re.compile(r"(?:q[1-4]|[1-4]q\d*|h[12]|fy\d*|cy\d*|10k|10q|8k|20f)")


def _direction(text: str) -> set[str]:
    dirs: set[str] = set()
    if _UP_RE.search(text):
        dirs.add("up")
    if _DOWN_RE.search(text):
        dirs.add("down")
    return dirs


_CLAUSE_RE = re.compile(r"[,;:]|\b(?:but|while|whereas|although|though|however|yet)\b", re.IGNORECASE)


def _best_clauses(text: str, terms: frozenset[str]) -> list[str]:
    """The clauses of ``text`` that share the most content terms with a sentence (all of
    them on a tie): a negation or direction word in another clause ("… kids but won't
    help …") is about something else."""
    scored = [(len(terms & content_terms(c)), c) for c in _CLAUSE_RE.split(text) if c.strip()]
    if not scored:
        return [text]
    top = max(h for h, _ in scored)
    return [c for h, c in scored if h == top]


def _negated(text: str) -> bool:
    cleaned = _NOT_NEGATION_RE.sub(" ", text)
    return bool(_NEGATION_RE.search(cleaned))


# --------------------------------------------------------------------------- passages


@dataclass(frozen=True)
class _Unit:
    text: str
    terms: frozenset[str]
    items: _Items


@dataclass(frozen=True)
class _PassageInfo:
    text: str  # normalised
    table: bool
    terms: frozenset[str]
    items: _Items
    scales: tuple[int, ...]
    percent_header: bool
    units: tuple[_Unit, ...]
    #: a table's value cells, row by row (:func:`_cells`); empty for prose
    cells: tuple[tuple[_Cell, ...], ...] = ()


@lru_cache(maxsize=512)
def _passage(text: str, table: bool | None) -> _PassageInfo:
    is_table = looks_tabular(text) if table is None else table
    norm = _normalise(text)
    if is_table:
        pieces = [text[a:b] for a, b in row_spans(text)]
    else:
        pieces = [text[a:b] for a, b in sentence_spans(text)]
    units = tuple(_Unit(_normalise(p), content_terms(_normalise(p)), _extract(_normalise(p))) for p in pieces)
    return _PassageInfo(
        text=norm,
        table=is_table,
        terms=content_terms(norm),
        items=_extract(norm),
        scales=tuple(_declared_scales(norm)),
        percent_header=bool(_PERCENT_HEADER_RE.search(norm)),
        units=units,
        cells=_cells(units) if is_table else (),
    )


# --------------------------------------------------------------------------- matching


def _near(p: Decimal, q: Decimal, step: Decimal) -> bool:
    """``p`` rounded half-up (either neighbour on an exact tie) to multiples of ``step``
    equals ``q``."""
    return p == q or abs(p - q) * 2 <= step


def _compatible(q: _Number, p: _Number, passage: _PassageInfo) -> bool:
    if q.currency and p.currency and q.currency != p.currency:
        return False
    if q.kind == p.kind:
        return True
    return q.kind == "percent" and p.kind == "amount" and passage.percent_header and not p.scaled


def _readings(p: _Number, passage: _PassageInfo, with_raw: bool) -> list[tuple[Decimal, Decimal]]:
    """(value, step) readings of passage number ``p``."""
    out = [(p.value, p.step)]
    if p.kind == "amount" and not p.scaled:
        for exp in passage.scales:
            mult = Decimal(1).scaleb(exp)
            out.append((p.raw * mult, p.raw_step * mult))
    if with_raw and (p.raw, p.raw_step) not in out:
        out.append((p.raw, p.raw_step))
    return out


def _match_number(q: _Number, pool: Iterable[_Number], passage: _PassageInfo) -> str | None:
    """``"exact"``, ``"rounded"``, ``"more_precise"``, ``"scale_unknown"`` or ``None``."""
    best: str | None = None
    for p in pool:
        if not _compatible(q, p, passage):
            continue
        for value, step in _readings(p, passage, with_raw=not q.scaled):
            if value == q.value:
                return "exact"
            if step < q.step and _near(value, q.value, q.step):
                best = "rounded"
            elif best is None and step > q.step and _near(q.value, value, step):
                best = "more_precise"
    if best is None and q.scaled and q.kind == "amount" and not passage.scales:
        for p in pool:
            if p.kind == "amount" and not p.scaled and _compatible(q, p, passage):
                for exp in (3, 6, 9):
                    mult = Decimal(1).scaleb(exp)
                    if _near(p.raw * mult, q.value, q.step) and p.raw_step * mult <= q.step:
                        return "scale_unknown"
    return best


#: Passage numbers combined pairwise when a sentence number may be computed from them.
MAX_COMPUTED_OPERANDS = 40


def _significant(q: _Number) -> int:
    """Significant digits of a number as written (``2.3`` → 2, ``0.05`` → 1)."""
    return len(str(abs(q.raw)).replace(".", "").lstrip("0")) or 1


_CHANGE_WORDS_RE = re.compile(r"\b(?:change[sd]?|difference|differ\w*|gap|more|less|by)\b", re.IGNORECASE)
_SHARE_WORDS_RE = re.compile(r"\b(?:margin|ratio|share|proportion|rate|coverage|of)\b", re.IGNORECASE)


def _claims_computed(q: _Number, sentence: str) -> tuple[bool, bool] | None:
    """``(change, share)``: whether ``sentence`` says ``q`` is a change (``increased``,
    ``fell``, ``difference``, ``by`` …) or, for a percent, a share or ratio (``margin``,
    ``ratio``, ``of`` …); None when it says neither, and for a number that is no amount or
    percent or has fewer than 2 significant digits (they match too many pairs by chance)."""
    if q.kind not in ("amount", "percent") or _significant(q) < 2:
        return None
    change = bool(_UP_RE.search(sentence) or _DOWN_RE.search(sentence) or _CHANGE_WORDS_RE.search(sentence))
    share = q.kind == "percent" and bool(_SHARE_WORDS_RE.search(sentence))
    return (change, share) if change or share else None


def _computed(q: _Number, pool: Sequence[_Number], passage: _PassageInfo, sentence: str) -> str | None:
    """How ``q`` follows from two numbers ``a``, ``b`` of the passage when the sentence
    says it was computed: a change (``increased``, ``fell``, ``difference``, ``by`` …) of
    ``a - b`` for an amount, ``(a - b) / b`` for a percent; a share or ratio (``margin``,
    ``ratio``, ``of`` …) of ``a / b`` for a percent; rounded to ``q``'s precision. None
    otherwise, and for a number with fewer than 2 significant digits (they match too many
    pairs by chance). Operands are the passage's amounts, in its declared scales."""
    claimed = _claims_computed(q, sentence)
    if claimed is None:
        return None
    change, share = claimed
    values: list[Decimal] = []
    for p in pool:
        if p.kind == "amount" and (q.kind == "percent" or _compatible(q, p, passage)):
            values.extend(v for v, _ in _readings(p, passage, with_raw=not q.scaled) if v > 0)
        if len(values) >= MAX_COMPUTED_OPERANDS:
            break
    values = list(dict.fromkeys(values))
    for a in values:
        for b in values:
            if a == b:
                continue
            if q.kind == "amount":
                if change and a > b and _near(a - b, q.value, q.step):
                    return f"{a}-{b}"
            else:
                if change and _near(abs(a - b) / b * 100, q.value, q.step):
                    return f"({a}-{b})/{b}"
                if share and a < b and _near(a / b * 100, q.value, q.step):
                    return f"{a}/{b}"
    return None


@dataclass(frozen=True)
class _Cell:
    """A value of a table row: its number, the year of its column (None when the row's
    values and its header's periods do not pair up one to one), its column position and
    the content terms of its row's label."""

    number: _Number
    year: int | None
    column: int
    label_terms: frozenset[str]


def _cells(units: Sequence[_Unit]) -> tuple[tuple[_Cell, ...], ...]:
    """The value cells of each row of a table passage, row by row (header rows left
    out). A row's values pair with the periods of the nearest header row above it
    (:func:`~citewell.text.tables.is_header_row`, :func:`~citewell.text.numbers.column_periods`)
    when there are as many of each; otherwise its cells carry no year."""
    rows: list[tuple[_Cell, ...]] = []
    periods: list[Any] = []
    for unit in units:
        if is_header_row(unit.text):
            periods = column_periods(unit.text)
            continue
        numbers = [n for n in unit.items.numbers if n.kind in ("amount", "percent")]
        if not numbers:
            continue
        label = content_terms(row_label(unit.text))
        paired = len(periods) == len(numbers)
        rows.append(tuple(_Cell(n, periods[i].year if paired else None, i, label) for i, n in enumerate(numbers)))
    return tuple(rows)


def _table_computed(q: _Number, info: _PassageInfo, sentence: str, years: frozenset[int]) -> str | None:
    """:func:`_computed` for a table passage, where a figure can only be computed from
    cells that belong together: a change from two cells of one row (two periods of one
    line item), a share from two cells of one column (two line items of one period). The
    row of the changed item, and of a share's numerator, must be named by the sentence
    (its label shares a content term with it), and when the sentence names years and the
    cells' columns have years, the change's newer period or the share's period must be one
    of them ("net income increased by 200" is not supported by the revenue row's change;
    a net margin is not any ratio of two cells)."""
    claimed = _claims_computed(q, sentence)
    if claimed is None:
        return None
    change, share = claimed
    s_terms = content_terms(sentence)

    def values(cell: _Cell) -> list[Decimal]:
        p = cell.number
        if p.kind != "amount" or not (q.kind == "percent" or _compatible(q, p, info)):
            return []
        return [v for v, _ in _readings(p, info, with_raw=not q.scaled) if v > 0]

    def in_years(*cells: _Cell) -> bool:
        known = [c.year for c in cells if c.year is not None]
        return not years or not known or any(y in years for y in known)

    rows = info.cells
    for row in rows:
        if not (row and row[0].label_terms & s_terms):
            continue
        for x in row:
            for y in row:
                if x is y or not change or not in_years(x, y):
                    continue
                for a in values(x):
                    for b in values(y):
                        if q.kind == "amount" and a > b and _near(a - b, q.value, q.step):
                            return f"{a}-{b}"
                        if q.kind == "percent" and a != b and _near(abs(a - b) / b * 100, q.value, q.step):
                            return f"({a}-{b})/{b}"
    if share:
        for row in rows:
            if not (row and row[0].label_terms & s_terms):
                continue
            for x in row:
                for other in rows:
                    for y in other:
                        if other is row or y.column != x.column or not in_years(x):
                            continue
                        for a in values(x):
                            for b in values(y):
                                if a < b and _near(a / b * 100, q.value, q.step):
                                    return f"{a}/{b}"
    return None


def _table_year_mismatch(items: _Items, matched: Sequence[_Number], info: _PassageInfo) -> int | None:
    """The sentence year that a table gives other numbers for, or ``None``: a found
    sentence number every cell of which that matches it sits in a column of another year
    than the sentence's ("5,900 in 2022" against a row ``5,900`` under 2021). Cells whose
    column has no year are neutral."""
    wanted = set(items.years)
    cells = [c for row in info.cells for c in row]
    for q in matched:
        votes = [None if c.year is None else c.year in wanted for c in cells
                 if _match_number(q, [c.number], info) in ("exact", "rounded")]
        if votes and all(v is False for v in votes):
            return min(wanted)
    return None


_COMPARISON_RE = re.compile(r"\b(?:compared\s+(?:to|with)|from|versus|vs\.?|over|than|relative\s+to|"
                            r"respectively)\b", re.IGNORECASE)


def _year_mismatch(items: _Items, matched: Sequence[_Number], info: _PassageInfo) -> int | None:
    """The sentence year that the passage gives other numbers for (prose), or ``None``.

    For each found sentence number, every passage sentence holding a number that
    matches it *speaks for* a set of years: the year written nearest to that number
    (character distance), or all its years when it compares periods (``compared to``,
    ``from``, ``versus``, ``over``, ``than``, ``respectively`` …); a passage sentence
    without years speaks for none and makes the test neutral. A mismatch is a found
    number all of whose passage sentences speak for years, none of them a sentence year.
    """
    wanted = set(items.years)
    for q in matched:
        votes: list[bool | None] = []
        for unit in info.units:
            for p in unit.items.numbers:
                if _match_number(q, [p], info) not in ("exact", "rounded"):
                    continue
                if not unit.items.years:
                    votes.append(None)
                    continue
                if _COMPARISON_RE.search(unit.text):
                    near = set(unit.items.years)
                else:
                    def distance(pos: int, p: _Number = p) -> int:
                        return p.start - (pos + 4) if pos < p.start else pos - (p.start + len(p.text))
                    best = min((distance(pos), year) for year, spots in unit.items.years.items() for pos in spots)
                    near = {best[1]}
                votes.append(bool(near & wanted))
        if votes and all(v is False for v in votes):
            return min(wanted)
    return None


def _coverage(concepts: Sequence[Any], terms: frozenset[str]) -> float:
    if not concepts:
        return 1.0
    total = sum(NAME_BOOST if c.boost == NAME_BOOST else 1.0 for c in concepts)
    got = sum(NAME_BOOST if c.boost == NAME_BOOST else 1.0 for c in concepts if c.matches(terms))
    return got / total


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def _verbatim(sentence: str, passage: str) -> bool:
    """The sentence (final ``.``/``!``/``?`` run removed) occurs in the passage at word
    boundaries (both normalised)."""
    s = sentence.rstrip(" .!?")
    if not s:
        return False
    pattern = re.escape(s)
    if s[0].isalnum():
        pattern = r"(?<![\w.,])" + pattern if s[0].isdigit() else r"(?<!\w)" + pattern
    if s[-1].isalnum():
        pattern += r"(?![.,]?\w)" if s[-1].isdigit() else r"(?!\w)"
    return re.search(pattern, passage) is not None


def _fmt(x: float) -> str:
    return f"{x:.2f}"


def check_support(sentence: str, passage: str | None, *, embedder: Embedder | None = None,
                  text_type: str | None = None, title: str | None = None, judge: Judge | None = None,
                  header: str | None = None) -> Support:
    """:func:`check_rules`, then, for an ``uncertain`` verdict and a ``judge``, the judge's
    opinion: True makes it ``supported`` (reason ``judge:supported``, score at least 0.5),
    False ``unsupported`` (``judge:unsupported``, score at most 0.3); None, or a judge that
    raises, leaves it ``uncertain`` (``judge:none`` / ``judge:failed``)."""
    support = check_rules(sentence, passage, embedder=embedder, text_type=text_type, title=title, header=header)
    if judge is None or support.verdict != "uncertain" or passage is None:
        return support
    try:
        opinion = judge(sentence, f"{header}\n{passage}" if header else passage)
    except Exception:  # noqa: BLE001 - a judge failure must not fail the answer
        return Support(support.verdict, support.score, (*support.reasons, "judge:failed"))
    if opinion is True:
        return Support("supported", round(max(support.score, 0.5), 4), ("judge:supported", *support.reasons))
    if opinion is False:
        return Support("unsupported", round(min(support.score, UNSUPPORTED_SCORE_CAP), 4),
                       ("judge:unsupported", *support.reasons))
    return Support(support.verdict, support.score, (*support.reasons, "judge:none"))


#: Bracketed numbers (``[2]``, ``[1, 2]``, ``[1-3]``, ``【1】``): citation markers a generator
#: wrote that were kept as prose (an out-of-range number), not figures the sentence states.
_BRACKETED_NUMBERS_RE = re.compile(r"[\[【]\s*\d+(?:\s*[,\-–]\s*\d+)*\s*[\]】]")


def check_rules(sentence: str, passage: str | None, *, embedder: Embedder | None = None,
                text_type: str | None = None, title: str | None = None, header: str | None = None) -> Support:
    """Check whether ``passage`` supports ``sentence`` (docs/architecture.md rule 8).

    Args:
        sentence: the answer sentence, markers removed and escapes undone (see
            :func:`message_sentence`); markdown list/heading/quote markers at its start
            and ``**``/``_`` emphasis are ignored.
        passage: the cited chunk's exact text; ``None`` or blank gives ``unchecked``.
        embedder: optional; adds the similarity check and score component.
        text_type: the chunk's ``text_type``; ``table`` selects the table rules, any
            other value the prose rules; ``None`` guesses from the text.
        title: resource title (or other names): its names count for entity overlap.
        header: the column header the extractor recorded for a table chunk whose rows
            it labels from an earlier chunk of the page
            (:func:`citewell.text.tables.table_header`): read as the passage's first
            line, so the years of a quoted row are found.

    Returns:
        A :class:`Support`; the rules are in the module docstring. Deterministic.
    """
    if passage is None or not passage.strip():
        return Support("unchecked", 0.0, ("no_passage",))
    if header:
        passage = f"{header}\n{passage}"
    norm_s = _normalise(sentence)
    table = None if text_type is None else text_type == "table"
    info = _passage(passage, table)
    plain = _EMPHASIS_RE.sub(r"\2", _LEADING_MARKDOWN_RE.sub("", norm_s))
    items = _extract(_BRACKETED_NUMBERS_RE.sub(" ", plain))  # a marker kept as prose ("[2]") states no figure
    concepts = [c for c in question_concepts(plain)
                if not c.number and not all(alt <= _FILLER_TERMS for alt in c.alternatives)]
    checkable = bool(items.numbers or items.years or items.quarters or items.dates or concepts)
    if not checkable:
        return Support("unchecked", 0.0, ("nothing_to_check",))
    if _verbatim(norm_s, info.text) or (plain != norm_s and _verbatim(plain, info.text)):
        return Support("supported", 1.0, ("verbatim",))

    hard: list[str] = []
    soft: list[str] = []
    notes: list[str] = []

    # numbers
    found = 0
    matched: list[_Number] = []
    # concepts that say what a number is about (not names: a table row rarely repeats them)
    topical = [c for c in concepts if c.boost != NAME_BOOST]
    for q in items.numbers:
        how = _match_number(q, info.items.numbers, info)
        if how in ("exact", "rounded"):
            found += 1
            if how == "rounded":
                notes.append(f"rounded:{q.text}")
            matched.append(q)
            if topical and not any(_match_number(q, u.items.numbers, info) in ("exact", "rounded")
                                   and any(c.matches(u.terms) for c in topical) for u in info.units):
                soft.append(f"number_out_of_context:{q.text}")
        elif how == "more_precise":
            soft.append(f"number_more_precise:{q.text}")
        elif how == "scale_unknown":
            soft.append(f"scale_unknown:{q.text}")
        elif (_table_computed(q, info, plain, frozenset(items.years)) if info.table
              else _computed(q, info.items.numbers, info, plain)) is not None:
            found += 1
            notes.append(f"computed:{q.text}")
        else:
            hard.append(f"number_not_found:{q.text}")
    period = soft if info.table else hard
    for year in sorted(items.years):
        if year not in info.items.years:
            period.append(f"year_not_found:{year}")
    for quarter in sorted(items.quarters):
        if quarter not in info.items.quarters:
            period.append(f"quarter_not_found:Q{quarter}")
    for month, day in sorted(items.dates):
        if (month, day) not in info.items.dates:
            period.append(f"date_not_found:{month:02d}-{day:02d}")
    if items.years and all(y in info.items.years for y in items.years):
        mismatch = (_table_year_mismatch if info.table else _year_mismatch)(items, matched, info)
        if mismatch is not None:
            hard.append(f"year_mismatch:{mismatch}")

    # words and entities
    terms = info.terms | (content_terms(title) if title else frozenset())
    coverage = _coverage(concepts, terms)
    names = {t.term: t.surface for t in tokens(plain)
             if t.name and not t.number and not _PERIOD_NAME_RE.fullmatch(t.term)}
    possessive = _POSSESSIVE_START_RE.match(plain)
    if possessive:  # "Apple's revenue …": a sentence-initial name
        names.update((t.term, t.surface) for t in tokens(possessive.group(1)) if t.content and not t.number)
    if names:
        missing = sorted(surface for term, surface in names.items() if term not in terms)
        if len(missing) * 2 > len(names):
            soft.append("entity_not_found:" + ",".join(missing))
    has_numbers = bool(items.numbers)
    threshold = MIN_COVERAGE_WITH_NUMBERS if has_numbers else MIN_COVERAGE
    if concepts and coverage < threshold:
        soft.append(f"low_overlap:{_fmt(coverage)}")

    # negation and direction against the best unit
    s_terms = content_terms(plain)
    best: _Unit | None = None
    best_hits = 0
    for unit in info.units:
        hits = len(s_terms & unit.terms)
        if hits > best_hits:
            best, best_hits = unit, hits
    if best is not None:
        unit_cov = _coverage(concepts, best.terms) if concepts else 1.0
        target = hard if unit_cov >= MIN_BEST_UNIT_COVERAGE else soft
        # compare like with like: in "wants kids, but won't help" the negation is another clause's
        clauses = _best_clauses(best.text, s_terms)
        differ = [_negated(plain) != _negated(c) for c in clauses]
        if all(differ):
            target.append("negation_mismatch")
        elif any(differ):
            soft.append("negation_unclear")
        clause = clauses[0]
        s_dir, u_dir = _direction(plain), _direction(clause)
        if len(s_dir) == 1 and len(u_dir) == 1 and s_dir != u_dir:
            target.append("direction_mismatch")

    # score
    n_total = len(items.numbers)
    score = (coverage + found / n_total) / 2 if n_total else coverage
    if embedder is not None:
        try:
            texts = [plain, info.text] + ([best.text] if best is not None else [])
            vectors = embedder.embed(texts)
            sim = max(_cosine(vectors[0], v) for v in vectors[1:])
            sim = float(min(1.0, max(0.0, sim)))
            score = (score + sim) / 2
            notes.append(f"similarity:{_fmt(sim)}")
            # a sentence and a table row read differently to the embedder even when every
            # number and concept matched: there the numbers are the stronger evidence
            if sim < MIN_SIMILARITY and not (info.table and n_total and found == n_total):
                soft.append(f"low_similarity:{_fmt(sim)}")
        except Exception:  # noqa: BLE001 - an embedder failure must not fail the answer
            notes.append("similarity_unavailable")
    notes.append(f"coverage:{_fmt(coverage)}")
    if n_total:
        notes.append(f"numbers_found:{found}/{n_total}")
    if hard:
        return Support("unsupported", round(min(score, UNSUPPORTED_SCORE_CAP), 4), tuple(hard + soft + notes))
    if soft:
        return Support("uncertain", round(min(score, UNCERTAIN_SCORE_CAP), 4), tuple(soft + notes))
    return Support("supported", round(max(score, 0.5), 4), tuple(notes))


# --------------------------------------------------------------------------- messages


def _worst(supports: Sequence[Support]) -> Support:
    return max(supports, key=lambda s: (VERDICT_ORDER.get(s.verdict, 1), -s.score))


def _spans(ref: Reference) -> list[tuple[int, int]]:
    if ref.occurrences:
        return [(o.start_index, o.end_index) for o in ref.occurrences]
    if ref.start_index is not None and ref.end_index is not None:
        return [(ref.start_index, ref.end_index)]
    return []


def message_sentence(text: str, start: int, end: int, markers: Iterable[tuple[int, int]]) -> str:
    """The sentence of the part ``text[start:end]`` as support checks read it: markers
    (code-point spans) and the whitespace directly before each removed, markdown escapes
    undone (:func:`unescape_markdown`), outer whitespace stripped."""
    out: list[str] = []
    pos = start
    for a, b in sorted(markers):
        if a < start or b > end:
            continue
        piece = text[pos:a]
        out.append(piece.rstrip())
        pos = b
    out.append(text[pos:end])
    return unescape_markdown("".join(out)).strip()


def _key(ref: Reference) -> tuple[str, ...]:
    if ref.type == "post" and ref.source is not None and ref.id is not None:
        return ("post", ref.source.lower(), ref.id)
    if ref.chunk_id is not None:
        return ("chunk", ref.chunk_id)
    return ("citation", str(ref.citation))


@dataclass
class _Pair:
    part: int
    ref: Reference
    spans: list[tuple[int, int]]
    support: Support


def markers_by_part(msg: Message) -> list[tuple[tuple[int, int], list[tuple[int, int, Reference]]]]:
    """The ``[N]`` markers of a message grouped by the part whose text holds their start.

    Args:
        msg: a message whose offsets are in code points (``convert_offsets`` first).

    Returns:
        One item per part, in order: ``((start, end), markers)``, the part's span in
        ``msg.text`` and its markers ``(start, end, reference)`` sorted by start; a marker's
        span comes from its reference's occurrences (else its ``start_index``/``end_index``).
        Only numbered references (``citation`` set) have markers.
    """
    numbered = [r for r in msg.references if r.citation is not None]
    markers = sorted(((a, b, r) for r in numbered for a, b in _spans(r)), key=lambda m: m[0])
    out: list[tuple[tuple[int, int], list[tuple[int, int, Reference]]]] = []
    pos = k = 0
    for part in msg.parts:
        a, b = pos, pos + len(part.text)
        pos = b
        inside: list[tuple[int, int, Reference]] = []
        while k < len(markers) and markers[k][0] < b:
            if markers[k][0] >= a:
                inside.append(markers[k])
            k += 1
        out.append(((a, b), inside))
    return out


def _check_message(msg: Message, embedder: Embedder | None, judge: Judge | None = None) -> list[_Pair]:
    """Check every (part, cited reference) pair of a code-point message and write the
    supports onto its occurrences and parts (in place)."""
    numbered = [r for r in msg.references if r.citation is not None]
    pairs: dict[tuple[int, int], _Pair] = {}
    cache: dict[tuple[str, str], Support] = {}
    for index, ((a, b), inside) in enumerate(markers_by_part(msg)):
        part = msg.parts[index]
        if not inside:
            part.support = None
            continue
        sentence = message_sentence(msg.text, a, b, [(x, y) for x, y, _ in inside])
        supports: list[Support] = []
        for x, y, ref in inside:
            pk = (index, id(ref))
            if pk not in pairs:
                ck = (sentence, str(id(ref)))
                if ck not in cache:
                    title = " ".join(str(t) for t in (ref.resource_title, getattr(ref, "file_name", None)) if t)
                    cache[ck] = check_support(sentence, ref.text, embedder=embedder, text_type=ref.text_type,
                                              title=title or None, judge=judge, header=table_header(ref.metadata))
                pairs[pk] = _Pair(index, ref, [], cache[ck])
                supports.append(cache[ck])
            pairs[pk].spans.append((x, y))
        part.support = _worst(supports).to_dict()
    by_span = {(x, y): p.support for p in pairs.values() for x, y in p.spans}
    for ref in numbered:
        if ref.occurrences:
            for occ in ref.occurrences:
                sup = by_span.get((occ.start_index, occ.end_index))
                occ.support = sup.to_dict() if sup is not None else None
    return list(pairs.values())


def _source_refs(msg: Message) -> dict[str, SourceRef]:
    out: dict[str, SourceRef] = {}
    for part in msg.parts:
        for ref in [part.source, *part.sources]:
            if ref is not None:
                out.setdefault(ref.chunk_id, ref)
    return out


def _source_ref(ref: Reference, known: dict[str, SourceRef], citation: int) -> SourceRef | None:
    if ref.chunk_id is None:
        return None
    base = known.get(ref.chunk_id)
    if base is not None:
        return base.model_copy(update={"citation": citation}, deep=True)
    extra: dict[str, Any] = {"citation": citation}
    if ref.type == "post":
        extra["source"], extra["id"] = ref.source, ref.id
    return SourceRef(chunk_id=ref.chunk_id, resource_id=ref.resource_id or "",
                     resource_title=ref.resource_title or "", chunk_index=ref.chunk_index or 0,
                     metadata=dict(ref.metadata or {}), **extra)


def _verbatim_spans(text: str) -> list[tuple[int, int, bool]]:
    """Code and ordinary-link spans of a final text (never cut by parts)."""
    return [(t.start, t.end, t.block) for t in scan(text) if t.kind in ("code", "mdlink")]


def _escape_joined(text: str, marker_starts: Sequence[int]) -> tuple[str, Any]:
    """Rule 5 after markers were removed: removing ``[1]`` from ``[12[1]]`` leaves a
    bracketed number that is no marker. Prose between kept markers and code/link spans is
    passed through :func:`~citewell.cite.links.escape_numbers` again (which leaves what is
    escaped already alone). Returns the text and a function mapping an old marker start to
    its new position (``None`` when nothing changed)."""
    if "[" not in text:
        return text, None
    starts = set(marker_starts)
    fixed: list[tuple[int, int]] = []
    for a in sorted(starts):
        end = text.index("]", a) + 1
        fixed.append((a, end))
    fixed.extend((t.start, t.end) for t in scan(text) if t.kind in ("code", "mdlink"))
    fixed.sort()
    for (_, b), (c, _) in pairwise(fixed):
        if c < b:  # overlapping spans: leave the text as the cite stage wrote it
            return text, None
    out: list[str] = []
    moves: dict[int, int] = {}
    pos = 0
    length = 0
    for a, b in fixed:
        prose = escape_numbers(text[pos:a]) if a > pos else ""
        out.append(prose)
        length += len(prose)
        moves[a] = length
        out.append(text[a:b])
        length += b - a
        pos = b
    out.append(escape_numbers(text[pos:]) if pos < len(text) else "")
    new_text = "".join(out)
    if new_text == text:
        return text, None
    return new_text, lambda x: moves[x]


_LINE_BREAKS = "\n\r\u2028\u2029\x0b\x0c\x85"
#: What replaces a removed marker that started its line when removing it would change the
#: markdown structure (a blank line ending a container, ``1. ```` `` becoming a fence):
#: ZERO WIDTH SPACE, invisible, and not whitespace for CommonMark nor for
#: :func:`~citewell.cite.links.scan`.
LINE_KEEPER = "\u200b"


_MARKER_OR_KEEPER_RE = re.compile(r"[ \t]*\[\d+\]|\u200b")


def _structure(text: str) -> list[tuple[str, str]]:
    """Code, ordinary-link and citation-link tokens of ``text`` (what must not change),
    their text without markers (a re-scan may read a marker into a link label)."""
    return [(t.kind, _MARKER_OR_KEEPER_RE.sub("", t.text)) for t in scan(text)
            if t.kind in ("code", "mdlink", "link", "tail")]


def _starts_line(text: str, a: int) -> bool:
    """Whether only whitespace stands before ``a`` on its line."""
    return not re.split(r"[\n\r]", text[:a])[-1].strip()


def _rebuild(msg: Message, drop: set[tuple[int, int]]) -> Message | None:
    """``msg`` (code points) without the marker spans ``drop``, renumbered and recomputed;
    ``None`` when no removal keeps the markdown structure (code blocks and spans, links)."""
    expected = _structure(msg.text)
    for keeper, everywhere in (("", False), (LINE_KEEPER, False), (LINE_KEEPER, True)):
        rebuilt = _rebuild_with(msg, drop, keeper, everywhere)
        if _structure(rebuilt.text) == expected:
            return rebuilt
    return None


def _rebuild_with(msg: Message, drop: set[tuple[int, int]], keeper: str, everywhere: bool = False) -> Message:
    """:func:`_rebuild` with ``keeper`` written in place of a removed marker that starts its
    line (of every removed marker when ``everywhere``)."""
    text = msg.text
    numbered = [r for r in msg.references if r.citation is not None]
    entities = [r for r in msg.references if r.citation is None]
    markers = sorted(((a, b, r) for r in numbered for a, b in _spans(r)), key=lambda m: m[0])
    kept_starts = {a for a, b, _ in markers if (a, b) not in drop}
    known = _source_refs(msg)
    out: list[str] = []
    pos = 0
    new_number: dict[int, int] = {}
    new_spans: dict[int, list[tuple[int, int, Occurrence | None]]] = {}
    new_markers: list[Marker] = []
    occurrence_of = {(o.start_index, o.end_index): o for r in numbered for o in (r.occurrences or [])}
    length = 0
    for a, b, ref in markers:
        piece = text[pos:a]
        if (a, b) in drop:
            cut = len(piece)
            if b not in kept_starts:  # "million [2][1]": the space stays before the kept [1]
                while cut > 0 and piece[cut - 1].isspace() and piece[cut - 1] not in _LINE_BREAKS:
                    cut -= 1
            piece = piece[:cut]
            if keeper and (everywhere or _starts_line(text, a)):
                piece += keeper
            out.append(piece)
            length += len(piece)
            pos = b
            continue
        out.append(piece)
        length += len(piece)
        rid = id(ref)
        if rid not in new_number:
            new_number[rid] = len(new_number) + 1
        marker = f"[{new_number[rid]}]"
        new_spans.setdefault(rid, []).append((length, length + len(marker), occurrence_of.get((a, b))))
        out.append(marker)
        length += len(marker)
        pos = b
    out.append(text[pos:])
    new_text, shift = _escape_joined("".join(out), sorted(x for spans in new_spans.values() for x, _, _ in spans))
    if shift:
        new_spans = {rid: [(shift(x), shift(x) + (y - x), o) for x, y, o in spans] for rid, spans in new_spans.items()}
    references: list[Reference] = []
    for ref in numbered:
        rid = id(ref)
        if rid not in new_number:
            continue
        n = new_number[rid]
        spans = new_spans[rid]
        occurrences = [Occurrence(start_index=x, end_index=y, support=(o.support if o is not None else None))
                       for x, y, o in spans]
        references.append(ref.model_copy(update={
            "citation": n, "start_index": spans[0][0], "end_index": spans[0][1],
            "occurrences": occurrences, "offset_unit": "codepoint"}, deep=True))
        for x, y, _ in spans:
            new_markers.append(Marker(x, y, n, _source_ref(ref, known, n)))
    references.sort(key=lambda r: r.citation or 0)
    new_markers.sort(key=lambda m: m.start)
    parts = build_parts(new_text, new_markers, verbatim=_verbatim_spans(new_text), offset_map=OffsetMap(new_text))
    citations, resource_ids = build_citations(parts)
    return msg.model_copy(update={
        "text": new_text,
        "parts": parts,
        "references": [*references, *entities],
        "citations": citations,
        "resource_ids": resource_ids,
        "grounded": msg.grounded and bool(references),
    })


def apply_support(message: Message, *, policy: str = "flag", embedder: Embedder | None = None,
                  judge: Judge | None = None) -> Message:
    """Return a copy of ``message`` with rule-8 support on its parts and occurrences.

    Args:
        message: a cited message (from :func:`~citewell.cite.cite`), any offset unit.
        policy: ``flag`` (default: mark only) or ``drop`` (remove unsupported and
            uncertain citations, renumber, recompute, warn ``citation_dropped``).
        embedder: optional sentence embedder for the similarity check.
        judge: optional second opinion on ``uncertain`` pairs (:func:`check_support`).

    Returns:
        A new :class:`~citewell.models.Message` (the input is not changed), in the
        input's ``offset_unit``. See the module docstring for the rules.

    Raises:
        ValueError: unknown policy.
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown support policy {policy!r}: expected one of {', '.join(POLICIES)}")
    unit = message.offset_unit
    msg = convert_offsets(message, "codepoint") if unit != "codepoint" else message.model_copy(deep=True)
    original = {_key(r): r.citation for r in msg.references if r.citation is not None}
    pairs = _check_message(msg, embedder, judge)
    if policy == "drop":
        warnings: list[Notice] = []
        while True:
            bad = [p for p in pairs if p.support.verdict in DROPPED_VERDICTS]
            if not bad:
                break
            drop: set[tuple[int, int]] = set()
            for p in bad:
                drop.update(p.spans)
                old = original.get(_key(p.ref), p.ref.citation)
                what = (f"post {p.ref.source}/{p.ref.id}" if p.ref.type == "post"
                        else f"{p.ref.resource_title or 'passage'} chunk {p.ref.chunk_index}")
                warnings.append(Notice(
                    code="citation_dropped",
                    message=(f"a citation of {what} (numbered [{old}] before removal) was removed from a sentence "
                             f"it does not support ({p.support.verdict}: {', '.join(p.support.reasons[:3])})"),
                    citation=old,
                    chunk_id=p.ref.chunk_id,
                    source=p.ref.source,
                    id=p.ref.id,
                    verdict=p.support.verdict,
                    score=p.support.score,
                    reasons=list(p.support.reasons),
                ))
            rebuilt = _rebuild(msg, drop)
            if rebuilt is None:  # cannot remove them safely: they stay, flagged
                for w in warnings[len(warnings) - len(bad):]:
                    w.code = "citation_kept"
                    w.message = w.message.replace("was removed from", "could not be removed (the markdown "
                                                  "structure would change) from") + "; it stays, flagged"
                break
            msg = rebuilt
            pairs = _check_message(msg, embedder, judge)
        if warnings:
            msg = msg.model_copy(update={"warnings": [*msg.warnings, *warnings]})
    return msg if unit == "codepoint" else convert_offsets(msg, unit)


_PART_MARKER_RE = re.compile(r"[ \t]*(?<!\\)\[\d+\]")


def part_support(part_text: str, passage: Passage, *, embedder: Embedder | None = None,
                 judge: Judge | None = None) -> dict[str, Any]:
    """Rule-8 support of one part's text (markers and all, as the streaming citer sends
    it) against one cited passage, as ``Support.to_dict()``.

    The markers and the whitespace before them are removed and escapes undone first —
    the sentence :func:`apply_support` checks — so streamed support events and the final
    message agree.
    """
    chunk = passage.chunk
    plain = unescape_markdown(_PART_MARKER_RE.sub("", part_text)).strip()
    return check_support(plain, chunk.text, text_type=chunk.text_type, title=passage.resource_title,
                         embedder=embedder, judge=judge, header=table_header(chunk.metadata)).to_dict()


_CONTENT_RE = re.compile(r"[^\W_]")
_MARKER_RE = re.compile(r"\[\d+\]")


def sentence_support(message: Message) -> tuple[int, int]:
    """``(supported, sentences)`` of a code-point message: its sentences are the parts
    holding a letter or digit once ``[N]`` markers are removed; a sentence is supported
    when one of the markers inside it carries a ``supported`` verdict. This is the
    grounded coverage an answer reports, and the citation recall of
    :mod:`citewell.eval.metrics`."""
    supported_markers = [(occ.start_index, occ.end_index) for ref in message.references
                         if ref.citation is not None for occ in ref.occurrences or []
                         if occ.support and occ.support.get("verdict") == "supported"]
    sentences = supported = 0
    position = 0
    for part in message.parts:
        start, end = position, position + len(part.text)
        position = end
        if not _CONTENT_RE.search(_MARKER_RE.sub("", part.text)):
            continue
        sentences += 1
        if any(start <= a and b <= end for a, b in supported_markers):
            supported += 1
    return supported, sentences


def grounded_coverage(message: Message) -> float | None:
    """Share of a code-point message's sentences that carry a supported citation
    (:func:`sentence_support`), rounded to 4 places; None for a message without sentences."""
    supported, sentences = sentence_support(message)
    return round(supported / sentences, 4) if sentences else None
