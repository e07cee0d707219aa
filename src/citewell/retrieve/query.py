"""Question → full-text search terms (plain words; the store quotes each one).

Both functions read the question with :func:`citewell.text.terms.tokens` (the
tokeniser the reranker and the extractive generator use too): lower-cased words,
``3M's`` -> ``3m``, ``FY2022`` -> ``2022``, stop words dropped. The terms are plain
words; the store quotes each one before it reaches its query language, so punctuation,
quotes and operators in a question (``-``, ``:``, ``AND``, ``NOT``, ``NEAR``, ``*``) can
never raise.
"""

from __future__ import annotations

from ..text.terms import STOP_WORDS, question_concepts, tokens

__all__ = ["STOP_WORDS", "question_terms", "search_terms"]


def question_terms(question: str) -> list[str]:
    """Distinct content words of ``question`` in order (lower-cased, unstemmed).

    Stop words are dropped unless nothing else is left: ``"What was 3M's CapEx in
    FY2022?"`` gives ``["3m", "capex", "2022"]``.
    """
    toks = tokens(question)
    terms = [t.surface for t in toks if t.content] or [t.surface for t in toks]
    return list(dict.fromkeys(terms))


def search_terms(question: str) -> list[str]:
    """:func:`question_terms` followed by the words of the question's expansions.

    ``capex`` adds ``capital``, ``expenditures``, ``purchases``, ``property``, ``plant``,
    ``equipment``, ``pp&e`` …: the candidate pool of a full-text search (any term may
    match) then holds passages that use another name for a question's concept.
    """
    terms = question_terms(question)
    for concept in question_concepts(question):
        if concept.expanded:
            for words in concept.words:
                terms.extend(words)
    return list(dict.fromkeys(terms))
