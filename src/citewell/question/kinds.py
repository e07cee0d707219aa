"""What form of answer a question asks for: a reason, a quantity, a figure, a calculation.

Shared by the retriever (a figure question favours tables and the statements that state
the figures; a question asking why does not) and the extractive generator (a figure
question is answered with rows and values, a reason with sentences).

- :func:`asks_why`: the question asks for a reason or an explanation (``why``,
  ``explain``, ``what drove``, ``what caused``, ``the reason``, ``due to``, ``impacted
  by``) in its :func:`lead`, the question itself
  before any instruction that follows it.
- :func:`asks_quantity`: ``how many/much/long…``, ``what percentage/share/amount…``.
- :func:`asks_for_figure`: a money figure is asked: ``how much``, a word for the form of
  a figure (``amount``, ``USD``, ``million``, ``percent``, ``ratio``, ``margin``,
  ``round``, ``calculate`` …), or a measure the domain pack knows (for filings a line
  item, ratio or statement, :mod:`citewell.domains.finance`). ``how many`` is not one: counts (employees,
  stores, shares) are as often stated in prose.
- :func:`asks_figure`: the answer is a figure: a quantity question, or a ``what/which
  is/was …`` question asking for a figure, unless it asks why.
- :func:`asks_calculation`: the answer is computed from figures: a ratio, margin,
  turnover, an average, a share (``as a % of``), a comparison, a change between periods
  in any of its everyday words (``growth``, ``increase``, ``decline``, ``drop``, ``rise``,
  ``fall``, ``improve``), or a definition given (``defined as``).
- :func:`counted_terms`: what a count question counts (``how many private companies``).
"""

from __future__ import annotations

import re

from typing import Any

from ..text.terms import content_terms, tokens

__all__ = ["asks_calculation", "asks_count", "asks_date", "asks_figure", "asks_for_figure", "asks_list",
           "asks_person", "asks_quantity", "asks_why", "asks_yes_no", "counted_terms", "lead"]

_WHY_RE = re.compile(r"\b(?:why|explain|drove|drive|driven|cause[sd]?|reasons?|because|due\s+to|"
                     r"(?:impact|affect|influence)(?:ed)?\s+by)\b", re.IGNORECASE)
_QUANTITY_RE = re.compile(r"\bhow\s+(?:many|much|long|often|large|big|high|low|far)\b|\bwhat\s+(?:percentage|"
                          r"percent|share|amount|number|ratio|rate)\b", re.IGNORECASE)
_FIGURE_START_RE = re.compile(r"^\W*(?:what|which)\s+(?:is|was|were|are)\b", re.IGNORECASE)
_CALCULATION_RE = re.compile(r"\b(?:ratio|margin|turnover|growth|grow|grew|change[sd]?|average|compare[sd]?|"
                             r"increase[sd]?|decrease[sd]?|decline[sd]?|drop(?:ped)?|rise|rose|fall|fell|"
                             r"improve[sd]?|improving|per\s+cent|percent(?:age)?|defined\s+as|calculate|compute)\b|%",
                             re.IGNORECASE)
#: Stems of words for the form a figure takes.
FIGURE_FORMS = content_terms("amount total usd dollars million billion thousand percent percentage ratio "
                             "margin value calculate compute round")


def lead(question: str) -> str:
    """The question itself: its text up to its first ``?`` (what follows is an
    instruction or a definition: "… If gross margin is not a useful metric, explain why"),
    else all of it."""
    mark = question.find("?")
    return question[: mark + 1] if mark > 0 else question


def asks_why(question: str) -> bool:
    """The question (its :func:`lead`) asks for a reason (module docstring)."""
    return bool(_WHY_RE.search(lead(question)))


def asks_quantity(question: str) -> bool:
    """The question's answer is a quantity (module docstring)."""
    return bool(_QUANTITY_RE.search(question))


def asks_for_figure(question: str, measure: Any = None) -> bool:
    """The question asks for a money figure (module docstring); ``measure``: what the
    domain pack read as the question's measure (its ``named``: the question names a
    measure the domain knows), None without a domain pack."""
    toks = tokens(question)
    for i, tok in enumerate(toks):
        if tok.term == "much" and i > 0 and toks[i - 1].term == "how":
            return True
        if tok.content and tok.term in FIGURE_FORMS:
            return True
    return bool(measure is not None and measure.named)


def asks_figure(question: str, measure: Any = None) -> bool:
    """The answer is a figure (module docstring): units that state no value are weaker
    answers to it. ``measure`` as :func:`asks_for_figure`."""
    if asks_quantity(question):
        return True
    if asks_why(question) or not _FIGURE_START_RE.match(question):
        return False
    return asks_for_figure(question, measure)


def asks_calculation(question: str) -> bool:
    """The answer is computed from figures (module docstring)."""
    return bool(_CALCULATION_RE.search(question))


_COUNT_RE = re.compile(r"\bhow\s+many\b|\b(?:what|which)\s+(?:is|was)\s+the\s+number\s+of\b", re.IGNORECASE)
_DATE_RE = re.compile(r"^\W*when\b|\b(?:what|which)\s+(?:date|day|month|year)\b|\bby\s+when\b", re.IGNORECASE)
_PERSON_RE = re.compile(r"^\W*(?:who|whom)\b|\b(?:what|which)\s+(?:person|people|executive|officer)\b",
                        re.IGNORECASE)
#: An English yes/no question opens with an auxiliary or modal verb (subject-auxiliary inversion).
_YES_NO_RE = re.compile(r"^\W*(?:is|are|was|were|do|does|did|has|have|had|can|could|will|would|should|shall|may|"
                        r"might|must)\b", re.IGNORECASE)
_LIST_RE = re.compile(r"^\W*(?:list|name|enumerate)\b|\b(?:what|which)\s+(?:are|were)\s+the\b", re.IGNORECASE)


def asks_count(question: str) -> bool:
    """The answer is a count: ``how many``, ``what is the number of``."""
    return bool(_COUNT_RE.search(question))


def counted_terms(question: str) -> tuple[str, ...]:
    """What a count question counts: the stemmed content words right after ``how many`` or
    ``number of`` (``How many private companies does …`` → ``privat``, ``compani``),
    leading stop words skipped (``how many of its stores`` → ``store``), up to the next stop
    word and at most three; empty when the question asks for no count."""
    toks = tokens(lead(question))
    for i, tok in enumerate(toks):
        opens = (tok.surface == "many" and i > 0 and toks[i - 1].surface == "how") or (
            tok.surface == "of" and i > 0 and toks[i - 1].surface == "number")
        if not opens:
            continue
        rest = toks[i + 1:]
        while rest and not rest[0].content and len(toks) - len(rest) - i <= 3:
            rest = rest[1:]
        out: list[str] = []
        for t in rest:
            if not t.content or len(out) == 3:
                break
            out.append(t.term)
        return tuple(out)
    return ()


def asks_date(question: str) -> bool:
    """The answer is a date: a question opening with ``when``, or asking ``what date/day/
    month/year``."""
    return bool(_DATE_RE.search(question))


def asks_person(question: str) -> bool:
    """The answer is a person: a question opening with ``who``, or asking which person or officer."""
    return bool(_PERSON_RE.search(question))


def asks_yes_no(question: str) -> bool:
    """The answer is yes or no: the question opens with an auxiliary or modal verb
    (``Is``, ``Does``, ``Did``, ``Has``, ``Can`` …)."""
    return bool(_YES_NO_RE.match(question))


def asks_list(question: str) -> bool:
    """The answer is a list: ``list``/``name`` …, or ``what/which are the …``."""
    return bool(_LIST_RE.search(question))
