"""Numbers, years and reporting periods in text: one definition for every stage.

Used by the PDF extractor (column headers of tables), the retriever (which years a page
reports), the extractive generator (which rows state a value for the year asked) and the
support checks (numbers and dates of a cited sentence).

- :data:`YEAR_PATTERN`: a four-digit year 1900–2099 as a regular-expression fragment
  (no anchors); :data:`YEAR_RE` finds free-standing years in text: not inside a longer
  number (``12,019``, ``2019.5``, ``$2019``).
- :func:`years`: the set of years a text names.
- :func:`states_value`: the text has a number that states a value — not a year, not the
  day of a date (``December 31``), not a note, item, part, section, exhibit or page
  number (``see Note 3``).
- :func:`column_periods`: the reporting periods of a table's column header, left to
  right (``Three Months Ended June 30, 2023 2022`` → two three-month periods, 2023 and
  2022), following the column headings of the financial statements of SEC filings
  (Regulation S-X, Article 3: fiscal years, and quarters or year-to-date periods for
  interim statements).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .terms import tokens

__all__ = ["YEAR_PATTERN", "YEAR_RE", "NUMERIC_CELL_RE", "PERIOD_SPAN_RE", "Period",
           "COMPARISON_RE", "asks_partial_period", "column_periods", "is_year", "months_spanned", "states_value",
           "years"]

#: A year 1900–2099 (a fragment for larger patterns).
YEAR_PATTERN = r"(?:19|20)\d{2}"
#: A free-standing year: not part of a longer number, amount or decimal.
YEAR_RE = re.compile(rf"(?<![\d,.$]){YEAR_PATTERN}(?!\d|[,.]\d)")
_YEAR_TERM_RE = re.compile(YEAR_PATTERN)
#: One table cell holding a number: ``34,229``, ``(1,749)``, ``12%``, ``$5``, ``—3``.
NUMERIC_CELL_RE = re.compile(r"^[($\u2014\u2013-]*\d[\d,.]*%?\)?$")
#: The day of a date ("December 31"), and references to a note, item, part or page:
#: numbers that state no value.
NOT_VALUE_RE = re.compile(
    r"\b(?:(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?|January|February|March|April|May|"
    r"June|July|August|September|October|November|December)\s+\d{1,2}(?:st|nd|rd|th)?\b|"
    r"\b(?:Notes?|Items?|Parts?|Sections?|Exhibits?|pages?|p\.)\s+\d+[A-Za-z]?\b", re.IGNORECASE)


def is_year(term: str) -> bool:
    """True for a four-digit year 1900–2099 (``"2022"``), as a whole term."""
    return bool(_YEAR_TERM_RE.fullmatch(term))


def years(text: str) -> frozenset[str]:
    """The free-standing years of ``text`` (:data:`YEAR_RE`) as four-digit strings."""
    return frozenset(YEAR_RE.findall(text))


def states_value(text: str) -> bool:
    """True when ``text`` has a number that states a value (module docstring): a figure
    question ("What was the capex in 2022?") wants a unit that gives an amount, not one
    that only names the year it asks about."""
    return any(t.number and not is_year(t.term) for t in tokens(NOT_VALUE_RE.sub(" ", text)))


@dataclass(frozen=True)
class Period:
    """One column of a table header: the ``year`` it reports; when the header says so,
    the ``months`` it spans (3 for a quarter, 6/9 for year-to-date columns, 12 for a fiscal
    year; None when the header gives only the year, as annual statements do); and
    ``date``, the column's end date as the header writes it (``July 29, 2023``), when it
    gives one."""

    year: int
    months: int | None = None
    date: str | None = None

    def label(self) -> str:
        """How an answer names the column: ``"2023"`` or ``"July 29, 2023"`` (a date with no
        span: a balance sheet's), ``"year ended January 28, 2023"`` for a dated fiscal year,
        with the span first for a column spanning months (``"3 months to July 29, 2023"``,
        ``"6 months 2023"``)."""
        when = self.date or str(self.year)
        if self.months == 12 and self.date:
            return f"year ended {self.date}"  # a dated column alone reads as a balance-sheet date
        if self.months in (None, 12):
            return when
        return f"{self.months} months {'to ' if self.date else ''}{when}"


#: A column-group heading's span (``Three Months``, ``13 Weeks``, ``Year Ended``): a period, not a figure.
PERIOD_SPAN_RE = re.compile(r"\b(three|six|nine|twelve|3|6|9|12|thirteen|fourteen|twenty[- ]six|twenty[- ]seven|"
                      r"thirty[- ]nine|forty|fifty[- ]two|fifty[- ]three|13|14|26|27|39|40|52|53)[- ]"
                      r"(months?|weeks?)\b|\b(quarters?|years?|fiscal years?)\s+ended\b", re.IGNORECASE)
_WORD_NUMBERS = {"three": 3, "six": 6, "nine": 9, "twelve": 12, "thirteen": 13, "fourteen": 14,
                 "twenty-six": 26, "twenty six": 26, "twenty-seven": 27, "twenty seven": 27,
                 "thirty-nine": 39, "thirty nine": 39, "forty": 40, "fifty-two": 52, "fifty two": 52,
                 "fifty-three": 53, "fifty three": 53}


def months_spanned(match: re.Match[str]) -> int:
    """Months spanned by a column-group heading (``Three Months``, ``13 Weeks``,
    ``Year Ended``, ``Quarter Ended``); weeks are retail fiscal calendars (13 weeks a
    quarter, 52–53 a year)."""
    if match.group(3):
        return 3 if match.group(3).lower().startswith("quarter") else 12
    raw = match.group(1).lower()
    count = int(raw) if raw.isdigit() else _WORD_NUMBERS[raw.replace("  ", " ")]
    if match.group(2).lower().startswith("week"):
        return max(3, round(count / 13) * 3) if count < 50 else 12
    return count


_PART_OF_YEAR_RE = re.compile(r"\b(?:Q[1-4]|[1-4]Q|quarters?|quarterly|half[- ]year|first\s+half|second\s+half|"
                              r"year[- ]to[- ]date|YTD)\b", re.IGNORECASE)


def asks_partial_period(text: str) -> bool:
    """Whether ``text`` (a question) asks about part of a year: a quarter (``Q2``,
    ``second quarter``), a half year, year to date, or a span of months or weeks under a
    year (``six months ended``: the column-group headings of :func:`column_periods`)."""
    if _PART_OF_YEAR_RE.search(text):
        return True
    return any(months_spanned(m) < 12 for m in PERIOD_SPAN_RE.finditer(text))


def column_periods(header: str) -> list[Period]:
    """The periods of a table header row, one per year it names, left to right.

    Each year takes the span of the nearest column-group heading before it (``Three
    Months Ended``, ``Six Months Ended``, ``13 Weeks Ended``, ``Year Ended``). When all
    the group headings stand before the first year (a two-line header: ``Three Months
    Ended Six Months Ended`` over ``July 29, 2023 July 30, 2022 July 29, 2023 July 30,
    2022``) and the years divide evenly among them, they take the headings in order, an
    equal number each. Years in a header without such a heading have ``months`` None. A
    column's ``date`` is the month and day the header writes before its year, when it
    writes one before every year (``At December 31, 2019 At December 31, 2018``); a header
    naming the month and day once (``December 31, 2019 2018 2017``) gives years only.
    A column group may also be named by its quarter or as the full year (``Fourth Quarter``,
    ``Q4``, ``Full Year``, ``FY``: :data:`_COLUMN_SPAN_RE`), as earnings releases head them.
    Years of a comparison column (``2022 vs. 2021``: :data:`COMPARISON_RE`) are no periods:
    such columns hold changes. A header listing each column's month and day before the
    years (``January 28, January 29, 2023 2022``) dates each column.
    ``column_periods("Three Months Ended June 30, 2023 2022 Six Months Ended 2023 2022")``
    gives ``[3 months 2023, 3 months 2022, 6 months 2023, 6 months 2022]``.
    """
    headings = list(PERIOD_SPAN_RE.finditer(header))
    spans = sorted([(m.start(), months_spanned(m)) for m in headings] + [
        (m.start(), 3 if m.group(1) else 12) for m in _COLUMN_SPAN_RE.finditer(header)
        if not any(m.start() < h.end() and h.start() < m.end() for h in headings)])  # "Fourth Quarter Ended": once
    compared = [range(m.start(), m.end()) for m in COMPARISON_RE.finditer(header)]
    found = [m for m in YEAR_RE.finditer(header) if not any(m.start() in r for r in compared)]
    dates = [_date_before(header, m) for m in found]
    if None in dates:
        listed = _listed_dates(header, found)
        # "January 28, January 29, 2023 2022": the month and day of each column, listed before
        # its years; "December 31, 2019 2018 2017": one month and day for every column, named once
        dates = listed if listed is not None else [None] * len(found)
    if len(spans) > 1 and found and spans[-1][0] < found[0].start() and len(found) % len(spans) == 0:
        each = len(found) // len(spans)
        return [Period(int(m.group()), spans[i // each][1], d) for i, (m, d) in enumerate(zip(found, dates))]
    out: list[Period] = []
    for m, date in zip(found, dates):
        months = None
        for at, span in spans:
            if at < m.start():
                months = span
        out.append(Period(int(m.group()), months, date))
    return out


#: A column group named by its quarter or as the full year (``Fourth Quarter 2023 2022 Full
#: Year 2023 2022``, ``Q4 2023 Q4 2022 FY 2023 FY 2022``: the headings of earnings releases):
#: group 1 a quarter, else a year.
_COLUMN_SPAN_RE = re.compile(r"\b((?i:Q[1-4]|[1-4]Q|(?:first|second|third|fourth)\s+quarter))\b|"
                             r"\b(?:(?i:full[- ]year)|FY)(?=\s*(?:19|20)\d\d(?!\d))")
#: A column that compares two periods (``2022 vs. 2021``, ``2023 compared to 2022``,
#: ``2022 over 2021``): a change, not a period of its own.
COMPARISON_RE = re.compile(rf"{YEAR_PATTERN}\s*(?:vs\.?|versus|compared\s+(?:to|with)|over|v\.)\s*{YEAR_PATTERN}",
                           re.IGNORECASE)
_MONTH_NAMES = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
                r"Sept?(?:ember)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
#: A month and day written without its year (``January 28,``).
_MONTH_DAY_ITEM_RE = re.compile(rf"\b{_MONTH_NAMES}\.?\s+\d{{1,2}}(?!\d),?")
_MONTH_DAY_RE = re.compile(r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
                           r"Sept?(?:ember)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?\s+\d{1,2},?\s*$")


def _listed_dates(header: str, found: list[re.Match[str]]) -> list[str | None] | None:
    """The end date of each column of a two-line header that lists every column's month and
    day before its years (``January 28, January 29, 2023 2022``: one month and day per
    year, in the same order), or None when the header does not."""
    if len(found) < 2:
        return None
    month_days = _MONTH_DAY_ITEM_RE.findall(header, 0, found[0].start())
    if len(month_days) != len(found):
        return None
    return [f"{' '.join(md.split()).rstrip(',')}, {m.group()}" for md, m in zip(month_days, found)]


def _date_before(header: str, year: re.Match[str]) -> str | None:
    """``Month D, YYYY`` when the header writes the month and day right before ``year``."""
    month_day = _MONTH_DAY_RE.search(header, 0, year.start())
    if month_day is None:
        return None
    return f"{' '.join(month_day.group().split()).rstrip(',')}, {year.group()}"
