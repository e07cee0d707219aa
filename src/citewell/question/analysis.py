"""The question analysis: what a question asks, read once per turn.

:func:`analyse` reads a question (and, in a chat, what it carries over from the previous
turn) into a :class:`QuestionAnalysis`. The turn carries it (``Turn.analysis``) through
every stage that reads the question: retrieval (its search terms, its concepts, the
sources it names, the measure and periods a page should state), the scope check (its
names, periods and topic), the generator (the kind of answer wanted, the measure and
periods of a figure) and relevance (names, periods, topic). No stage reads the question
text on its own.

What it holds:

- **subjects** (:attr:`QuestionAnalysis.names`): the names the question asks about, by
  :func:`~citewell.question.names.question_names` (companies, tickers, cashtags,
  products; multi-word names; possessive subjects), each with its written forms
  (:func:`~citewell.question.names.mentions` and :func:`~citewell.question.names.spelled`:
  ``Samba Nova`` is also ``SambaNova``, ``Coca-Cola`` also ``Coca Cola``); the links between a name and its ticker come from the sources' data and
  are added by the scope check (:mod:`citewell.scope.check`), both ways;
- **periods** (:mod:`~citewell.question.periods`): fiscal years, quarters, part of a
  year, the period before ("a year earlier"), dates, forward-looking words;
- **measure** (:attr:`QuestionAnalysis.measure`): what the active domain pack reads as
  the quantity asked (for filings: the line items, ratios and statements of
  :mod:`citewell.domains.finance`); None without a domain pack;
- **scope** (:attr:`QuestionAnalysis.scope`): consolidated (the default), a named
  segment or geography, or attributable to the parent — read by the domain pack;
- **kind** (:class:`AnswerKind`): a figure, a change or ratio (a calculation), a reason,
  a list, yes/no, a person, a date, a count;
- **concepts** and **topics**: the question's concepts (:func:`~citewell.text.terms.
  question_concepts`, with the domain's expansions) and its topic concepts (those of its
  first sentence other than numbers, names and the words numbers and periods are
  written with);
- **follow-up** (:class:`FollowUp`): whether the question refers back to the previous
  turn, and that turn's question; :attr:`QuestionAnalysis.query` is the question with
  what it carries over (:func:`~citewell.question.followup.followup_query`); a follow-up
  that asks for no kind of answer of its own ("What about 2021?") wants the previous
  question's.

The analysis is pure: a function of the question, the previous question and the domain
pack; it reads no store (what the sources hold of it is the scope check's
:class:`~citewell.scope.check.ScopeFacts`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from ..text.quantities import FILLER_TERMS
from ..text.sentences import sentence_spans
from ..text.terms import NAME_BOOST, NO_EXPANSIONS, Concept, Expansions, Token, question_concepts, tokens
from .followup import followup_query, refers_back
from .kinds import (asks_calculation, asks_count, asks_date, asks_figure, asks_for_figure, asks_list, asks_person,
                    asks_quantity, asks_why, asks_yes_no, counted_terms, lead)
from .names import Name, name_parts, question_names
from .naming import QuestionNames
from .periods import QuestionPeriods, question_periods

__all__ = ["AnswerKind", "DomainReading", "FollowUp", "QuestionAnalysis", "analyse", "first_sentence"]


class DomainReading(Protocol):
    """What the analysis reads a question with from a domain pack
    (:class:`citewell.domains.base.Domain` is one): its ``name``, its ``expansions``, and
    the measure and reporting scope it reads in a question. Defined here, beside its one
    reader, so that the question layer depends on no domain pack."""

    name: str
    expansions: Expansions

    def read_measure(self, text: str) -> Any:
        """What quantity ``text`` asks for (an object with a ``named`` bool), or None."""
        ...

    def read_scope(self, text: str) -> Any:
        """Of which part of the reporting entity ``text`` asks, or None."""
        ...


def first_sentence(question: str) -> str:
    """The question's first sentence (syntok), which states what it asks."""
    spans = sentence_spans(question)
    return question[spans[0][0]:spans[0][1]] if spans else question


