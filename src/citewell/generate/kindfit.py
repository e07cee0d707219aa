"""Whether a quoted unit holds the kind of answer a question wants (docs/architecture.md
"The question analysis", kind of answer).

The question analysis says what kind of answer a question wants
(:class:`~citewell.question.analysis.AnswerKind`); the extractive writer quotes units, and a
unit answers a "why" question only when it states a reason, a "when" question only when it
states a date, a "how many" question only when it states a count
(:mod:`citewell.text.stated`). :class:`KindFit` is that test, built once per answer from
the analysis:

- ``reason`` (``why``, ``what drove`` …): :func:`~citewell.text.stated.states_reason`;
- ``count`` (``how many``): a number that counts what the question counts (``25 people``
  for "how many people"), else any number that can be a count, a weaker fit;
- ``date`` (``when``, ``what year`` …): :func:`~citewell.text.stated.states_date`.

A question wanting none of these (a figure, a person, a passage) has no test
(:attr:`KindFit.wanted` None).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..question.analysis import QuestionAnalysis
from ..text.stated import counts, states_count, states_date, states_reason

__all__ = ["KindFit", "kind_fit"]


@dataclass(frozen=True)
class KindFit:
    """The answer-kind test of one question: ``wanted`` (``reason``, ``count``, ``date``,
    or None: no test) and ``things`` (for a count: the stemmed terms of the question's
    what it counts, :attr:`~citewell.question.analysis.AnswerKind.counted`)."""

    wanted: str | None = None
    things: frozenset[str] = frozenset()

    def level(self, text: str) -> int:
        """How well ``text`` (a unit) holds the answer wanted: 0 not at all, 1 it states one
        (a reason, a date, a number that can be a count), 2 a count of what the question
        counts. Always 0 without a test."""
        if self.wanted == "reason":
            return int(states_reason(text))
        if self.wanted == "date":
            return int(states_date(text))
        if self.wanted == "count":
            if not states_count(text):
                return 0
            return 2 if counts(text, self.things) else 1
        return 0


def kind_fit(analysis: QuestionAnalysis) -> KindFit:
    """The :class:`KindFit` of the analysed question: a reason before a count before a date
    (``why did … in 2022`` wants the reason; ``how many … each year`` the count)."""
    kind = analysis.kind
    if kind.reason:
        return KindFit("reason")
    if kind.count:
        return KindFit("count", frozenset(kind.counted))
    if kind.date:
        return KindFit("date")
    return KindFit()
