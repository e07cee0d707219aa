"""Deterministic reranking of a full-text candidate pool (no model).

:class:`Reranker` rescores the passages a BM25 search returned and keeps the best
``k``. The final score of a passage is the sum of

- ``coverage`` (0–1): the IDF-weighted share of the question's concepts
  (:func:`citewell.text.terms.question_concepts`, expansions included) that the
  passage matches. A concept matches through the chunk text, or through its resource's
  *context* (title, file name, company names, tickers, fiscal year, ``q1``–``q4``
  fiscal quarter): a question word such as ``Boeing`` or ``2022`` that names the
  document. Weight of a concept: ``ln(1 + (n - df + 0.5) / (df + 0.5))`` times its boost
  (1.5 numbers, 1.3 names), ``df`` the number of chunks whose text has it (the largest
  count over its alternatives, from :meth:`Store.term_counts`), ``n`` the number of
  chunks; without counts, ``df`` and ``n`` come from the pool;
- ``pair_weight`` × the share of consecutive single-word concept pairs (``operating
  margin``, ``net sales``) found in that order within two content words of the chunk
  text (phrase proximity), weighted like the concepts;
- ``bm25_weight`` × the passage's BM25 score divided by the best BM25 score of the pool;
- ``table_bonus`` for a table chunk when the question asks for a figure
  (:attr:`citewell.question.analysis.AnswerKind.money`);
- ``prior_weight`` × the resource prior given (see :func:`resource_priors`).

Ties are broken by BM25 order. Returned passages carry ``rank`` 1..k and ``score`` =
the final score rounded to 9 places.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from ..models import Passage, Resource
from ..question.analysis import QuestionAnalysis
from ..question.naming import NamedSources, QuestionNames
from ..tuplecache import TupleCache
from ..text.terms import Concept, tokens

__all__ = ["Reranker", "resource_context", "resource_priors"]

def resource_context(resource: Resource) -> frozenset[str]:
    """Terms that name a resource: its title, file name, company names, tickers, fiscal
    year and ``q<fiscal quarter>`` (stemmed like question terms; stop words out)."""
    meta = resource.metadata or {}
    parts = [resource.title, resource.file_name or ""]
    parts += [str(v) for v in meta.get("company_names") or []]
    parts += [str(v) for v in meta.get("tickers") or []]
    if meta.get("fiscal_year"):
        parts.append(str(meta["fiscal_year"]))
    return _context_terms(" ".join(parts), str(meta.get("fiscal_quarter") or ""))


@lru_cache(maxsize=16384)
def _context_terms(labels: str, quarter: str) -> frozenset[str]:
    """:func:`resource_context` of a resource's joined labels and fiscal quarter (cached:
    every question's pool reaches the resources of its passages again)."""
    terms = {t.term for t in tokens(labels) if t.content}
    if quarter:
        terms.add(f"q{quarter}")
    return frozenset(terms)


def resource_priors(asked: QuestionNames, resources: Sequence[Resource]) -> dict[str, float]:
    """Resources the question names, by id: 1.0 named, 1.5 named and its fiscal year asked.

    A resource is named when a question word written like a name (``AMCOR``, ``JnJ``,
    ``3M``, ``Best Buy`` — see :class:`~citewell.text.terms.Token`) is one of its
    tickers, a title word other than a number or a document-type word
    (:data:`citewell.question.naming.DOC_WORDS`),
    or when every word of one of its company names is in the question. Resources that
    nothing names are left out (prior 0).
    """
    out: dict[str, float] = {}
    for i in _named_sources.get(resources).named(asked):  # names_source of each resource, indexed
        res = resources[i]
        year = (res.metadata or {}).get("fiscal_year")
        out[res.id] = 1.5 if year is not None and str(year) in asked.years else 1.0
    return out


def _source_names(resources: Sequence[Resource]) -> NamedSources:
    """The :class:`~citewell.question.naming.NamedSources` of ``resources`` (what names each)."""
    return NamedSources.of((res.title, (res.metadata or {}).get("tickers") or [],
                            (res.metadata or {}).get("company_names") or []) for res in resources)


#: the index of the resources of each recent scope (the store's tuple of one search generation)
_named_sources: TupleCache[NamedSources] = TupleCache(_source_names)


@dataclass(frozen=True)
class _Scored:
    score: float
    order: int
    passage: Passage


