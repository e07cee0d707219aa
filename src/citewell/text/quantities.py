"""Quantities in text: numbers with their currency, scale and kind, years, quarters and dates.

One reader for every stage that compares figures: the support checks
(:mod:`citewell.cite.verdict`), the scope check and the question analysis (which years and
quarters a text names), the statement rows of a figure answer (which scale a table
declares) and the evaluation's figure matching.

Normalisation (:func:`normalise`): thin / narrow no-break spaces between digit groups are
thousands separators (``34 229`` → ``34,229``); then Unicode NFKC (no-break spaces become
spaces, fullwidth digits ASCII digits), the minus sign and the dashes ``‒ – —`` become
``-``, curly quotes straight ones, and whitespace runs one space.

What a text states (:func:`read_items` on normalised text, :class:`TextItems`):

- **numbers** (:class:`Quantity`, kind ``amount``, ``percent`` or ``pp``): digits with
  ``,`` thousands separators and ``.`` decimals; a currency (``$ € £ ¥ ₹``, ``US$``,
  ``USD``, ``EUR``, ``GBP`` … before, ``dollars``/``euros`` after); a scale word
  (``thousand``, ``million``, ``billion``, ``trillion``, ``bn``, ``mn``, ``mm``, ``tn``,
  and ``k``/``m``/``b`` attached to a number that has a currency: ``$2.3B``);
  ``%``/``percent`` (percent); ``percentage points``/``pp``/``points`` and ``basis
  points``/``bps`` (÷100) (percentage points). A number glued to a letter is a name, not
  a quantity (``3M``, ``A380``, ``COVID-19``, ``10-K``, ``2nd``), and so is the number of
  ``Item 7``, ``Note 12``, ``Form 10``, ``Page 5`` …; a span of months or weeks (``three
  months ended``) is a period's length, no figure;
- **years** (``2022``, ``FY2022``, ``FY22``, ``fiscal 2022``, ``fiscal '22``, the year of
  ``Q4 2023``/``4Q23``/``Q4 FY23`` and of dates; two-digit years pivot at 70);
- **quarters** (``Q4``, ``4Q``, ``fourth quarter``);
- **dates** (month and day: ``December 31, 2022``, ``31 December``, ``2022-12-31``,
  ``12/31/2022``).

A table declares a scale for its bare numbers with ``(Millions)``, ``in thousands``,
``($ in millions)``, ``millions of dollars`` or ``($000)`` (:func:`declared_scales`).
Rounding (:func:`rounds_to`): a value rounded half-up to the precision of another
(its last written digit times its scale) equals it.

The conventions are those of financial statements and press releases (SEC Regulation
S-X's "in thousands/millions" column captions; ISO 8601 and US month-day dates).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from .numbers import PERIOD_SPAN_RE, YEAR_PATTERN
from .terms import porter_stem

__all__ = ["FILLER_TERMS", "FILLER_WORDS", "PERCENT_HEADER_RE", "Quantity", "TextItems", "declared_scales",
           "normalise", "periods", "quantities", "read_declared_scales", "read_items", "rounds_to"]


_GROUP_SPACE_RE = re.compile(r"(?<=\d)[\u2009\u202f](?=\d{3}(?!\d))")
_DASHES = str.maketrans({"\u2212": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2010": "-",
                         "\u2011": "-", "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_WS_RE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Normalised text for comparisons (see the module docstring)."""
    text = _GROUP_SPACE_RE.sub(",", text)
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text).translate(_DASHES)
    return _WS_RE.sub(" ", text).strip()


_MONTHS = {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
           "oct": 10, "nov": 11, "dec": 12}
_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
          r"Sept?(?:ember)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
_YEAR4 = YEAR_PATTERN
_ISO_DATE_RE = re.compile(rf"\b({_YEAR4})-(\d{{1,2}})-(\d{{1,2}})\b")
_SLASH_DATE_RE = re.compile(rf"\b(\d{{1,2}})/(\d{{1,2}})/({_YEAR4}|\d{{2}})\b")
_MONTH_DAY_RE = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?!,\d)(?:,?\s+({_YEAR4})\b)?", re.IGNORECASE)
_DAY_MONTH_RE = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\b\.?(?:,?\s+({_YEAR4})\b)?", re.IGNORECASE)
_QUARTER_RE = re.compile(
    rf"\bQ([1-4])\b(?:\s*(?:(?:FY|CY)\s*'?|')(\d{{4}}|\d{{2}})\b|\s+({_YEAR4})\b)?"
    rf"|\b([1-4])Q\s*(?:'?(\d{{2}})|({_YEAR4}))?\b"
    r"|\b(first|second|third|fourth|1st|2nd|3rd|4th)[\s-]+(?:fiscal\s+|calendar\s+)?quarter\b",
    re.IGNORECASE)
