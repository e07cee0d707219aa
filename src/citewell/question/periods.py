"""The periods a question asks about.

One reading for every stage (retrieval, the scope check, the statement rows of a figure
answer, relevance), from :func:`citewell.text.quantities.periods`, the reader the support
checks use for the sentences they check:

- **years**: ``2022``, ``FY2022``, ``FY22``, ``fiscal 2022``, ``fiscal '22``, the year of
  ``Q4 2023``/``4Q23``/``Q4 FY23`` and of a date (``December 31, 2022``);
- **quarters**: ``Q2``, ``2Q``, ``second quarter`` (1–4);
- **part of a year**: a quarter, a half year, year to date, or a span of months or weeks
  under a year (``six months ended``) — :func:`~citewell.text.numbers.asks_partial_period`,
  the column-group headings of interim statements (SEC Regulation S-X, Article 10);
- **relative periods**: "a year earlier", "the prior year", "the previous quarter",
  "year over year", "compared with last year": the period before the one asked (the
  comparative column every statement presents, Regulation S-X Rules 3-01 to 3-04);
- **dates**: month and day as written (``December 31, 2022``), to be read against a
  document's fiscal calendar (its metadata ``calendar_date``/``fiscal_year``);
- **looks ahead**: the question uses a word that marks a forward-looking statement
  (:data:`FORWARD_WORDS`); such a question may ask what a source of an earlier period
  expects for a later year, so a year after the sources' periods is no reason to abstain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..text.numbers import asks_partial_period
from ..text.quantities import normalise, read_items
from ..text.terms import porter_stem

__all__ = ["FORWARD_WORDS", "QuestionPeriods", "looks_ahead", "question_periods"]

#: Words that mark a forward-looking question: the words that the safe-harbor paragraphs
#: of 10-K filings list for forward-looking statements ("anticipate", "expect", "will" …).
FORWARD_WORDS = frozenset({
    "anticipate", "anticipated", "anticipates", "believe", "believes", "estimate", "estimated", "estimates",
    "expect", "expected", "expects", "forecast", "forecasted", "forecasts", "intend", "intends", "plan",
    "planned", "plans", "project", "projected", "projects", "projection", "projections", "target", "targets",
    "will", "goal", "goals", "outlook", "guidance", "aim", "aims", "commit", "commits", "commitment",
    "future", "predict", "predicts", "prediction",
})
_WORDS_RE = re.compile(r"[a-z]+")
_FORWARD_STEMS = frozenset(porter_stem(w) for w in FORWARD_WORDS)
#: The period before the one asked, in the words of a comparison.
_RELATIVE_RE = re.compile(
    r"\b(?:a|one|the)\s+(?:year|quarter)\s+(?:earlier|before|ago)\b|\b(?:prior|previous|preceding|last)\s+"
    r"(?:fiscal\s+)?(?:year|quarter|period)\b|\byear[\s-]+(?:over|on)[\s-]+year\b|\bYoY\b", re.IGNORECASE)


def looks_ahead(question: str) -> bool:
    """Whether ``question`` uses a forward-looking word (:data:`FORWARD_WORDS`, in any
    inflection: ``forecasting``, ``expected``)."""
    return any(w in FORWARD_WORDS or porter_stem(w) in _FORWARD_STEMS for w in _WORDS_RE.findall(question.lower()))


@dataclass(frozen=True)
class QuestionPeriods:
    """The periods of a question (module docstring): ``years`` and ``quarters`` (1–4),
    ``dates`` ``(month, day)``, ``partial`` (part of a year is asked), ``relative`` (the
    period before the one asked is part of the question), ``ahead`` (forward-looking)."""

    years: frozenset[int] = frozenset()
    quarters: frozenset[int] = frozenset()
    dates: frozenset[tuple[int, int]] = frozenset()
    partial: bool = False
    relative: bool = False
    ahead: bool = False

    @property
    def empty(self) -> bool:
        """No period is named."""
        return not (self.years or self.quarters or self.dates or self.relative)


@lru_cache(maxsize=4096)
def question_periods(question: str) -> QuestionPeriods:
    """The :class:`QuestionPeriods` of ``question`` (any text; never raises)."""
    items = read_items(normalise(question))
    return QuestionPeriods(frozenset(items.years), frozenset(items.quarters), frozenset(items.dates),
                           asks_partial_period(question), bool(_RELATIVE_RE.search(question)),
                           looks_ahead(question))
