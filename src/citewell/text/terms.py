"""Shared term analysis: tokens, stop words, stemming, expansions and question concepts.

One module, used by the retriever (:mod:`citewell.retrieve.query`,
:mod:`citewell.retrieve.rerank`) and by the extractive generator
(:mod:`citewell.generate.extractive`), so that a question is read the same way when
passages are ranked and when sentences are chosen.

Tokens (:func:`tokens`): runs of Unicode letters and digits, joined across ``&``, ``'``, ``’``, ``.``
inside a word and ``,`` between digits; then

- lower-cased; a trailing ``'s`` is dropped (``3M's`` -> ``3m``);
- ``1,749`` -> ``1749``; ``FY2022``/``FY22``/``CY2022`` -> ``2022``;
- ``PP&E``, ``SG&A``, ``R&D`` stay one token (``pp&e``);
- stop words (:data:`STOP_WORDS`) are kept as non-content tokens;
- other words are stemmed with :func:`porter_stem` (the original Porter algorithm,
  the one SQLite FTS5's ``porter`` tokenizer implements): ``cyclicality`` and
  ``cyclical`` -> ``cyclic``; ``purchases``/``purchased`` -> ``purchas``.

Concepts (:func:`question_concepts`): each content term of a question is one concept; a
phrase of a domain pack's :class:`Expansions` (longest first) is one concept whose
alternatives are the phrase itself and its expansions; a text matches a concept when it
contains every term of any one alternative. Without a domain pack there are no
expansions (:data:`NO_EXPANSIONS`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache


STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing done down during
    each few for from further had has have having he her here hers herself him himself his
    how i if in into is it its itself just me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves shall may might must per via vs versus
    please tell give show explain describe according whether there's what's it's
    s t fy cy
    """.split()
)
"""English function words and question words that carry no topic (lower case)."""

HOW_WORDS = frozenset({"long", "much", "many", "often", "far", "larg", "big", "high", "low"})
"""Stems dropped right after ``how`` (``how much``, ``how many`` … ask for a number)."""

_TOKEN_RE = re.compile(r"[^\W_]+(?:(?:[&'\u2019]|(?<=\d)[.,](?=\d))[^\W_]+)*")
_NUMBER_RE = re.compile(r"\d+(?:\.\d+)?")
_FISCAL_RE = re.compile(r"(?:fy|cy)(\d{2}|\d{4})")


# --------------------------------------------------------------------------- Porter

_VOWELS = frozenset("aeiou")


