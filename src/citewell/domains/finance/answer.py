"""Figure answers read off statement rows: the finance pack's structured answer.

:func:`figure_answer` answers a figure or calculation question with the statement rows
that state what it asks (:mod:`~citewell.domains.finance.rows`), restated with their
periods, and — when the question asks for a figure the sources do not state but that is
computed from rows they do — the working of the calculation
(:mod:`~citewell.domains.finance.calc`) as an uncited sentence before them.

A figure question: a quantity, a ``what was/is`` question about a line item, a change or
share computed from line items (the analysis's kind ``calculation``), or any question
about a ratio (:data:`~citewell.domains.finance.vocabulary.RATIOS`: a question about
working capital is answered by the current assets and current liabilities rows).
An adjusted (non-GAAP) measure (:data:`ADJUSTED_RE`) is answered by the row that states
it by name (``Adjusted EBITDA``: :func:`~citewell.domains.finance.rows.measure_rows`), or
else by sentences: its adjustments are the company's own, so it cannot be computed from
statement captions. Rows answer only when every line item the question names directly is
stated by one of them.

All the rows of one answer come from one document: the documents the question names
(:func:`citewell.question.naming.names_source`), or every document when it names none,
are tried in the order of their best passage, and the first that answers does (a ratio is
never computed from two companies' statements, and a figure of a company the question
names is never read from another's). A question whose figure belongs to a name written in
the possessive (``Apple's net income``) that names no document gets no rows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...models import Passage
from ...question.analysis import QuestionAnalysis
from ...question.naming import names_source
from ..base import FigureAnswer, RowFact, RowQuote
from .calc import Calculation, calculate
from .facts import scope_rank
from .measure import ReportingScope
from .rows import (FIT_OTHER, FoundRow, asked_span, find_rows, measure_rows, period_fit, render_row,
                   reports_year, row_name, rows_for_items, shown_columns,
                   unit_words)
from .statements import statements_named

__all__ = ["ADJUSTED_RE", "CALCULATION_TEXT", "OTHER_PERIODS_TEXT", "OTHER_SCOPE_TEXT", "OTHER_SPAN_TEXT",
           "figure_answer", "figure_rows", "named_parts", "row_facts"]

#: A measure the company adjusts, read and never computed: the labels of non-GAAP financial
#: measures as the SEC's rules name them (Regulation G and Item 10(e) of Regulation S-K:
#: "adjusted", "non-GAAP", measures "excluding" items; the SEC staff's Compliance and
#: Disclosure Interpretations on Non-GAAP Financial Measures: "organic", "constant currency").
ADJUSTED_RE = re.compile(r"\b(?:adjusted|non[- ]?gaap|organic(?:ally)?|constant[- ]currency|"
                         r"exclud(?:e|es|ing)\s+(?:the\s+)?(?:impacts?|effects?))\b", re.IGNORECASE)
#: Said first when the answer is a calculation: the rows it needs follow, each cited.
CALCULATION_TEXT = ("The sources state no single figure for this: it is a calculation for the reader, from the "
                    "figures that follow.")
#: Said first when the question names years and no row found reports any of them: the rows
#: that follow are for the periods the sources do report, never given as the asked year's.
OTHER_PERIODS_TEXT = "The sources give no figure for {years}; the rows below are for the periods they report."
#: Said first when no row found states the part of the entity asked: the rows that follow
#: state another part, never given as the one asked (:func:`_other_scope`).
OTHER_SCOPE_TEXT = "The passages found give no figure {asked}; the rows below are {found}."
#: Said first when every row found spans another length of period than the one asked (a
#: quarter's columns for a year asked, or the reverse).
OTHER_SPAN_TEXT = "The sources give no {span} figure for this; the rows below are for the periods they report."
#: How :data:`OTHER_SPAN_TEXT` names the span asked (:func:`~citewell.domains.finance.rows.asked_span`).
SPAN_WORDS = {12: "full-year", 3: "quarterly", 6: "half-year", 9: "nine-month"}
#: A name in the possessive: whose figure the question asks for (``Apple's``, ``MGM Resorts'``).
_POSSESSIVE_NAME_RE = re.compile(r"\b[A-Z0-9][\w&.\-]*(?:['\u2019]s\b|s['\u2019](?=\s))")


def figure_rows(analysis: QuestionAnalysis, passages: Sequence[Passage]) -> tuple[list[FoundRow], Calculation | None]:
    """The statement rows that answer the figure or calculation question of ``analysis``,
    and the calculation when one is asked and can be done (its rows are those it read);
    ``([], None)`` when the question asks why or asks for no figure (module docstring)."""
    question = analysis.query
    ratio = any(m.kind == "ratio" for m in analysis.measure.mentions) if analysis.measure is not None else False
    kind = analysis.kind
    if kind.reason or not (kind.figure or kind.calculation or ratio):
        return [], None
    order = list(dict.fromkeys(p.chunk.resource_id for p in passages))
    named_docs = [rid for rid in order if any(
        names_source(analysis.naming, p.resource_title, p.resource_names, p.resource_names)
        for p in passages if p.chunk.resource_id == rid)]
    if not named_docs and _POSSESSIVE_NAME_RE.search(question):
        return [], None  # "Apple's net income": a company no document is about; another's rows never answer
    for rid in named_docs or order:
        rows, calculation = _figure_rows_in(analysis, passages, ratio, rid)
        if rows:
            return rows, calculation
    return [], None


def _figure_rows_in(analysis: QuestionAnalysis, passages: Sequence[Passage], ratio: bool,
                    resource_id: str) -> tuple[list[FoundRow], Calculation | None]:
    """:func:`figure_rows` from the passages of one document."""
    question = analysis.query
    asked = analysis.years
    found_mentions = analysis.measure.mentions if analysis.measure is not None else ()
    named = frozenset(statements_named(question))

    scope = analysis.scope if isinstance(analysis.scope, ReportingScope) else None
    span = asked_span(analysis.periods, analysis.query)

    def rows_for(keys: tuple[str, ...]) -> dict[str, FoundRow]:
        return rows_for_items(keys, passages, asked_years=asked, named=named, resource_id=resource_id,
                              scope=scope, span=span)

    # an adjusted (non-GAAP) measure cannot be computed from statement captions: a row states
    # it, or else the sentences that discuss it answer
    if ADJUSTED_RE.search(question):
        return measure_rows([m.key for m in found_mentions if m.kind == "ratio"], question, passages,
                            resource_id=resource_id), None
    calculation = calculate(question, rows_for) if (ratio or analysis.kind.calculation) else None
    if calculation is not None:
        found = rows_for(calculation.items)
        return [found[k] for k in calculation.items if k in found], calculation
    rows = find_rows(question, passages, asked_years=asked, resource_id=resource_id, scope=scope, span=span)
    if scope is None or scope.kind == "consolidated":
        # a part of the company the question names without saying "segment" (AWS, Commercial Airplanes):
        # its rows answer when a table states it as a segment or a breakdown's member
        for part in named_parts(analysis):
            trial = find_rows(question, passages, asked_years=asked, resource_id=resource_id,
                              scope=ReportingScope("segment", part), span=span)
            if trial and all(scope_rank(r.scope, ReportingScope("segment", part)) == 0 for r in trial):
                rows = trial
                break
    items = {m.key for m in found_mentions if m.kind == "item"}
    if items - {row.item for row in rows}:  # a line item the question names that no row states:
        return [], None  # the rows do not answer it; sentences may
    return rows, None


def named_parts(analysis: QuestionAnalysis) -> list[str]:
    """The names a question writes besides its subjects (``Commercial Airplanes`` in
    "Boeing's Commercial Airplanes revenues", ``AWS``): parts of the company it may ask
    about, read as segments only where a row states one by that name."""
    return [n.text for n in analysis.names if not n.subject and not n.weak]


def _asked_scope(analysis: QuestionAnalysis, rows: Sequence[FoundRow]) -> ReportingScope:
    """The scope the rows answer for: the analysis's, or the segment the question names as
    a part when its rows state that segment (:func:`named_parts`)."""
    scope = analysis.scope if isinstance(analysis.scope, ReportingScope) else ReportingScope()
    if scope.kind == "consolidated" and rows and rows[0].scope.kind == "segment":
        for part in named_parts(analysis):
            if scope_rank(rows[0].scope, ReportingScope("segment", part)) == 0:
                return ReportingScope("segment", part)
    return scope


def _scope_words(scope: ReportingScope) -> str:
    """How an answer names a reporting scope: ``for the company as a whole``, ``for the
    International segment``, ``for a segment``, ``attributable to shareholders``."""
    if scope.kind == "segment":
        return f"for the {scope.name} segment" if scope.name else "for a segment"
    if scope.kind == "attributable":
        return "attributable to shareholders"
    if scope.kind == "noncontrolling":
        return "attributable to noncontrolling interests"
    return "for the company as a whole"


def _other_scope(rows: Sequence[FoundRow], asked: ReportingScope) -> str | None:
    """:data:`OTHER_SCOPE_TEXT` when no row states the scope asked (a segment's rows for a
    company figure, the company's rows for a segment asked, the total for the amount
    attributable to shareholders), else None."""
    if not rows or any(scope_rank(row.scope, asked) == 0 for row in rows):
        return None
    found = rows[0].scope
    return OTHER_SCOPE_TEXT.format(asked=_scope_words(asked), found=_scope_words(found))


def figure_answer(analysis: QuestionAnalysis, passages: Sequence[Passage]) -> FigureAnswer | None:
    """The :class:`~citewell.domains.base.FigureAnswer` of ``analysis`` from ``passages``:
    its rows restated (:func:`~citewell.domains.finance.rows.render_row`) and the preface
    — :data:`OTHER_PERIODS_TEXT` when the question names years and no row reports any of
    them, else :data:`OTHER_SCOPE_TEXT` when no row states the reporting scope asked, else
    :data:`OTHER_SPAN_TEXT` when every row's columns span another length of period than the
    one asked, else the calculation's working, else :data:`CALCULATION_TEXT` when several rows
    (or a calculation that could not be done) answer; None when no row answers."""
    rows, calculation = figure_rows(analysis, passages)
    if not rows:
        return None
    span = asked_span(analysis.periods, analysis.query)
    quotes = tuple(RowQuote(row.passage_index, row.start, row.end,
                            render_row(row, passages[row.passage_index].chunk.text, span=span)) for row in rows)
    asked = sorted(analysis.years)
    scope = _asked_scope(analysis, rows)
    preface: str | None = None
    other_scope = _other_scope(rows, scope)
    if asked and all(row.years and not any(reports_year(row, y) for y in asked) for row in rows):
        # "revenue in 2019" over a 10-K reporting 2020-2022: no calculation from other years
        preface = OTHER_PERIODS_TEXT.format(years=" and ".join(str(y) for y in asked))
    elif other_scope is not None:
        preface = other_scope
    elif rows and all(row.columns and period_fit(row, analysis.years, span) == FIT_OTHER for row in rows):
        preface = OTHER_SPAN_TEXT.format(span=SPAN_WORDS.get(span, "part-year"))
    elif calculation is not None:  # the working first (uncited: its inputs are the rows that follow)
        preface = calculation.text
    elif len(rows) > 1 or analysis.kind.calculation:
        preface = CALCULATION_TEXT
    facts = tuple(fact for row in rows for fact in row_facts(row, span=span))
    return FigureAnswer(quotes, preface, facts, calculation.text if calculation is not None else None)


#: How :func:`row_facts` names a row's scope.
_SCOPE_FACT = {"consolidated": "company as a whole", "attributable": "attributable to shareholders",
               "noncontrolling": "attributable to noncontrolling interests"}


def row_facts(row: FoundRow, *, span: int = 12) -> list[RowFact]:
    """The figures of ``row`` as :class:`~citewell.domains.base.RowFact` lines, one per
    column an answer states (:func:`~citewell.domains.finance.rows.shown_columns`; none when
    its values and periods do not pair up): the concept as an answer names the row
    (:func:`~citewell.domains.finance.rows.row_name`), its scope in words, the column's
    period, the unit (the row's scale as :func:`~citewell.domains.finance.rows.unit_words`
    reads it, after ``USD`` when the row writes ``$``: ``USD millions``; ``%`` for a
    percentage; ``""`` when nothing declares one) and the cell as written."""
    scope = (f"{row.scope.name} segment" if row.scope.kind == "segment" and row.scope.name
             else "a segment" if row.scope.kind == "segment" else _SCOPE_FACT.get(row.scope.kind, row.scope.kind))
    scale = unit_words(row).removeprefix(", in ")  # "millions", or "" for per-share figures, ratios …
    currency = "USD" if any("$" in v for v in row.values) else ""
    out: list[RowFact] = []
    for period, value in shown_columns(row, span):
        unit = "%" if "%" in value or "%" in row.label else " ".join(w for w in (currency, scale) if w)
        out.append(RowFact(row.passage_index, row_name(row), row.item, scope, period.label(), unit, value))
    return out
