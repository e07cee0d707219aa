"""What a sentence states, for the kinds of answer a question asks (:mod:`citewell.question.kinds`).

A "when" question is answered by a sentence that states a date, a "why" question by one
that states a reason, a "how many" question by one that states a count. These readers
decide that for one sentence (a unit of a passage), from its words alone, in English:

- :func:`states_date`: a date or a time of the calendar: a month name written as a name
  (``July``, ``JULY``, ``Sept.``; lower-case ``may``/``march`` are verbs), a weekday, a
  year from 1900 to 2099, a quarter or half (``Q4``, ``4Q22``, ``H1``, ``third quarter``),
  a numeric date (``2022-07-03``, ``1/24``), or a time relative to now (``today``,
  ``tomorrow``, ``next week``, ``this year``, ``in two weeks``, ``three years ago``);
- :func:`states_reason`: the words English marks a cause with (``because``, ``due to``,
  ``driven by``, ``as a result of``, ``owing to``, ``thanks to``, ``caused by``,
  ``resulting from``, ``led to``, ``therefore``, ``the reason``, ``reflecting`` …): the
  connectives of cause and result in any English grammar (for example Quirk et al., *A
  Comprehensive Grammar of the English Language*, §8.84 and §15.45, cause and reason
  adjuncts and disjuncts);
- :func:`count_positions` / :func:`states_count`: the numbers of a sentence that can be
  a count: digits that are not a year (``25``, ``1,200``), or a number word (``five``,
  ``dozens``, ``thousands``); :func:`counts` whether one of them counts a given thing: a
  term of it follows the number (the last of a run: ``200 million``) within
  :data:`COUNT_WINDOW` content words (``25 people``, ``thousands of models``, ``15 million
  private companies``).

All readers are pure, never raise, and take any text.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from .terms import tokens

__all__ = ["COUNT_WINDOW", "NUMBER_WORDS", "count_positions", "counts", "states_count", "states_date",
           "states_reason"]

_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                "November", "December", "Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Sept", "Oct", "Nov",
                "Dec")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
#: A month or weekday written as a name: capitalised or in capitals (``July``, ``JULY``), never lower-case.
_CALENDAR_NAME_RE = re.compile(
    r"(?<![\w$])(?:" + "|".join(f"{w}|{w.upper()}" for w in (*_MONTH_NAMES, *_WEEKDAYS)) + r")\.?(?![\w'’])")
_YEAR_RE = re.compile(r"(?<![\w$.,])(?:19|20)\d\d(?![\d,.]\d)(?!\s*%)")
_QUARTER_RE = re.compile(r"(?<!\w)(?:Q[1-4]|[1-4]Q|H[12]|[1-4]H)(?:\s*'?\d{2,4})?(?!\w)|\b(?:first|second|third|fourth)"
                         r"\s+(?:quarter|half)\b", re.IGNORECASE)
_NUMERIC_DATE_RE = re.compile(r"(?<![\w/.])(?:(?:19|20)\d\d-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?)(?![\w/])")
_RELATIVE_RE = re.compile(
    r"\b(?:today|tonight|tomorrow|yesterday|(?:next|this|last|coming)\s+(?:week|weekend|month|year|quarter|"
    r"spring|summer|fall|autumn|winter)|in\s+(?:a|an|\d+|one|two|three|four|five|six|seven|eight|nine|ten|"
    r"a\s+few|several)\s+(?:days?|weeks?|months?|years?)|(?:\d+|one|two|three|four|five|six|seven|eight|nine|"
    r"ten|a\s+few|several)\s+(?:days?|weeks?|months?|years?)\s+ago)\b", re.IGNORECASE)
_REASON_RE = re.compile(
    r"\b(?:because|due\s+to|driven\s+by|drove|as\s+a\s+result|owing\s+to|thanks\s+to|caused\s+by|"
    r"(?:result(?:ed|s|ing)?|stem(?:med|s|ming)?)\s+from|led\s+to|leading\s+to|attributed\s+to|"
    r"on\s+account\s+of|in\s+response\s+to|therefore|hence|thus|consequently|the\s+reason|reasons?\s+(?:why|for|is|was)|"
    r"reflect(?:s|ed|ing)|primarily\s+(?:from|by)|mainly\s+(?:from|by)|largely\s+(?:from|by))\b",
    re.IGNORECASE)
#: Number words a count may be written with (cardinals and the round counts of everyday English).
NUMBER_WORDS = frozenset((
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen",
    "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty", "thirty", "forty", "fifty",
    "sixty", "seventy", "eighty", "ninety", "hundred", "hundreds", "thousand", "thousands", "million", "millions",
    "billion", "billions", "dozen", "dozens"))
#: How many content words after a number may hold the thing it counts (``15 million private companies``).
COUNT_WINDOW = 3


def states_date(text: str) -> bool:
    """Whether ``text`` states a date or a time of the calendar (module docstring)."""
    return bool(_CALENDAR_NAME_RE.search(text) or _YEAR_RE.search(text) or _QUARTER_RE.search(text)
                or _NUMERIC_DATE_RE.search(text) or _RELATIVE_RE.search(text))


def states_reason(text: str) -> bool:
    """Whether ``text`` states a cause or a reason with one of the connectives of cause
    (module docstring)."""
    return bool(_REASON_RE.search(text))


def _year_like(surface: str) -> bool:
    return len(surface) == 4 and surface.isdigit() and surface[:2] in ("19", "20")


def count_positions(text: str) -> list[int]:
    """Indexes, among the content tokens of ``text`` (:func:`citewell.text.terms.tokens`,
    ``content`` only), of the numbers that can be a count: digits that are not a year, or a
    number word (:data:`NUMBER_WORDS`)."""
    content = [t for t in tokens(text) if t.content]
    return [i for i, t in enumerate(content)
            if (t.number and not _year_like(t.surface)) or t.surface in NUMBER_WORDS]


def states_count(text: str) -> bool:
    """Whether ``text`` holds a number that can be a count (:func:`count_positions`)."""
    return bool(count_positions(text))


def counts(text: str, things: Collection[str]) -> bool:
    """Whether a count of ``text`` counts one of ``things`` (terms, as
    :func:`~citewell.text.terms.tokens` stems them): a term of ``things`` among the
    :data:`COUNT_WINDOW` content words right after the number, or after the last number of
    a run of them (``200 million people``)."""
    content = [t for t in tokens(text) if t.content]
    positions = set(count_positions(text))
    for i in sorted(positions):
        if i + 1 in positions:
            continue  # a run of numbers (``200 million``) counts from its last one
        if any(t.term in things for t in content[i + 1:i + 1 + COUNT_WINDOW]):
            return True
    return False