def _cons(word: str, i: int) -> bool:
    char = word[i]
    if char in _VOWELS:
        return False
    if char == "y":
        return i == 0 or not _cons(word, i - 1)
    return True


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in ``stem``."""
    n, i, length = 0, 0, len(stem)
    while i < length and _cons(stem, i):
        i += 1
    while i < length:
        while i < length and not _cons(stem, i):
            i += 1
        if i >= length:
            break
        while i < length and _cons(stem, i):
            i += 1
        n += 1
    return n


def _has_vowel(stem: str) -> bool:
    return any(not _cons(stem, i) for i in range(len(stem)))


def _double_cons(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _cons(word, len(word) - 1)


def _cvc(word: str) -> bool:
    return (len(word) >= 3 and _cons(word, len(word) - 3) and not _cons(word, len(word) - 2)
            and _cons(word, len(word) - 1) and word[-1] not in "wxy")


_STEP2 = (("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
          ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"),
          ("ization", "ize"), ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"),
          ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
          ("logi", "log"))
_STEP3 = (("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""),
          ("ness", ""))
_STEP4 = ("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou",
          "ism", "ate", "iti", "ous", "ive", "ize")


def _replace(word: str, table: tuple[tuple[str, str], ...], min_m: int) -> str:
    for suffix, repl in sorted(table, key=lambda sr: -len(sr[0])):
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            return stem + repl if _measure(stem) > min_m else word
    return word


@lru_cache(maxsize=65536)
def porter_stem(word: str) -> str:
    """The Porter (1980) stem of a lower-case word; other words come back unchanged.

    Words of up to two letters and words with a non-letter (``10k``, ``pp&e``) are not
    stemmed. ``porter_stem("cyclicality") == porter_stem("cyclical") == "cyclic"``.
    """
    if len(word) <= 2 or not word.isalpha() or not word.isascii():
        return word
    # step 1a
    if word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("ies"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    # step 1b
    extra = False
    if word.endswith("eed"):
        if _measure(word[:-3]) > 0:
            word = word[:-1]
    elif word.endswith("ed") and _has_vowel(word[:-2]):
        word, extra = word[:-2], True
    elif word.endswith("ing") and _has_vowel(word[:-3]):
        word, extra = word[:-3], True
    if extra:
        if word.endswith(("at", "bl", "iz")):
            word += "e"
        elif _double_cons(word) and word[-1] not in "lsz":
            word = word[:-1]
        elif _measure(word) == 1 and _cvc(word):
            word += "e"
    # step 1c
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    word = _replace(word, _STEP2, 0)
    word = _replace(word, _STEP3, 0)
    # step 4
    for suffix in sorted(_STEP4, key=len, reverse=True):
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            if _measure(stem) > 1 and (suffix != "ion" or stem.endswith(("s", "t"))):
                word = stem
            break
    # step 5
    if word.endswith("e"):
        stem = word[:-1]
        if _measure(stem) > 1 or (_measure(stem) == 1 and not _cvc(stem)):
            word = stem
    if word.endswith("ll") and _measure(word) > 1:
        word = word[:-1]
    return word


# --------------------------------------------------------------------------- tokens


@dataclass(frozen=True)
class Token:
    """One token of a text.

    ``term``: normalised and stemmed form; ``surface``: the lower-cased word before
    stemming (what a full-text index is queried with); ``content``: not a stop word;
    ``number``: digits (years included); ``name``: a proper noun or ticker by its casing
    (all caps, letters with digits such as ``3M``, or a capitalised word that is not the
    first token).
    """

    term: str
    surface: str
    content: bool
    number: bool
    name: bool


def tokens(text: str) -> list[Token]:
    """Tokenise ``text`` (see the module docstring); line breaks are ordinary whitespace."""
    out: list[Token] = []
    if not text.isascii():  # fullwidth and styled letters and digits (ＲＥＶＥＮＵＥ, 𝐫𝐞𝐯) read as plain ones
        text = unicodedata.normalize("NFKC", text)
    for match in _TOKEN_RE.finditer(text):
        raw = match.group().replace("\u2019", "'")
        low = raw.lower()
        if low.endswith("'s"):
            raw, low = raw[:-2], low[:-2]
        if low in STOP_WORDS:
            out.append(_stop_token(low))
            continue
        if out and out[-1].term in _FISCAL_MARKERS and len(low) == 2 and low.isdigit():
            raw = low = _two_digit_year(low)  # "FY 17" is 2017, as "FY17" is
        out.append(_word_token(raw, low, bool(out)))
    return out


_FISCAL_MARKERS = frozenset({"fy", "cy"})


def _two_digit_year(digits: str) -> str:
    """A two-digit fiscal year as four digits, with POSIX ``strptime``'s pivot: 69–99 are
    1969–1999, 00–68 are 2000–2068 (``FY99`` is 1999, ``FY23`` 2023)."""
    return ("19" if int(digits) >= 69 else "20") + digits


@lru_cache(maxsize=1024)
def _stop_token(low: str) -> Token:
    return Token(low, low, False, False, False)


@lru_cache(maxsize=65536)
def _word_token(raw: str, low: str, inside: bool) -> Token:
    """The token of one non-stop word (``inside``: not the first token of its text)."""
    low = low.replace("'", "")
    fiscal = _FISCAL_RE.fullmatch(low)
    if fiscal:
        year = fiscal.group(1)
        low = year if len(year) == 4 else _two_digit_year(year)
    elif "," in low:
        low = low.replace(",", "")
    number = bool(_NUMBER_RE.fullmatch(low))
    has_upper = raw.lower() != raw
    name = not number and has_upper and (
        raw.isupper() or any(c.isdigit() for c in raw) or not raw[:1].isupper() or inside
    )
    term = low if number else porter_stem(low)
    return Token(term or low, low, True, number, name)


def content_terms(text: str) -> frozenset[str]:
    """The set of content (non-stop-word) terms of ``text``."""
    return frozenset(t.term for t in tokens(text) if t.content)


# --------------------------------------------------------------------------- concepts


@dataclass(frozen=True)
class Concept:
    """One question term (or phrase of :data:`EXPANSIONS`) a text may match.

    - ``alternatives``: term sets; a text matches when it contains every term of one;
    - ``words``: the surface words of each alternative, same order (for full-text
      queries and document-frequency counts);
    - ``boost``: 1.5 for a number, 1.3 for a proper noun or ticker, else 1.0;
    - ``number``: every token of the concept is a number;
    - ``head``: the concept's own single term, ``None`` for a multi-word phrase (what
      adjacent-pair bonuses look for);
    - ``expanded``: the concept came from :data:`EXPANSIONS`.
    """

    alternatives: tuple[frozenset[str], ...]
    words: tuple[tuple[str, ...], ...]
    boost: float
    number: bool
    head: str | None
    expanded: bool = False

    def matches(self, terms: frozenset[str] | set[str]) -> bool:
        """True when ``terms`` contains every term of one alternative."""
        for alt in self.alternatives:  # a loop: called for every concept of every passage of a pool
            if alt <= terms:
                return True
        return False


NUMBER_BOOST = 1.5
NAME_BOOST = 1.3


def _phrase(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    toks = [t for t in tokens(text) if t.content]
    return tuple(t.term for t in toks), tuple(t.surface for t in toks)


@dataclass(frozen=True, eq=False)
class Expansions:
    """A table of question phrases and the other phrases a text may state them with
    (a domain pack's vocabulary, :mod:`citewell.domains`): a phrase of a question becomes
    one :class:`Concept` whose alternatives are the phrase and its expansions.

    ``phrases``: phrase -> alternative phrases, as given (both sides go through
    :func:`tokens`: stop words out, Porter stems, so plurals and case do not matter);
    ``table``: stemmed phrase -> ``(terms, surface words)`` of each alternative, the
    phrase itself first; ``longest``: the most content terms of a phrase. The longest
    phrase in a question wins. Compared and hashed by identity (one table per pack)."""

    phrases: dict[str, tuple[str, ...]]
    table: dict[tuple[str, ...], tuple[tuple[frozenset[str], tuple[str, ...]], ...]]
    longest: int

    @classmethod
    def of(cls, phrases: dict[str, tuple[str, ...]]) -> "Expansions":
        """The table of ``phrases`` (phrase -> alternatives)."""
        table: dict[tuple[str, ...], tuple[tuple[frozenset[str], tuple[str, ...]], ...]] = {}
        for phrase, alts in phrases.items():
            key, surface = _phrase(phrase)
            if not key:
                continue
            entries = [(frozenset(key), surface)]
            for alt in alts:
                alt_key, alt_surface = _phrase(alt)
                if alt_key and all(frozenset(alt_key) != e[0] for e in entries):
                    entries.append((frozenset(alt_key), alt_surface))
            table[key] = tuple(entries)
        return cls(dict(phrases), table, max((len(k) for k in table), default=0))


#: No expansions: every content word of a question is a concept of its own (a scope
#: without a domain pack).
NO_EXPANSIONS = Expansions({}, {}, 0)


def _phrase(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    toks = [t for t in tokens(text) if t.content]
    return tuple(t.term for t in toks), tuple(t.surface for t in toks)


def question_concepts(question: str, expansions: Expansions = NO_EXPANSIONS) -> list[Concept]:
    """The question's concepts in question order, without repeats.

    Stop words are dropped, and so is the word after ``how`` in ``how long/much/many…``.
    A phrase of ``expansions`` (a domain pack's, :mod:`citewell.domains`; longest first)
    becomes one concept with its alternatives; any other content token is a one-term
    concept.
    """
    return list(_question_concepts(question, expansions))


@lru_cache(maxsize=8192)
def _question_concepts(question: str, expansions: Expansions) -> tuple[Concept, ...]:
    all_toks = tokens(question)
    toks = [
        t
        for i, t in enumerate(all_toks)
        if t.content
        and not (i > 0 and all_toks[i - 1].term == "how" and (t.surface in HOW_WORDS or t.term in HOW_WORDS))
    ]
    table, longest = expansions.table, expansions.longest
    concepts: list[Concept] = []
    seen: set[tuple[tuple[str, ...], ...]] = set()  # by alternatives, in any order
    i = 0
    while i < len(toks):
        step = 1
        entries: tuple[tuple[frozenset[str], tuple[str, ...]], ...] = (
            (frozenset([toks[i].term]), (toks[i].surface,)),)
        expanded = False
        for n in range(min(longest, len(toks) - i), 0, -1):
            key = tuple(t.term for t in toks[i : i + n])
            if key in table:
                step, entries, expanded = n, table[key], True
                break
        span = toks[i : i + step]
        number = all(t.number for t in span)
        boost = NUMBER_BOOST if number else NAME_BOOST if any(t.name for t in span) else 1.0
        ident = tuple(sorted(tuple(sorted(alt)) for alt, _ in entries))
        if ident not in seen:
            seen.add(ident)
            head = span[0].term if step == 1 else None
            concepts.append(Concept(tuple(a for a, _ in entries), tuple(w for _, w in entries), boost,
                                    number, head, expanded))
        i += step
    return tuple(concepts)


def near(seq: tuple[str, ...] | list[str], first: str, second: str, window: int = 2) -> bool:
    """``second`` follows ``first`` within ``window`` content-token positions in ``seq``."""
    for i, term in enumerate(seq):
        if term == first and second in seq[i + 1 : i + 1 + window]:
            return True
    return False


__all__ = [
    "NO_EXPANSIONS",
    "Expansions",
    "HOW_WORDS",
    "NAME_BOOST",
    "NUMBER_BOOST",
    "STOP_WORDS",
    "Concept",
    "Token",
    "content_terms",
    "near",
    "porter_stem",
    "question_concepts",
    "tokens",
]
