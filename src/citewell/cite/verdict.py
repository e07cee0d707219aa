"""The verdict rules: does a cited passage back one answer sentence? (docs/architecture.md rule 8).

Every (answer sentence, cited passage) pair gets a :class:`Support`
``{verdict, score, reasons[]}`` from the deterministic checks of :func:`check_rules`
(:func:`check_support` adds an optional judge's opinion); :mod:`citewell.cite.support`
puts the verdicts on a message. Numbers, years, quarters and dates are read by
:mod:`citewell.text.quantities`.

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
   - ``period_mismatch:<yyyy>``: in a table, every cell holding one of the sentence's
     numbers sits in a column of another year (cells pair with their column's period as
     :func:`~citewell.text.tables.paired_columns` pairs them). In prose, every passage sentence that holds one of the
     sentence's numbers states it for years, none of them a year of the sentence (``In
     2021 … $34.2 billion`` against ``In 2022 … $34.2 billion. In 2021 … $35.4
     billion.``). A passage sentence states a number for the year its wording binds to it
     (the first year after it with no other number between, else the last year before it
     so), which tells the two figures of one comparison apart ("4,000 million dollars in
     2023" against "5,000 million dollars in 2023, up from 4,000 million dollars in
     2022"); a sentence that compares periods itself also speaks for the year before its
     own. A sentence's ``a year earlier`` / ``the prior year`` … names the year before its
     own, or before the latest year of the sentences before it
     (:func:`citewell.cite.binding.with_relative_years`);
   - ``measure_mismatch:<n>``: the number is found, but every row or clause holding it
     states it for another measure than the sentence's, and another row or clause of
     the passage fits the sentence's measure (:func:`_figure_mismatch`: in a table a
     row holding the claim's concepts and no word of its own the claim does not say,
     ``Total revenue`` against ``Cost of revenue`` for "revenue was 3,000"; a ratio
     row's measure is what stands before ``as a % of``); a change computed from the
     right row that equals another row's figure by chance is ``computed``;
   - ``scope_mismatch:<n>``: the same for a breakdown's member (``Commercial`` under
     ``Revenues:``) given for the whole or for another member, and a figure of a table
     whose title names a segment (``part``) stated without naming it;
     ``scope_mismatch:<names>``: the sentence's subject is another company than the
     cited document's (neither in the passage nor in the ``title``, whose own names the
     sentence does not say; a title may write a name run together, ``BLUEHARBOR_2019_10K``);
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
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from typing import Any, Callable

from citewell.cite.binding import (RELATIVE_PRIOR_RE, FigureContext, matches_measure, measure_fit, measure_words,
                                  prose_contexts, table_contexts, with_relative_years)
from citewell.embed import Embedder
from citewell.question.naming import DOC_WORDS
from citewell.text.numbers import column_periods
from citewell.text.quantities import (FILLER_TERMS, PERCENT_HEADER_RE, Quantity, TextItems, normalise,
                                      read_declared_scales, read_items, rounds_to)
from citewell.text.sentences import sentence_spans
from citewell.text.tables import is_header_row, looks_tabular, paired_columns, row_label, row_spans
from citewell.text.terms import NAME_BOOST, NO_EXPANSIONS, Expansions, content_terms, question_concepts, tokens

__all__ = ["DROPPED_VERDICTS", "MIN_COVERAGE", "MIN_COVERAGE_WITH_NUMBERS", "MIN_SIMILARITY", "POLICIES",
           "UNCERTAIN_SCORE_CAP", "UNSUPPORTED_SCORE_CAP", "VERDICTS", "VERDICT_ORDER", "Judge", "Support",
           "check_rules", "check_support", "unescape_markdown"]

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
_LEADING_MARKDOWN_RE = re.compile(r"^(?:\s*(?:>|#{1,6}(?=\s)|[-*+\u2022](?=\s)|\d{1,3}[.)](?=\s)))+\s*")
_EMPHASIS_RE = re.compile(r"(\*\*|__|\*|_)(?=\S)(.+?)(?<=\S)\1")


def unescape_markdown(text: str) -> str:
    """Drop the backslash of every markdown escape (a backslash before ASCII
    punctuation): undoes rule 5 (``\\[12\\]``), :func:`~citewell.generate.extractive.
    escape_quote` (``\\\\``, ``\\```, ``\\[``, ``\\]``, ``\\(``) and the cite stage's
    ``\\(``/``\\:``/``\\~`` after markers, exactly."""
    return _UNESCAPE_RE.sub(r"\1", text)


# --------------------------------------------------------------------------- words

_NEGATION_RE = re.compile(r"\b(?:not|no|never|neither|nor|none|cannot)\b(?!\.\s?\d)|n't\b", re.IGNORECASE)
_NOT_NEGATION_RE = re.compile(r"\bnot\s+only\b|\bno\.\s?\d", re.IGNORECASE)
_UP_RE = re.compile(r"\b(?:increas\w*|rose|rise[sn]?|rising|grew|grow(?:s|n|ing|th)?|higher|improv\w*|"
                    r"expand\w*|up)\b", re.IGNORECASE)
_DOWN_RE = re.compile(r"\b(?:decreas\w*|declin\w*|fell|fall(?:s|en|ing)?|drop(?:s|ped|ping)?|lower|"
                      r"reduc\w*|shr[iau]nk\w*|contracted|down)\b", re.IGNORECASE)

#: A capitalised word of three letters or more (a name's word, looked up in a title).
_CAPITALISED_RE = re.compile(r"\b[A-Z][A-Za-z]{2,}\b")
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
    items: TextItems


@dataclass(frozen=True)
class _PassageInfo:
    text: str  # normalised
    table: bool
    terms: frozenset[str]
    items: TextItems
    scales: tuple[int, ...]
    percent_header: bool
    units: tuple[_Unit, ...]
    #: a table's value cells, row by row (:func:`_cells`); empty for prose
    cells: tuple[tuple[_Cell, ...], ...] = ()
    #: each row or clause that holds numbers, with the measure it states them for
    #: (:mod:`citewell.cite.binding`)
    contexts: tuple[FigureContext, ...] = ()
    #: prose: the year its wording binds to each unit number (``id()`` → year,
    #: :func:`_bound_year`), read once per passage; empty for tables
    bound_years: dict[int, int] = field(default_factory=dict)


@lru_cache(maxsize=512)
def _passage(text: str, table: bool | None) -> _PassageInfo:
    is_table = looks_tabular(text) if table is None else table
    norm = normalise(text)
    if is_table:
        pieces = [text[a:b] for a, b in row_spans(text)]
    else:
        pieces = [text[a:b] for a, b in sentence_spans(text)]
    texts = [normalise(p) for p in pieces]
    read = [read_items(t) for t in texts]
    if not is_table:  # "compared with 2,900 a year earlier": the year before the sentence's
        read = with_relative_years(read, texts)
    units = tuple(_Unit(t, content_terms(t), r) for t, r in zip(texts, read))
    contexts = (table_contexts([(u.text, u.items) for u in units]) if is_table else
                [c for u in units for c in prose_contexts(u.text, u.items)])
    items = read_items(norm)
    for unit in units:  # the years "a year earlier" names are the passage's too
        for year in unit.items.years.keys() - items.years.keys():
            items.years[year] = [-1]
    return _PassageInfo(
        text=norm,
        table=is_table,
        terms=content_terms(norm),
        items=items,
        scales=tuple(read_declared_scales(norm)),
        percent_header=bool(PERCENT_HEADER_RE.search(norm)),
        units=units,
        cells=_cells(units) if is_table else (),
        contexts=tuple(contexts),
        bound_years={} if is_table else {id(p): y for u in units for p in u.items.numbers
                                         if (y := _bound_year(u.text, u.items, p)) is not None},
    )


# --------------------------------------------------------------------------- matching


def _compatible(q: Quantity, p: Quantity, passage: _PassageInfo) -> bool:
    if q.currency and p.currency and q.currency != p.currency:
        return False
    if q.kind == p.kind:
        return True
    return q.kind == "percent" and p.kind == "amount" and passage.percent_header and not p.scaled


def _readings(p: Quantity, passage: _PassageInfo, with_raw: bool) -> list[tuple[Decimal, Decimal]]:
    """(value, step) readings of passage number ``p``."""
    out = [(p.value, p.step)]
    if p.kind == "amount" and not p.scaled:
        for exp in passage.scales:
            mult = Decimal(1).scaleb(exp)
            out.append((p.raw * mult, p.raw_step * mult))
    if with_raw and (p.raw, p.raw_step) not in out:
        out.append((p.raw, p.raw_step))
    return out


def _match_number(q: Quantity, pool: Iterable[Quantity], passage: _PassageInfo) -> str | None:
    """``"exact"``, ``"rounded"``, ``"more_precise"``, ``"scale_unknown"`` or ``None``."""
    best: str | None = None
    for p in pool:
        if not _compatible(q, p, passage):
            continue
        for value, step in _readings(p, passage, with_raw=not q.scaled):
            if value == q.value:
                return "exact"
            if step < q.step and rounds_to(value, q.value, q.step):
                best = "rounded"
            elif best is None and step > q.step and rounds_to(q.value, value, step):
                best = "more_precise"
    if best is None and q.scaled and q.kind == "amount" and not passage.scales:
        for p in pool:
            if p.kind == "amount" and not p.scaled and _compatible(q, p, passage):
                for exp in (3, 6, 9):
                    mult = Decimal(1).scaleb(exp)
                    if rounds_to(p.raw * mult, q.value, q.step) and p.raw_step * mult <= q.step:
                        return "scale_unknown"
    return best


#: Passage numbers combined pairwise when a sentence number may be computed from them.
MAX_COMPUTED_OPERANDS = 40


def _significant(q: Quantity) -> int:
    """Significant digits of a number as written (``2.3`` → 2, ``0.05`` → 1)."""
    return len(str(abs(q.raw)).replace(".", "").lstrip("0")) or 1


_CHANGE_WORDS_RE = re.compile(r"\b(?:change[sd]?|difference|differ\w*|gap|more|less|by)\b", re.IGNORECASE)
_SHARE_WORDS_RE = re.compile(r"\b(?:margin|ratio|share|proportion|rate|coverage|of)\b", re.IGNORECASE)


def _claims_computed(q: Quantity, sentence: str) -> tuple[bool, bool] | None:
    """``(change, share)``: whether ``sentence`` says ``q`` is a change (``increased``,
    ``fell``, ``difference``, ``by`` …) or, for a percent, a share or ratio (``margin``,
    ``ratio``, ``of`` …); None when it says neither, and for a number that is no amount or
    percent or has fewer than 2 significant digits (they match too many pairs by chance)."""
    if q.kind not in ("amount", "percent") or _significant(q) < 2:
        return None
    change = bool(_UP_RE.search(sentence) or _DOWN_RE.search(sentence) or _CHANGE_WORDS_RE.search(sentence))
    share = q.kind == "percent" and bool(_SHARE_WORDS_RE.search(sentence))
    return (change, share) if change or share else None


def _from_base(a: Decimal, b: Decimal, direction: set[str]) -> bool:
    """Whether a change from ``b`` to ``a`` goes the way the sentence says (``direction``,
    :func:`_direction`): a rise when ``b < a``, a fall when ``b > a``; either when it says
    no single direction."""
    if direction == {"up"}:
        return b < a
    if direction == {"down"}:
        return b > a
    return True


def _computed(q: Quantity, pool: Sequence[Quantity], passage: _PassageInfo, sentence: str,
              years: dict[int, int] | None = None) -> str | None:
    """How ``q`` follows from two numbers ``a``, ``b`` of the passage when the sentence
    says it was computed: a change (``increased``, ``fell``, ``difference``, ``by`` …) of
    ``a - b`` for an amount, ``(a - b) / b`` for a percent; a share or ratio (``margin``,
    ``ratio``, ``of`` …) of ``a / b`` for a percent; rounded to ``q``'s precision. None
    otherwise, and for a number with fewer than 2 significant digits (they match too many
    pairs by chance). Operands are the passage's amounts, in its declared scales.
    ``years``: the year each operand is stated for (``id()`` → year, as the passage's
    wording binds it); a change then runs from the earlier year's figure ``b`` to the
    later one's ``a`` (a rise when ``a > b``, a fall when ``a < b``, as the sentence
    says), not between two figures of one year."""
    claimed = _claims_computed(q, sentence)
    if claimed is None:
        return None
    change, share = claimed
    known = years or {}
    values: list[tuple[Decimal, int | None]] = []
    for p in pool:
        if p.kind == "amount" and (q.kind == "percent" or _compatible(q, p, passage)):
            values.extend((v, known.get(id(p))) for v, _ in _readings(p, passage, with_raw=not q.scaled) if v > 0)
        if len(values) >= MAX_COMPUTED_OPERANDS:
            break
    values = list(dict.fromkeys(values))
    direction = _direction(sentence)
    for a, ya in values:
        for b, yb in values:
            if a == b:
                continue
            timed = ya is not None and yb is not None
            if change and (not timed or ya > yb) and _from_base(a, b, direction):  # type: ignore[operator]
                if q.kind == "amount" and rounds_to(abs(a - b), q.value, q.step):
                    return f"{a}-{b}"
                if q.kind == "percent" and rounds_to(abs(a - b) / b * 100, q.value, q.step):
                    return f"({a}-{b})/{b}"
            if share and q.kind == "percent" and a < b and rounds_to(a / b * 100, q.value, q.step):
                return f"{a}/{b}"
    return None


@dataclass(frozen=True)
class _Cell:
    """A value of a table row: its number, the year of its column (None when the row's
    values and its header's periods do not pair up one to one), its column position and
    the content terms of its row's label."""

    number: Quantity
    year: int | None
    column: int
    label_terms: frozenset[str]


#: A nil cell of a table: a dash standing alone between value cells.
_NIL_CELL_RE = re.compile(r"(?<!\S)[\u2014\u2013-](?!\S)")


def _footnote(text: str, number: Quantity) -> bool:
    """Whether ``number`` of a row's ``text`` is a footnote marker: one digit in
    parentheses ("liabilities(1)", "expense (1)(2)")."""
    return len(number.text) == 1 and text[number.start - 1:number.start + 2] == f"({number.text})"


def _cells(units: Sequence[_Unit]) -> tuple[tuple[_Cell, ...], ...]:
    """The value cells of each row of a table passage, row by row (header rows left
    out). A row's values pair with the periods of the nearest header row above it
    (:func:`~citewell.text.tables.is_header_row`, :func:`~citewell.text.numbers.column_periods`;
    also a lead-in line that ends with the column years, "… ($ in millions): 2019 2018
    2017") when there are as many of each, counting a nil dash as a cell and leaving out
    footnote markers before the values (``Reserves(1) 144 145``), or as
    :func:`~citewell.text.tables.paired_columns` pairs them; otherwise its cells carry no
    year."""
    rows: list[tuple[_Cell, ...]] = []
    periods: list[Any] = []
    header: str | None = None
    for unit in units:
        numbers = [n for n in unit.items.numbers if n.kind in ("amount", "percent")]
        if is_header_row(unit.text) or (not numbers and len(column_periods(unit.text)) >= 2):
            periods, header = column_periods(unit.text), unit.text
            half = len(periods) // 2  # a lead-in naming the years before the header repeats them
            if half >= 2 and len(periods) == 2 * half and periods[:half] == periods[half:]:
                periods = periods[half:]
            continue
        if not numbers:
            continue
        while len(numbers) > len(periods) and _footnote(unit.text, numbers[0]):
            numbers = numbers[1:]
        if not numbers:
            continue
        label_text = row_label(unit.text)
        label = content_terms(label_text)
        years: dict[int, int] = {}
        nils = [m.start() for m in _NIL_CELL_RE.finditer(unit.text, unit.text.find(label_text) + len(label_text))]
        if periods and nils and len(numbers) + len(nils) == len(periods):
            slots = sorted([(n.start, i) for i, n in enumerate(numbers)] + [(pos, -1) for pos in nils])
            years = {i: period.year for (_, i), period in zip(slots, periods) if i >= 0}
        else:
            # one cell per period, or the layouts paired_columns knows (a share of the
            # total beside each amount; change columns after the periods)
            cells = [n.text + ("%" if n.kind == "percent" and not n.text.endswith("%") else "") for n in numbers]
            pairs = paired_columns(cells, periods, header) if periods else []
            left = 0
            for period, cell in pairs:
                at = cells.index(cell, left)
                years[at], left = period.year, at + 1
        rows.append(tuple(_Cell(n, years.get(i), i, label) for i, n in enumerate(numbers)))
    return tuple(rows)


#: The rows a margin is a share of: revenue (a margin is a profit measure divided by
#: revenue, the standard definition in accounting glossaries, e.g. CFI's and
#: Investopedia's "profit margin", "gross margin", "operating margin").
MARGIN_BASE_TERMS = frozenset({"revenu", "sale"})
_COST_TERMS = frozenset({"cost", "expens"})
_MARGIN_RE = re.compile(r"\bmargins?\b", re.IGNORECASE)


def _table_computed(q: Quantity, info: _PassageInfo, sentence: str, years: frozenset[int],
                    measure: Sequence[Any] = (), claim_terms: frozenset[str] = frozenset()) -> str | None:
    """:func:`_computed` for a table passage, where a figure can only be computed from
    cells that belong together: a change from two cells of one row (two periods of one
    line item), a share from two cells of one column (two line items of one period).

    - The row of the changed item, and of a share's numerator, is the row that names
      the claim's ``measure`` best (:func:`citewell.cite.binding.measure_fit` of its
      label: "revenue grew 15%" is not cost of revenues' growth); with no measure, a row
      whose label shares a content term with the sentence.
    - A change runs between two adjacent years' columns, from the earlier to the later
      (a rise when the later is larger, a fall when smaller, as the sentence says), and
      the later year must be one the sentence names when it names some; cells without
      years pair in either order.
    - A margin's denominator is a revenue or sales row (its label names one of
      :data:`MARGIN_BASE_TERMS` and no cost or expense: ``Total revenues``, ``Net
      operating revenues``; not ``Cost of revenues``); another share's, any row of the
      same column.
    """
    claimed = _claims_computed(q, sentence)
    if claimed is None:
        return None
    change, share = claimed
    s_terms = content_terms(sentence)
    direction = _direction(sentence)

    def values(cell: _Cell) -> list[Decimal]:
        p = cell.number
        if p.kind != "amount" or not (q.kind == "percent" or _compatible(q, p, info)):
            return []
        return [v for v, _ in _readings(p, info, with_raw=not q.scaled) if v > 0]

    def row_key(row: tuple[_Cell, ...]) -> tuple[float, int]:  # (coverage, -extras): higher fits better
        words = measure_words(row[0].label_terms)
        cov, extras = measure_fit(measure, claim_terms, FigureContext((), words, words, False, ""))
        return cov, -extras

    # rows naming the claim's measure in any wording ("capital expenditure": "Purchases of
    # property, plant and equipment") or sharing a word with the sentence
    rows = [row for row in info.cells if row and (row[0].label_terms & s_terms or any(
        matches_measure(c, measure_words(row[0].label_terms)) for c in measure))]
    if measure:
        keyed = [(row_key(row), row) for row in rows]
        top = max((k for k, _ in keyed if k[0] > 0), default=None)
        if top is not None:  # else ("net margin": no row says margin) the rows sharing a word
            rows = [row for k, row in keyed if k == top]
    for row in rows:
        for x in row:  # x: the later cell, y: the earlier
            for y in row:
                if x is y or not change:
                    continue
                if x.year is not None and y.year is not None:
                    if x.year - y.year != 1 or (years and x.year not in years):
                        continue
                elif years and x.year is not None and x.year not in years and y.year not in years:
                    continue
                for a in values(x):
                    for b in values(y):
                        if a == b or not _from_base(a, b, direction if x.year is not None else set()):
                            continue
                        if q.kind == "amount" and rounds_to(abs(a - b), q.value, q.step):
                            return f"{a}-{b}"
                        if q.kind == "percent" and rounds_to(abs(a - b) / b * 100, q.value, q.step):
                            return f"({a}-{b})/{b}"
    if share:
        margin = bool(_MARGIN_RE.search(sentence))
        for row in rows:
            for x in row:
                if years and x.year is not None and x.year not in years:
                    continue
                for other in info.cells:
                    base = measure_words(other[0].label_terms)
                    if other is row or (margin and not (base & MARGIN_BASE_TERMS and not base & _COST_TERMS)):
                        continue
                    for y in other:
                        if y.column != x.column:
                            continue
                        for a in values(x):
                            for b in values(y):
                                if a < b and rounds_to(a / b * 100, q.value, q.step):
                                    return f"{a}/{b}"
    return None


def _table_year_mismatch(items: TextItems, matched: Sequence[Quantity], info: _PassageInfo,
                         fits: frozenset[int] = frozenset(), *, compares: bool = False, claim: str = "") -> int | None:
    """The sentence year that a table gives other numbers for, or ``None``: a found
    sentence number every cell of which that matches it sits in a column of another year
    than the sentence's ("5,900 in 2022" against a row ``5,900`` under 2021). Cells whose
    column has no year are neutral. ``fits``: the ``id()`` of the passage numbers whose row
    names the claim's measure; when some matching cells are among them, only those
    vote, and then a cell of another table without years does not vote either
    ("Accounts payable $ 417 $ 386" decides "accounts payable was $386 million in 2019",
    not ``Property and equipment, net 386`` of the 2019 column). ``compares``: as for
    :func:`_year_mismatch`, the claim speaks for the year before its own too."""
    wanted = set(items.years)
    if compares:
        wanted |= {y - 1 for y in wanted}
    cells = [c for row in info.cells for c in row]
    for q in matched:
        found = [c for c in cells if _match_number(q, [c.number], info) in ("exact", "rounded")]
        fitting = [c for c in found if id(c.number) in fits]
        years = _claimed_years(claim, items, q, wanted)
        votes = [c.year in years for c in fitting if c.year is not None] if fitting else [
            None if c.year is None else c.year in years for c in found]
        if votes and all(v is False for v in votes):
            return min(years)
    return None


def _claimed_years(claim: str, items: TextItems, q: Quantity, wanted: set[int]) -> set[int]:
    """The years the claim states its number ``q`` for: the one its wording binds to it
    (:func:`_bound_year`: "net income was $455 million in 2023, compared with $640 million
    in 2022" states 455 for 2023 only), else all of ``wanted``."""
    bound = _bound_year(claim, items, q) if claim else None
    return {bound} if bound is not None else wanted


_RESPECTIVELY_RE = re.compile(r"\brespectively\b", re.IGNORECASE)
#: A claim that states two periods' figures ("rose to $5.0 billion in 2023 from $4.5
#: billion", "compared with a year earlier"): then it speaks for the year before its own
#: too. Not a bare "over", "than" or "from" ("more than", "growth from the segment").
_CLAIM_COMPARES_RE = re.compile(r"\b(?:compared\s+(?:to|with)|versus|vs\.?|from\s+(?:\$|US\$|€|£)?\s?\d|"
                                r"(?:a\s+year\s+(?:earlier|ago)|(?:the\s+)?(?:prior|previous)\s+year)|"
                                r"respectively)", re.IGNORECASE)
_COMPARISON_RE = re.compile(r"\b(?:compared\s+(?:to|with)|from|versus|vs\.?|over|than|relative\s+to|"
                            r"respectively)\b", re.IGNORECASE)


def _bound_year(text: str, items: TextItems, number: Quantity) -> int | None:
    """The year a passage sentence (``text``, read into ``items``) states ``number`` for,
    when its wording binds one: the first year written after the number with no other
    number and no comparison word between them ("4,000 million dollars in 2022"; not
    "3.2 percent compared to 2021", the comparison's base), else the last year written before it with no other number
    between them ("In 2022, revenue was $5,000"); None when neither (a year is then read
    by distance, or a comparison speaks for all its years). A sentence that states two
    periods' figures ("5,000 in 2023, up from 4,000 in 2022") so gives each figure its own
    year: the other figure for another period is no support."""
    end = number.start + len(number.text)
    others = [q.start for q in items.numbers if q is not number]
    spots = sorted((pos, year) for year, places in items.years.items() for pos in places)
    respectively = _RESPECTIVELY_RE.search(text)
    if respectively and number.start < respectively.start():
        # "$12.4 billion and $11.1 billion in fiscal 2023 and 2022, respectively": the
        # figures before the word pair with its years in order; the sentence's figures
        # after it are bound as usual
        placed = [(pos, year) for pos, year in spots if 0 <= pos < respectively.start()]
        order = list(dict.fromkeys(year for _, year in placed))
        same = [q for q in items.numbers if q.kind == number.kind and q.start < respectively.start()]
        years_first = bool(placed) and max(pos for pos, _ in placed) < min(q.start for q in same)
        years_last = bool(placed) and min(pos for pos, _ in placed) > max(q.start for q in same)
        # one figure per year, the years all before or all after the figures (a table's
        # header and its rows, pasted as one line, are no such sentence)
        if order and len(same) == len(order) and len(placed) == len(order) and (years_first or years_last):
            return order[next(i for i, q in enumerate(same) if q is number)]
    for pos, year in spots:
        if pos >= end:
            # "a decrease of 3.2 percent compared to 2021": a year after a comparison word is its base
            if not any(end <= o < pos for o in others) and not _COMPARISON_RE.search(text, end, pos):
                return year
            break
    for pos, year in reversed(spots):
        if pos < number.start:
            # "in 2023 from $4.5 billion": a comparison word between them ends the binding;
            # a run of years ("2023 2022 … Cash $ 512 $ 604", a table's header pasted as a
            # line) binds no figure to its last year
            run = any(p != pos and abs(p - pos) <= 6 for p, _ in spots)
            if not run and not any(pos < o < number.start for o in others) \
                    and not _COMPARISON_RE.search(text, max(pos, 0), number.start):
                return year
            break
    return None


def _year_mismatch(items: TextItems, matched: Sequence[Quantity], info: _PassageInfo, *,
                   compares: bool = False, fits: frozenset[int] = frozenset(), claim: str = "") -> int | None:
    """The sentence year that the passage gives other numbers for (prose), or ``None``.

    For each found sentence number, every passage sentence holding a number that
    matches it *speaks for* a set of years: the year its wording binds to that number
    (:func:`_bound_year`), else the year written nearest to it (character distance), or
    all its years when it compares periods (``compared to``,
    ``from``, ``versus``, ``over``, ``than``, ``respectively`` …); a passage sentence
    without years speaks for none and makes the test neutral. A mismatch is a found
    number all of whose passage sentences speak for years, none of them a sentence year;
    ``compares``: the sentence itself compares periods ("rose from $4 billion to $5 billion
    in 2023"), so the year before each of its years is one of them too. ``fits``: the
    ``id()`` of the passage numbers whose clause names the claim's measure; when some
    matching numbers are among them, only those vote ("we repurchased $1.9 billion of
    our common stock" in 2022 does not speak for cash used in financing activities).
    """
    wanted = set(items.years)
    if compares:
        wanted |= {y - 1 for y in wanted}  # a claim that compares speaks for the period before too
    whole = wanted
    for q in matched:
        own = _claimed_years(claim, items, q, whole)  # checked against a year the passage binds
        votes: list[bool | None] = []
        some_fit = any(id(p) in fits for u in info.units for p in u.items.numbers
                       if _match_number(q, [p], info) in ("exact", "rounded"))
        for unit in info.units:
            for p in unit.items.numbers:
                if _match_number(q, [p], info) not in ("exact", "rounded") or (some_fit and id(p) not in fits):
                    continue
                if not unit.items.years:
                    votes.append(None)
                    continue
                bound = _bound_year(unit.text, unit.items, p)
                compared = bool(_COMPARISON_RE.search(unit.text) or RELATIVE_PRIOR_RE.search(unit.text))
                if p.kind == "percent" and compared and _is_change(unit.text, p):
                    near = set(unit.items.years)  # "…, an increase of 12%": the comparison's change
                elif bound is not None:
                    votes.append(bound in own)
                    continue
                elif compared:
                    near = set(unit.items.years)
                else:  # the nearest year is a guess: any year of the claim may be it
                    def distance(pos: int, p: Quantity = p) -> int:
                        return p.start - (pos + 4) if pos < p.start else pos - (p.start + len(p.text))
                    best = min((distance(pos), year) for year, spots in unit.items.years.items() for pos in spots)
                    near = {best[1]}
                votes.append(bool(near & whole))
        if votes and all(v is False for v in votes):
            return min(own)
    return None


#: A figure context fits a claim's measure when it holds at least this share of the
#: claim's measure concepts (:func:`citewell.cite.binding.measure_fit`).
MIN_MEASURE_FIT = 0.5


def _figure_mismatch(q: Quantity, concepts: Sequence[Any], claim_terms: frozenset[str],
                     info: _PassageInfo, named: frozenset[str] = frozenset()) -> str | None:
    """``measure_mismatch:<q>`` or ``scope_mismatch:<q>`` when the passage states the
    found number ``q`` for another measure or part than the claim's, else None.

    The contexts holding ``q`` (:attr:`_PassageInfo.contexts`: table rows with their
    caption, prose clauses) are compared with the passage's other contexts that hold
    numbers, by :func:`~citewell.cite.binding.measure_fit` against the claim's measure
    ``concepts``. In a table, a mismatch is another row that holds at least
    :data:`MIN_MEASURE_FIT` of them and no word the claim does not say, while the best
    row holding ``q`` holds fewer, or as many with words of its own ("Revenue was 3,000"
    against ``Cost of revenue 3,000`` beside ``Total revenue 6,489``); it names the scope
    when either row is a member of a breakdown (``Commercial`` under ``Revenues:``). In
    prose, every clause holding ``q`` names a measure none of the claim's concepts is,
    and another clause holding a number names at least :data:`MIN_MEASURE_FIT` of them. A
    context with no measure words (a row whose label is on another page) leaves it open."""
    if not (concepts or named) or not info.contexts:
        return None
    held = [c for c in info.contexts if any(_match_number(q, [p], info) in ("exact", "rounded") for p in c.numbers)]
    if not held or any(not c.measure for c in held):
        return None
    # prose: the clauses holding q name another part ("Coatings") and none of the
    # claim's names (``named``: not the document's own), which another clause holding a
    # number names ("Specialty Films")
    if named and not info.table and all(c.names and not c.names & named for c in held) \
            and any(c.names & named for c in info.contexts if c not in held):
        return f"scope_mismatch:{q.text}"
    others = [c for c in info.contexts if c not in held and c.measure]
    if not others or not concepts:
        return None

    def key(c: FigureContext) -> tuple[float, int]:
        cov, extras = measure_fit(concepts, claim_terms, c)
        return cov, -extras

    own = max(held, key=key)
    best = max(others, key=lambda c: (*key(c), not c.member))  # on a tie, the whole's row
    (own_cov, own_extra), (best_cov, best_extra) = key(own), key(best)
    if info.table and own.member and not best.member and own_cov > 0 \
            and (own_cov, own_extra) <= (best_cov, best_extra) \
            and not any(c.matches(own.measure - own.own) for c in concepts):
        # as good a fit, but the figure is a part's ("Net sales" under "Specialty Films")
        # where the claim names no part and another row is the whole's
        return f"scope_mismatch:{q.text}"
    if best_cov < MIN_MEASURE_FIT:
        return None
    if info.table:
        if best_extra == 0 and (own_cov, own_extra) < (best_cov, best_extra):
            # a member of a breakdown (a segment) against another member or the breakdown's
            # total ("Total" under "Revenues:"): another part; else another line item
            kind = "scope" if own.member and (best.member or not best.own) else "measure"
            return f"{kind}_mismatch:{q.text}"
        return None
    # prose: no clause holding q names the claim's measure, or one does only through
    # another wording ("sales" for revenue, in "Cost of sales was 3,200") while another
    # clause names it in the claim's own words
    def literal(c: FigureContext) -> int:
        return sum(1 for x in concepts if matches_measure(x, c.measure, literal=True))

    # or the clauses holding q miss some of the measure another clause names whole
    # ("East region rooms revenue was $174 million" for its food and beverage revenue)
    if own_cov == 0 or (own_cov < best_cov == 1.0) or (
            max(literal(c) for c in held) == 0 and max(literal(c) for c in others) >= MIN_MEASURE_FIT * len(concepts)):
        return f"measure_mismatch:{q.text}"
    return None


#: The company a claim is about: the words of a possessive name ("Globex's", "X5's")
#: or of the name that opens the sentence before a reporting verb ("Globex reported").
_SUBJECT_RES = (re.compile(r"((?:[A-Z][\w&.-]*\s+){0,3}[A-Z0-9][\w&.-]*)['\u2019]s\b"),
                re.compile(r"^\W*((?:[A-Z][\w&.-]*\s+){0,3}[A-Z][\w&.-]*)\s+(?:reported|posted|recorded|generated|"
                           r"earned|delivered|booked|had)\b"))


def _other_subject(sentence: str, terms: frozenset[str], title: str | None) -> bool:
    """Whether the claim is about another company than the cited document's: its subject
    (:data:`_SUBJECT_RES`; document-type words such as ``Form``, ``10-K`` and filler words
    are no subject) is neither in the passage nor in the title (``terms``), and the
    ``title`` names something (a content word that is no number, period, filler or
    document-type word, :data:`citewell.question.naming.DOC_WORDS`) the sentence does not
    say ("Globex's revenue was …" citing ``ACME_2023_10K``; a file named
    ``q3-report.pdf`` names nothing). An abbreviation the sentence uses for a measure
    ("Diluted EPS", "R&D", "GAAP") is no subject: only a possessive or a reporting
    company is. False without a title."""
    if not title:
        return False
    for pattern in _SUBJECT_RES:
        match = pattern.search(sentence)
        if match is None:
            continue
        subject = {t.term for t in tokens(match.group(1)) if t.content and not t.number
                   and t.term not in DOC_WORDS and t.term not in FILLER_TERMS}
        if not subject or subject <= terms:  # a name of several words is found whole
            return False
        said = content_terms(sentence)
        titled = [t.term for t in tokens(title) if t.content and not t.number and t.term not in FILLER_TERMS
                  and t.term not in DOC_WORDS and not _PERIOD_NAME_RE.fullmatch(t.term)]
        return bool(titled) and not any(t in said for t in titled)
    return False


def _squeezed_names(sentence: str, title: str) -> frozenset[str]:
    """The content terms of the capitalised words of ``sentence`` that ``title`` holds
    with its spaces and punctuation removed (``Blue Harbor`` in ``BLUEHARBOR_2019_10K``)."""
    squeezed = re.sub(r"[^a-z]", "", title.lower())
    inside = [w for w in _CAPITALISED_RE.findall(sentence) if w.lower() in squeezed]
    return content_terms(" ".join(inside)) if inside else frozenset()


def _name_runs(sentence: str, names: dict[str, str]) -> list[tuple[str, ...]]:
    """The sentence's names as runs of consecutive name words (terms), in order:
    ``Blue Harbor's revenue …`` → ``[("blue", "harbor")]``."""
    runs: list[tuple[str, ...]] = []
    current: list[str] = []
    for t in tokens(sentence):
        if t.term in names and not t.number:
            current.append(t.term)
        elif t.content or t.number:
            if current:
                runs.append(tuple(current))
            current = []
    if current:
        runs.append(tuple(current))
    return runs


#: How far before a number its direction word may stand ("revenue decreased by $127
#: million"), in characters; the window also ends at the number or clause before it.
DIRECTION_WINDOW = 40
_WINDOW_CUT_RE = re.compile(r".*(?:\d|[,;:](?=\s)|\b(?:and|but|while|whereas)\b)", re.IGNORECASE | re.DOTALL)


def _direction_before(text: str, start: int) -> set[str]:
    """The direction words (up / down) just before position ``start`` of ``text``: within
    :data:`DIRECTION_WINDOW` characters, after the last digit or clause boundary."""
    window = text[max(0, start - DIRECTION_WINDOW):start]
    cut = _WINDOW_CUT_RE.match(window)
    return _direction(window[cut.end():] if cut else window)


def _figure_direction_differs(claim: str, items: TextItems, matched: Sequence[Quantity],
                              info: _PassageInfo) -> bool:
    """A found number whose claim says one direction right before it ("grew 2%") while
    every passage place holding it says the other right before it ("declined 2%"), prose
    only; places with no single direction there leave it open."""
    if info.table:
        return False
    for q in matched:
        said = _direction_before(claim, q.start)
        if len(said) != 1:
            continue
        places = [_direction_before(u.text, p.start) for u in info.units for p in u.items.numbers
                  if _match_number(q, [p], info) in ("exact", "rounded")]
        if places and all(len(d) == 1 and d != said for d in places):
            return True
    return False


def _own_measure(q: Quantity, measure: Sequence[Any], clauses: Sequence[FigureContext]) -> list[Any]:
    """The claim's measure concepts that the claim's own clause holding ``q`` names
    ("Revenue was $5.0 billion and net income was $640 million": revenue for the first
    figure, net income for the second); all of ``measure`` when that clause names none
    of them, and the name concepts always."""
    clause = next((c for c in clauses if any(n is q for n in c.numbers)), None)
    if clause is None:
        return list(measure)
    own = [c for c in measure if c.boost == NAME_BOOST or matches_measure(c, clause.measure)]
    return own if any(c.boost != NAME_BOOST for c in own) else list(measure)


_TO_BEFORE_RE = re.compile(r"\bto\s*$", re.IGNORECASE)


def _is_change(text: str, number: Quantity) -> bool:
    """Whether ``text`` states ``number`` as a change: a direction word right before it
    ("an increase of 12%", "declined 2%"), not a level reached ("grew to 87.5%")."""
    before = text[max(0, number.start - DIRECTION_WINDOW):number.start]
    return bool(_direction_before(text, number.start)) and not _TO_BEFORE_RE.search(before)


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
                  header: str | None = None, expansions: Expansions = NO_EXPANSIONS,
                  part: str | None = None) -> Support:
    """:func:`check_rules`, then, for an ``uncertain`` verdict and a ``judge``, the judge's
    opinion: True makes it ``supported`` (reason ``judge:supported``, score at least 0.5),
    False ``unsupported`` (``judge:unsupported``, score at most 0.3); None, or a judge that
    raises, leaves it ``uncertain`` (``judge:none`` / ``judge:failed``)."""
    support = check_rules(sentence, passage, embedder=embedder, text_type=text_type, title=title, header=header,
                          expansions=expansions, part=part)
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
                text_type: str | None = None, title: str | None = None, header: str | None = None,
                expansions: Expansions = NO_EXPANSIONS, part: str | None = None) -> Support:
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
        header: the lines the extractor recorded before a table chunk
            (:func:`citewell.text.tables.table_lead`: the table's title, which declares
            its scale, and the column header carried from an earlier chunk of the page):
            read as the passage's first lines, so the scale and the years of a quoted
            row are found.
        expansions: the domain pack's expansions for the sentence's concepts (the
            answering turn's, :attr:`citewell.question.analysis.QuestionAnalysis.expansions`:
            a claim about *capital expenditures* is covered by *purchases of property,
            plant and equipment*); none by default.
        part: the segment or area a table passage's title names (the domain pack's
            reading, :func:`citewell.domains.finance.rows.table_part`): its figures are
            that part's, so a claim stating one of them without naming the part is
            ``scope_mismatch:<part>`` (a segment's net sales given as the company's).

    Returns:
        A :class:`Support`; the rules are in the module docstring. Deterministic.
    """
    if passage is None or not passage.strip():
        return Support("unchecked", 0.0, ("no_passage",))
    if header:
        passage = f"{header}\n{passage}"
    norm_s = normalise(sentence)
    table = None if text_type is None else text_type == "table"
    info = _passage(passage, table)
    plain = _EMPHASIS_RE.sub(r"\2", _LEADING_MARKDOWN_RE.sub("", norm_s))
    claim_text = _BRACKETED_NUMBERS_RE.sub(" ", plain)  # a marker kept as prose ("[2]") states no figure
    items = read_items(claim_text)
    concepts = [c for c in question_concepts(plain, expansions)
                if not c.number and not all(alt <= FILLER_TERMS for alt in c.alternatives)]
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
    matched: list[Quantity] = []
    # concepts that say what a number is about (not names: a table row rarely repeats them)
    topical = [c for c in concepts if c.boost != NAME_BOOST]
    # the claim's measure: its topical concepts, and the names a table's rows are labelled
    # with (a segment "Consumer"; not the company, which no row names)
    row_words = frozenset().union(*(c.measure for c in info.contexts)) if info.table else frozenset()
    # (not the document's own name, "Acme's", nor a qualifier, "consolidated")
    titled = content_terms(title) | _squeezed_names(plain, title) if title else frozenset()
    measure = [c for c in topical if any(measure_words(alt) for alt in c.alternatives)
               and not (c.matches(titled) and not c.matches(row_words))] + [
        c for c in concepts if c.boost == NAME_BOOST and matches_measure(c, row_words)]
    claim_terms = content_terms(plain).union(*(alt for c in concepts for alt in c.alternatives))
    # the passage numbers whose row or clause names the claim's measure (their id()s);
    # a prose change or share is computed from them when there are some ("revenue grew
    # by $800 million" is not the difference of two headcounts)
    claim_clauses = prose_contexts(claim_text, items)  # "revenue was $5.0 billion and net income $640 million"
    claim_names = frozenset(t for c in concepts if c.boost == NAME_BOOST and not c.matches(titled)
                            for alt in c.alternatives for t in alt)
    fits = frozenset(id(p) for c in info.contexts if any(matches_measure(x, c.measure) for x in measure)
                     for p in c.numbers)
    operands = [p for u in info.units for p in u.items.numbers if id(p) in fits] or info.items.numbers
    for q in items.numbers:
        how = _match_number(q, info.items.numbers, info)
        if how in ("exact", "rounded"):
            found += 1
            if how == "rounded":
                notes.append(f"rounded:{q.text}")
            matched.append(q)
            wrong = _figure_mismatch(q, _own_measure(q, measure, claim_clauses), claim_terms, info, claim_names)
            if wrong is not None and _direction(plain) and (
                    _table_computed(q, info, plain, frozenset(items.years), _own_measure(q, measure, claim_clauses),
                                    claim_terms) if info.table
                    else _computed(q, operands, info, plain, info.bound_years)) is not None:
                # "increased by $0.3 billion": a change of the claim's row that equals or
                # rounds to another row's figure by chance
                if how == "rounded":
                    notes.pop()
                notes.append(f"computed:{q.text}")
            elif wrong is not None:
                hard.append(wrong)
            elif topical and not any(_match_number(q, u.items.numbers, info) in ("exact", "rounded")
                                     and any(c.matches(u.terms) for c in topical) for u in info.units) \
                    and not any(_match_number(q, x.numbers, info) in ("exact", "rounded")
                                and any(c.matches(x.measure) for c in topical) for x in info.contexts):
                soft.append(f"number_out_of_context:{q.text}")
        elif how == "more_precise":
            soft.append(f"number_more_precise:{q.text}")
        elif how == "scale_unknown":
            soft.append(f"scale_unknown:{q.text}")
        elif (_table_computed(q, info, plain, frozenset(items.years), _own_measure(q, measure, claim_clauses),
                                    claim_terms) if info.table
              else _computed(q, operands, info, plain, info.bound_years)) is not None:
            found += 1
            notes.append(f"computed:{q.text}")
        else:
            hard.append(f"number_not_found:{q.text}")
    if part and matched and info.table:
        wanted = content_terms(part)
        if wanted and not wanted <= content_terms(plain) | _squeezed_names(plain, part):
            hard.append(f"scope_mismatch:{part}")
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
        compares = bool(_CLAIM_COMPARES_RE.search(norm_s))
        mismatch = (_table_year_mismatch(items, matched, info, fits, compares=compares, claim=claim_text)
                    if info.table else
                    _year_mismatch(items, matched, info, compares=compares, fits=fits, claim=claim_text))
        if mismatch is not None:
            hard.append(f"period_mismatch:{mismatch}")

    # words and entities
    terms = info.terms | (content_terms(title) if title else frozenset())
    coverage = _coverage(concepts, terms)
    names = {t.term: t.surface for t in tokens(plain)  # month names are no entities
             if t.name and not t.number and not _PERIOD_NAME_RE.fullmatch(t.term) and t.term not in FILLER_TERMS}
    possessive = _POSSESSIVE_START_RE.match(plain)
    if possessive:  # "Apple's revenue …": a sentence-initial name
        names.update((t.term, t.surface) for t in tokens(possessive.group(1)) if t.content and not t.number)
    if title:  # a title may write a name run together: Blue Harbor, BLUEHARBOR_2019_10K
        inside = _squeezed_names(plain, title)
        if inside:
            terms = terms | inside
            coverage = _coverage(concepts, terms)
    missing: list[str] = []
    entity = ""
    if names:
        missing = sorted(surface for term, surface in names.items() if term not in terms)
        # a name of several words is one name: "Blue Harbor" is not found by "blue"
        runs = _name_runs(plain, names)
        lost = [run for run in runs if not all(t in terms for t in run)]
        missing = sorted({names[t] for run in lost for t in run if t in names} | set(missing))
        if len(missing) * 2 > len(names) or len(lost) * 2 > len(runs):
            entity = "entity_not_found:" + ",".join(missing)
    if _other_subject(plain, terms, title):
        hard.append("scope_mismatch:" + ",".join(missing or ["subject"]))
    elif entity:
        soft.append(entity)
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
        if not u_dir:  # "5,000 in 2023, up from 4,000 in 2022": the comparison's own clause
            u_dir = _direction(best.text)
        if len(s_dir) == 1 and len(u_dir) == 1 and s_dir != u_dir:
            target.append("direction_mismatch")
        elif _figure_direction_differs(claim_text, items, matched, info):
            hard.append("direction_mismatch")

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

