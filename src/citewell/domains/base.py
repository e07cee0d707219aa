"""The interface of a domain pack: a field's knowledge, handed to the answering pipeline.

citewell's generic layers (tokens, BM25, dense retrieval, sentence choice, the support
checks) know no field. A *domain pack* adds what a field knows about its documents and
questions, as data and code behind :class:`Domain`:

- ``expansions``: the field's synonyms, abbreviations and derived measures, as
  :class:`~citewell.text.terms.Expansions` (a question's ``capex`` also finds
  ``purchases of property, plant and equipment``);
- :meth:`Domain.read_measure` and :meth:`Domain.read_scope`: what quantity a question
  asks for and of which part of the reporting entity (read into the question analysis,
  :mod:`citewell.question.analysis`);
- :meth:`Domain.page_needs` and :meth:`Domain.page_facts`: what a page must show to
  answer the question (the page ranker, :mod:`citewell.retrieve.pages`);
- :meth:`Domain.figure_answer`: an answer built from the field's structured evidence
  (statement rows, calculations), when the question asks for one.

A pack runs only on a scope that holds its documents (:meth:`Domain.applies`,
:func:`citewell.domains.active_domain`): a store of transcripts and posts never pays for
the finance vocabulary, and its questions are read without it. Every entry of a pack's
vocabulary names its public source (a taxonomy, a regulation, a published glossary).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..models import Passage, Resource
from ..question.analysis import DomainReading, QuestionAnalysis
from ..text.terms import Expansions

__all__ = ["Domain", "FigureAnswer", "PageNeeds", "RowFact", "RowQuote"]


@dataclass(frozen=True)
class PageNeeds:
    """What a question asks of a page, in a domain's terms: ``kinds`` (the kinds of page
    it names or needs, e.g. the statements presenting its line items) and ``items`` (the
    measures a page's rows should state). Empty: the domain prefers no page."""

    kinds: frozenset[str] = frozenset()
    items: tuple[str, ...] = ()


@dataclass(frozen=True)
class RowQuote:
    """One piece of structured evidence an answer restates: ``passage_index`` (into the
    passages given), ``start``/``end`` (code points of the passage's chunk text it
    restates, exactly), ``quote`` (how the answer writes it)."""

    passage_index: int
    start: int
    end: int
    quote: str


@dataclass(frozen=True)
class RowFact:
    """One figure of a row, as structured data for a model's prompt: ``passage_index``
    (into the passages given), ``concept`` (the row as the answer names it, e.g. ``Net
    sales (Flexibles segment)``), ``item`` (the domain's key of the line item, e.g.
    ``Revenue``), ``scope`` (of which part of the entity, in words: ``company as a whole``,
    ``Coatings segment``), ``period`` (the column's period as the table names it:
    ``2022``, ``year ended January 31, 2023``), ``unit`` (``USD millions``, ``%``, ``""``
    when the table declares none) and ``value`` (the cell as written: ``$2,310``,
    ``(118)``)."""

    passage_index: int
    concept: str
    item: str
    scope: str
    period: str
    unit: str
    value: str


@dataclass(frozen=True)
class FigureAnswer:
    """A domain's answer to a figure question: the ``rows`` to restate (each cited), and
    an uncited ``preface`` sentence before them (a calculation's working, or the reason
    the rows are not the asked period's), None when none. ``facts``: the same rows as
    one :class:`RowFact` per figure (for a model's prompt; empty when the pack gives
    none); ``calculation``: the working of the calculation the question asks for, with its
    operands and result (``Computed from the figures below: … = 9.6% (146 / 1,525)``), None
    when none was asked or it could not be done."""

    rows: tuple[RowQuote, ...] = field(default_factory=tuple)
    preface: str | None = None
    facts: tuple[RowFact, ...] = ()
    calculation: str | None = None


@runtime_checkable
class Domain(DomainReading, Protocol):
    """A domain pack (module docstring). ``name``: a short identifier recorded on the
    analysis (``finance``); ``expansions``: the vocabulary's question expansions."""

    name: str
    expansions: Expansions

    def applies(self, resources: Sequence[Resource]) -> bool:
        """Whether the scope's ``resources`` hold this domain's documents."""
        ...

    def read_measure(self, text: str) -> Any:
        """What quantity ``text`` (a question) asks for: an object with a ``named`` bool
        (the question names a measure of the domain), or None."""
        ...

    def read_scope(self, text: str) -> Any:
        """Of which part of the reporting entity ``text`` asks, or None."""
        ...

    def page_needs(self, analysis: QuestionAnalysis) -> PageNeeds:
        """What the question of ``analysis`` asks of a page."""
        ...

    def page_facts(self, passage: Passage) -> tuple[str | None, frozenset[str]]:
        """``(page kind, measures its rows state)`` of one passage's page."""
        ...

    def figure_answer(self, analysis: QuestionAnalysis, passages: Sequence[Passage]) -> FigureAnswer | None:
        """The structured answer to a figure question from ``passages``, or None."""
        ...
