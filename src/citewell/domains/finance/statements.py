"""Finance questions, page headings and row labels read through the field's vocabulary.

Retrieval and the extractive generator read a finance question through
:mod:`citewell.domains.finance.vocabulary`: which statement it is about, which line items it names
(directly, by an analyst's abbreviation, or through a ratio computed from them), which
statement a page heading titles, and which line item a table row states.

Matching works on :func:`citewell.text.terms.tokens` (lower case, stop words out, Porter
stems), so plurals, case and punctuation do not matter: a phrase matches a text when its
content terms occur there consecutively (stop words between them are skipped).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from citewell.text.terms import tokens
from .vocabulary import LINE_ITEMS, RATIOS, STATEMENTS, texts

__all__ = ["PARENTHETICAL_RE", "Mention", "caption_share", "captions_in", "item_mentions", "items_of_row", "measure_items", "measures_of_row", "mentions", "phrase_terms",
           "statement_of_heading", "statements_named", "statements_of_items"]

_ITEMS = {item.key: item for item in LINE_ITEMS}


@lru_cache(maxsize=4096)
def phrase_terms(text: str) -> tuple[str, ...]:
    """Content terms of ``text`` in order (stems; stop words out), as every phrase of the
    vocabulary is matched (cached)."""
    return tuple(t.term for t in tokens(text) if t.content)


def _phrases(row: bool) -> list[tuple[tuple[str, ...], str, str]]:
    """The phrases to look for, as ``(terms, kind, key)``, longest first: in a question
    (``row`` False) statement titles, ratio names (before a line item of the same
    length: ``gross margin`` asked is the ratio), then line items by label or alias; in a
    row label (``row`` True) line-item captions only."""
    out: list[tuple[tuple[str, ...], str, str]] = []
    if not row:
        for kind, titles in STATEMENTS.items():
            out.extend((phrase_terms(t), "statement", kind) for t in texts(titles))
        for ratio in RATIOS:
            out.extend((phrase_terms(n), "ratio", ratio.names[0].text) for n in texts(ratio.names))
    for item in LINE_ITEMS:
        out.extend((phrase_terms(t), "item", item.key)
                   for t in texts(item.labels if row else (*item.labels, *item.aliases)))
    out = [p for p in out if p[0]]
    out.sort(key=lambda p: -len(p[0]))  # stable: the order above breaks ties
    return out


_PHRASES = {False: _phrases(False), True: _phrases(True)}
_RATIO_BY_NAME = {r.names[0].text: r for r in RATIOS}


@dataclass(frozen=True)
class Mention:
    """A vocabulary phrase found in a text: ``kind`` statement / item / ratio, its
    ``key``, and ``start``/``end``: its position in the text's content terms."""

    kind: str
    key: str
    start: int
    end: int


@lru_cache(maxsize=8192)
def mentions(text: str, *, row: bool = False) -> tuple[Mention, ...]:
    """The vocabulary phrases of ``text`` in text order, the longest where they overlap
    (:func:`_phrases`; ``row``: ``text`` is a table row's label, read for captions only)."""
    seq = phrase_terms(text)
    taken = [False] * len(seq)
    found: list[Mention] = []
    for terms, kind, key in _PHRASES[row]:
        n = len(terms)
        for i in range(len(seq) - n + 1):
            if seq[i:i + n] == terms and not any(taken[i:i + n]):
                taken[i:i + n] = [True] * n
                found.append(Mention(kind, key, i, i + n))
    found.sort(key=lambda m: m.start)
    return tuple(found)


def item_mentions(text: str) -> list[str]:
    """The line items ``text`` names, in text order without repeats: named directly (a
    caption or an alias) or through a ratio computed from them (:data:`RATIOS`)."""
    out: list[str] = []
    for m in mentions(text):
        keys = [m.key] if m.kind == "item" else list(_RATIO_BY_NAME[m.key].items) if m.kind == "ratio" else []
        out.extend(k for k in keys if k not in out)
    return out


def statements_named(text: str) -> set[str]:
    """Statement kinds ``text`` names by title (``balance sheet``, ``P&L``, ``statement
    of cash flows``)."""
    return {m.key for m in mentions(text) if m.kind == "statement"}


def statements_of_items(keys: list[str] | tuple[str, ...]) -> set[str]:
    """The statement kinds that present these line items."""
    return {_ITEMS[k].statement for k in keys if k in _ITEMS}