class Reranker:
    """Rescores a BM25 pool (see the module docstring for the score).

    ``bm25_weight``, ``pair_weight``, ``table_bonus`` and ``prior_weight`` scale the
    score's terms; output is a pure function of the inputs (no randomness, sums in a
    fixed order, scores rounded to 9 places before comparison).
    """

    def __init__(self, *, bm25_weight: float = 0.3, pair_weight: float = 0.25, table_bonus: float = 0.2,
                 prior_weight: float = 0.3) -> None:
        self.bm25_weight = bm25_weight
        self.pair_weight = pair_weight
        self.table_bonus = table_bonus
        self.prior_weight = prior_weight

    def rerank(self, analysis: QuestionAnalysis, passages: Sequence[Passage], *, k: int,
               counts: tuple[int, Mapping[tuple[str, ...], int]] | None = None,
               contexts: Mapping[str, frozenset[str]] | None = None,
               priors: Mapping[str, float] | None = None) -> list[Passage]:
        """The best ``k`` of ``passages`` (given in BM25 order, best first).

        ``counts``: ``(n, {surface words of an alternative: chunk count})`` for IDF
        (missing words: counted in the pool); ``contexts``: resource id ->
        :func:`resource_context`; ``priors``: resource id -> prior (see
        :func:`resource_priors`). A repeated chunk id, or a passage whose text equals an
        earlier one's (whitespace and case aside), keeps only its first place.
        """
        if k <= 0 or not passages:
            return []
        unique: list[Passage] = []
        seen: set[str] = set()
        for p in passages:
            # the same passage twice (a .vtt and its .srt, a file copied with other bytes)
            # is one source: the first keeps its place
            same_text = " ".join(p.chunk.text.split()).lower()
            if p.chunk.id not in seen and same_text not in seen:
                seen.update((p.chunk.id, same_text))
                unique.append(p)
        concepts = analysis.concepts
        contexts = contexts or {}
        priors = priors or {}
        figure = analysis.kind.money
        texts: list[tuple[frozenset[str], tuple[str, ...]]] = []
        for p in unique:
            seq = _content_sequence(p.chunk.text)
            texts.append((frozenset(seq), seq))
        weights = self._weights(concepts, [t for t, _ in texts], counts)
        pairs = [(a.head, b.head, min(wa, wb))
                 for (a, wa), (b, wb) in zip(zip(concepts, weights), zip(concepts[1:], weights[1:]))
                 if a.head is not None and b.head is not None and not a.number and not b.number]
        total = math.fsum(weights)
        pair_total = math.fsum(w for _, _, w in pairs)
        best_bm25 = max((p.score for p in unique), default=0.0)
        # which concepts each resource's context matches: once per resource, not per passage
        named: dict[str, list[bool]] = {}
        for rid in {p.chunk.resource_id for p in unique}:
            context = contexts.get(rid, frozenset())
            named[rid] = [bool(context) and c.matches(context) for c in concepts]
        scored: list[_Scored] = []
        for order, (p, (terms, seq)) in enumerate(zip(unique, texts)):
            in_context = named[p.chunk.resource_id]
            credit = math.fsum(w for c, w, held in zip(concepts, weights, in_context) if held or c.matches(terms))
            score = credit / total if total > 0 else 0.0
            if pair_total > 0:
                found = math.fsum(w for a, b, w in pairs if a in terms and b in terms and _near(seq, a, b))
                score += self.pair_weight * found / pair_total
            if best_bm25 > 0:
                score += self.bm25_weight * max(p.score, 0.0) / best_bm25
            if figure and p.chunk.text_type == "table":
                score += self.table_bonus
            score += self.prior_weight * priors.get(p.chunk.resource_id, 0.0)
            scored.append(_Scored(round(score, 9), order, p))
        scored.sort(key=lambda s: (-s.score, s.order))
        return [s.passage.model_copy(update={"rank": i + 1, "score": s.score})
                for i, s in enumerate(scored[:k])]

    @staticmethod
    def _weights(concepts: Sequence[Concept], pool_terms: Sequence[frozenset[str]],
                 counts: tuple[int, Mapping[tuple[str, ...], int]] | None) -> list[float]:
        n_pool = len(pool_terms)
        weights: list[float] = []
        for concept in concepts:
            if counts is not None and all(w in counts[1] for w in concept.words):
                n = counts[0]
                df = max(counts[1][w] for w in concept.words)
            else:
                n = n_pool
                df = sum(1 for t in pool_terms if concept.matches(t))
            df = min(df, n)
            weights.append(math.log(1.0 + (n - df + 0.5) / (df + 0.5)) * concept.boost)
        return weights


@lru_cache(maxsize=8192)
def _content_sequence(text: str) -> tuple[str, ...]:
    """Content terms of a chunk text in order (cached: pools repeat chunks)."""
    return tuple(t.term for t in tokens(text) if t.content)


def _near(seq: tuple[str, ...], first: str | None, second: str | None) -> bool:
    if first is None or second is None:
        return False
    for i, term in enumerate(seq):
        if term == first and second in seq[i + 1 : i + 3]:
            return True
    return False