_FISCAL_RE = re.compile(r"\b(?:FY|CY)\s*'?(\d{4}|\d{2})\b|\bfiscal\s+(?:year\s+)?'?(\d{2})\b(?![.,]\d)", re.IGNORECASE)
_LABEL_NUMBER_RE = re.compile(
    r"\b(?:Items?|Notes?|Parts?|Pages?|Sections?|Exhibits?|Rules?|Articles?|Forms?|Schedules?|Chapters?|"
    r"Figures?|Tables?|No\.)\s+\d+[A-Za-z]?\b|\b\d{1,2}-[KQF]\b")
_NUMBER_RE = re.compile(r"(?<![\w.,'/])(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?![\d,]\d)")
_CURRENCY_BEFORE_RE = re.compile(r"(US\$|USD|EUR|GBP|JPY|CHF|CAD|AUD|INR|RMB|CNY|[$€£¥₹])\s*\(?\s*-?\s*$")
_NEGATIVE_BEFORE_RE = re.compile(r"(?:\(|-)\s*(?:US\$|[$€£¥₹])?\s*$")
_SUFFIXES: tuple[tuple[re.Pattern[str], str, Decimal], ...] = tuple(
    (re.compile(p, re.IGNORECASE), kind, Decimal(f)) for p, kind, f in (
        (r"\s?(?:percentage[\s-]+points?|pp|ppts?|%\s*points?)\b", "pp", "1"),
        (r"\s?(?:basis[\s-]+points?|bps|bp)\b", "pp", "0.01"),
        (r"\s?%", "percent", "1"),
        (r"\s?(?:percent|per\s?cent|pct)\b", "percent", "1"),
        (r"\s?points?\b", "pp", "1"),
    ))
_SCALE_WORD_RE = re.compile(r"\s?(thousand|million|billion|trillion)s?\b|\s?(bn|mn|mln|mm|tn|trn)\b", re.IGNORECASE)
_SCALE_LETTER_RE = re.compile(r"([kKmMbBT])\b")
_SCALE_OF = {"thousand": 3, "million": 6, "billion": 9, "trillion": 12, "bn": 9, "mn": 6, "mln": 6,
             "mm": 6, "tn": 12, "trn": 12, "k": 3, "m": 6, "b": 9, "t": 12}
_CURRENCY_AFTER_RE = re.compile(r"\s?(USD|EUR|GBP|dollars?|euros?)\b", re.IGNORECASE)
_CURRENCY_CODE = {"$": "USD", "US$": "USD", "USD": "USD", "DOLLAR": "USD", "DOLLARS": "USD", "€": "EUR",
                  "EUR": "EUR", "EURO": "EUR", "EUROS": "EUR", "£": "GBP", "GBP": "GBP", "¥": "JPY",
                  "JPY": "JPY", "₹": "INR", "INR": "INR", "CHF": "CHF", "CAD": "CAD", "AUD": "AUD",
                  "RMB": "CNY", "CNY": "CNY"}
_DECLARED_SCALE_RE = re.compile(
    r"(?:\(|\bin\s)[^()\n]{0,30}?\b(thousands|millions|billions)\b"
    r"|\b(thousands|millions|billions)\s+of\s+(?:u\.?s\.?\s+)?(?:dollars|euros)\b", re.IGNORECASE)
