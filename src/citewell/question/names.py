"""Names a question asks about, and how a text mentions them.

Question names (:func:`question_names`)
=======================================

Runs of name-cased words of the question, joined by spaces, ``&``, ``-`` or ``'``
(``Johnson & Johnson``, ``Coca-Cola``, ``Best Buy``): a word is name-cased when it has
an upper-case letter and is all capitals (``ATVI``, ``EBITDA``), holds a digit (``3M``),
starts lower-case (``eBay``), or is capitalised and not the question's first word. A
trailing ``'s`` is dropped. Stop words (:data:`citewell.text.terms.STOP_WORDS`), period
labels (``FY2022``, ``Q4``, ``H1``, ``10-K``), numbers and one-letter words end a run.
The capitalised first word of a sentence of the question starts a run only when a name-cased word follows
it (``General Motors``) and is otherwise a *weak* name (``Boeing total revenues …``):
it can show that the question is about something the sources hold, never that it is
about something they lack. Cashtags (``$ATVI``, ``$BTC.X``) are tickers. Each name has a
*class*: ``word`` (it has lower-case letters: ``Netflix``, ``Johnson & Johnson``) or
``code`` (all capitals or digits: ``AMCOR``, ``3M``, ``EBITDA``, a cashtag).

A name is a *subject* of the question when what is asked belongs to it: it is written
with a possessive (``Quuxco's total revenue``, ``Acme Holdings' debt``, ``$ATVI's
volume``: every possessive name of ``Zorblax's subsidiary Quuxco's revenue``), or it is a
``word`` name right after "of" (``the revenue of Quuxco``; not a ``code`` such as
``EBITDA`` in "the ratio of EBITDA to …", which names a measure, nor a word followed by
a number: "as of March 31, 2022" is a date). A weak name is never a
subject, nor is a name right after "the" (``the Company's``, ``the Board's``: a term the
text defines, not a proper name).

Mentions (:func:`mentions`)
===========================

A text mentions a name when the name occurs in it case-sensitively (as the question
wrote it, or in capitals) at word boundaries, its words (:func:`name_parts`: a camel-case
word is two) separated by any run of spaces, ``-`` or ``&``, or by nothing (``Samba Nova``
and ``SambaNova`` are one name); a ticker also as its cashtag (``$ATVI``). A name that the sources also
use as an ordinary word (``common``: its lower-case form occurs, as in "we block
spam" for a company called Block) does not count where a sentence or line starts with
it: the capital there is the sentence's. How a resource's labels name a name, and the
name ↔ ticker links the data gives, are read by :mod:`citewell.scope.labelindex`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache

from ..text.terms import STOP_WORDS

_WORD_RE = re.compile(r"\$?[^\W_]+(?:['\u2019&][^\W_]+)*(?:\.[A-Z]{1,2}\b)?")
_JOINER_RE = re.compile(r"^\s*(?:&|-|and(?=\s+[A-Z]))?\s*$")
_PERIOD_RE = re.compile(r"(?:FY|CY|Q|H)\d{0,4}|\d{1,2}-?[KQ]|\d+(?:[.,]\d+)*|[1-4]Q\d{0,4}", re.IGNORECASE)
#: What a name's key drops: everything but lower-case letters and digits (``Coca-Cola`` → ``cocacola``).
ALNUM_RE = re.compile(r"[^0-9a-z]+")
_CASHTAG_RE = re.compile(r"\$([A-Za-z]{1,6}(?:\.[A-Z]{1,2})?)\b")
#: A ticker defined right after a name: ``Name (TICK)``, ``Name ($TICK)``, ``Name (NYSE: TICK)``:
#: the name (up to four words) ...
_DEFINED_NAME_RE = re.compile(r"(?:[A-Z0-9][\w&.'\u2019]*(?:[ \t]+&)?[ \t-]+){0,3}[A-Z0-9][\w&.'\u2019-]*")
#: ... then the parenthesised code, which is found first (a name is looked for only before one).
_DEFINED_CODE_RE = re.compile(r"\(\s*(?:[A-Z][A-Za-z]*\s*:\s*)?\$?([A-Z]{1,5}(?:\.[A-Z])?)\s*[;,)]")
#: A defined name is looked for in at most this many characters before its code (four words;
#: a run of name characters longer than that, such as a 5,000-digit token, is no name and
#: would cost time quadratic in its length).
MAX_NAME_CHARS = 256
#: The characters a defined name and the blanks after it are made of (``\w`` is ``str.isalnum`` or ``_``).
_NAME_CHARS = frozenset("_&.'\u2019- \t")
_SENTENCE_START_RE = re.compile(r"(?:^|[.!?:]\s+|\n\s*)$")
#: A possessive right after a word: ``'s`` or ``’s``, or a bare apostrophe after a plural.
_POSSESSIVE_RE = re.compile(r"['\u2019](?:s\b|(?=\s))")
#: "of" right before a name.
_OF_RE = re.compile(r"\bof\s+$", re.IGNORECASE)
#: A number right after a name (a date: ``March 31``, ``December 2022``).
_NUMBER_NEXT_RE = re.compile(r"\s*\d")
#: "the" right before a name.
_THE_RE = re.compile(r"\bthe\s+$", re.IGNORECASE)


@dataclass(frozen=True)
class Name:
    """A name of a question: ``text`` as written (a possessive ``'s`` dropped), its
    ``kind`` (``word`` or ``code``), whether it is a ``ticker`` (a cashtag, or a
    ``code`` of at most 5 letters), whether it is ``weak`` (the question's first word
    alone) and whether it is a ``subject`` (what is asked belongs to it: module
    docstring)."""

    text: str
    kind: str
    ticker: bool = False
    weak: bool = False
    subject: bool = False

    @property
    def key(self) -> str:
        """Letters and digits, lower-cased: how labels are compared (``bestbuy``)."""
        return ALNUM_RE.sub("", self.text.lower())


def _name_cased(word: str, first: bool) -> bool:
    if not any(c.isupper() for c in word) or word.lower() in STOP_WORDS or _PERIOD_RE.fullmatch(word):
        return False
    if len(word) < 2:
        return False
    return word.isupper() or any(c.isdigit() for c in word) or not word[0].isupper() or not first


def _kind(text: str) -> str:
    return "word" if any(c.islower() for c in text) else "code"


def question_names(question: str) -> list[Name]:
    """The names of ``question`` in question order, without repeats (module docstring)."""
    names: list[Name] = []
    seen: set[str] = set()

    def add(name: Name) -> None:
        if not name.key:
            return
        if name.key not in seen:
            seen.add(name.key)
            names.append(name)
        elif name.subject:  # a later possessive makes an earlier mention a subject
            i = next(i for i, n in enumerate(names) if n.key == name.key)
            if not names[i].weak:
                names[i] = replace(names[i], subject=True)

    for m in _CASHTAG_RE.finditer(question):
        add(Name(m.group(1).upper(), "code", ticker=True, subject=bool(_POSSESSIVE_RE.match(question, m.end()))))
    words = [(m.start(), m.end(), m.group()) for m in _WORD_RE.finditer(question)]
    run: list[tuple[int, int]] = []
    weak_first = False

    def flush(possessive: bool = False) -> None:
        nonlocal run, weak_first
        if run:
            text = question[run[0][0]:run[-1][1]]
            if len(run) == 1 and weak_first:
                add(Name(text, _kind(text), weak=True))
            else:
                before = question[:run[0][0]]
                of_name = _kind(text) == "word" and bool(_OF_RE.search(before)) \
                    and not _NUMBER_NEXT_RE.match(question, run[-1][1])  # "as of March 31" is a date
                subject = (possessive or of_name) and not _THE_RE.search(before)
                add(Name(text, _kind(text), ticker=_kind(text) == "code" and len(run) == 1 and len(text) <= 5,
                         subject=subject))
        run, weak_first = [], False

    for i, (a, _, word) in enumerate(words):
        if word.startswith("$"):
            flush()
            continue
        core = re.sub(r"['\u2019]s$", "", word)
        b = a + len(core)
        first = i == 0 or bool(re.search(r"[.!?:]\s*$", question[:a]))  # a sentence's first word
        cased = _name_cased(core, first)
        joinable = bool(run) and bool(_JOINER_RE.match(question[run[-1][1]:a]))
        if cased and joinable:
            run.append((a, b))
            weak_first = False
        elif cased:
            flush()
            run = [(a, b)]
        elif first and core[:1].isupper() and core.lower() not in STOP_WORDS and len(core) > 1 \
                and not _PERIOD_RE.fullmatch(core):
            flush()
            run, weak_first = [(a, b)], True
        else:
            flush()
            continue
        # a possessive ends the name: "Quuxco's", or a bare apostrophe after a plural ("Holdings' debt")
        if core != word or (core.endswith("s") and _POSSESSIVE_RE.match(question, b)):
            flush(possessive=True)
    flush()
    return names


#: A word boundary inside a name written in camel case (``SambaNova``, ``PepsiCo``).
_CAMEL_RE = re.compile(r"(?<=[a-z])(?=[A-Z][a-z])")


def as_written(text: str, word: str) -> str:
    """``word`` (a lower-cased token surface, ``boeing`` or ``3m``) as ``text`` writes it
    (``Boeing``, ``3M's`` read without its possessive): the first case-insensitive match at
    a word start, an apostrophe matching either form; ``word`` itself when ``text`` lacks it."""
    pattern = re.escape(word).replace("'", "['\u2019]?")
    found = re.search(rf"(?<!\w){pattern}", text, re.IGNORECASE)
    return found.group() if found else word


def name_parts(name: str) -> list[str]:
    """The words of a name: split at spaces, ``&`` and ``-``, and inside a word written in
    camel case (``SambaNova`` → ``Samba``, ``Nova``): the same name may be written run
    together, spaced or hyphenated."""
    return [p for w in re.split(r"[\s&-]+", name) if w for p in _CAMEL_RE.split(w) if p]


def lookup_words(name: str) -> list[str]:
    """The words to look a name up with in a full-text index, which splits at spaces and
    hyphens: the name's words as written, its camel-case parts, and, for a name of several
    parts, the parts run together (``Samba Nova`` is also indexed as ``SambaNova``)."""
    written = [w for w in re.split(r"[\s&-]+", name) if w]
    parts = name_parts(name)
    return list(dict.fromkeys([*written, *parts, *(["".join(parts)] if len(parts) > 1 else [])]))


def split_words(name: str) -> list[str]:
    """The words a one-word name of at least :data:`SPELLED_MIN` letters may be written
    as when the sources break it in two (``Sambanova``: ``sam``/``banova``, ``samb``/``anova``
    … ``samba``/``nova`` …): both halves of every split into two parts of three letters or
    more, lower-cased, in order of the split. For a full-text lookup of a name the sources
    space (a full-text index splits at spaces); :func:`spelled` then decides which passage
    writes it. Empty for a name of several words or a camel-case word (:func:`lookup_words`
    has their parts) and for a shorter one."""
    if len(name_parts(name)) != 1:
        return []
    key = ALNUM_RE.sub("", name.lower())
    if len(key) < SPELLED_MIN or key != name.lower():
        return []
    return list(dict.fromkeys(w for i in range(3, len(key) - 2) for w in (key[:i], key[i:])))


def _pattern(name: str, *, upper: bool = False) -> str:
    """A name's words in order with any run of spaces, ``&`` or ``-`` between them, or none
    (``Best Buy``, ``Best-Buy``, ``BestBuy``; ``SambaNova``, ``Samba Nova``); ``upper``:
    the words in capitals."""
    return r"[\s&-]*".join(re.escape(p.upper() if upper else p) for p in name_parts(name))


def mentions(text: str, name: Name | str, *, common: bool = False) -> bool:
    """Whether ``text`` mentions ``name`` (module docstring, "Mentions"); ``common``: the
    name is also an ordinary word of the sources, so a capital that starts a sentence or
    line does not count."""
    value = name.text if isinstance(name, Name) else name
    ticker = isinstance(name, Name) and name.ticker
    for upper in ((False, True) if any(c.islower() for c in value) else (False,)):
        for m in _mention_re(value, upper).finditer(text):
            if common and _SENTENCE_START_RE.search(text[max(0, m.start() - 3):m.start()]):
                continue
            return True
    if value.isupper() and sum(c.isalpha() for c in value) >= 4 and not ticker:
        # a name in capitals (SAMBANOVA, COCA-COLA) is the name however the text cases it,
        # as long as the text writes it as a name (capitalised)
        for m in _mention_re(value.lower(), False, True).finditer(text):
            if m.group()[:1].isupper() and not (common and _SENTENCE_START_RE.search(text[max(0, m.start() - 3):m.start()])):
                return True
    if ticker and re.search(rf"\${re.escape(value)}(?![A-Za-z])", text):
        return True
    return not ticker and spelled(text, value) is not None


#: The fewest letters a name needs for :func:`spelled` to find it written with other word breaks.
SPELLED_MIN = 6


def spelled(text: str, name: Name | str) -> str | None:
    """How ``text`` writes ``name`` with other word breaks than the question, or None: the
    name's letters and digits in order, as consecutive words each written as a name (an
    initial capital, or capitals), with at most one space or hyphen between letters and a
    break only before a capital (``Sambanova``, ``SAMBANOVA`` or ``SambaNova`` written
    ``Samba Nova``; ``Alphavertex`` written ``Alpha Vertex``; ``Samba Nova`` written
    ``Sambanova``). A name of fewer than :data:`SPELLED_MIN` letters is left alone (short
    codes read in too many runs of words). The first match, as written."""
    key = ALNUM_RE.sub("", (name.text if isinstance(name, Name) else name).lower())
    if len(key) < SPELLED_MIN:
        return None
    for m in _spelled_re(key).finditer(text):
        written = m.group()
        words = re.split(r"[ \t-]", written)
        if written[:1].isupper() and all(w[:1].isupper() or w[:1].isdigit() for w in words):
            return written
    return None


@lru_cache(maxsize=4096)
def _spelled_re(key: str) -> re.Pattern[str]:
    """``key``'s characters in order, any case, with at most one space, tab or hyphen between two
    of them, at word boundaries (:func:`spelled`)."""
    return re.compile(r"(?<![\w$])" + r"[ \t-]?".join(re.escape(c) for c in key) + r"(?![\w])", re.IGNORECASE)


@lru_cache(maxsize=4096)
def _mention_re(name: str, upper: bool, anycase: bool = False) -> re.Pattern[str]:
    """The pattern of a name as written (or in capitals; ``anycase``: in any case) at word
    boundaries (:func:`mentions`)."""
    return re.compile(rf"(?<![\w$]){_pattern(name, upper=upper)}(?!\w)", re.IGNORECASE if anycase else 0)


def used_as_word(text: str, name: Name | str) -> bool:
    """Whether ``text`` uses the name's lower-case form as an ordinary word (``block``)."""
    value = (name.text if isinstance(name, Name) else name).lower()
    return bool(re.search(rf"(?<![\w$]){_pattern(value)}(?!\w)", text))


def ticker_definitions(texts: Iterable[str]) -> list[tuple[str, str, bool]]:
    """``(company, code, explicit)`` for each code written in parentheses right after a
    name in ``texts``; ``explicit`` when written as a ticker (``$`` or an exchange
    prefix). Each text's definitions are cached (:func:`_text_definitions`)."""
    return [found for text in texts for found in _text_definitions(text)]


@lru_cache(maxsize=16384)
def _text_definitions(text: str) -> tuple[tuple[str, str, bool], ...]:
    """The definitions of one text, in order: ``Name (CODE)`` where the name is up to four
    capitalised words (:data:`_DEFINED_NAME_RE`), blanks, then :data:`_DEFINED_CODE_RE`,
    each name from its leftmost possible start. The codes are found first and a name is
    looked for only in the run of name characters before each (a code ends in ``;``, ``,``
    or ``)``, none of them a name character, so two definitions never overlap). That
    reads the same definitions as one regular expression trying every capitalised word
    as a start (tests/test_scope.py), about twenty times faster on filing pages, except
    that a name starts at most :data:`MAX_NAME_CHARS` before its code."""
    out: list[tuple[str, str, bool]] = []
    for code in _DEFINED_CODE_RE.finditer(text):
        end = code.start()
        while end and text[end - 1] in " \t":
            end -= 1
        start = end
        while start > end - MAX_NAME_CHARS and start and (text[start - 1].isalnum() or text[start - 1] in _NAME_CHARS):
            start -= 1
        for first in range(start, end):
            if ("A" <= text[first] <= "Z" or "0" <= text[first] <= "9") \
                    and _DEFINED_NAME_RE.fullmatch(text, first, end):
                company = text[first:end].strip(" -")
                if any(c.islower() for c in company):
                    inner = text[end:code.end()]
                    out.append((company, code.group(1), "$" in inner or ":" in inner))
                break
    return tuple(out)


def cashtags(text: str) -> set[str]:
    """The cashtags of ``text``, upper-cased without ``$`` (``ATVI``)."""
    return {m.group(1).upper() for m in _CASHTAG_RE.finditer(text)}


def alias_query(question: str, links: Mapping[str, set[str]]) -> str:
    """``question`` with each linked alias written in parentheses after the first
    occurrence of its name (``Activision (ATVI) puts``): what retrieval and the answer
    read, so that a passage giving only the ticker (or only the name) is found."""
    out = question
    for name, aliases in links.items():
        extra = sorted(a for a in aliases if a and a.lower() not in out.lower())
        if not extra:
            continue
        m = re.search(rf"\$?{re.escape(name)}(?:['\u2019]s)?(?!\w)", out)
        if m is None:
            continue
        out = f"{out[:m.end()]} ({', '.join(extra)}){out[m.end():]}"
    return out


__all__ = ["ALNUM_RE", "Name", "alias_query", "as_written", "cashtags", "lookup_words", "mentions", "name_parts", "question_names",
           "spelled", "split_words", "ticker_definitions", "used_as_word"]
