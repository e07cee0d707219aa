"""What a passage says of the question's subjects: posts about them, and names the sources
write with other word breaks.

Posts (docs/architecture.md "Posts"): a post answers a question about a company or a
product only when it is about it. :func:`post_standing` reads that from the post itself,
by name or by ticker (:func:`~citewell.question.names.mentions`: as written, in capitals,
as a cashtag, or with other word breaks), or by a name the sources link to it (the scope
check's aliases, :mod:`citewell.scope.labelindex`: ``NFLX`` ↔ ``Netflix`` when a text or a
resource's metadata links them):

- :data:`ABOUT` (2): its title, its source, or its first sentence names a subject (a
  StockTwits message opens with the cashtags it is about, a Reddit post's title says
  what it is about);
- :data:`MENTIONS` (1): it names a subject only further on (a post about another company
  that mentions this one in passing); a unit of it is quoted only when the unit itself
  names the subject;
- :data:`UNRELATED` (0): it names none: never quoted.

Spellings: a question may write a name in one word that a transcript spaces (``Sambanova``
for ``Samba Nova``), or the reverse. :func:`spelled_terms` gives the question's terms of
each such name, which a unit that mentions the name (however it breaks the words) is read
with, so that the unit matches the question's concept for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from ..models import Passage
from ..question.analysis import QuestionAnalysis
from ..question.names import Name, mentions, name_parts
from ..text.sentences import sentence_spans
from ..text.terms import content_terms

__all__ = ["ABOUT", "MENTIONS", "UNRELATED", "names_of", "names_subject", "post_standing", "spelled_terms"]

UNRELATED = 0
MENTIONS = 1
ABOUT = 2


def names_of(analysis: QuestionAnalysis, aliases: Mapping[str, Iterable[str]] | None = None) -> tuple[Name, ...]:
    """The names a post must be about: the question's deciding names
    (:attr:`~citewell.question.analysis.QuestionAnalysis.deciding_names`) and the names the
    sources link to each (``aliases``: ``{name text: linked tickers or company names}``, the
    scope check's facts); a linked alias in capitals of at most six letters is a ticker."""
    out: list[Name] = list(analysis.deciding_names)
    for name in analysis.deciding_names:
        for alias in (aliases or {}).get(name.text, ()):
            code = alias.isupper()
            out.append(Name(alias, "code" if code else "word", ticker=code and len(alias) <= 6))
    return tuple(out)


def _names_any(text: str, names: Sequence[Name]) -> bool:
    """Whether ``text`` mentions one of ``names`` (:func:`~citewell.question.names.mentions`),
    a ticker of four letters or more also in any case (posts write ``Nflx`` for ``NFLX``)."""
    return any(mentions(text, n) or (n.ticker and len(n.key) >= 4 and _any_case(n.key).search(text) is not None)
               for n in names)


@lru_cache(maxsize=1024)
def _any_case(key: str) -> re.Pattern[str]:
    """``key`` as a word in any case (not inside a longer word or cashtag)."""
    return re.compile(rf"(?<![\w$]){re.escape(key)}(?!\w)", re.IGNORECASE)


def post_standing(passage: Passage, names: Sequence[Name]) -> int:
    """:data:`ABOUT`, :data:`MENTIONS` or :data:`UNRELATED` (module docstring) for a post
    passage and the question's ``names`` (:func:`names_of`); a passage that is no post, or a
    question without names, is :data:`ABOUT` (nothing to decide)."""
    meta = passage.chunk.metadata
    if meta.get("source_type") != "post" or not names:
        return ABOUT
    text = passage.chunk.text
    spans = sentence_spans(text)
    lead = text[spans[0][0]:spans[0][1]] if spans else text
    labels = " ".join(str(meta.get(k) or "") for k in ("title", "source"))
    if _names_any(lead, names) or (labels.strip() and _names_any(labels, names)):
        return ABOUT
    return MENTIONS if _names_any(text, names) else UNRELATED


def names_subject(text: str, names: Sequence[Name]) -> bool:
    """Whether a unit's ``text`` itself names one of ``names``."""
    return _names_any(text, names)


def spelled_terms(analysis: QuestionAnalysis) -> tuple[tuple[Name, frozenset[str]], ...]:
    """Each question name that may be written with other word breaks (one word, or several
    name parts) with its content terms as the question writes it: a unit that
    :func:`~citewell.question.names.mentions` the name is read with those terms too."""
    out: list[tuple[Name, frozenset[str]]] = []
    for name in analysis.names:
        terms = content_terms(name.text)
        if terms and (len(name_parts(name.text)) > 1 or len(name.key) >= 6) and not name.ticker:
            out.append((name, terms))
    return tuple(out)
