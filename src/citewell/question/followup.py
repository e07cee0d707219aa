"""Follow-up questions in a chat: what carries over from the previous turn.

A follow-up such as "And what about 2021?" or "How did it change?" names too little to
retrieve with. When a question *refers back* - it has an anaphor (it, they, that, those,
the same …), opens with a continuation ("and", "what about", "how about", "also"), or
has no content word at all ("Why?") - the previous question's content words are added to
the retrieval query, and the previous turn's filters apply when the new question gives
none (filters given as empty mean "none": nothing is carried). A question that stands on
its own ("Who is the head barista?") is left alone.

The rule is deliberately lexical (no model): it is cheap, predictable and testable, and
adding the previous question's words only widens what BM25 may find; the extractive
generator still quotes only retrieved passages.
"""

from __future__ import annotations

import re

from ..text.terms import tokens
from .names import as_written

#: Words that point back to something the chat named before.
ANAPHORA = frozenset({
    "it", "its", "they", "them", "their", "theirs", "those", "these", "he", "she", "his", "her", "same",
    "former", "latter",
})
_CONTINUATION = re.compile(r"^\s*(?:and|also|but|so|what about|how about|what of|same for|compared|versus|vs\.?)\b",
                           re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
#: A question with at most this many content words is read as a follow-up ("Why?"); more
#: would catch short questions that stand on their own ("Who is the head barista?").
SHORT_QUESTION = 0


def refers_back(question: str) -> bool:
    """Whether ``question`` depends on the previous turn (see the module docstring)."""
    if _CONTINUATION.match(question):
        return True
    words = [w.lower() for w in _WORD.findall(question)]
    if any(w in ANAPHORA for w in words):
        return True
    return sum(1 for t in tokens(question) if t.content) <= SHORT_QUESTION


def followup_query(question: str, previous: str | None) -> str:
    """The retrieval query of ``question`` asked after ``previous``: the question itself,
    plus the previous question's content words that it lacks when it refers back (names as
    the previous question writes them, so they are still names) - but
    not a previous number (a year) when it has its own, nor a previous name (a company,
    a ticker) when it names one: those it replaces."""
    if not previous or not refers_back(question):
        return question
    own = [t for t in tokens(question) if t.content]
    have = {t.term for t in own}
    has_number = any(t.number for t in own)
    has_name = any(t.name for t in own)
    extra: list[str] = []
    for tok in tokens(previous):
        if not tok.content or tok.term in have or tok.surface in ANAPHORA:
            continue
        if (tok.number and has_number) or (tok.name and has_name):
            continue  # "what about 2021?" replaces the year; "what about Boeing?" the company
        have.add(tok.term)
        extra.append(as_written(previous, tok.surface) if tok.name else tok.surface)
    return f"{question} {' '.join(extra)}" if extra else question
