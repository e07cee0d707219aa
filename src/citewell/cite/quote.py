"""Where in a cited passage the citing sentence comes from.

A reference points at a whole passage; a reader following ``[N]`` wants the sentence or
table row that backs the answer's sentence marked inside it. :func:`quoted_span` finds
that span of the passage text (code points, half-open), in this order:

1. ``verbatim``: the sentence as quoted (its final ``.``/``!``/``?`` run removed, cut at a
   ``…`` that shortened a long quote) occurs in the passage with whitespace runs compared
   as one space — the extractive generator's quotes, which collapse a line-broken unit
   to spaces;
2. ``unit``: otherwise the passage unit — a sentence for prose, a row for a table, as the
   support check reads them (:mod:`citewell.cite.support`: ``sentence_spans`` /
   ``row_spans``) — sharing the most content terms with the sentence (the first on a
   tie), when it shares at least one: a statement-row answer (``Label: value (period)``)
   or a paraphrase;
3. ``passage``: the whole passage (nothing in it is closer).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from citewell.text.sentences import sentence_spans
from citewell.text.tables import looks_tabular, row_spans
from citewell.text.terms import content_terms

_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class QuoteSpan:
    """``passage[start:end]`` backs the sentence; ``how`` is ``verbatim``, ``unit`` or
    ``passage`` (see the module docstring)."""

    start: int
    end: int
    how: str


def _collapsed(text: str) -> tuple[str, list[int]]:
    """``text`` with whitespace runs as one space, and for each of its characters the
    index of the character of ``text`` it comes from."""
    out: list[str] = []
    where: list[int] = []
    for m in re.finditer(r"\s+|\S+", text):
        if m.group().isspace():
            out.append(" ")
            where.append(m.start())
        else:
            out.append(m.group())
            where.extend(range(m.start(), m.end()))
    return "".join(out), where


def _verbatim(sentence: str, passage: str) -> tuple[int, int] | None:
    quote = _SPACES.sub(" ", sentence).strip()
    if "…" in quote:  # a long quote is cut after whole words: match what it kept
        quote = max(quote.split("…"), key=len).strip()
    quote = quote.rstrip(" .!?")
    if len(quote) < 3:
        return None
    flat, where = _collapsed(passage)
    at = flat.find(quote)
    if at < 0:
        return None
    return where[at], where[at + len(quote) - 1] + 1


def quoted_span(sentence: str, passage: str, text_type: str | None = None) -> QuoteSpan:
    """The span of ``passage`` that backs ``sentence`` (both as a reader sees them: the
    sentence without its ``[N]`` markers, :func:`citewell.cite.support.message_sentence`).
    ``text_type`` ``table`` reads the passage by rows (None: guessed as the support check
    does). Never raises; an empty passage gives ``QuoteSpan(0, 0, "passage")``."""
    found = _verbatim(sentence, passage)
    if found is not None:
        return QuoteSpan(found[0], found[1], "verbatim")
    table = text_type == "table" if text_type in ("table", "paragraph") else looks_tabular(passage)
    spans = row_spans(passage) if table else sentence_spans(passage)
    terms = content_terms(sentence)
    best: tuple[int, int, int] | None = None
    for a, b in spans:
        shared = len(terms & content_terms(passage[a:b]))
        if shared and (best is None or shared > best[0]):
            best = (shared, a, b)
    if best is not None:
        a, b = best[1], best[2]
        while a < b and passage[a].isspace():
            a += 1
        while b > a and passage[b - 1].isspace():
            b -= 1
        return QuoteSpan(a, b, "unit")
    return QuoteSpan(0, len(passage), "passage")


__all__ = ["QuoteSpan", "quoted_span"]