@dataclass(frozen=True)
class AnswerKind:
    """The kind of answer a question wants (:mod:`citewell.question.kinds`):

    - ``figure``: a value (``how much``, ``what was the … [line item]``);
    - ``money``: a money figure is asked (a figure form word, or a measure the domain knows);
    - ``quantity``: ``how many/much/long``, ``what percentage/share/amount``;
    - ``calculation``: a change, ratio, share or average computed from figures;
    - ``reason``: why, what drove, what caused;
    - ``count``: ``how many``, with ``counted``: the stemmed words of what it counts
      (:func:`~citewell.question.kinds.counted_terms`); ``date``: ``when``; ``person``: ``who``;
    - ``yes_no``: the question opens with an auxiliary verb (``Is``, ``Does``, ``Did`` …);
    - ``list``: ``list``, ``name the``, ``what are the``, ``which … are``.
    """

    figure: bool = False
    money: bool = False
    quantity: bool = False
    calculation: bool = False
    reason: bool = False
    count: bool = False
    date: bool = False
    person: bool = False
    yes_no: bool = False
    list: bool = False
    counted: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The main kind as one word: reason, calculation, figure, count, date, person,
        yes_no, list, or ``passage`` (any other question)."""
        for kind in ("reason", "calculation", "figure", "count", "date", "person", "yes_no", "list"):
            if getattr(self, kind):
                return kind
        return "passage"


@dataclass(frozen=True)
class FollowUp:
    """A question asked in a chat: ``previous`` (the chat's previous question, None when
    it has none) and ``refers_back`` (the question depends on it:
    :func:`~citewell.question.followup.refers_back`)."""

    previous: str | None = None
    refers_back: bool = False


@dataclass(frozen=True)
class QuestionAnalysis:
    """A question read once (module docstring). ``question``: as asked; ``query``: what
    retrieval and the answer read (a follow-up carries the previous question's subject);
    every other field is read from ``query``; ``domain``: the domain pack it was read with
    (None: none)."""

    question: str
    query: str
    names: tuple[Name, ...]
    periods: QuestionPeriods
    kind: AnswerKind
    concepts: tuple[Concept, ...]
    topics: tuple[Concept, ...]
    naming: QuestionNames
    name_words: tuple[tuple[str, str], ...]
    followup: FollowUp = FollowUp()
    measure: Any = None
    scope: Any = None
    domain: DomainReading | None = None
    tokens: tuple[Token, ...] = field(default=(), repr=False)

    @property
    def lead(self) -> str:
        """The question itself: the query up to its first ``?`` (what follows is an
        instruction or a definition)."""
        return lead(self.query)

    @property
    def expansions(self) -> Expansions:
        """The expansions of the question's domain pack (none without one)."""
        return self.domain.expansions if self.domain is not None else NO_EXPANSIONS

    @property
    def years(self) -> frozenset[int]:
        """The years asked (:attr:`QuestionPeriods.years`)."""
        return self.periods.years

    def searching(self, search: str) -> "QuestionAnalysis":
        """The analysis retrieval reads when the sources link aliases to the question's
        names (``search``: the query with each linked ticker or company name written after
        its name, :func:`citewell.question.names.alias_query`): the same question, read
        with its aliases, so that a passage giving only the ticker is found and ranked.
        ``self`` when ``search`` is the query."""
        if search == self.query:
            return self
        return analyse(self.question, query=search, previous=self.followup.previous, domain=self.domain)

    @cached_property
    def deciding_names(self) -> tuple[Name, ...]:
        """The names that decide what the question is about: all but a weak first word."""
        return tuple(n for n in self.names if not n.weak)


def _topics(query: str, concepts_of: Any) -> tuple[Concept, ...]:
    """The topic concepts: those of the first sentence other than numbers, names and the
    words numbers and periods are written with (:data:`~citewell.text.quantities.FILLER_WORDS`)."""
    return tuple(c for c in concepts_of(first_sentence(query))
                 if not c.number and c.boost != NAME_BOOST and not all(alt <= FILLER_TERMS for alt in c.alternatives))


def _topic_text(question: str, query: str, back: bool) -> str:
    """The text whose first sentence states a question's topics: the query; for a follow-up
    whose query is the question and the previous question's words carried after it
    (:func:`~citewell.question.followup.followup_query`: ``And why? Cha Zhang price
    bananas``), the question's first sentence with those words, which state what it is
    about (``And why?`` alone has no topic, and the scope check would pass anything)."""
    if back and query != question and query.startswith(question):
        return f"{first_sentence(question).rstrip('?!. ')} {query[len(question):].strip()}"
    return query


def _name_words(toks: list[Token]) -> tuple[tuple[str, str], ...]:
    """The name words of the question, ``(surface, term)`` in order without repeats: tokens
    written like names (:attr:`~citewell.text.terms.Token.name`) of at least two characters."""
    out: dict[str, str] = {}
    for tok in toks:
        if tok.name and len(tok.surface) >= 2:
            out.setdefault(tok.surface, tok.term)
    return tuple(out.items())


def analyse(question: str, *, query: str | None = None, previous: str | None = None,
            domain: DomainReading | None = None) -> QuestionAnalysis:
    """Read ``question`` (asked after ``previous`` in a chat, None otherwise) with the
    domain pack ``domain`` (None: no domain knowledge). ``query``: the question with what
    it carries over from ``previous``, when the caller worked it out already (then
    ``previous`` is the question it refers back to); otherwise it is worked out here
    (:func:`~citewell.question.followup.followup_query`). Pure; never raises for any text."""
    if query is None:
        back = previous is not None and refers_back(question)
        query = followup_query(question, previous) if back else question
    else:
        back = previous is not None
    expansions = domain.expansions if domain is not None else None
    concepts_of = (lambda text: question_concepts(text, expansions)) if expansions is not None else question_concepts
    toks = tokens(query)
    measure = domain.read_measure(query) if domain is not None else None
    kind = _kind_of(query, measure)
    if back and kind.name == "passage" and previous:
        # "What about 2021?" asks the previous question again, for another period or subject
        kind = _kind_of(previous, domain.read_measure(previous) if domain is not None else None)
    found = question_names(query)
    names = tuple(n for n in found if not _names_no_entity(n, domain))
    dropped = {w.lower() for n in found if n not in names for w in (*name_parts(n.text), n.text)}
    return QuestionAnalysis(
        question=question, query=query, names=names, periods=question_periods(query),
        kind=kind, concepts=tuple(concepts_of(query)), topics=_topics(_topic_text(question, query, back), concepts_of),
        naming=QuestionNames.of(query),
        name_words=tuple((s, t) for s, t in _name_words(toks) if s not in dropped), followup=FollowUp(previous, back),
        measure=measure, scope=domain.read_scope(query) if domain is not None else None,
        domain=domain, tokens=tuple(toks))


#: Month names and the words of a period comparison: capitalised in a question, never a subject.
_PERIOD_WORDS = frozenset("january february march april may june july august september october november december "
                          "jan feb mar apr jun jul aug sep sept oct nov dec yoy qoq ytd ttm".split())


def _names_no_entity(name: Name, domain: DomainReading | None) -> bool:
    """Whether a capitalised run of the question names no entity: a period word (``YoY``,
    ``December``), or a measure the domain pack reads whole (``COGS``, ``CapEx``, ``Gross
    Margin``, ``Free Cash Flow``: :meth:`DomainReading.read_measure` covers every word)."""
    words = [w for w in name.text.replace("-", " ").split() if w]
    if words and all(w.lower().strip("'’") in _PERIOD_WORDS for w in words):
        return True
    if domain is None:
        return False
    measure = domain.read_measure(name.text)
    spans = getattr(measure, "mentions", ()) if measure is not None else ()
    content = [t for t in tokens(name.text) if t.content]
    return bool(content) and sum(m.end - m.start for m in spans) >= len(content)


def _kind_of(text: str, measure: Any) -> AnswerKind:
    """The :class:`AnswerKind` of ``text`` (a question; the count, date, person, yes/no and
    list kinds from its :func:`~citewell.question.kinds.lead`) with the domain's ``measure``."""
    first = lead(text)
    return AnswerKind(figure=asks_figure(text, measure), money=asks_for_figure(text, measure),
                      quantity=asks_quantity(text), calculation=asks_calculation(text), reason=asks_why(text),
                      count=asks_count(first), date=asks_date(first), person=asks_person(first),
                      yes_no=asks_yes_no(first), list=asks_list(first), counted=counted_terms(first))
