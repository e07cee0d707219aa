"""Hybrid retrieval: the reranked BM25 ranking and the dense ranking, fused.

Two fusions (``fusion``), both over the best ``depth`` passages of each side:

- ``convex`` (the default): a convex combination of normalised scores, ``alpha ×
  lexical + (1 − alpha) × dense`` (Bruch, Gai and Ingber, "An Analysis of Fusion
  Functions for Hybrid Retrieval", ACM TOIS 2023, who found it more effective than RRF
  and easy to tune). The reranker's scores are min–max normalised over the BM25 list (a
  passage missing from it scores 0 there); the cosines over every passage being fused:
  a BM25 passage outside the dense list gets its actual cosine (exact search has it).
  Normalising the cosines over the dense list alone would put every BM25 passage below
  its last cosine at 0, a full dense penalty for a table row that embeds poorly: with
  ``-k 2`` the capex question below then quoted a forecast instead of the row. A passage with no vector yet (the embedding budget ran out) is scored by its
  lexical part alone, ``lexical`` in place of both terms: lacking a vector is no evidence
  against it. ``alpha`` = :data:`CONVEX_ALPHA` (0.9): MiniLM is a general-purpose model,
  out of its domain on filings, so its cosine mostly breaks near-ties of the reranker and
  brings in paraphrases BM25 missed.
- ``rrf``: weighted reciprocal rank fusion (Cormack, Clarke and Büttcher, "Reciprocal
  rank fusion outperforms Condorcet and individual rank learning methods", SIGIR 2009),
  ``Σ weight / (k + rank)``, ``k = 60``, the BM25 ranking weighing :data:`BM25_WEIGHT`
  (1.5), the dense one 1.

Why convex is the default (FinanceBench dev, 39 questions, embeddings complete,
``benchmarks/RESULTS.md``): RRF puts a gold page in the retrieved top 5 more often
(30/39 with the document filter, 29/39 without, against 28 and 26), but the answers cite
one less often (24 and 22 against 25 and 24), because RRF rewards a passage both lists
hold at middling ranks over one that only BM25 ranks first: prose that mentions capital
expenditures beats the cash-flow row that states them. That bias also hurts while the
embeddings are incomplete, as a passage without a vector can never be in the dense list:
"What was 3M's capital expenditure in FY2022?" on a fresh ``../shared/corpus`` store
quoted a forecast of environmental capex with RRF and the $1,749 million row with the
convex fusion. ``alpha`` and ``BM25_WEIGHT`` were chosen on those same 39 questions
(alpha 0.5/0.7/0.8/0.85/0.9 gave answer hits 23/24/24/25/25 with the filter).

Filters and the folder scope apply inside each ranking (before ranking), so fusion never
sees an out-of-scope chunk. The dense ranking is also scoped to the documents the
question names (:func:`~citewell.retrieve.rerank.resource_priors`: a ticker, company
name or title word), when it names any: BM25's reranker favours those documents, but a
sentence embedding does not see names ("AMCOR's quick ratio" is close to every
company's liquidity prose), so unscoped it would fill the fused ranking with other
companies' passages (retrieval hit@5 without the document filter: 26 → 28 of 39).

Modes: ``lexical`` (BM25 only: exactly :class:`~citewell.retrieve.bm25.BM25Retriever`),
``dense`` (cosine only), ``hybrid`` (both, fused). Chunks not embedded yet are found by
the BM25 side only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from ..models import Passage
from ..store.base import Condition, Store
from .bm25 import BM25Retriever, resource_names
from .dense import DenseRetriever
from .pages import PAGE_DEPTH, PageRanker
from .rerank import resource_priors
from .scope import analysis_for
from ..domains.base import Domain
from ..question.analysis import QuestionAnalysis

MODES = ("lexical", "dense", "hybrid")
#: How hybrid mode fuses its two rankings (see the module docstring); the first is the default.
FUSIONS = ("convex", "rrf")
#: Weight of the (normalised) lexical score in the convex fusion; the dense cosine gets the rest.
CONVEX_ALPHA = 0.9
#: The RRF constant of Cormack et al. (2009).
RRF_K = 60
#: Weight of the reranked BM25 ranking in RRF (the dense ranking weighs 1).
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


def convex(lexical: Sequence[tuple[str, float]], dense: Sequence[tuple[str, float]],
           cosines: Mapping[str, float], *, alpha: float = CONVEX_ALPHA) -> list[tuple[str, float]]:
    """Fuse by a convex combination of min–max normalised scores (module docstring):
    ``(id, score)`` best first, ``score`` in [0, 1].

    ``lexical``: ``(id, score)`` of the BM25 side, best first; ``dense``: ``(id, cosine)``
    of the dense side, best first; ``cosines``: the cosine of every passage of either list
    that has a vector (ids absent from it have none): their minimum and maximum set the
    dense scale. A side whose scores are all equal normalises to 1. Ties keep first-seen
    order (the lexical list, then the dense one). Raises ValueError unless 0 <= alpha <= 1.
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError("alpha must be between 0 and 1")
    lex = dict(lexical)
    low, high = (min(lex.values()), max(lex.values())) if lex else (0.0, 0.0)
    known = list(cosines.values())
    d_low, d_high = (min(known), max(known)) if known else (0.0, 0.0)

    def scale(value: float, lo: float, hi: float) -> float:
        return 1.0 if hi <= lo else min(1.0, max(0.0, (value - lo) / (hi - lo)))

    fused: dict[str, float] = {}
    for item in dict.fromkeys([i for i, _ in lexical] + [i for i, _ in dense]):
        lexical_part = scale(lex[item], low, high) if item in lex else 0.0
        if item not in cosines:  # no vector: the lexical evidence stands alone
            fused[item] = lexical_part
        else:
            fused[item] = alpha * lexical_part + (1.0 - alpha) * scale(cosines[item], d_low, d_high)
    order = {item: i for i, item in enumerate(fused)}
    return sorted(fused.items(), key=lambda kv: (-kv[1], order[kv[0]]))


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
    fusion (at least ``k``; default ``max(4k, 20)``). ``fusion``: ``convex`` or ``rrf``
    (:data:`FUSIONS`); ``alpha``: the lexical weight of the convex fusion. Raises
    ValueError for an unknown mode or fusion.
    """

    def __init__(self, store: Store, workspace_id: str, *, lexical: BM25Retriever,
                 dense: DenseRetriever | None, mode: str = "hybrid", depth: int | None = None,
                 fusion: str = FUSIONS[0], alpha: float = CONVEX_ALPHA, pages: PageRanker | None = None,
                 page_depth: int = PAGE_DEPTH) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        if fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}")
        self.store = store
        self.workspace_id = workspace_id
        self.lexical = lexical
        self.dense = dense
        self.mode = mode if dense is not None else "lexical"
        self.depth = depth
        self.fusion = fusion
        self.alpha = alpha
        self.pages = pages
        self.page_depth = page_depth

    def retrieve(self, question: str, *, k: int, conditions: Sequence[Condition] = (),
                 under: str | None = None, analysis: QuestionAnalysis | None = None) -> list[Passage]:
        """Top ``k`` passages, best first (``score``: the page score with ``pages``, else
        the fused score in hybrid mode, the reranker's in lexical mode); ``analysis``: the
        question's analysis (read here with the scope's domain pack when not given)."""
        if self.mode == "lexical" and self.pages is None:
            return self.lexical.retrieve(question, k=k, conditions=conditions, under=under, analysis=analysis)
        return [r.passage for r in self.ranked(question, k=k, conditions=conditions, under=under, analysis=analysis)]

    def ranked(self, question: str, *, k: int, conditions: Sequence[Condition] = (),
               under: str | None = None, analysis: QuestionAnalysis | None = None) -> list[Ranked]:
        """The top ``k`` as :class:`Ranked` (for ``--explain``): each with its BM25, dense
        and fused rank. With ``pages``, the best ``max(k, page_depth)`` fused passages are
        re-ranked by page (:class:`~citewell.retrieve.pages.PageRanker`) and ``fused_rank``
        is the place after that."""
        if k <= 0:
            return []
        with self.store.reading():
            if analysis is None:
                analysis = analysis_for(self.store, self.workspace_id, question, conditions, under)
            if self.pages is None:
                return self._fused(question, analysis, k=k, conditions=conditions, under=under)
            candidates = self._fused(question, analysis, k=max(k, self.page_depth), conditions=conditions,
                                     under=under, depth=max(k, self.page_depth))
            domain = analysis.domain if isinstance(analysis.domain, Domain) else None
        by_id = {r.passage.chunk.id: r for r in candidates}
        return [Ranked(p, by_id[p.chunk.id].bm25_rank, by_id[p.chunk.id].dense_rank, p.rank, p.score)
                for p in self.pages.rerank(analysis, [r.passage for r in candidates], k=k, domain=domain)]

    def _fused(self, question: str, analysis: QuestionAnalysis, *, k: int, conditions: Sequence[Condition],
               under: str | None, depth: int | None = None) -> list[Ranked]:
        """The top ``k`` of the mode's ranking (module docstring), before any page re-ranking;
        ``depth``: how many passages each side contributes (default: :attr:`depth`, else
        ``max(4k, 20)``)."""
        if self.mode == "lexical":
            return [Ranked(p, p.rank, None, p.rank, p.score)
                    for p in self.lexical.retrieve(question, k=k, conditions=conditions, under=under,
                                                   analysis=analysis)]
        depth = max(k, depth or self.depth or max(4 * k, 20))
        lexical: list[Passage] = []
        if self.mode in ("lexical", "hybrid"):
            lexical = self.lexical.retrieve(question, k=depth if self.mode == "hybrid" else k,
                                            conditions=conditions, under=under, analysis=analysis)
        dense: list[tuple[str, float]] = []
        if self.mode in ("dense", "hybrid") and self.dense is not None:
            dense = self.dense.rank(question, limit=depth if self.mode == "hybrid" else k,
                                    conditions=self._named_scope(analysis, conditions, under), under=under)
        bm25_rank = {p.chunk.id: i for i, p in enumerate(lexical, start=1)}
        dense_rank = {cid: i for i, (cid, _) in enumerate(dense, start=1)}
        if self.mode == "hybrid" and self.fusion == "rrf":
            fused = rrf([list(bm25_rank), list(dense_rank)], weights=(BM25_WEIGHT, 1.0))[:k]
        elif self.mode == "hybrid" and self.dense is not None:
            cosines = dict(dense)
            outside = [cid for cid in bm25_rank if cid not in cosines]  # exact search has their cosines too
            cosines.update(self.dense.similarities(question, outside))
            fused = convex([(p.chunk.id, p.score) for p in lexical], dense, cosines, alpha=self.alpha)[:k]
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

    def _named_scope(self, analysis: QuestionAnalysis, conditions: Sequence[Condition],
                     under: str | None) -> list[Condition]:
        """``conditions`` plus, when the question names ready documents in scope (see the
        module docstring), a ``resource_id`` condition limiting the dense ranking to them."""
        named = tuple(sorted(resource_priors(analysis.naming, self.store.ranking_resources(self.workspace_id, under=under))))
        if not named:
            return list(conditions)
        return [*conditions, Condition(key="resource_id", op="eq", values=named)]

    def _names(self, chunk_ids: list[str], found: dict[str, Passage]) -> dict[str, list[str]]:
        """Tickers and company names of the resources of passages BM25 did not return
        (:func:`~citewell.retrieve.bm25.resource_names` of the workspace's ready resources;
        a resource no longer ready has none)."""
        if not chunk_ids:
            return {}
        names = resource_names(self.store.ranking_resources(self.workspace_id))
        return {rid: names[rid] for rid in {found[c].chunk.resource_id for c in chunk_ids if c in found}
                if rid in names}
