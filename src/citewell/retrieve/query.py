"""Question → full-text search terms (plain words; the store quotes each one).

Both functions read the question with :func:`citewell.text.terms.tokens` (the
tokeniser the reranker and the extractive generator use too): lower-cased words,
``3M's`` -> ``3m``, ``FY2022`` -> ``2022``, stop words dropped. The terms are plain
words; the store quotes each one before it reaches its query language, so punctuation,
quotes and operators in a question (``-``, ``:``, ``AND``, ``NOT``, ``NEAR``, ``*``) can
never raise.
"""

from __future__ import annotations

from ..question.analysis import QuestionAnalysis
from ..text.terms import STOP_WORDS, Token, tokens

__all__ = ["STOP_WORDS", "question_terms", "search_terms"]


def question_terms(question: str, toks: "list[Token] | tuple[Token, ...] | None" = None) -> list[str]:
    """Distinct content words of ``question`` in order (lower-cased, unstemmed; ``toks``:
    its tokens when already read).

    Stop words are dropped unless nothing else is left: ``"What was 3M's CapEx in
    FY2022?"`` gives ``["3m", "capex", "2022"]``.
    """
    toks = tokens(question) if toks is None else toks
    terms = [t.surface for t in toks if t.content] or [t.surface for t in toks]
    return list(dict.fromkeys(terms))


def search_terms(analysis: QuestionAnalysis) -> list[str]:
    """:func:`question_terms` of the analysed question, followed by the words of its
    concepts' expansions (those of its domain pack).

    ``capex`` adds ``capital``, ``expenditures``, ``purchases``, ``property``, ``plant``,
    ``equipment``, ``pp&e`` …: the candidate pool of a full-text search (any term may
    match) then holds passages that use another name for a question's concept.
    """
    terms = question_terms(analysis.query, analysis.tokens)
    for concept in analysis.concepts:
        if concept.expanded:
            for words in concept.words:
                terms.extend(words)
    return list(dict.fromkeys(terms))