_DECLARED_THOUSANDS_RE = re.compile(r"\(\s*(?:[$€£]\s*)?(?:in\s+)?000'?s?\s*\)")
PERCENT_HEADER_RE = re.compile(r"(?<![\d\s])\s*%|\(%\)|%\s*(?:change|of)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Quantity:
    """A number of a text: ``kind`` amount/percent/pp; magnitudes as Decimals.

    ``raw``/``raw_step``: the number as written and its last digit's unit; ``scaled``:
    a scale word was written; ``value``/``step``: times that scale (``raw`` otherwise);
    ``start``: position in the normalised text; ``text``: as written.
    """

    kind: str
    raw: Decimal
    raw_step: Decimal
    value: Decimal
    step: Decimal
    scaled: bool
    currency: str | None
    start: int
    text: str


@dataclass
class TextItems:
    """Everything checkable in one (normalised) text."""

    numbers: list[Quantity] = field(default_factory=list)
    years: dict[int, list[int]] = field(default_factory=dict)  # year -> positions
    quarters: set[int] = field(default_factory=set)
    dates: set[tuple[int, int]] = field(default_factory=set)
    year_text: dict[int, str] = field(default_factory=dict)


def _year(two_or_four: str) -> int:
    y = int(two_or_four)
    return y if len(two_or_four) == 4 else 2000 + y if y < 70 else 1900 + y


def _month(name: str) -> int:
    return _MONTHS[name[:3].lower()]


def _month_ok(name: str) -> bool:
    return name[:1].isupper()  # "may 5" is a verb and a number


def _add_year(items: TextItems, year: int, pos: int, text: str) -> None:
    if 1900 <= year <= 2099:
        items.years.setdefault(year, []).append(pos)
        items.year_text.setdefault(year, text)


def read_items(text: str) -> TextItems:
    """Numbers, years, quarters and dates of normalised ``text``."""
    items = TextItems()
    taken: list[tuple[int, int]] = []

    def free(a: int, b: int) -> bool:
        return all(b <= x or a >= y for x, y in taken)

    for m in _LABEL_NUMBER_RE.finditer(text):
        taken.append(m.span())
    for m in PERIOD_SPAN_RE.finditer(text):  # "3 months to July 29, 2023": a period's length, no figure
        taken.append(m.span())
    for m in _ISO_DATE_RE.finditer(text):
        if free(*m.span()) and 1 <= int(m.group(2)) <= 12 and 1 <= int(m.group(3)) <= 31:
            _add_year(items, int(m.group(1)), m.start(), m.group(1))
            items.dates.add((int(m.group(2)), int(m.group(3))))
            taken.append(m.span())
    for m in _SLASH_DATE_RE.finditer(text):
        if free(*m.span()) and 1 <= int(m.group(1)) <= 12 and 1 <= int(m.group(2)) <= 31:
            _add_year(items, _year(m.group(3)), m.start(), m.group(3))
            items.dates.add((int(m.group(1)), int(m.group(2))))
            taken.append(m.span())
    for m in _MONTH_DAY_RE.finditer(text):
        if free(*m.span()) and _month_ok(m.group(1)) and 1 <= int(m.group(2)) <= 31:
            items.dates.add((_month(m.group(1)), int(m.group(2))))
            if m.group(3):
                _add_year(items, int(m.group(3)), m.start(3), m.group(3))
            taken.append(m.span())
    for m in _DAY_MONTH_RE.finditer(text):
        if free(*m.span()) and _month_ok(m.group(2)) and 1 <= int(m.group(1)) <= 31:
            items.dates.add((_month(m.group(2)), int(m.group(1))))
            if m.group(3):
                _add_year(items, int(m.group(3)), m.start(3), m.group(3))
            taken.append(m.span())
    ordinal = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
    for m in _QUARTER_RE.finditer(text):
        if not free(*m.span()):
            continue
        g = m.groups()
        if g[0]:
            items.quarters.add(int(g[0]))
            y = g[1] or g[2]
        elif g[3]:
            items.quarters.add(int(g[3]))
            y = g[4] or g[5]
        else:
            items.quarters.add(ordinal[g[6].lower()])
            y = None
        if y:
            _add_year(items, _year(y), m.start(), y)
        taken.append(m.span())
    for m in _FISCAL_RE.finditer(text):
        if free(*m.span()):
            y = m.group(1) or m.group(2)
            _add_year(items, _year(y), m.start(), m.group(0))
            taken.append(m.span())
    for m in _NUMBER_RE.finditer(text):
        a, b = m.span()
        if not free(a, b):
            continue
        before = text[max(0, a - 2):a]
        if len(before) == 2 and before[1] == "-" and before[0].isalpha():
            continue  # COVID-19
        number = _number(text, m)
        if number is None:
            continue
        if number == "year":
            _add_year(items, int(m.group()), a, m.group())
            continue
        items.numbers.append(number)
    return items


def _number(text: str, m: re.Match[str]) -> Quantity | str | None:
    """The quantity of number match ``m`` (``"year"`` for a bare year, ``None`` for a
    number that is part of a name)."""
    a, b = m.span()
    digits = m.group()
    try:
        raw = Decimal(digits.replace(",", ""))
    except InvalidOperation:  # pragma: no cover - the pattern only matches digits
        return None
    decimals = len(digits.split(".", 1)[1]) if "." in digits else 0
    raw_step = Decimal(1).scaleb(-decimals)
    cur_m = _CURRENCY_BEFORE_RE.search(text[max(0, a - 8):a])
    currency = _CURRENCY_CODE.get(cur_m.group(1).upper()) if cur_m else None
    rest = text[b:]
    kind, factor, scale, end = "amount", Decimal(1), 0, b
    for pattern, skind, sfactor in _SUFFIXES:
        sm = pattern.match(rest)
        if sm:
            kind, factor, end = skind, sfactor, b + sm.end()
            break
    if kind == "amount":
        sm = _SCALE_WORD_RE.match(rest)
        if sm:
            scale, end = _SCALE_OF[(sm.group(1) or sm.group(2)).lower()], b + sm.end()
        elif currency:
            lm = _SCALE_LETTER_RE.match(rest)
            if lm:
                scale, end = _SCALE_OF[lm.group(1).lower()], b + lm.end()
        after = _CURRENCY_AFTER_RE.match(text, end)
        if after and currency is None:
            currency = _CURRENCY_CODE.get(after.group(1).upper())
    if end == b and b < len(text) and (text[b].isalpha() or (text[b] == "-" and b + 2 <= len(text)
                                                             and text[b + 1:b + 2].isupper()
                                                             and not text[b + 2:b + 3].isalpha())):
        return None  # 3M, 10x, 2nd, 10-K
    if (kind == "amount" and scale == 0 and currency is None and decimals == 0 and len(digits) == 4
            and 1900 <= int(digits) <= 2099):
        return "year"
    mult = Decimal(1).scaleb(scale) * factor
    start = cur_m.start() + max(0, a - 8) if cur_m else a
    return Quantity(kind, raw, raw_step, raw * mult, raw_step * mult, scale > 0, currency, a,
                   text[start:end].strip())


_SIGN_BEFORE_RE = re.compile(r"(?:\(|-)\s*(?:US\$|USD|EUR|GBP|[$€£¥₹])?\s*$")


def quantities(text: str) -> list[tuple[Quantity, bool]]:
    """The quantities of ``text`` as the support checks read them, in text order, each
    with whether it is written negative (a ``-`` or an opening parenthesis before it,
    after an optional currency: ``-$1,561M``, ``$ (1,749)``).

    Every rule of the module docstring's *numbers* applies (currency, scale word, percent,
    percentage points, thousands separators; a number glued to a letter, a label number
    such as ``Item 7``, years, quarters and dates are not quantities). Magnitudes are
    Decimals: ``value``/``step`` with the scale applied, ``raw``/``raw_step`` as written.
    """
    norm = normalise(text)
    return [(q, bool(_SIGN_BEFORE_RE.search(norm[max(0, q.start - 8):q.start]))) for q in read_items(norm).numbers]


def periods(text: str) -> tuple[frozenset[int], frozenset[int]]:
    """The years and quarters ``text`` names, in every form the support checks read
    (``2022``, ``FY2022``, ``FY22``, ``fiscal 2022``, ``Q4 2023``, ``4Q23``, dates …):
    ``(years, quarters)``, quarters as 1–4."""
    items = read_items(normalise(text))
    return frozenset(items.years), frozenset(items.quarters)


def declared_scales(text: str) -> list[int]:
    """Powers of ten that ``text`` declares for its bare numbers (``(Millions)``, ``in
    thousands``, ``($000)`` …: 6, 3 …), in order of first declaration."""
    return read_declared_scales(normalise(text))


def rounds_to(precise: Decimal, coarse: Decimal, step: Decimal) -> bool:
    """Whether ``precise`` rounded half-up to multiples of ``step`` (either neighbour on
    an exact tie) equals ``coarse``: the rounding rule of the number checks."""
    return _near(precise, coarse, step)


def read_declared_scales(text: str) -> list[int]:
    """:func:`declared_scales` of already normalised ``text`` (:func:`normalise`): the
    powers of ten (3, 6, 9) its "in thousands/millions/billions" or ``($000)`` captions
    declare, in order of first declaration; ``[]`` when none."""
    scales: list[int] = []
    for m in _DECLARED_SCALE_RE.finditer(text):
        word = (m.group(1) or m.group(2)).lower()
        exp = {"thousands": 3, "millions": 6, "billions": 9}[word]
        if exp not in scales:
            scales.append(exp)
    if _DECLARED_THOUSANDS_RE.search(text) and 3 not in scales:
        scales.append(3)
    return scales


FILLER_WORDS = frozenset("""
    fiscal year years yearly annual annually quarter quarters quarterly month months period periods
    approximately roughly around nearly almost respectively reported total totaled totalled amounted
    thousand thousands million millions billion billions trillion trillions bn mn mm tn percent
    percentage percentages point points basis bps pp dollar dollars usd eur euros january february march
    april may june july august september october november december jan feb mar apr jun jul aug sep sept
    oct nov dec q1 q2 q3 q4 fy first second third fourth increase increased increases increasing rose
    rise rises risen rising grew grow grows grown growing higher decrease decreased decreases decreasing
    decline declined declines declining fell fall falls fallen falling drop dropped drops lower reduced
    reduction
""".split())
"""Words left out of the content-word coverage: they write numbers, periods and
directions, which have their own checks."""
FILLER_TERMS = frozenset(porter_stem(w) for w in FILLER_WORDS) | FILLER_WORDS


def _near(p: Decimal, q: Decimal, step: Decimal) -> bool:
    """``p`` rounded half-up (either neighbour on an exact tie) to multiples of ``step``
    equals ``q``."""
    return p == q or abs(p - q) * 2 <= step

