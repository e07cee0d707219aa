"""Hybrid retrieval: BM25 (reranked) and dense rankings fused by reciprocal rank fusion.

RRF (Cormack, Clarke and Büttcher, "Reciprocal rank fusion outperforms Condorcet and
individual rank learning methods", SIGIR 2009): a document's fused score is
``sum over rankings of weight / (k + rank)`` with 1-based ranks and ``k = 60``; a ranking
that does not contain the document adds nothing. Cormack et al. weigh every ranking 1;
here the reranked BM25 ranking weighs :data:`BM25_WEIGHT` (1.5) and the dense one 1
(weighted RRF, as search engines such as Elasticsearch and Vespa offer it): the BM25
side carries the reranker's evidence (concept coverage, phrase proximity, table rows for
figure questions, the document the question names) that a general-purpose sentence
embedding lacks. On the FinanceBench dev questions the weight moved retrieval hit@5 from
28 to 30 of 39 with the document filter (1.0 → 1.5; 2 and 3 gave 29), see
``benchmarks/RESULTS.md``.

Filters and the folder scope apply inside each ranking (before ranking), so fusion never
sees an out-of-scope chunk. The dense ranking is also scoped to the documents the
question names (:func:`~citewell.retrieve.rerank.resource_priors`: a ticker, company
name or title word), when it names any: BM25's reranker favours those documents, but a
sentence embedding does not see names ("AMCOR's quick ratio" is close to every
company's liquidity prose), so unscoped it would fill the fused ranking with other
companies' passages.

Modes: ``lexical`` (BM25 only: exactly :class:`~citewell.retrieve.bm25.BM25Retriever`),
``dense`` (cosine only), ``hybrid`` (both, fused). Chunks not embedded yet are found by
the BM25 side only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..models import Passage
from ..store.base import Condition, Store
from .bm25 import BM25Retriever
from .dense import DenseRetriever
from .rerank import resource_priors

MODES = ("lexical", "dense", "hybrid")
#: The RRF constant of Cormack et al. (2009).
RRF_K = 60
#: Weight of the reranked BM25 ranking in the fusion (the dense ranking weighs 1).
BM25_WEIGHT = 1.5


def rrf(rankings: Sequence[Sequence[str]], *, k: int = RRF_K,
        weights: Sequence[float] | None = None) -> list[tuple[str, float]]:
    """Fuse rankings (ids, best first) by reciprocal rank fusion: ``(id, score)`` best
    first, ``score = Σ weight / (k + rank)`` (rank 1-based; ``weights`` one per ranking,
    default all 1). Ties keep first-seen order (earlier ranking, higher place).
    Raises ValueError when ``weights`` and ``rankings`` differ in length."""
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights):
        for rank, item in enumerate(dict.fromkeys(ranking), start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))


@dataclass(frozen=True)
class Ranked:
    """One retrieved passage with its place in each ranking (1-based; None when that
    ranking did not have it within its depth) and its fused rank/score."""

    passage: Passage
    bm25_rank: int | None
    dense_rank: int | None
    fused_rank: int
    fused_score: float


class HybridRetriever:
    """:class:`~citewell.retrieve.base.Retriever` over BM25, dense, or both fused (``mode``).

    ``lexical``: the BM25 retriever; ``dense``: the dense retriever (None: lexical only,
    whatever the mode). ``depth``: how many passages each ranking contributes to the
    fusion (at least ``k``; default ``max(4k, 20)``).
    """

    def __init__(self, store: Store, workspace_id: str, *, lexical: BM25Retriever,
                 dense: DenseRetriever | None, mode: str = "hybrid", depth: int | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        self.store = store
        self.workspace_id = workspace_id
        self.lexical = lexical
        self.dense = dense
        self.mode = mode if dense is not None else "lexical"
        self.depth = depth

    def retrieve(self, question: str, *, k: int, conditions: Sequence[Condition] = (),
                 under: str | None = None) -> list[Passage]:
        """Top ``k`` passages, best first (``score``: the fused RRF score in hybrid mode)."""
        if self.mode == "lexical":
            return self.lexical.retrieve(question, k=k, conditions=conditions, under=under)
        return [r.passage for r in self.ranked(question, k=k, conditions=conditions, under=under)]

    def ranked(self, question: str, *, k: int, conditions: Sequence[Condition] = (),
               under: str | None = None) -> list[Ranked]:
        """The top ``k`` as :class:`Ranked` (for ``--explain``): each with its BM25, dense
        and fused rank."""
        if k <= 0:
            return []
        depth = max(k, self.depth or max(4 * k, 20))
        lexical: list[Passage] = []
        if self.mode in ("lexical", "hybrid"):
            lexical = self.lexical.retrieve(question, k=depth if self.mode == "hybrid" else k,
                                            conditions=conditions, under=under)
        dense: list[tuple[str, float]] = []
        if self.mode in ("dense", "hybrid") and self.dense is not None:
            dense = self.dense.rank(question, limit=depth if self.mode == "hybrid" else k,
                                    conditions=self._named_scope(question, conditions, under), under=under)
        bm25_rank = {p.chunk.id: i for i, p in enumerate(lexical, start=1)}
        dense_rank = {cid: i for i, (cid, _) in enumerate(dense, start=1)}
        if self.mode == "hybrid":
            fused = rrf([list(bm25_rank), list(dense_rank)], weights=(BM25_WEIGHT, 1.0))[:k]
        elif self.mode == "dense":
            fused = dense[:k]
        else:
            fused = [(p.chunk.id, p.score) for p in lexical[:k]]
        known = {p.chunk.id: p for p in lexical}
        found = self.store.chunks(self.workspace_id, [cid for cid, _ in fused if cid not in known])
        names = self._names([cid for cid, _ in fused if cid not in known], found)
        out: list[Ranked] = []
        for cid, score in fused:
            passage = known.get(cid) or found.get(cid)
            if passage is None:  # deleted meanwhile
                continue
            update: dict = {"score": score, "rank": len(out) + 1}
            if cid not in known:
                update["resource_names"] = names.get(passage.chunk.resource_id, [])
            out.append(Ranked(passage.model_copy(update=update), bm25_rank.get(cid), dense_rank.get(cid),
                              len(out) + 1, score))
        return out

    def _named_scope(self, question: str, conditions: Sequence[Condition],
                     under: str | None) -> list[Condition]:
        """``conditions`` plus, when the question names ready documents in scope (see the
        module docstring), a ``resource_id`` condition limiting the dense ranking to them."""
        resources = self.store.resources(self.workspace_id, statuses=["ready"], under=under, paths=False)
        named = tuple(sorted(resource_priors(question, resources)))
        if not named:
            return list(conditions)
        return [*conditions, Condition(key="resource_id", op="eq", values=named)]

    def _names(self, chunk_ids: list[str], found: dict[str, Passage]) -> dict[str, list[str]]:
        """Tickers and company names of the resources of passages BM25 did not return
        (the generator matches a question's names against them)."""
        if not chunk_ids:
            return {}
        wanted = {found[c].chunk.resource_id for c in chunk_ids if c in found}
        out: dict[str, list[str]] = {}
        for rid in wanted:
            try:
                r = self.store.resource(self.workspace_id, rid)
            except Exception:  # noqa: BLE001 - deleted meanwhile
                continue
            out[rid] = [str(v) for key in ("tickers", "company_names") for v in r.metadata.get(key) or []]
        return out
