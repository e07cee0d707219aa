"""BM25 retrieval over the store's full-text index, then a deterministic rerank."""

from __future__ import annotations

from typing import Sequence

from ..models import Passage, Resource
from ..store.base import Condition, SearchStore
from ..tuplecache import TupleCache
from .query import search_terms
from .scope import analysis_for
from .rerank import Reranker, resource_context, resource_priors
from ..question.analysis import QuestionAnalysis


def _names_by_id(resources: Sequence[Resource]) -> dict[str, list[str]]:
    return {r.id: [str(v) for k in ("tickers", "company_names") for v in (r.metadata or {}).get(k) or []]
            for r in resources}


_names: TupleCache[dict[str, list[str]]] = TupleCache(_names_by_id)
_contexts: TupleCache[dict[str, frozenset[str]]] = TupleCache(
    lambda resources: {r.id: resource_context(r) for r in resources})


def resource_names(resources: Sequence[Resource]) -> dict[str, list[str]]:
    """Tickers then company names (metadata ``tickers``, ``company_names``, as strings) of each
    of ``resources`` by id, what a passage's ``resource_names`` carries (the generator matches
    a question's names against them): made once per store tuple of one search generation
    (:class:`~citewell.tuplecache.TupleCache`), afresh for any other sequence. Read-only."""
    return _names.get(resources)


class BM25Retriever:
    """Ranks a workspace's chunks: a BM25 candidate pool, reranked.

    ``store`` is any :class:`~citewell.store.base.Store`; ``workspace_id`` scopes every
    search. Steps:

    1. the pool: the best ``max(pool_min, pool_factor × k)`` chunks (at most ``pool_max``,
       or ``k`` when more are asked) by BM25 over chunk
       text and resource title, any term of :func:`~citewell.retrieve.query.search_terms`
       matching (question words and the words of their expansions);
    2. resources the question names (:func:`~citewell.retrieve.rerank.resource_priors`:
       a ticker, a company name, a title word) add their own best ``pool_min`` chunks to
       the pool, so that a question about one company is not drowned by other documents;
    3. :class:`~citewell.retrieve.rerank.Reranker` rescores the pool with concept
       coverage (IDF from :meth:`Store.term_counts`), phrase proximity, BM25, a table
       bonus for questions asking for a figure and the resource prior, and keeps ``k``.

    ``reranker=None`` uses a default :class:`Reranker`; ``rerank=False`` returns the
    plain BM25 order (ranks 1..k, ``score`` = negated FTS5 bm25). The workspace's ready
    resources (priors, contexts, names) come from :meth:`Store.ranking_resources`.
    """

    def __init__(self, store: SearchStore, workspace_id: str, *, reranker: Reranker | None = None,
                 rerank: bool = True, pool_min: int = 50, pool_factor: int = 10, pool_max: int = 200) -> None:
        self.store = store
        self.workspace_id = workspace_id
        self.reranker = reranker or Reranker()
        self.rerank = rerank
        self.pool_min = pool_min
        self.pool_factor = pool_factor
        self.pool_max = pool_max

    def retrieve(self, question: str, *, k: int, conditions: Sequence[Condition] = (),
                 under: str | None = None, analysis: QuestionAnalysis | None = None) -> list[Passage]:
        """Top ``k`` passages for ``question`` (see :class:`~citewell.retrieve.base.Retriever`),
        read through ``analysis`` (its :class:`~citewell.question.analysis.QuestionAnalysis`;
        analysed here with the scope's domain pack when not given,
        :func:`~citewell.retrieve.scope.analysis_for`); the store's reads share one
        snapshot (:meth:`Store.reading`)."""
        if k <= 0:
            return []
        with self.store.reading():
            if analysis is None:
                analysis = analysis_for(self.store, self.workspace_id, question, conditions, under)
            terms = search_terms(analysis)
            if not terms:
                return []
            return self._retrieve(analysis, terms, k, conditions, under)

    def _retrieve(self, analysis: QuestionAnalysis, terms: list[str], k: int, conditions: Sequence[Condition],
                  under: str | None) -> list[Passage]:
        """:meth:`retrieve` of the question's ``terms``, inside its snapshot."""
        if not self.rerank:
            return self.store.search_text(self.workspace_id, terms, limit=k, conditions=conditions, under=under)
        limit = min(max(self.pool_min, self.pool_factor * k), max(self.pool_max, k))
        pool = self.store.search_text(self.workspace_id, terms, limit=limit, conditions=conditions, under=under)
        if not pool:
            return []
        resources, names = self._ready_resources(under)
        priors = resource_priors(analysis.naming, resources)
        pooled = {p.chunk.resource_id for p in pool}
        if priors and (len(pooled) > 1 or any(rid not in pooled for rid in priors)):
            named = tuple(sorted(priors))
            extra = self.store.search_text(
                self.workspace_id, terms, limit=self.pool_min, under=under,
                conditions=[*conditions, Condition(key="resource_id", op="eq", values=named)])
            pool = _merge(pool, extra)
        wanted = {p.chunk.resource_id for p in pool}
        known = _contexts.get(resources)  # once per store tuple, not per question
        contexts = {rid: known[rid] for rid in wanted if rid in known}
        groups = list(dict.fromkeys(words for c in analysis.concepts for words in c.words))
        n, counts = self.store.term_counts(self.workspace_id, groups)
        ranked = self.reranker.rerank(analysis, pool, k=k, counts=(n, dict(zip(groups, counts))),
                                      contexts=contexts, priors=priors)
        return [p.model_copy(update={"resource_names": names.get(p.chunk.resource_id, [])}) for p in ranked]

    def _ready_resources(self, under: str | None) -> tuple[Sequence[Resource], dict[str, list[str]]]:
        """The workspace's ready resources (under folder ``under``, shared: read-only) and their
        tickers and company names by id (:func:`resource_names`)."""
        resources = self.store.ranking_resources(self.workspace_id, under=under)
        return resources, resource_names(resources)


def _merge(first: list[Passage], second: list[Passage]) -> list[Passage]:
    """``first`` then the passages of ``second`` not in it, all in BM25 score order."""
    seen = {p.chunk.id for p in first}
    merged = first + [p for p in second if p.chunk.id not in seen]
    order = {id(p): i for i, p in enumerate(merged)}
    return sorted(merged, key=lambda p: (-p.score, order[id(p)]))