_CONSOLIDATING_RE = re.compile(r"\bconsolidating\b|\bguarant(?:or|ee|eed)", re.IGNORECASE)
_NOTES_RE = re.compile(r"\bnotes? to\b", re.IGNORECASE)


@lru_cache(maxsize=8192)
def statement_of_heading(heading: str) -> str | None:
    """The primary statement a page heading titles (``CONSOLIDATED BALANCE SHEETS`` ->
    ``balance_sheet``), or None: no statement title, or the page is a note about the
    statements, a consolidating schedule of guarantor subsidiaries or the statements of a
    guarantee group (a deed of cross guarantee), which repeat the statements' captions for
    parts of the group."""
    if not heading or _CONSOLIDATING_RE.search(heading) or _NOTES_RE.search(heading):
        return None
    kinds = [m.key for m in mentions(heading) if m.kind == "statement"]
    return kinds[0] if kinds else None


def caption_share(label: str, key: str) -> float:
    """How much of a row label is the caption of line item ``key``: the content terms its
    caption covers over the label's content terms other than ``total`` (``Total net
    revenues`` is all revenues, 1.0; ``Product sales`` half, 0.5); 0.0 when the label does
    not state the item."""
    seq = [t for t in phrase_terms(label) if t != "total"]
    covered = sum(m.end - m.start for m in mentions(label, row=True) if m.key == key)
    return min(1.0, covered / len(seq)) if seq else 0.0


#: Words that open a post-modifier of a row label's noun phrase: a caption after one is
#: what the row is *about*, not what it states (``Assets held for sale``, ``Percentage of
#: total revenue``, ``Issuance of long-term debt``, ``Effect of exchange rate changes on
#: cash``). ``by`` is not one: cash-flow captions read ``provided by … activities``.
PREPOSITIONS = frozenset({"for", "of", "from", "to", "in", "on", "at", "per", "as"})
#: Words that coordinate two parts of a label (``Sales and marketing``).
CONJUNCTIONS = frozenset({"and", "or"})
#: A parenthetical aside of a label or title (``(in millions)``, ``(used in)``).
PARENTHETICAL_RE = re.compile(r"\([^()]*\)")


def _states(toks: list, start: int, end: int) -> bool:
    """Whether the caption at content terms ``[start, end)`` of a label's tokens ``toks``
    names what the row states: it does not stand in a post-modifier (no preposition before
    it) and is not the first conjunct of a coordinated phrase (``Sales and marketing``:
    an ``and`` or ``or`` after it before any preposition)."""
    content = [i for i, t in enumerate(toks) if t.content]
    first, last = content[start], content[end - 1]
    if any(t.surface in PREPOSITIONS for t in toks[:first]):
        return False
    for t in toks[last + 1:]:
        if t.surface in PREPOSITIONS:
            break
        if t.surface in CONJUNCTIONS:
            return False
    return True


def captions_in(text: str) -> list[str]:
    """The line items whose captions running text writes anywhere (in order, without
    repeats; aliases do not count): what a passage of prose is about, where
    :func:`items_of_row` asks what one row label states."""
    return list(dict.fromkeys(m.key for m in mentions(text, row=True)))


def items_of_row(label: str) -> list[str]:
    """The line items a table row's label states by its caption, in order without
    repeats: a caption in the label's own noun phrase (:func:`_states`: ``Sales and
    marketing`` is an expense, not sales; ``Assets held for sale`` states no revenue), read
    with parenthetical asides left out (``Net cash provided by (used in) financing
    activities``), never an alias (a row reading ``Cash dividends`` does not state cash).
    Rule: English noun-phrase structure (a head with its pre-modifiers, then post-modifiers
    opened by prepositions; coordination by *and*/*or*)."""
    plain = PARENTHETICAL_RE.sub(" ", label)
    toks = tokens(plain)
    return list(dict.fromkeys(m.key for m in mentions(plain, row=True) if _states(toks, m.start, m.end)))


def measures_of_row(label: str) -> list[str]:
    """The ratios and derived measures (:data:`~citewell.domains.finance.vocabulary.RATIOS`, by first
    name) a row's label states itself (``Adjusted EBITDA``, ``Free cash flow``)."""
    return list(dict.fromkeys(m.key for m in mentions(label) if m.kind == "ratio"))


def measure_items(name: str) -> tuple[str, ...]:
    """The line items of ratio ``name`` (its first name, as :func:`measures_of_row` gives)."""
    ratio = _RATIO_BY_NAME.get(name)
    return ratio.items if ratio else ()
