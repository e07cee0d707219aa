"""The finance domain pack: financial statements, their line items and ratios, filings.

What it knows, each part with its public sources (:mod:`.vocabulary` names the source of
every entry):

- :mod:`.vocabulary`: statement titles, line items keyed by their US-GAAP taxonomy
  element, ratios and what they are computed from;
- :mod:`.statements`: those phrases found in questions, page headings and row labels;
- :mod:`.measure`: the measure and the reporting scope a question asks about;
- :mod:`.pages`: what a page must show for a question (the page ranker's preferences);
- :mod:`.rows`, :mod:`.calc`, :mod:`.answer`: figure answers read off statement rows,
  and the calculations a question asks for.

:data:`FINANCE` is the pack (:class:`~citewell.domains.base.Domain`); it applies to a
scope that holds filings (:meth:`FinanceDomain.applies`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from ...models import Passage, Resource
from ...question.analysis import QuestionAnalysis
from ...text.terms import Expansions, tokens
from ..base import FigureAnswer, PageNeeds
from .answer import figure_answer
from .measure import Measure, ReportingScope, read_measure, read_scope
from .pages import page_facts, page_needs
from .vocabulary import LINE_ITEMS, RATIOS, STATEMENTS, texts

__all__ = ["FINANCE", "FinanceDomain", "expansions"]

#: Metadata of a filing (seeds 003/004's typed fields, a FinanceBench or EDGAR manifest).
_FILING_METADATA = ("tickers", "company_names", "fiscal_year", "fiscal_quarter", "doc_type", "document_category",
                    "sector", "edgar_metadata")
#: The SEC's form names (10-K, 10-Q, 8-K, 20-F, 40-F, 6-K, S-1, DEF 14A) and the reports
#: companies file or furnish with them (annual and quarterly reports, earnings releases),
#: as a title or file name writes them (``3M_2022_10K``, ``AMCOR_2023Q4_EARNINGS``).
_FILING_NAME_RE = re.compile(r"(?:^|[^a-z0-9])(?:10-?k|10-?q|8-?k|20-?f|40-?f|6-?k|s-1|def-?14a|earnings|"
                             r"annual[ _-]?report|quarterly[ _-]?report)(?:[^a-z]|$)", re.IGNORECASE)


@lru_cache(maxsize=16384)
def _names_filing(title: str, file_name: str) -> bool:
    """Whether a title or file name names an SEC form or a report filed with one (cached:
    every question reads the labels of every resource in its scope)."""
    return bool(_FILING_NAME_RE.search(title) or _FILING_NAME_RE.search(file_name))


def _phrase_terms(text: str) -> frozenset[str]:
    return frozenset(t.term for t in tokens(text) if t.content)


def _minimal(phrases: list[str], *, besides: str = "") -> tuple[str, ...]:
    """``phrases`` without repeats and without any whose terms include another's (a text
    with ``net sales`` has ``sales``) or ``besides``' terms, in order."""
    own = _phrase_terms(besides) if besides else None
    kept: list[tuple[frozenset[str], str]] = []
    for phrase in phrases:
        terms = _phrase_terms(phrase)
        if not terms or (own is not None and own <= terms):
            continue
        if any(k <= terms for k, _ in kept):
            continue
        kept = [(k, p) for k, p in kept if not terms <= k] + [(terms, phrase)]
    return tuple(p for _, p in kept)


def expansions() -> dict[str, tuple[str, ...]]:
    """The question expansions of the vocabulary: a line item's caption also matches its
    other captions (not its aliases: a text saying ``capex`` or ``profit`` mentions the
    item, a caption states it), an alias its captions (``COGS``: ``cost of sales``, ``cost
    of revenue`` …), a ratio the captions of the items it is computed from, a statement
    title its other titles. Alternatives that contain another (``net sales`` beside
    ``sales``) are left out."""
    items = {item.key: item for item in LINE_ITEMS}
    out: dict[str, tuple[str, ...]] = {}
    for item in LINE_ITEMS:
        labels = list(texts(item.labels))
        for label in labels:
            out[label] = _minimal(labels, besides=label)
        for alias in texts(item.aliases):
            out.setdefault(alias, _minimal(labels, besides=alias))
    for ratio in RATIOS:
        for name in texts(ratio.names):
            out[name] = _minimal([items[key].labels[0].text for key in ratio.items], besides=name)
    for kind_titles in STATEMENTS.values():
        titles = list(texts(kind_titles))
        for title in titles:
            out.setdefault(title, _minimal(titles, besides=title))
    return {phrase: alts for phrase, alts in out.items() if alts}


class FinanceDomain:
    """The finance pack (module docstring): :class:`~citewell.domains.base.Domain`."""

    name = "finance"

    def __init__(self) -> None:
        self.expansions = Expansions.of(expansions())

    def applies(self, resources: Sequence[Resource]) -> bool:
        """Whether ``resources`` hold a filing: a resource with a filing's metadata
        (:data:`_FILING_METADATA`), or whose title or file name names an SEC form or a
        report filed with one (:data:`_FILING_NAME_RE`)."""
        for resource in resources:
            meta = resource.metadata or {}
            if any(meta.get(key) for key in _FILING_METADATA) or _names_filing(resource.title or "",
                                                                                resource.file_name or ""):
                return True
        return False

    def read_measure(self, text: str) -> Measure:
        """:func:`~citewell.domains.finance.measure.read_measure`."""
        return read_measure(text)

    def read_scope(self, text: str) -> ReportingScope:
        """:func:`~citewell.domains.finance.measure.read_scope`."""
        return read_scope(text)

    def page_needs(self, analysis: QuestionAnalysis) -> PageNeeds:
        """:func:`~citewell.domains.finance.pages.page_needs`."""
        return page_needs(analysis)

    def page_facts(self, passage: Passage) -> tuple[str | None, frozenset[str]]:
        """:func:`~citewell.domains.finance.pages.page_facts`."""
        return page_facts(passage)

    def figure_answer(self, analysis: QuestionAnalysis, passages: Sequence[Passage]) -> FigureAnswer | None:
        """:func:`~citewell.domains.finance.answer.figure_answer`."""
        return figure_answer(analysis, passages)


#: The finance pack.
FINANCE = FinanceDomain()
