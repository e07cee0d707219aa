"""Whether a question names a source: by a ticker, a word of its title, or a company name.

One rule for every stage that asks it: retrieval's resource priors
(:func:`citewell.retrieve.rerank.resource_priors`) and the statement rows of an extractive
figure answer (:func:`citewell.domains.finance.answer.figure_rows`, which reads rows only
from the documents the question names when it names any).

A source is named when a question word written like a name (``AMCOR``, ``JnJ``, ``3M``,
``Best Buy``: :attr:`citewell.text.terms.Token.name`) is one of its tickers or a word of
its title other than a number or a document-type word (:data:`DOC_WORDS`: the form names
of SEC filings and the words of corporate suffixes, which name no company), or when every
word of one of its company names is in the question.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from ..text.terms import content_terms, porter_stem, tokens

__all__ = ["DOC_WORDS", "NamedSources", "QuestionNames", "names_source"]

#: Title words that name a kind of document rather than its subject (stemmed).
DOC_WORDS = frozenset({"10k", "10q", "8k", "10", "k", "q", "earn", "date", "report", "annual", "quarterli",
                       "pdf", "inc", "corp", "compani", "plc", "group", "hold", "intern"})


@dataclass(frozen=True)
class QuestionNames:
    """What of a question can name a source: ``names`` (stemmed terms of words written
    like names, and of two such words in a row written run together), ``surfaces`` (those words lower-cased as written), ``terms`` (every
    content term) and ``years`` (its numbers' terms)."""

    names: frozenset[str]
    surfaces: frozenset[str]
    terms: frozenset[str]
    years: frozenset[str]

    @classmethod
    def of(cls, question: str) -> "QuestionNames":
        """Read ``question`` (any text; an empty one names nothing)."""
        toks = [t for t in tokens(question) if t.content]
        # a name of two words is also the name written run together ("Ulta Beauty": ULTABEAUTY)
        joined = [a.surface + b.surface for a, b in zip(toks, toks[1:]) if a.name and b.name]
        return cls(frozenset(t.term for t in toks if t.name) | {porter_stem(j) for j in joined},
                   frozenset(t.surface for t in toks if t.name) | set(joined),
                   frozenset(t.term for t in toks), frozenset(t.term for t in toks if t.number))


@lru_cache(maxsize=16384)
def _title_names(title: str) -> frozenset[str]:
    """The words of a title that can name its source: content terms other than numbers and
    document-type words (cached: every question reads every title)."""
    return frozenset(t.term for t in tokens(title) if t.content and not t.number) - DOC_WORDS


_company_terms = lru_cache(maxsize=16384)(content_terms)


def names_source(question: QuestionNames, title: str, tickers: Iterable[str] = (),
                 company_names: Iterable[str] = ()) -> bool:
    """True when ``question`` names the source titled ``title`` with those tickers and
    company names (module docstring)."""
    if any(str(tk).lower() in question.surfaces for tk in tickers):
        return True
    if _title_names(title) & question.names:
        return True
    for company in company_names:
        words = _company_terms(str(company))
        if words and words <= question.terms:
            return True
    return False


@dataclass(frozen=True)
class NamedSources:
    """:func:`names_source` over many sources at once, in time that grows with what the
    question's words match rather than with the number of sources: positions (into the
    sources as given) by lower-cased ticker (``tickers``), by title word that can name
    (``titles``), and by the smallest term of each company name with that name's terms
    (``companies``: every term of a company the question names is a term of the
    question, its smallest one too)."""

    tickers: dict[str, tuple[int, ...]]
    titles: dict[str, tuple[int, ...]]
    companies: dict[str, tuple[tuple[int, frozenset[str]], ...]]

    @classmethod
    def of(cls, sources: Iterable[tuple[str, Iterable[object], Iterable[object]]]) -> "NamedSources":
        """The index of ``(title, tickers, company names)`` per source (iterated as
        :func:`names_source` iterates them)."""
        tickers: dict[str, list[int]] = {}
        titles: dict[str, list[int]] = {}
        companies: dict[str, list[tuple[int, frozenset[str]]]] = {}
        for i, (title, codes, names) in enumerate(sources):
            for tk in codes:
                tickers.setdefault(str(tk).lower(), []).append(i)
            for word in _title_names(title):
                titles.setdefault(word, []).append(i)
            for company in names:
                words = _company_terms(str(company))
                if words:
                    companies.setdefault(min(words), []).append((i, words))
        return cls({k: tuple(v) for k, v in tickers.items()}, {k: tuple(v) for k, v in titles.items()},
                   {k: tuple(v) for k, v in companies.items()})

    def named(self, question: QuestionNames) -> list[int]:
        """The positions of the sources ``question`` names (:func:`names_source` true), ascending."""
        found = {i for surface in question.surfaces for i in self.tickers.get(surface, ())}
        found.update(i for name in question.names for i in self.titles.get(name, ()))
        found.update(i for term in question.terms for i, words in self.companies.get(term, ())
                     if words <= question.terms)
        return sorted(found)
